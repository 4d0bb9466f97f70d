/* SPDX-License-Identifier: Apache-2.0 */
// One clock cycle of the untraced core model in one eval rather than two: shared by the core's
// harness (vsim.cpp) and the profile trainer of its build (tools/vsim_pgo_train.cpp), which must
// drive the model the same way (docs/decisions/0017-vsim-speed.md). The model has four clocks:
// clk and the three gated ones below (docs/decisions/0021-vsim-clock-gates.md, 0024).
//
// Verilator 5.006 runs the input-combinational region (all logic combinational from rst and
// s_rx_*; m_tx_ready is tied high in sim/vsim/ntpu_vsim_core.sv) on every eval, so the usual low
// eval + high eval computes it twice a cycle (~150 instructions each at 8x8). The low eval serves
// two ends: it settles outputs that depend on this cycle's inputs, and it lets the model see the
// clocks low, so that the high is an edge. The core has no such outputs (s_rx_ready depends on the
// receiver's state only, m_tx is driven from registers, the gate enables depend on registers:
// sim/vsim/ntpu_core.sv), so the caller samples them before the edge, where they already hold this
// cycle's values; and the model's records of each clock's last level are set low directly where an
// edge is due. The one eval is also taken in its steps rather than through eval() (~200
// instructions a cycle at 8x8): eval()'s loops compute each trigger set two or three times to see
// that nothing is left to do, and the input-combinational region is run only when an input
// changed since the last eval (~150 instructions; most cycles change none). Both lean on
// Verilator internals: other versions take the plain two evals.
#ifndef NTPU_VSIM_CLOCK_EDGE_H
#define NTPU_VSIM_CLOCK_EDGE_H

#include "verilated.h"

#include <type_traits>
#include <utility>

#if VERILATOR_VERSION_INTEGER >= 5006000 && VERILATOR_VERSION_INTEGER < 5007000
#include "Vntpu_core___024root.h"
#define NTPU_VSIM_ONE_EVAL 1
// Verilator 5.006's scheduler steps of the model (generated, with external linkage).
void Vntpu_core___024root___eval_triggers__ico(Vntpu_core___024root *);
void Vntpu_core___024root___eval_ico(Vntpu_core___024root *);
void Vntpu_core___024root___eval_triggers__act(Vntpu_core___024root *);
void Vntpu_core___024root___eval_nba(Vntpu_core___024root *);
#endif

namespace ntpu_clock_edge
{

// A model with the gated clocks of vsim's core (sim/vsim/ntpu_core.sv), rather than the one clock of
// rtl/ntpu_core.sv (vsim:rtl's model, which is clocked the plain way: all_low, eval, all_high, eval).
template <class Model, class = void> struct gated : std::false_type {
};
template <class Model> struct gated<Model, std::void_t<decltype(std::declval<Model &>().clk_ctl)>> : std::true_type {
};

// The core's gated clocks (sim/vsim/ntpu_core.sv): clk_vec (the vector unit), clk_ctl
// (the link and the command processor) and clk_load (the sequencer's weight loader, TRANSPOSE_A
// feeder and transposer) have an edge only in the cycles where their enable is high. The enables
// depend on registers only, so before the edge they already hold this cycle's values. The harness
// adds what the core cannot know from its registers: a byte that enters on s_rx this cycle (offered
// by the harness, taken by the receiver, whose s_rx_ready depends on registers only) opens clk_ctl.
// Bytes offered but not taken change nothing.
template <class Model> bool vec_edge(const Model *t)
{
    return t->vec_clk_en;
}
template <class Model> bool load_edge(const Model *t)
{
    return t->load_clk_en;
}
template <class Model> bool ctl_edge(const Model *t)
{
    return t->ctl_clk_en || (t->s_rx_valid & t->s_rx_ready & 1) != 0;
}

// The low phase of the gated clocks: low where an edge is due, else held high.
template <class Model> void gated_low(Model *t)
{
    t->clk_vec = !vec_edge(t);
    t->clk_ctl = !ctl_edge(t);
    t->clk_load = !load_edge(t);
}

template <class Model> void all_low(Model *t)
{
    t->clk = 0;
    if constexpr (gated<Model>::value) {
        t->clk_vec = 0;
        t->clk_ctl = 0;
        t->clk_load = 0;
    }
}

template <class Model> void all_high(Model *t)
{
    t->clk = 1;
    if constexpr (gated<Model>::value) {
        t->clk_vec = 1;
        t->clk_ctl = 1;
        t->clk_load = 1;
    }
}

// With every clock high (after the previous cycle or reset) and this cycle's inputs set: the
// rising edge. inputs_changed: rst or s_rx_* differ from what the model's last eval saw.
template <class Model> void rising_edge(Model *t, bool inputs_changed)
{
#ifdef NTPU_VSIM_ONE_EVAL
    // The model's record of each clock's last level, set low where an edge is due.
    auto *r = t->rootp;
    r->__Vtrigrprev__TOP__clk = 0;
    r->__Vtrigrprev__TOP__clk_vec = !vec_edge(t);
    r->__Vtrigrprev__TOP__clk_ctl = !ctl_edge(t);
    r->__Vtrigrprev__TOP__clk_load = !load_edge(t);
    all_high(t);
    // eval(), in the steps that do work here. The input-combinational region's values depend on
    // the inputs and on registers; the NBA region recomputes them after every edge that changes
    // such a register, so with the inputs unchanged they already hold. After the NBA region no
    // trigger can fire again: the clocks are the harness's, and nothing in the model derives one.
    if (inputs_changed) {
        r->__VicoIterCount = 0;
        Vntpu_core___024root___eval_triggers__ico(r);
        Vntpu_core___024root___eval_ico(r);
    }
    Vntpu_core___024root___eval_triggers__act(r);
    r->__VnbaTriggered = r->__VactTriggered;
    Vntpu_core___024root___eval_nba(r);
#else
    (void)inputs_changed;
    t->clk = 0;
    gated_low(t);
    t->eval();
    all_high(t);
    t->eval();
#endif
}

// One cycle of reset, where every clock has its edge.
template <class Model> void reset_cycle(Model *t)
{
    all_low(t);
    t->eval();
    all_high(t);
    t->eval();
}

// Reset held for `cycles` cycles with no bytes offered, then released (the models the harness
// does not trace: the profile trainer's, the lockstep check's).
template <class Model> void reset(Model *t, unsigned cycles)
{
    t->rst = 1;
    t->s_rx_valid = 0;
    for (unsigned i = 0; i < cycles; i++)
        reset_cycle(t);
    t->rst = 0;
}

} // namespace ntpu_clock_edge

#endif
