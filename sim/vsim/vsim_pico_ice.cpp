// SPDX-License-Identifier: Apache-2.0
// The pico-ice's FPGA at pin level (vsim_pico_ice.h). The model is clocked lazily: every pin change
// first runs the FPGA's clock up to the moment it happens, so the core keeps computing between the
// RP2040's transactions exactly as long as the emulated time says.
#include "vsim_pico_ice.h"

#include <memory>
#include <new>

#include "Vntpu_pico_ice.h"
#include "verilated.h"

struct vsim_pico_ice {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vntpu_pico_ice> top;
    uint64_t at = 0; // the FPGA's time, in RP2040 instructions
    uint64_t cycles = 0, link_errors = 0;
    int in_reset = 1, err_prev = 1;
};

static void tick(vsim_pico_ice *f)
{
    f->top->clk_rp = 1;
    f->top->eval();
    f->top->clk_rp = 0;
    f->top->eval();
    f->cycles++;
    int err = f->top->link_err;
    if (f->in_reset && !err) {
        f->in_reset = 0;
    } else if (!f->in_reset && err && !f->err_prev) {
        f->link_errors++;
    }
    f->err_prev = err;
}

// Runs the clock up to time `to`: one cycle every div instructions (none while it is stopped).
static void advance(vsim_pico_ice *f, uint64_t to, uint32_t div)
{
    if (div == 0) {
        if (to > f->at) {
            f->at = to;
        }
        return;
    }
    while (f->at + div <= to) {
        tick(f);
        f->at += div;
    }
}

static void fresh(vsim_pico_ice *f)
{
    f->top.reset();
    f->top.reset(new Vntpu_pico_ice(f->ctx.get()));
    f->top->clk_rp = 0;
    f->top->spi_sck = 0;
    f->top->spi_sel_n = 1;
    f->top->spi_mosi = 0;
    f->top->eval();
    f->cycles = f->link_errors = 0;
    f->in_reset = f->err_prev = 1;
}

vsim_pico_ice *vsim_pico_ice_new(void)
{
    vsim_pico_ice *f = new (std::nothrow) vsim_pico_ice;
    if (f) {
        f->ctx.reset(new VerilatedContext);
        fresh(f);
    }
    return f;
}

void vsim_pico_ice_free(vsim_pico_ice *f)
{
    delete f;
}

void vsim_pico_ice_configured(vsim_pico_ice *f, uint64_t now)
{
    fresh(f);
    f->at = now;
}

void vsim_pico_ice_select(vsim_pico_ice *f, uint64_t now, uint32_t div, int level)
{
    advance(f, now, div);
    f->top->spi_sel_n = level ? 1 : 0;
}

uint8_t vsim_pico_ice_xfer(vsim_pico_ice *f, uint64_t now, uint32_t div, uint8_t mosi, uint32_t bit_time)
{
    advance(f, now, div);
    uint8_t in = 0;
    for (int i = 7; i >= 0; i--) {
        f->top->spi_mosi = (mosi >> i) & 1u;
        advance(f, f->at + bit_time / 2, div);
        in = (uint8_t)(in << 1 | (f->top->spi_miso & 1u)); // sampled as SCK rises
        f->top->spi_sck = 1;
        advance(f, f->at + bit_time - bit_time / 2, div);
        f->top->spi_sck = 0;
    }
    return in;
}

void vsim_pico_ice_get_stats(const vsim_pico_ice *f, vsim_pico_ice_stats *out)
{
    out->cycles = f->cycles;
    out->link_errors = f->link_errors;
    out->in_reset = f->in_reset;
}
