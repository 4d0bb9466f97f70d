// Performance counters: nine 64-bit event counters in the order COUNTERS reports them (docs/isa.md).
//
// Contract: each event input counts the cycles it is high; `macs_add` adds macs_rows * N * N in the
// cycle it is high (one MATMUL accepted). `clear` zeroes every counter, dropping that cycle's events.
// `cnt` is registered: counter k is cnt[k*64 +: 64], index k as in ntpu_pkg::CNT_*.
`default_nettype none

module ntpu_perf
  import ntpu_pkg::*;
#(
  parameter int N = 8  // array size: a row of a MATMUL is N * N multiply-accumulates
) (
  input  logic                      clk,
  input  logic                      rst,
  input  logic                      clear,
  input  logic                      array_busy,
  input  logic                      macs_add,
  input  logic [15:0]               macs_rows,
  input  logic                      stall_link,
  input  logic                      stall_weight,
  input  logic                      stall_hazard,
  input  logic                      stall_tx,
  input  logic                      rx_byte,
  input  logic                      tx_byte,
  output logic [CNT_COUNT*CNT_W-1:0] cnt
);

  localparam logic [CNT_W-1:0] MACS_PER_ROW = CNT_W'(N * N);

  logic [CNT_W-1:0] cnt_q [CNT_COUNT];
  logic [CNT_W-1:0] inc [CNT_COUNT];

  always_comb begin
    inc[CNT_CYCLES] = CNT_W'(1);
    inc[CNT_ARRAY_BUSY] = CNT_W'(array_busy);
    inc[CNT_MACS] = macs_add ? CNT_W'(macs_rows) * MACS_PER_ROW : '0;
    inc[CNT_STALL_LINK] = CNT_W'(stall_link);
    inc[CNT_STALL_WEIGHT] = CNT_W'(stall_weight);
    inc[CNT_STALL_HAZARD] = CNT_W'(stall_hazard);
    inc[CNT_STALL_TX] = CNT_W'(stall_tx);
    inc[CNT_RX_BYTES] = CNT_W'(rx_byte);
    inc[CNT_TX_BYTES] = CNT_W'(tx_byte);
  end

  for (genvar k = 0; k < CNT_COUNT; k++) begin : g_cnt
    always_ff @(posedge clk) begin
      if (rst || clear) begin
        cnt_q[k] <= '0;
      end else begin
        cnt_q[k] <= cnt_q[k] + inc[k];
      end
    end
    assign cnt[k*CNT_W +: CNT_W] = cnt_q[k];
  end

endmodule

`default_nettype wire
