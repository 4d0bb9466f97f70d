// SPDX-License-Identifier: Apache-2.0
// vsim's simulation form of rtl/ntpu_perf.sv (docs/decisions/0025-one-rtl.md): the same module, written to
// simulate fast in Verilator, and held to its twin by the lockstep check (sim/vsim/README.md).
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
  input  logic                      pick_en,   // vsim: counter pick_idx on `pick` (COUNTERS, ntpu_cmd)
  input  logic [3:0]                pick_idx,
  output logic [COUNTER_W-1:0]      pick,
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
    assign cnt[k*W +: W] = cnt_q[k];
  end

  // Simulation only (vsim speed): the counters under one test of "a reset or any clear" (rare),
  // rather than a test per counter every cycle. Exact: with neither, g_cnt adds inc[k] to every
  // counter, as the else branch does; otherwise each counter takes g_cnt's own choice.
  for (genvar k = 0; k < CNT_COUNT; k++) begin : g_cnt_v
    always_ff @(posedge clk) begin
      if (rst || clear != '0) cnt_q[k] <= (rst || clear[k]) ? '0 : cnt_q[k] + inc[k];
      else cnt_q[k] <= cnt_q[k] + inc[k];
    end
  end

  // vsim's gated build: the command processor takes a counter through `pick` (counter pick_idx,
  // while pick_en) rather than from `cnt`, which it then leaves unread, so that Verilator does not
  // pack all CNT_COUNT counters into `cnt` after every edge (ntpu_core). A case, not a loop: each
  // counter is a variable of its own (split_var), which needs constant indices.
  if (CNT_COUNT != 9) begin : g_bad_pick
    initial $fatal(1, "ntpu_perf: the pick below lists 9 counters");
  end
  always_comb begin
    pick = '0;
    if (pick_en) begin
      case (pick_idx)
        4'd0: pick = cnt_q[0];
        4'd1: pick = cnt_q[1];
        4'd2: pick = cnt_q[2];
        4'd3: pick = cnt_q[3];
        4'd4: pick = cnt_q[4];
        4'd5: pick = cnt_q[5];
        4'd6: pick = cnt_q[6];
        4'd7: pick = cnt_q[7];
        4'd8: pick = cnt_q[8];
        default: pick = '0;
      endcase
    end
  end

endmodule

`default_nettype wire
