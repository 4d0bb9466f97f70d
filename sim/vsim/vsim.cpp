/* SPDX-License-Identifier: Apache-2.0 */
// The Verilated ntpu_core behind the C ABI of ntpu_vsim.h.
//
// Each model owns its VerilatedContext, so several can live in one process.
// Three models: Vntpu_core, vsim's core (rtl/ with the simulation forms of
// sim/vsim/ in place of their twins, and gated clocks), without tracing
// (Verilator then keeps internal signals in C++ locals, which makes it
// faster); Vntpu_core_trace, the same with tracing, used only for trace=FILE;
// and Vntpu_core_rtl, the core from rtl/ alone, what synthesis reads (rtl).
// One clock cycle is two evals: the low phase, where this cycle's inputs are
// driven and valid/ready/data settle, then the rising edge, where a transfer
// happens on each stream whose valid and ready were both high. The bytes the
// core offers are sampled before the edge, since the edge may replace them.
// The untraced model takes the edge without the low eval, in the steps of
// Verilator's scheduler that do work (clock_edge.h).
// The link moves up to NTPU_LINK_BYTES bytes per cycle each way (the core's
// LINK_BYTES, set by the Makefile): valid and ready are thermometer codes.
#include "ntpu_vsim.h"
#include "link_words.h"
#include "vsim_util.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

// Verilator 5.006's own headers have unused parameters; the Makefile passes
// them with -I, not -isystem, so -Werror would reject them here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "Vntpu_core.h"
#include "Vntpu_core_rtl.h"
#include "Vntpu_core_trace.h"
#include "verilated.h"
#include "verilated_fst_c.h"
#include "clock_edge.h"
#ifdef NTPU_VSIM_LOCKSTEP
#include "lockstep.h"
#endif
#pragma GCC diagnostic pop

namespace
{

constexpr unsigned kResetCycles = 4;
// drain() with idle_limit 0 still gives up on a core that stops taking
// bytes for this long, rather than spinning forever.
constexpr uint64_t kStuckCycles = uint64_t{1} << 24;

using ntpu_vsim_util::set_err;

#ifndef NTPU_LINK_BYTES
#define NTPU_LINK_BYTES 1
#endif
constexpr unsigned kLinkBytes = NTPU_LINK_BYTES;
static_assert(kLinkBytes >= 1 && kLinkBytes <= 64, "NTPU_LINK_BYTES must be 1..64");

using ntpu_link_words::get_bytes;
using ntpu_link_words::thermo_count;
template <class P> void put_bytes(P &port, const uint8_t *b, unsigned k)
{
    ntpu_link_words::put_bytes<kLinkBytes>(port, b, k);
}

} // namespace

struct ntpu_vsim {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vntpu_core> top;          // null with trace=FILE
    std::unique_ptr<Vntpu_core_trace> top_tr; // null unless trace=FILE
    std::unique_ptr<Vntpu_core_rtl> top_rtl;  // null unless rtl
    std::unique_ptr<VerilatedFstC> fst;       // null unless trace=FILE
#ifdef NTPU_VSIM_LOCKSTEP
    std::unique_ptr<ntpu_lockstep> lockstep; // beside top (make test's lockstep build only)
#endif

    ntpu_vsim_util::byte_queue in;  // bytes for s_rx not yet accepted
    ntpu_vsim_util::byte_queue out; // bytes from m_tx not yet read
    uint64_t cycles = 0;
    ntpu_link_words::rx_offer<kLinkBytes> rx_port; // what s_rx offers of `in`

    void dump()
    {
        ctx->timeInc(1);
        fst->dump(ctx->time());
    }

    // f(model) on whichever model this is: the clock loops below run inside f, so that the choice
    // is made once per call and step_on is inlined into them (~20 instructions a cycle).
    template <class F> void on_model(F &&f)
    {
        if (top)
            f(top.get());
        else if (top_rtl)
            f(top_rtl.get());
        else
            f(top_tr.get());
    }

