/* SPDX-License-Identifier: Apache-2.0 */
// A board top's Verilator model behind ntpu_board_model (vsim_board_model.h). Compiled once per
// board configuration with -include of the header the Makefile writes from its board.mk, which
// names the model class (NTPU_BOARD_MODEL), its pins (NTPU_BOARD_PIN_*: clock, the FPGA's UART
// receive and transmit pins, the button, held released) and the lit-LED test (NTPU_BOARD_ERR_LED),
// the function to define (NTPU_BOARD_MAKE), and whether the model was built with tracing
// (NTPU_BOARD_TRACE: the gate-level netlists of make fpga-test are not).
#include "vsim_board_model.h"

#include <memory>

// Verilator 5.006's own headers have unused parameters; see vsim.cpp.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include NTPU_BOARD_MODEL_HEADER
#include "verilated.h"
#include "verilated_fst_c.h"
#pragma GCC diagnostic pop

#ifndef NTPU_BOARD_TRACE
#define NTPU_BOARD_TRACE 1
#endif

namespace
{

class model final : public ntpu_board_model
{
  public:
    explicit model(const std::string &trace_path) : ctx_(new VerilatedContext)
    {
        if (!trace_path.empty())
            ctx_->traceEverOn(true); // before the model exists, so it computes every traced signal
        top_.reset(new NTPU_BOARD_MODEL(ctx_.get()));
#if NTPU_BOARD_TRACE
        if (!trace_path.empty()) {
            fst_.reset(new VerilatedFstC);
            top_->trace(fst_.get(), 99);
            fst_->open(trace_path.c_str());
        }
#endif
        top_->NTPU_BOARD_PIN_BTN = 1;
        top_->NTPU_BOARD_PIN_RXD = 1;
    }

    void clock(bool rxd) override
    {
        NTPU_BOARD_MODEL *t = top_.get();
        t->NTPU_BOARD_PIN_RXD = rxd;
        t->NTPU_BOARD_PIN_CLK = 0;
        t->eval();
        if (fst_)
            dump();
        t->NTPU_BOARD_PIN_CLK = 1;
        t->eval();
        if (fst_)
            dump();
    }
    bool txd() const override
    {
        return top_->NTPU_BOARD_PIN_TXD != 0;
    }
    bool err_led() const override
    {
        const NTPU_BOARD_MODEL *t = top_.get();
        return NTPU_BOARD_ERR_LED(t);
    }
    void final() override
    {
        top_->final();
        if (fst_)
            fst_->close();
    }

  private:
    void dump()
    {
        ctx_->timeInc(1);
        fst_->dump(ctx_->time());
    }

    std::unique_ptr<VerilatedContext> ctx_;
    std::unique_ptr<NTPU_BOARD_MODEL> top_;
    std::unique_ptr<VerilatedFstC> fst_; // null unless tracing
};

} // namespace

ntpu_board_model *NTPU_BOARD_MAKE(const std::string &trace_path);
ntpu_board_model *NTPU_BOARD_MAKE(const std::string &trace_path)
{
    if (!NTPU_BOARD_TRACE && !trace_path.empty())
        return nullptr; // built without tracing
    return new model(trace_path);
}
