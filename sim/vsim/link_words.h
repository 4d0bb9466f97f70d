/* SPDX-License-Identifier: Apache-2.0 */
// Link bytes to and from a Verilated data port, the thermometer codes that say how many are
// valid, and the harness's offer of bytes on s_rx: shared by the core's harness (vsim.cpp) and
// the profile trainer of its build (tools/vsim_pgo_train.cpp), which must drive the model the
// same way.
#ifndef NTPU_VSIM_LINK_WORDS_H
#define NTPU_VSIM_LINK_WORDS_H

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "verilated.h"

namespace ntpu_link_words
{

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
inline uint64_t thermo(unsigned k)
{
    return k >= 64 ? ~uint64_t{0} : (uint64_t{1} << k) - 1;
}
inline unsigned thermo_count(uint64_t v)
{
    return v ? 64u - static_cast<unsigned>(__builtin_clzll(v)) : 0u;
}

// The harness's side of s_rx: each cycle it offers the first k (<= W) bytes waiting. The ports are
// written only where they change (while the receiver takes nothing, as in most cycles of a long
// command, they stay the same), and `changed` records whether an input did since the model's
// last eval: the one-eval clocking then skips the input-combinational region (clock_edge.h).
template <unsigned W> struct rx_offer {
    unsigned port_k = 0; // s_rx_data holds the first port_k bytes waiting
    bool changed = true; // rst or s_rx_* differ from what the model's last eval saw

    template <class Model> void offer(Model *t, const uint8_t *waiting, unsigned k)
    {
        const auto valid = static_cast<decltype(+t->s_rx_valid)>(thermo(k));
        if (t->s_rx_valid != valid) {
            t->s_rx_valid = valid;
            changed = true;
        }
        if (k && k != port_k) {
            put_bytes<W>(t->s_rx_data, waiting, k);
            port_k = k;
            changed = true;
        }
    }

    // After the edge, in which the receiver took `taken` bytes: the waiting bytes moved on.
    void edge_done(unsigned taken)
    {
        changed = false;
        if (taken)
            port_k = 0;
    }
};

} // namespace ntpu_link_words

#endif
