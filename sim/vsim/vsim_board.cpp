// The Verilated iCEBreaker board top behind the C ABI of ntpu_vsim_board.h.
//
// The harness plays the FT2232H's channel B: a UART transmitter that puts the
// host's bytes on uart_rx back to back, and a UART receiver that samples
// uart_tx. Both work on whole cycles of the board clock, which the harness
// drives on the clock pin at the board's CLOCK_HZ (the top is built with
// PLL_EN=0; every other parameter is the bitstream's, from board.mk through
// the generated ntpu_board_params.h).
//
// One clock cycle: drive uart_rx for the cycle, the low phase, the rising
// edge; then read uart_tx, which comes from a register and so holds its new
// level for the whole cycle that follows.
#include "ntpu_vsim_board.h"
#include "vsim_util.h"

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "ntpu_board_params.h"
// The board= name this build answers to. The model is the iCEBreaker's RTL top in libntpu; a
// gate-level build (mk/fpga_test.mk) links the same harness with a board's synthesized netlist
// and names the board in its ntpu_board_params.h.
#ifndef NTPU_BOARD_NAME
#define NTPU_BOARD_NAME "icebreaker"
#endif
// Whether the model was Verilated with --trace-fst (the netlist models are not: tracing doubles
// their C++ and its compile time).
#ifndef NTPU_BOARD_TRACE
#define NTPU_BOARD_TRACE 1
#endif

// Verilator 5.006's own headers have unused parameters; see vsim.cpp.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "Vntpu_icebreaker_top.h"
#include "verilated.h"
#include "verilated_fst_c.h"
#pragma GCC diagnostic pop

namespace {

constexpr unsigned kClksPerBit = NTPU_BOARD_CLOCK_HZ / NTPU_BOARD_BAUD;
static_assert(NTPU_BOARD_CLOCK_HZ % NTPU_BOARD_BAUD == 0 && kClksPerBit >= 4,
              "the board's CLOCK_HZ / BAUD must be an integer >= 4");
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
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vntpu_icebreaker_top> top;
    std::unique_ptr<VerilatedFstC> fst; // null unless trace=FILE

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
    bool red_q = false; // the red LED was lit last cycle (after power-up)

    ntpu_vsim_board_stats st{};

    uint64_t next_u64()
    {
        uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    bool chance(double p) { return p > 0 && static_cast<double>(next_u64() >> 11) * 0x1.0p-53 < p; }
    bool flip_bit()
    {
        bool f = chance(ber);
        st.flipped_bits += f;
        return f;
    }

    void dump()
    {
        ctx->timeInc(1);
        fst->dump(ctx->time());
    }

    void clock()
    {
        Vntpu_icebreaker_top *t = top.get();
        t->clk_12m = 0;
        t->eval();
        if (fst)
            dump();
        t->clk_12m = 1;
        t->eval();
        if (fst)
            dump();
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
                return true; // idle high
            tx_frame = (1u << 9) | (unsigned)in.pop() << 1; // stop, data, start
            tx_busy = true;
            tx_bit = 0;
            tx_left = kClksPerBit;
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
            tx_left = kClksPerBit;
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
            wire_left = kClksPerBit;
            wire_flip = flip_bit();
        }
        bool level = txd != (wire_busy && wire_flip);
        if (wire_busy && !--wire_left) {
            if (++wire_bit < kFrameBits) {
                wire_left = kClksPerBit;
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
                rx_wait = kClksPerBit / 2;
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
        rx_wait = kClksPerBit;
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
        top->uart_rx = tx_level();
        clock();
        bool red = !top->led_r_n;
        st.red_led += red && !red_q;
        red_q = red;
        bool moved = rx_cycle(wire_level(top->uart_tx != 0));
        moved |= tx_advance();
        return moved;
    }
};

extern "C" ntpu_vsim_board *ntpu_vsim_board_new(const char *opts, char *err, size_t errlen)
{
    std::string trace_path, board;
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
            set_err(err, errlen, "vsim: option '%s' needs a value (board=, trace=, ber=, drop=, seed=)", opt.c_str());
            return nullptr;
        } else if (key == "board") {
            if (val != NTPU_BOARD_NAME) {
                set_err(err, errlen, "vsim: unknown board '%s' (known: " NTPU_BOARD_NAME ")", val.c_str());
                return nullptr;
            }
            board = val;
        } else if (key == "trace") {
            if (val.empty()) {
                set_err(err, errlen, "vsim: trace= needs a file name");
                return nullptr;
            }
            trace_path = val;
            if (!NTPU_BOARD_TRACE) {
                set_err(err, errlen, "vsim: trace= is not available: this %s model is built without tracing",
                        NTPU_BOARD_NAME);
                return nullptr;
            }
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
            set_err(err, errlen, "vsim: unknown option '%s' (known with board=: trace=FILE, ber=P, drop=P, seed=N)",
                    opt.c_str());
            return nullptr;
        }
    }
    if (board.empty()) {
        set_err(err, errlen, "vsim: no board= option (known: board=" NTPU_BOARD_NAME ")");
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
        b->ctx.reset(new VerilatedContext);
        if (!trace_path.empty())
            b->ctx->traceEverOn(true);
        b->top.reset(new Vntpu_icebreaker_top(b->ctx.get()));
        if (!trace_path.empty()) {
            b->fst.reset(new VerilatedFstC);
#if NTPU_BOARD_TRACE
            b->top->trace(b->fst.get(), 99);
#endif
            b->fst->open(trace_path.c_str());
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
    b->st.clock_hz = NTPU_BOARD_CLOCK_HZ;
    b->st.baud = NTPU_BOARD_BAUD;

    // Power-up: button released, line idle. The top lights the red LED while
    // its core is in reset; the host talks to it once it goes dark.
    Vntpu_icebreaker_top *t = b->top.get();
    t->btn_n = 1;
    t->uart_rx = 1;
    do
        b->clock();
    while (!t->led_r_n && b->st.cycles < kResetLimit);
    if (!t->led_r_n) {
        ntpu_vsim_board_free(b);
        set_err(err, errlen, "vsim: the %s board did not leave reset in %llu cycles", board.c_str(),
                static_cast<unsigned long long>(kResetLimit));
        return nullptr;
    }
    return b;
}

extern "C" void ntpu_vsim_board_free(ntpu_vsim_board *b)
{
    if (!b)
        return;
    b->top->final();
    if (b->fst)
        b->fst->close();
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
