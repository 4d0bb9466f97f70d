// The Verilated rtl/ntpu_core behind the C ABI of ntpu_vsim.h.
//
// Each model owns its VerilatedContext, so several can live in one process.
// Two builds of the same RTL: Vntpu_core, without tracing (Verilator then keeps
// internal signals in C++ locals, which makes it faster), and Vntpu_core_trace,
// used only for trace=FILE.
// One clock cycle is two evals: the low phase, where this cycle's inputs are
// driven and valid/ready/data settle, then the rising edge, where a transfer
// happens on each stream whose valid and ready were both high. The byte the
// core offers is sampled before the edge, since the edge may replace it.
#include "ntpu_vsim.h"
#include "vsim_util.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

// Verilator 5.006's own headers have unused parameters; the Makefile passes
// them with -I, not -isystem, so -Werror would reject them here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "Vntpu_core.h"
#include "Vntpu_core_trace.h"
#include "verilated.h"
#include "verilated_fst_c.h"
#pragma GCC diagnostic pop

namespace {

constexpr unsigned kResetCycles = 4;
// drain() with idle_limit 0 still gives up on a core that stops taking
// bytes for this long, rather than spinning forever.
constexpr uint64_t kStuckCycles = uint64_t{1} << 24;

using ntpu_vsim_util::set_err;

} // namespace

struct ntpu_vsim {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vntpu_core> top;           // null with trace=FILE
    std::unique_ptr<Vntpu_core_trace> top_tr;  // null unless trace=FILE
    std::unique_ptr<VerilatedFstC> fst;        // null unless trace=FILE

    std::vector<uint8_t> in; // bytes for s_rx, [in_head, end) not yet accepted
    size_t in_head = 0;
    std::vector<uint8_t> out; // bytes from m_tx not yet read, [out_head, end)
    size_t out_head = 0;
    uint64_t cycles = 0;

    void dump()
    {
        ctx->timeInc(1);
        fst->dump(ctx->time());
    }

    // One clock cycle. Returns bit 0 if a byte entered the core, bit 1 if one
    // left it (then in *tx).
    unsigned step(uint8_t *tx) { return top ? step_on(top.get(), tx) : step_on(top_tr.get(), tx); }

    template <class Model> unsigned step_on(Model *t, uint8_t *tx)
    {
        const bool have = in_head < in.size();
        t->s_rx_valid = have;
        if (have)
            t->s_rx_data = in[in_head];
        t->clk = 0;
        t->eval();
        if (fst)
            dump();
        const bool rx = have && t->s_rx_ready;
        const bool txv = t->m_tx_valid; // m_tx_ready is always 1
        *tx = t->m_tx_data;
        t->clk = 1;
        t->eval();
        if (fst)
            dump();
        cycles++;
        in_head += rx;
        return (rx ? 1u : 0u) | (txv ? 2u : 0u);
    }

    template <class Model> void reset_on(Model *t)
    {
        t->rst = 1;
        t->s_rx_valid = 0;
        t->s_rx_data = 0;
        t->m_tx_ready = 1;
        for (unsigned i = 0; i < kResetCycles; i++) {
            t->clk = 0;
            t->eval();
            if (fst)
                dump();
            t->clk = 1;
            t->eval();
            if (fst)
                dump();
            cycles++;
        }
        t->rst = 0;
    }

    void compact_in()
    {
        if (in_head == in.size()) {
            in.clear();
            in_head = 0;
        } else if (in_head > 4096 && in_head > in.size() / 2) {
            in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(in_head));
            in_head = 0;
        }
    }
};

extern "C" ntpu_vsim *ntpu_vsim_new(const char *opts, char *err, size_t errlen)
{
    std::string trace_path;
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
        } else {
            set_err(err, errlen, "vsim: unknown option '%s' (known: trace=FILE, board=icebreaker)", opt.c_str());
            return nullptr;
        }
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
        if (trace_path.empty()) {
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

    if (s->top)
        s->reset_on(s->top.get());
    else
        s->reset_on(s->top_tr.get());
    return s;
}

extern "C" void ntpu_vsim_free(ntpu_vsim *s)
{
    if (!s)
        return;
    if (s->top)
        s->top->final();
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
    s->compact_in();
    s->in.insert(s->in.end(), buf, buf + n);
}

extern "C" size_t ntpu_vsim_read(ntpu_vsim *s, uint8_t *buf, size_t n, uint64_t idle_limit)
{
    if (!s || !buf)
        return 0;
    // Bytes collected by drain() come first.
    size_t got = s->out.size() - s->out_head;
    if (got > n)
        got = n;
    if (got)
        std::memcpy(buf, s->out.data() + s->out_head, got);
    s->out_head += got;
    if (s->out_head == s->out.size()) {
        s->out.clear();
        s->out_head = 0;
    }
    uint64_t idle = 0;
    while (got < n && idle < idle_limit) {
        uint8_t tx;
        unsigned moved = s->step(&tx);
        if (moved & 2u)
            buf[got++] = tx;
        idle = moved ? 0 : idle + 1;
    }
    s->compact_in();
    return got;
}

extern "C" void ntpu_vsim_drain(ntpu_vsim *s, uint64_t idle_limit)
{
    if (!s)
        return;
    const uint64_t stuck = idle_limit ? idle_limit : kStuckCycles;
    uint64_t idle = 0;
    for (;;) {
        bool pending = s->in_head < s->in.size();
        if (pending ? idle >= stuck : idle >= idle_limit)
            break;
        uint8_t tx;
        unsigned moved = s->step(&tx);
        if (moved & 2u)
            s->out.push_back(tx);
        idle = moved ? 0 : idle + 1;
    }
    s->compact_in();
}

extern "C" uint64_t ntpu_vsim_cycles(const ntpu_vsim *s) { return s ? s->cycles : 0; }
