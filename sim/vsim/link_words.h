// Link bytes to and from a Verilated data port, and the thermometer codes that say how many
// are valid: shared by the core's harness (vsim.cpp) and the profile trainer of its build
// (tools/vsim_pgo_train.cpp), which must drive the model the same way.
#ifndef NTPU_VSIM_LINK_WORDS_H
#define NTPU_VSIM_LINK_WORDS_H

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "verilated.h"

namespace ntpu_link_words {

// Bytes 0..k-1 of a data port W bytes wide (an integer up to 64 bits, or Verilator's VlWide);
// the bytes from k on are written as 0. Byte i of a port is bits 8i+7..8i, which on a
// little-endian host is byte i of its storage, so whole runs of bytes are copied: this runs
// every cycle that bytes wait at the link (a byte-at-a-time loop was ~5 % of vsim's time).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the link's byte copies assume a little-endian host");

template <unsigned W, class P> void put_bytes(P &port, const uint8_t *b, unsigned k)
{
    if constexpr (std::is_integral_v<P>) {
        P v = 0;
        if (k)
            std::memcpy(&v, b, k);
        port = v;
    } else {
        constexpr unsigned kBytes = (W + 3) / 4 * 4;
        uint8_t *dst = reinterpret_cast<uint8_t *>(port.data());
        if (k)
            std::memcpy(dst, b, k);
        std::memset(dst + k, 0, kBytes - k);
    }
}

template <class P> void get_bytes(const P &port, uint8_t *b, unsigned k)
{
    if constexpr (std::is_integral_v<P>)
        std::memcpy(b, &port, k);
    else
        std::memcpy(b, port.data(), k);
}

// A thermometer code of k bytes, and the count one stands for: the position of its highest set
// bit plus one (a bit scan; x86-64 without -mpopcnt makes a popcount a library call).
inline uint64_t thermo(unsigned k) { return k >= 64 ? ~uint64_t{0} : (uint64_t{1} << k) - 1; }
inline unsigned thermo_count(uint64_t v) { return v ? 64u - static_cast<unsigned>(__builtin_clzll(v)) : 0u; }

} // namespace ntpu_link_words

#endif
