// SPDX-License-Identifier: Apache-2.0
// Performance counters: nine event counters in the order COUNTERS reports them (docs/isa.md),
// COUNTER_W bits each (64 in simulation; narrower on small FPGAs, wrapping modulo 2^COUNTER_W).
//
// Contract: each event input counts the cycles it is high (rx_bytes / tx_bytes add their value);
// `macs_add` adds macs_rows * N * N in the cycle it is high (one MATMUL accepted). `clear[k]`
// zeroes counter k, dropping that cycle's events. `cnt` is registered: counter k is
// cnt[k*COUNTER_W +: COUNTER_W], k as in ntpu_pkg::CNT_*.
`default_nettype none

module ntpu_perf
  import ntpu_pkg::*;
#(
  parameter int N = 8,           // array size: a row of a MATMUL is N * N multiply-accumulates
  parameter int COUNTER_W = 64   // bits per counter, 16..64
) (
  input  logic                      clk,
  input  logic                      rst,
  input  logic [CNT_COUNT-1:0]      clear,
  input  logic                      array_busy,
  input  logic                      macs_add,
  input  logic [15:0]               macs_rows,
  input  logic                      stall_link,
  input  logic                      stall_weight,
  input  logic                      stall_hazard,
  input  logic                      stall_tx,
  input  logic [7:0]                rx_bytes,  // link bytes moved this cycle
  input  logic [7:0]                tx_bytes,
  output logic [CNT_COUNT*COUNTER_W-1:0] cnt
);

  localparam int W = COUNTER_W;
  localparam logic [W-1:0] MACS_PER_ROW = W'(N * N);
  // split_var (vsim speed): a variable per counter, so no write queue for an array (same logic).
  logic [W-1:0] cnt_q [CNT_COUNT] /*verilator split_var*/;
  logic [W-1:0] inc [CNT_COUNT] /*verilator split_var*/;

  always_comb begin
    inc[CNT_CYCLES] = W'(1);
    inc[CNT_ARRAY_BUSY] = W'(array_busy);
    inc[CNT_MACS] = macs_add ? W'(macs_rows) * MACS_PER_ROW : '0;
    inc[CNT_STALL_LINK] = W'(stall_link);
    inc[CNT_STALL_WEIGHT] = W'(stall_weight);
    inc[CNT_STALL_HAZARD] = W'(stall_hazard);
    inc[CNT_STALL_TX] = W'(stall_tx);
    inc[CNT_RX_BYTES] = W'(rx_bytes);
    inc[CNT_TX_BYTES] = W'(tx_bytes);
  end

  for (genvar k = 0; k < CNT_COUNT; k++) begin : g_cnt
    always_ff @(posedge clk) begin
      if (rst || clear[k]) begin
        cnt_q[k] <= '0;
      end else begin
        cnt_q[k] <= cnt_q[k] + inc[k];
      end
    end
    assign cnt[k*W +: W] = cnt_q[k];
  end



endmodule

`default_nettype wire
