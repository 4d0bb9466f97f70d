// SPDX-License-Identifier: Apache-2.0
// UART transmitter: 8 data bits, no parity, 1 stop bit, LSB first, line idle high.
//
// Contract:
// - s_tx is a valid/ready stream of bytes. A byte taken in cycle t puts its start bit on txd from
//   cycle t+1; each bit lasts exactly CLKS_PER_BIT cycles.
// - s_tx_ready is high while the line is idle and in the last cycle of a stop bit, so bytes offered
//   back to back leave with no gap: 10 * CLKS_PER_BIT cycles per byte.
// - txd comes straight from a register (no glitches on the pin) and is high after reset.
`default_nettype none

module ntpu_uart_tx #(
  parameter int CLKS_PER_BIT = 16  // clk cycles per bit (clk frequency / baud rate), >= 2
) (
  input  logic       clk,
  input  logic       rst,
  input  logic [7:0] s_tx_data,
  input  logic       s_tx_valid,
  output logic       s_tx_ready,
  output logic       txd
);

  if (CLKS_PER_BIT < 2) begin : g_bad_cfg
    initial $fatal(1, "ntpu_uart_tx: CLKS_PER_BIT must be >= 2");
  end

  localparam int CNT_W = $clog2(CLKS_PER_BIT);
  localparam logic [CNT_W-1:0] FULL = CNT_W'(CLKS_PER_BIT - 1);

  logic busy_q;
  logic [CNT_W-1:0] cnt_q;  // cycles left in the bit on the line, minus one
  logic [3:0] left_q;       // bits still to send after the one on the line
  logic [8:0] sh_q;         // {stop, data}: the next bits, LSB first
  logic bit_end, take;

  assign bit_end = (cnt_q == '0);
  assign s_tx_ready = !busy_q || (bit_end && left_q == 4'd0);
  assign take = s_tx_valid && s_tx_ready;

  always_ff @(posedge clk) begin
    if (rst) begin
      busy_q <= 1'b0;
      txd <= 1'b1;
    end else if (take) begin
      busy_q <= 1'b1;
      txd <= 1'b0;
    end else if (busy_q && bit_end) begin
      if (left_q == 4'd0) begin
        busy_q <= 1'b0;  // the stop bit is done; txd stays high
      end else begin
        txd <= sh_q[0];
      end
    end
  end

  always_ff @(posedge clk) begin
    if (take) begin
      cnt_q <= FULL;
      left_q <= 4'd9;
      sh_q <= {1'b1, s_tx_data};
    end else if (busy_q) begin
      cnt_q <= bit_end ? FULL : cnt_q - CNT_W'(1);
      if (bit_end && left_q != 4'd0) begin
        left_q <= left_q - 4'd1;
        sh_q <= {1'b1, sh_q[8:1]};
      end
    end
  end

endmodule

`default_nettype wire
