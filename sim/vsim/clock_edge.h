// One clock cycle of the untraced core model in one eval rather than two: shared by the core's
// harness (vsim.cpp) and the profile trainer of its build (tools/vsim_pgo_train.cpp), which must
// drive the model the same way (docs/decisions/0017-vsim-speed.md).
//
// Verilator 5.006 runs the input-combinational region (all logic combinational from rst and
// s_rx_*; m_tx_ready is tied high in sim/vsim/ntpu_vsim_core.sv) on every eval, so the usual low
// eval + high eval computes it twice a cycle (~150 instructions each at 8x8). The low eval serves two ends: it settles outputs that depend on
// this cycle's inputs, and it lets the model see clk low, so that the high is an edge. The core
// has no such outputs (s_rx_ready depends on the receiver's state only, m_tx is driven from
// registers: rtl/ntpu_core.sv), so the caller samples them before the edge, where they already
// hold this cycle's values; and the model's record of clk's last level is set low directly.
// That record is a Verilator internal: other versions take the plain two evals.
#ifndef NTPU_VSIM_CLOCK_EDGE_H
#define NTPU_VSIM_CLOCK_EDGE_H

#include "verilated.h"

#if VERILATOR_VERSION_INTEGER >= 5006000 && VERILATOR_VERSION_INTEGER < 5007000
#include "Vntpu_core___024root.h"
#define NTPU_VSIM_ONE_EVAL 1
#endif

namespace ntpu_clock_edge {

// With clk high (after the previous cycle or reset) and this cycle's inputs set: the rising edge.
template <class Model> void rising_edge(Model *t)
{
#ifdef NTPU_VSIM_ONE_EVAL
    t->rootp->__Vtrigrprev__TOP__clk = 0;
#else
    t->clk = 0;
    t->eval();
#endif
    t->clk = 1;
    t->eval();
}

} // namespace ntpu_clock_edge

#endif
