// The core as vsim drives it: rtl/ntpu_core with a host end of the link that takes every byte the
// core offers (sim/vsim/vsim.cpp reads them all each cycle). m_tx_ready is tied high here rather
// than set by the harness, so that Verilator folds the constant: the transmitter's stall logic and
// what hangs off it (the command processor's reply handshakes, the stall counter) no longer run in
// the input pass on every evaluation (docs/decisions/0017-vsim-speed.md, round 5). The core itself
// is the one the boards build.
`default_nettype none

module ntpu_vsim_core #(
  // The parameters the Makefile sets (-G); the rest keep ntpu_core's defaults.
  parameter int N = 8,
  parameter int LINK_BYTES = 1,
  parameter int PM_ROWS = 0,
  parameter int MEM_OVERLAP = 0,
  parameter int OS_ROWS = 0
) (
  input  logic                    clk,
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
    .OS_ROWS    (OS_ROWS)
  ) u_core (
    .clk       (clk),
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
