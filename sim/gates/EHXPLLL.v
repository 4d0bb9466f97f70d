// SPDX-License-Identifier: Apache-2.0
// Stand-in for the ECP5 EHXPLLL in gate-level simulation of a board netlist (make fpga-test).
//
// Yosys ships only a black box for the PLL (share/ecp5/cells_bb.v), so this model replaces it
// with a wire: every output clock is CLKI and LOCK is high from the start. The harness then drives
// the oscillator pin at the frequency the PLL would make, so the netlist sees the clock it runs
// on in the bitstream, cycle for cycle; what the wire cannot show (the PLL's lock time, phases,
// jitter) is not modelled. To keep that honest, elaboration stops unless the netlist's dividers
// take PLL_CLKIN_HZ (the board's oscillator) to PLL_CLKOUT_HZ (the board.mk's CLOCK_HZ) on CLKOS,
// the output the board top uses (fpga/prim/ecp5/ntpu_pll.sv). Both come from mk/fpga_test.mk.
// Plain Verilog, like the netlist and Yosys's cell models it is compiled with.
`default_nettype none

module EHXPLLL (
  input  wire CLKI, CLKFB, PHASESEL1, PHASESEL0, PHASEDIR, PHASESTEP, PHASELOADREG, STDBY,
  input  wire PLLWAKESYNC, RST, ENCLKOP, ENCLKOS, ENCLKOS2, ENCLKOS3,
  output wire CLKOP, CLKOS, CLKOS2, CLKOS3, LOCK, INTLOCK, REFCLK, CLKINTFB
);
  parameter CLKI_DIV = 1;
  parameter CLKFB_DIV = 1;
  parameter CLKOP_DIV = 8;
  parameter CLKOS_DIV = 8;
  parameter CLKOS2_DIV = 8;
  parameter CLKOS3_DIV = 8;
  parameter CLKOP_ENABLE = "ENABLED";
  parameter CLKOS_ENABLE = "DISABLED";
  parameter CLKOS2_ENABLE = "DISABLED";
  parameter CLKOS3_ENABLE = "DISABLED";
  parameter CLKOP_CPHASE = 0;
  parameter CLKOS_CPHASE = 0;
  parameter CLKOS2_CPHASE = 0;
  parameter CLKOS3_CPHASE = 0;
  parameter CLKOP_FPHASE = 0;
  parameter CLKOS_FPHASE = 0;
  parameter CLKOS2_FPHASE = 0;
  parameter CLKOS3_FPHASE = 0;
  parameter FEEDBK_PATH = "CLKOP";
  parameter CLKOP_TRIM_POL = "RISING";
  parameter CLKOP_TRIM_DELAY = 0;
  parameter CLKOS_TRIM_POL = "RISING";
  parameter CLKOS_TRIM_DELAY = 0;
  parameter OUTDIVIDER_MUXA = "DIVA";
  parameter OUTDIVIDER_MUXB = "DIVB";
  parameter OUTDIVIDER_MUXC = "DIVC";
  parameter OUTDIVIDER_MUXD = "DIVD";
  parameter PLL_LOCK_MODE = 0;
  parameter PLL_LOCK_DELAY = 200;
  parameter STDBY_ENABLE = "DISABLED";
  parameter REFIN_RESET = "DISABLED";
  parameter SYNC_ENABLE = "DISABLED";
  parameter INT_LOCK_STICKY = "ENABLED";
  parameter DPHASE_SOURCE = "DISABLED";
  parameter PLLRST_ENA = "DISABLED";
  parameter INTFB_WAKE = "DISABLED";

  // With feedback from CLKOP: CLKOP = CLKI / CLKI_DIV * CLKFB_DIV, VCO = CLKOP * CLKOP_DIV,
  // CLKOS = VCO / CLKOS_DIV (Lattice TN1263).
  localparam [63:0] VCO_HZ = 64'd`NTPU_PLL_CLKIN_HZ / CLKI_DIV * CLKFB_DIV * CLKOP_DIV;
  generate
    if (FEEDBK_PATH != "CLKOP" || CLKOS_ENABLE != "ENABLED" || VCO_HZ % CLKOS_DIV != 0 ||
        VCO_HZ / CLKOS_DIV != 64'd`NTPU_PLL_CLKOUT_HZ) begin : g_bad_pll
      initial $fatal(1, "EHXPLLL stand-in: the netlist's PLL does not make the board's clock on CLKOS");
    end
  endgenerate

  assign CLKOP = CLKI;
  assign CLKOS = CLKI;
  assign CLKOS2 = CLKI;
  assign CLKOS3 = CLKI;
  assign LOCK = 1'b1;
  assign INTLOCK = 1'b1;
  assign REFCLK = CLKI;
  assign CLKINTFB = CLKI;

  wire unused_ok = &{1'b0, CLKFB, PHASESEL1, PHASESEL0, PHASEDIR, PHASESTEP, PHASELOADREG, STDBY,
                     PLLWAKESYNC, RST, ENCLKOP, ENCLKOS, ENCLKOS2, ENCLKOS3, 1'b0};
endmodule

`default_nettype wire