    // One clock cycle. Returns the bytes that left the core (copied to tx, room
    // for kLinkBytes); *rx is set to the bytes that entered it.
    template <class Model> [[gnu::always_inline]] inline unsigned step_on(Model *t, uint8_t *tx, unsigned *rx)
    {
        const size_t have = in.size();
        const unsigned k = have < kLinkBytes ? static_cast<unsigned>(have) : kLinkBytes;
        rx_port.offer(t, in.data(), k);
        // The traced and the rtl/ models take both phases; vsim's own takes the edge in one
        // eval (clock_edge.h): the outputs sampled here depend on the core's registers only.
        constexpr bool one_eval = std::is_same_v<Model, Vntpu_core>;
        constexpr bool traced = std::is_same_v<Model, Vntpu_core_trace>;
        if constexpr (!one_eval) {
            t->clk = 0;
            if constexpr (traced)
                ntpu_clock_edge::gated_low(t);
            t->eval();
            if constexpr (traced)
                dump();
        }
        const unsigned ready = thermo_count(t->s_rx_ready);
        const unsigned taken = k < ready ? k : ready;
        const unsigned ntx = thermo_count(t->m_tx_valid); // all taken: m_tx_ready is tied high
        if (ntx)
            get_bytes(t->m_tx_data, tx, ntx);
        if constexpr (!one_eval) {
            ntpu_clock_edge::all_high(t);
            t->eval();
            if constexpr (traced)
                dump();
        } else {
#ifdef NTPU_VSIM_LOCKSTEP
            lockstep->before_edge(t, rx_port.changed);
#endif
            ntpu_clock_edge::rising_edge(t, rx_port.changed);
#ifdef NTPU_VSIM_LOCKSTEP
            lockstep->after_edge(t);
#endif
        }
        cycles++;
        rx_port.edge_done(taken);
        in.drop(taken);
        *rx = taken;
        return ntx;
    }

    template <class Model> void reset_on(Model *t)
    {
        t->rst = 1;
        t->s_rx_valid = 0;
        put_bytes(t->s_rx_data, nullptr, 0);
        if constexpr (std::is_same_v<Model, Vntpu_core_rtl>)
            t->m_tx_ready = 1; // as sim/vsim/ntpu_vsim_core.sv ties it for the others
        for (unsigned i = 0; i < kResetCycles; i++) {
            // ntpu_clock_edge::reset_cycle, with the traced model's dumps.
            ntpu_clock_edge::all_low(t);
            t->eval();
            if (fst)
                dump();
            ntpu_clock_edge::all_high(t);
            t->eval();
            if (fst)
                dump();
            cycles++;
        }
        t->rst = 0;
        rx_port.changed = true;
    }
};

