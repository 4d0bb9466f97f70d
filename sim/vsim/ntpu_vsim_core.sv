// SPDX-License-Identifier: Apache-2.0
// The core as vsim drives it: rtl/ntpu_core with a host end of the link that takes every byte the
// core offers (sim/vsim/vsim.cpp reads them all each cycle). m_tx_ready is tied high here rather
// than set by the harness so that Verilator folds the constant, and the transmitter's stall logic
// and what hangs off it (the command processor's reply handshakes, the stall counter) stay out of
// the input pass that runs on every evaluation (docs/decisions/0017-vsim-speed.md, round 5). The
// core itself is the one the boards build.
`default_nettype none

module ntpu_vsim_core #(
  // The parameters the Makefile sets (-G), with ntpu_core's defaults; its others keep theirs.
  parameter int N = 8,            // array size, as ntpu_core
  parameter int LINK_BYTES = 1,   // link bytes per cycle each way
  parameter int PM_ROWS = 0,      // program memory rows
  parameter int MEM_OVERLAP = 0,  // WRITE_MEM / READ_MEM beside LOAD_W / MATMUL
  parameter int OS_ROWS = 0,      // optimizer-state rows
  parameter int CONV_EN = 0,      // MATMUL CONV addressing (1.5)
  parameter int POOL_EN = 0       // POOL (1.5)
) (
  input  logic                    clk,
  // The gated clocks of the core's units and their enables (rtl/ntpu_core.sv; the harness drives
  // them: sim/vsim/clock_edge.h).
  input  logic                    clk_vec,
  input  logic                    clk_ctl,
  input  logic                    clk_load,
  output logic                    vec_clk_en,
  output logic                    ctl_clk_en,
  output logic                    load_clk_en,
  input  logic                    rst,
  input  logic [8*LINK_BYTES-1:0] s_rx_data,
  input  logic [LINK_BYTES-1:0]   s_rx_valid,
  output logic [LINK_BYTES-1:0]   s_rx_ready,
  output logic [8*LINK_BYTES-1:0] m_tx_data,
  output logic [LINK_BYTES-1:0]   m_tx_valid
);
  ntpu_core #(
    .N          (N),
    .LINK_BYTES (LINK_BYTES),
    .PM_ROWS    (PM_ROWS),
    .MEM_OVERLAP(MEM_OVERLAP),
    .OS_ROWS    (OS_ROWS),
    .CONV_EN    (CONV_EN),
    .POOL_EN    (POOL_EN)
  ) u_core (
    .clk       (clk),
    .clk_vec   (clk_vec),
    .clk_ctl   (clk_ctl),
    .clk_load  (clk_load),
    .vec_clk_en(vec_clk_en),
    .ctl_clk_en(ctl_clk_en),
    .load_clk_en(load_clk_en),
    .rst       (rst),
    .s_rx_data (s_rx_data),
    .s_rx_valid(s_rx_valid),
    .s_rx_ready(s_rx_ready),
    .m_tx_data (m_tx_data),
    .m_tx_valid(m_tx_valid),
    .m_tx_ready(1'b1)
  );
endmodule

`default_nettype wire
