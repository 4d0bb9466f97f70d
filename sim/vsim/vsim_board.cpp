/* SPDX-License-Identifier: Apache-2.0 */
// A Verilated board top behind the C ABI of ntpu_vsim_board.h.
//
// The harness plays the board's USB-UART chip: a UART transmitter that puts the
// host's bytes on the FPGA's receive pin back to back, and a UART receiver that
// samples its transmit pin. Both work on whole cycles of the board clock, which
// the harness drives on the clock pin at the board's CLOCK_HZ. Each board
// configuration of BOARD_SIM_CONFIGS in a board.mk is a model of its own, built
// with the parameters of its bitstream (vsim_board_model.h); a top with a PLL
// gets the generic rtl/ntpu_pll, whose output is its input.
//
// One clock cycle: drive the receive pin for the cycle, the low phase, the
// rising edge; then read the transmit pin, which comes from a register and so
// holds its new level for the whole cycle that follows.
#include "ntpu_vsim_board.h"
#include "vsim_util.h"

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "vsim_board_model.h"

namespace
{

constexpr unsigned kFrameBits = 10; // start, 8 data, stop
// The power-on reset lasts 2^RESET_W cycles (RESET_W <= 20 on any sane board).
constexpr uint64_t kResetLimit = uint64_t{1} << 22;

using ntpu_vsim_util::set_err;

// A probability in [0, hi] from an option's text; false if it is not one.
bool parse_prob(const std::string &s, double hi, double *out)
{
    if (s.empty())
        return false;
    char *end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    if (errno || *end || !(v >= 0 && v <= hi))
        return false;
    *out = v;
    return true;
}

} // namespace

struct ntpu_vsim_board {
    std::unique_ptr<ntpu_board_model> top;
    unsigned clks_per_bit = 4; // CLOCK_HZ / BAUD

    // Noise: splitmix64, so a seed gives the same run everywhere.
    double ber = 0, drop = 0;
    uint64_t rng = 1;

    ntpu_vsim_util::byte_queue in; // host -> board: bytes not yet on the wire
    // The transmitter: the frame on the wire, LSB first, and where in it.
    bool tx_busy = false;
    unsigned tx_frame = 0, tx_bit = 0, tx_left = 0;
    bool tx_flip = false;

    // Board -> host: where the bits of the frame on uart_tx fall, so that
    // noise inverts whole bits, as on a wire.
    bool wire_busy = false;
    unsigned wire_bit = 0, wire_left = 0;
    bool wire_flip = false;
    // The receiver: hunting for a start bit, or sampling bit rx_bit in rx_wait cycles.
    enum { RX_IDLE, RX_BITS, RX_BREAK } rx_state = RX_IDLE;
    unsigned rx_bit = 0, rx_wait = 0, rx_shift = 0;
    ntpu_vsim_util::byte_queue out; // board -> host: received and not yet read
    bool red_q = false;             // the red LED was lit last cycle (after power-up)

    ntpu_vsim_board_stats st{};

