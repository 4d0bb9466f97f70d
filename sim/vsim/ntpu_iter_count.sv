// SPDX-License-Identifier: Apache-2.0
// vsim's simulation form of rtl/ntpu_iter_count.sv (docs/decisions/0025-one-rtl.md): the same module, written to
// simulate fast in Verilator, and held to its twin by the lockstep check (sim/vsim/README.md).
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
  input  logic act,    // simulation only: high in every cycle with rst, start or busy (see below)
  output logic step,
  output logic busy,
  output logic done
);
  if (STEPS < 1 || STEPS > 31) begin : g_bad_steps
    initial $fatal(1, "ntpu_iter_count: STEPS must be 1..31");
  end

  logic [4:0] cnt_q;  // steps still to do
  logic       busy_q;

  // Simulation only: the same block under act, the busy branch first, and step and done as
  // registers set with busy_q and cnt_q (each the assign's function of their next values). With
  // act low there is no rst, start or busy, so the block below would do nothing: the same next
  // state. The caller's act is one signal for many units, so Verilator merges their blocks under
  // one test of it; with every read of busy_q and cnt_q before any write to them it keeps no shadow
  // copies; and no compare runs on the idle cycles.
  logic step_q, done_q;
  always_ff @(posedge clk) begin
    if (act) begin
      if (!rst && !start && busy_q) begin
        if (cnt_q == 5'd0) begin
          busy_q <= 1'b0;
          done_q <= 1'b0;
        end else begin
          step_q <= cnt_q != 5'd1;
          done_q <= cnt_q == 5'd1;
          cnt_q <= cnt_q - 5'd1;
        end
      end else if (rst) begin
        busy_q <= 1'b0;
        cnt_q <= '0;
        step_q <= 1'b0;
        done_q <= 1'b0;
      end else if (start) begin
        busy_q <= 1'b1;
        cnt_q <= 5'(STEPS);
        step_q <= 1'b1;
        done_q <= 1'b0;
      end
    end
  end
  assign busy = busy_q;
  assign step = step_q;
  assign done = done_q;

endmodule

`default_nettype wire
