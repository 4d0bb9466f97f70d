// SPDX-License-Identifier: Apache-2.0
// Generic clock synthesizer: CLKOUT_HZ from the reference clock CLKIN_HZ.
//
// Contract: clk_out runs at CLKOUT_HZ once `locked` is high; before that it may glitch, so its
// users stay in reset until locked (plus their own synchronizer). clk_in is the reference pin
// itself: vendor PLLs take it straight from the pad.
//
// This is the simulation model: clk_out is clk_in (the frequency is the reference's) and locked is
// always high. The vendor versions live under fpga/prim/<vendor>/ behind this module name; board
// tops that are simulated bypass the PLL altogether (their PLL_EN parameter).
`default_nettype none

module ntpu_pll #(
  parameter int CLKIN_HZ = 12_000_000,  // reference frequency
  parameter int CLKOUT_HZ = 24_000_000  // wanted output frequency; vendor versions check it
) (
  input  logic clk_in,
  output logic clk_out,
  output logic locked
);

  if (CLKIN_HZ <= 0 || CLKOUT_HZ <= 0) begin : g_bad_cfg
    initial $fatal(1, "ntpu_pll: CLKIN_HZ and CLKOUT_HZ must be > 0");
  end

  assign clk_out = clk_in;
  assign locked = 1'b1;

endmodule

`default_nettype wire
