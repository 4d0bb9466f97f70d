// SPDX-License-Identifier: Apache-2.0
// ntpu_iter_count: the timing of an iterative unit (ntpu_fp32_div, ntpu_fp32_sqrt): a start, STEPS
// cycles of work, then the cycle that shows the result.
//
// start is taken in any cycle (also while busy: the unit abandons what it was doing). step is high in
// the STEPS cycles after the start cycle, done in the one after them, busy in all of these; then
// nothing until the next start.
`default_nettype none

module ntpu_iter_count #(
  parameter int STEPS = 25  // 1..31
) (
  input  logic clk,
  input  logic rst,
  input  logic start,
  output logic step,
  output logic busy,
  output logic done
);
  if (STEPS < 1 || STEPS > 31) begin : g_bad_steps
    initial $fatal(1, "ntpu_iter_count: STEPS must be 1..31");
  end

  logic [4:0] cnt_q;  // steps still to do
  logic       busy_q;

  always_ff @(posedge clk) begin
    if (rst) begin
      busy_q <= 1'b0;
      cnt_q <= '0;
    end else if (start) begin
      busy_q <= 1'b1;
      cnt_q <= 5'(STEPS);
    end else if (busy_q) begin
      if (cnt_q == 5'd0) busy_q <= 1'b0;
      else cnt_q <= cnt_q - 5'd1;
    end
  end
  assign busy = busy_q;
  assign step = busy_q && cnt_q != 5'd0;
  assign done = busy_q && cnt_q == 5'd0;

endmodule

`default_nettype wire
