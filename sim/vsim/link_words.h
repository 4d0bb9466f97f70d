// Link bytes to and from a Verilated data port, and the thermometer codes that say how many
// are valid: shared by the core's harness (vsim.cpp) and the profile trainer of its build
// (tools/vsim_pgo_train.cpp), which must drive the model the same way.
#ifndef NTPU_VSIM_LINK_WORDS_H
#define NTPU_VSIM_LINK_WORDS_H

#include <cstdint>
#include <type_traits>

#include "verilated.h"

namespace ntpu_link_words {

// Bytes 0..k-1 of a data port W bytes wide (an integer up to 64 bits, or Verilator's VlWide);
// the bytes from k on are written as 0.
template <unsigned W, class P> void put_bytes(P &port, const uint8_t *b, unsigned k)
{
    if constexpr (std::is_integral_v<P>) {
        uint64_t v = 0;
        for (unsigned i = 0; i < k; i++)
            v |= uint64_t{b[i]} << (8 * i);
        port = static_cast<P>(v);
    } else {
        // A word at a time: this runs every cycle that bytes move.
        for (unsigned w = 0; w < (W + 3) / 4; w++) {
            EData v = 0;
            for (unsigned i = 4 * w; i < 4 * w + 4 && i < k; i++)
                v |= static_cast<EData>(b[i]) << (8 * (i % 4));
            port[w] = v;
        }
    }
}

template <class P> void get_bytes(const P &port, uint8_t *b, unsigned k)
{
    if constexpr (std::is_integral_v<P>) {
        const uint64_t v = port;
        for (unsigned i = 0; i < k; i++)
            b[i] = static_cast<uint8_t>(v >> (8 * i));
    } else {
        for (unsigned i = 0; i < k; i++)
            b[i] = static_cast<uint8_t>(port[i / 4] >> (8 * (i % 4)));
    }
}

// A thermometer code of k bytes, and the count one stands for: the position of its highest set
// bit plus one (a bit scan; x86-64 without -mpopcnt makes a popcount a library call).
inline uint64_t thermo(unsigned k) { return k >= 64 ? ~uint64_t{0} : (uint64_t{1} << k) - 1; }
inline unsigned thermo_count(uint64_t v) { return v ? 64u - static_cast<unsigned>(__builtin_clzll(v)) : 0u; }

} // namespace ntpu_link_words

#endif