extern "C" ntpu_vsim *ntpu_vsim_new(const char *opts, char *err, size_t errlen)
{
    std::string trace_path;
    bool rtl = false;
    for (std::string rest = opts ? opts : ""; !rest.empty();) {
        size_t comma = rest.find(',');
        std::string opt = rest.substr(0, comma);
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
        if (opt.empty())
            continue;
        if (opt.compare(0, 6, "trace=") == 0) {
            trace_path = opt.substr(6);
            if (trace_path.empty()) {
                set_err(err, errlen, "vsim: trace= needs a file name");
                return nullptr;
            }
        } else if (opt == "rtl") {
            rtl = true;
        } else {
            set_err(err, errlen, "vsim: unknown option '%s' (known: rtl, trace=FILE, board=icebreaker)", opt.c_str());
            return nullptr;
        }
    }
    if (rtl && !trace_path.empty()) {
        set_err(err, errlen, "vsim: rtl and trace= do not go together (the traced model is vsim's own)");
        return nullptr;
    }
    if (!ntpu_vsim_util::trace_writable(trace_path, err, errlen))
        return nullptr;

    ntpu_vsim *s = new (std::nothrow) ntpu_vsim;
    if (!s) {
        set_err(err, errlen, "vsim: out of memory");
        return nullptr;
    }
    try {
        s->ctx.reset(new VerilatedContext);
        if (!trace_path.empty())
            s->ctx->traceEverOn(true); // before the model exists, so it computes every traced signal
        if (rtl) {
            s->top_rtl.reset(new Vntpu_core_rtl(s->ctx.get()));
        } else if (trace_path.empty()) {
            s->top.reset(new Vntpu_core(s->ctx.get()));
        } else {
            s->top_tr.reset(new Vntpu_core_trace(s->ctx.get()));
            s->fst.reset(new VerilatedFstC);
            s->top_tr->trace(s->fst.get(), 99);
            s->fst->open(trace_path.c_str());
        }
        s->in.reserve(1 << 16);
        s->out.reserve(1 << 16);
    } catch (const std::bad_alloc &) {
        delete s;
        set_err(err, errlen, "vsim: out of memory");
        return nullptr;
    }

    if (s->top) {
        s->reset_on(s->top.get());
#ifdef NTPU_VSIM_LOCKSTEP
        s->lockstep.reset(new ntpu_lockstep(kResetCycles));
#endif
    } else if (s->top_rtl) {
        s->reset_on(s->top_rtl.get());
    } else {
        s->reset_on(s->top_tr.get());
    }
    return s;
}

extern "C" void ntpu_vsim_free(ntpu_vsim *s)
{
    if (!s)
        return;
#ifdef NTPU_VSIM_LOCKSTEP
    if (s->lockstep)
        s->lockstep->finish(s->top.get());
#endif
    if (s->top)
        s->top->final();
    else if (s->top_rtl)
        s->top_rtl->final();
    else
        s->top_tr->final();
    if (s->fst)
        s->fst->close();
    delete s;
}

extern "C" void ntpu_vsim_write(ntpu_vsim *s, const uint8_t *buf, size_t n)
{
    if (!s || !buf || n == 0)
        return;
    s->in.compact();
    s->in.push(buf, n);
}

extern "C" size_t ntpu_vsim_read(ntpu_vsim *s, uint8_t *buf, size_t n, uint64_t idle_limit)
{
    if (!s || !buf)
        return 0;
    // Bytes collected by drain() come first.
    size_t got = s->out.take(buf, n);
    s->out.compact();
    s->on_model([&](auto *t) {
        uint64_t idle = 0;
        while (got < n && idle < idle_limit) {
            uint8_t tx[kLinkBytes];
            unsigned rx, ntx = s->step_on(t, tx, &rx);
            if (ntx) { // most cycles send nothing
                unsigned use = ntx < n - got ? ntx : static_cast<unsigned>(n - got);
                std::memcpy(buf + got, tx, use);
                got += use;
                s->out.push(tx + use, ntx - use); // past n: kept for the next read
            }
            idle = (rx || ntx) ? 0 : idle + 1;
        }
    });
    s->in.compact();
    return got;
}

extern "C" void ntpu_vsim_drain(ntpu_vsim *s, uint64_t idle_limit)
{
    if (!s)
        return;
    const uint64_t stuck = idle_limit ? idle_limit : kStuckCycles;
    s->on_model([&](auto *t) {
        uint64_t idle = 0;
        for (;;) {
            bool pending = !s->in.empty();
            if (pending ? idle >= stuck : idle >= idle_limit)
                break;
            uint8_t tx[kLinkBytes];
            unsigned rx, ntx = s->step_on(t, tx, &rx);
            if (ntx)
                s->out.push(tx, ntx);
            idle = (rx || ntx) ? 0 : idle + 1;
        }
    });
    s->in.compact();
}

extern "C" uint64_t ntpu_vsim_cycles(const ntpu_vsim *s)
{
    return s ? s->cycles : 0;
}
