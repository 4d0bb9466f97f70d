/* SPDX-License-Identifier: Apache-2.0 */
// vsim_pgo_train: the training run of the Verilated core's profile-guided build
// (docs/decisions/0017-vsim-speed.md).
//
//   vsim_pgo_train STREAM...
//
// Replays each recorded host byte stream (tools/pgo/*.bin, made by `vsim_speed ... SAVE`) into a
// fresh Vntpu_core built with -fprofile-generate, clocked as sim/vsim/vsim.cpp clocks it, until
// the reply has been idle for a while. The model's counters then say which code is hot; nothing
// is checked (the differential tests do that), so a stale stream only makes a weaker profile.
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "Vntpu_core.h"
#include "verilated.h"
#include "../sim/vsim/link_words.h"
#include "../sim/vsim/clock_edge.h"
#pragma GCC diagnostic pop

#ifndef NTPU_LINK_BYTES
#define NTPU_LINK_BYTES 1
#endif

namespace
{

constexpr unsigned kLinkBytes = NTPU_LINK_BYTES;
static_assert(kLinkBytes >= 1 && kLinkBytes <= 32, "vsim_pgo_train handles LINK_BYTES 1..32");
constexpr uint64_t kIdleCycles = 10000;   // reply idle this long after the last byte: done
constexpr uint64_t kMaxCycles = 50000000; // a stream the core does not answer still ends

using ntpu_link_words::thermo_count;

void replay(const std::vector<uint8_t> &in)
{
    VerilatedContext ctx;
    Vntpu_core t(&ctx);
    ntpu_clock_edge::reset(&t, 4);
    size_t head = 0;
    uint64_t idle = 0;
    ntpu_link_words::rx_offer<kLinkBytes> rx_port; // changed: rst just fell
    for (uint64_t cyc = 0; cyc < kMaxCycles && (head < in.size() || idle < kIdleCycles); cyc++) {
        const size_t have = in.size() - head;
        const unsigned k = have < kLinkBytes ? static_cast<unsigned>(have) : kLinkBytes;
        rx_port.offer(&t, in.data() + head, k);
        const unsigned ready = thermo_count(t.s_rx_ready);
        const unsigned ntx = thermo_count(t.m_tx_valid);
        ntpu_clock_edge::rising_edge(&t, rx_port.changed);
        const unsigned taken = k < ready ? k : ready;
        rx_port.edge_done(taken);
        head += taken;
        idle = ntx ? 0 : idle + 1;
    }
    t.final();
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: vsim_pgo_train STREAM...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        std::FILE *f = std::fopen(argv[i], "rb");
        if (!f) {
            std::fprintf(stderr, "vsim_pgo_train: cannot open '%s'\n", argv[i]);
            return 1;
        }
        std::vector<uint8_t> in;
        uint8_t buf[4096];
        for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
            in.insert(in.end(), buf, buf + n);
        std::fclose(f);
        replay(in);
    }
    return 0;
}