    uint64_t next_u64()
    {
        uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    bool chance(double p)
    {
        return p > 0 && static_cast<double>(next_u64() >> 11) * 0x1.0p-53 < p;
    }
    bool flip_bit()
    {
        bool f = chance(ber);
        st.flipped_bits += f;
        return f;
    }

    void clock(bool rxd)
    {
        top->clock(rxd);
        st.cycles++;
    }

    // The level the host's transmitter puts on uart_rx this cycle.
    bool tx_level()
    {
        if (!tx_busy) {
            while (!in.empty() && chance(drop)) {
                in.drop(1);
                st.dropped_bytes++;
            }
            if (in.empty())
                return true;                                // idle high
            tx_frame = (1u << 9) | (unsigned)in.pop() << 1; // stop, data, start
            tx_busy = true;
            tx_bit = 0;
            tx_left = clks_per_bit;
            tx_flip = flip_bit();
        }
        return (((tx_frame >> tx_bit) & 1u) != 0) != tx_flip;
    }

    // After the cycle: true when the last bit of a byte has just ended.
    bool tx_advance()
    {
        if (!tx_busy || --tx_left)
            return false;
        if (++tx_bit < kFrameBits) {
            tx_left = clks_per_bit;
            tx_flip = flip_bit();
            return false;
        }
        tx_busy = false;
        st.tx_bytes++;
        return true;
    }

    // uart_tx as the host sees it this cycle: the board's level, inverted
    // during a bit that the noise hit.
    bool wire_level(bool txd)
    {
        if (ber <= 0)
            return txd;
        if (!wire_busy && !txd) { // a start bit begins
            wire_busy = true;
            wire_bit = 0;
            wire_left = clks_per_bit;
            wire_flip = flip_bit();
        }
        bool level = txd != (wire_busy && wire_flip);
        if (wire_busy && !--wire_left) {
            if (++wire_bit < kFrameBits) {
                wire_left = clks_per_bit;
                wire_flip = flip_bit();
            } else {
                wire_busy = false;
            }
        }
        return level;
    }

    // The host's receiver, one cycle of the line. True when a byte's stop bit
    // was sampled (kept, dropped or a framing error).
    bool rx_cycle(bool line)
    {
        switch (rx_state) {
        case RX_IDLE:
            if (!line) { // the start bit's first cycle: its middle is half a bit on
                rx_state = RX_BITS;
                rx_bit = 0;
                rx_wait = clks_per_bit / 2;
            }
            return false;
        case RX_BREAK:
            if (line)
                rx_state = RX_IDLE;
            return false;
        case RX_BITS: break;
        }
        if (--rx_wait)
            return false;
        rx_wait = clks_per_bit;
        if (rx_bit == 0) {
            if (line)
                rx_state = RX_IDLE; // a glitch, not a start bit
            rx_bit = 1;
            rx_shift = 0;
            return false;
        }
        if (rx_bit <= 8) {
            rx_shift |= (line ? 1u : 0u) << (rx_bit - 1);
            rx_bit++;
            return false;
        }
        if (!line) {
            st.framing_errors++;
            rx_state = RX_BREAK; // wait for the line to go high again
        } else {
            rx_state = RX_IDLE;
            if (chance(drop)) {
                st.dropped_bytes++;
            } else {
                out.push(static_cast<uint8_t>(rx_shift));
                st.rx_bytes++;
            }
        }
        return true;
    }

    // One cycle of the board and both ends of the UART. True if a byte
    // finished on either wire.
    bool step()
    {
        clock(tx_level());
        bool red = top->err_led();
        st.red_led += red && !red_q;
        red_q = red;
        bool moved = rx_cycle(wire_level(top->txd()));
        moved |= tx_advance();
        return moved;
    }
};

extern "C" ntpu_vsim_board *ntpu_vsim_board_new(const char *opts, char *err, size_t errlen)
{
    std::string trace_path, board, config;
    double ber = 0, drop = 0;
    uint64_t seed = 1;
    for (std::string rest = opts ? opts : ""; !rest.empty();) {
        size_t comma = rest.find(',');
        std::string opt = rest.substr(0, comma);
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
        if (opt.empty())
            continue;
        size_t eq = opt.find('=');
        std::string key = opt.substr(0, eq), val = eq == std::string::npos ? "" : opt.substr(eq + 1);
        if (eq == std::string::npos) {
            set_err(err, errlen, "vsim: option '%s' needs a value (board=, config=, trace=, ber=, drop=, seed=)",
                    opt.c_str());
            return nullptr;
        } else if (key == "board") {
            board = val;
        } else if (key == "config") {
            config = val;
        } else if (key == "trace") {
            if (val.empty()) {
                set_err(err, errlen, "vsim: trace= needs a file name");
                return nullptr;
            }
            trace_path = val;
        } else if (key == "ber") {
            if (!parse_prob(val, 0.5, &ber)) {
                set_err(err, errlen, "vsim: ber='%s' is not a probability per bit in 0..0.5", val.c_str());
                return nullptr;
            }
        } else if (key == "drop") {
            if (!parse_prob(val, 1, &drop)) {
                set_err(err, errlen, "vsim: drop='%s' is not a probability per byte in 0..1", val.c_str());
                return nullptr;
            }
        } else if (key == "seed") {
            char *end = nullptr;
            errno = 0;
            seed = std::strtoull(val.c_str(), &end, 0);
            if (val.empty() || val[0] < '0' || val[0] > '9' || errno || *end) {
                set_err(err, errlen, "vsim: seed='%s' is not a non-negative integer", val.c_str());
                return nullptr;
            }
        } else {
            set_err(err, errlen,
                    "vsim: unknown option '%s' (known with board=: config=C, trace=FILE, ber=P, drop=P, seed=N)",
                    opt.c_str());
            return nullptr;
        }
    }
    // The configuration: the one named, or the board's first (its board.mk's BOARD_SIM_CONFIGS).
    const ntpu_board_entry *entry = nullptr;
    std::string known, configs; // "icebreaker (core), ulx3s (core, n8)"; board's configurations
    for (size_t i = 0; i < ntpu_board_entry_count; i++) {
        const ntpu_board_entry &e = ntpu_board_entries[i];
        bool first = i == 0 || std::string(ntpu_board_entries[i - 1].board) != e.board;
        known += std::string(first ? (i ? "), " : "") + std::string(e.board) + " (" : ", ") + e.config;
        if (board == e.board)
            configs += std::string(configs.empty() ? "" : ", ") + e.config;
        if (!entry && board == e.board && (config.empty() || config == e.config))
            entry = &e;
    }
    known += ")";
    if (!entry) {
        if (board.empty())
            set_err(err, errlen, "vsim: no board= option (known: %s)", known.c_str());
        else if (configs.empty())
            set_err(err, errlen, "vsim: unknown board '%s' (known: %s)", board.c_str(), known.c_str());
        else
            set_err(err, errlen, "vsim: board '%s' has no configuration '%s' (known: %s)", board.c_str(),
                    config.c_str(), configs.c_str());
        return nullptr;
    }
    if (!ntpu_vsim_util::trace_writable(trace_path, err, errlen))
        return nullptr;

    ntpu_vsim_board *b = new (std::nothrow) ntpu_vsim_board;
    if (!b) {
        set_err(err, errlen, "vsim: out of memory");
        return nullptr;
    }
    try {
        b->top.reset(entry->make(trace_path));
        if (!b->top) {
            delete b;
            set_err(err, errlen, "vsim: trace= is not available: this %s model is built without tracing", entry->board);
            return nullptr;
        }
        b->in.reserve(1 << 12);
        b->out.reserve(1 << 16);
    } catch (const std::bad_alloc &) {
        delete b;
        set_err(err, errlen, "vsim: out of memory");
        return nullptr;
    }
    b->ber = ber;
    b->drop = drop;
    b->rng = seed;
    b->st.clock_hz = entry->clock_hz;
    b->st.baud = entry->baud;
    b->clks_per_bit = entry->clock_hz / entry->baud; // the Makefile checks: an integer >= 4

    // Power-up: button released, line idle. The top lights its error LED while
    // its core is in reset; the host talks to it once it goes dark.
    do
        b->clock(true);
    while (b->top->err_led() && b->st.cycles < kResetLimit);
    if (b->top->err_led()) {
        ntpu_vsim_board_free(b);
        set_err(err, errlen, "vsim: the %s board (config %s) did not leave reset in %llu cycles", entry->board,
                entry->config, static_cast<unsigned long long>(kResetLimit));
        return nullptr;
    }
    return b;
}

extern "C" void ntpu_vsim_board_free(ntpu_vsim_board *b)
{
    if (!b)
        return;
    b->top->final();
    delete b;
}

extern "C" void ntpu_vsim_board_write(ntpu_vsim_board *b, const uint8_t *buf, size_t n)
{
    if (!b || !buf || n == 0)
        return;
    b->in.compact();
    b->in.push(buf, n);
}

extern "C" size_t ntpu_vsim_board_read(ntpu_vsim_board *b, uint8_t *buf, size_t n, uint64_t idle_limit)
{
    if (!b || !buf)
        return 0;
    size_t got = 0;
    uint64_t idle = 0;
    for (;;) {
        got += b->out.take(buf + got, n - got);
        if (got == n || idle >= idle_limit)
            break;
        idle = b->step() ? 0 : idle + 1;
    }
    b->in.compact();
    b->out.compact();
    return got;
}

extern "C" void ntpu_vsim_board_get_stats(const ntpu_vsim_board *b, ntpu_vsim_board_stats *out)
{
    if (!out)
        return;
    if (!b) {
        *out = ntpu_vsim_board_stats{};
        return;
    }
    *out = b->st;
}
