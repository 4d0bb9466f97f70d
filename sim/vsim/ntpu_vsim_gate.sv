// SPDX-License-Identifier: Apache-2.0
// vsim only: the enable of one of the core's clock gates (sim/vsim/ntpu_core.sv;
// docs/decisions/0021-vsim-clock-gates.md). en is high while `busy` and TAIL cycles after it falls
// or after a `kick`: a unit that has just stopped may still set a register or two from the values
// its last cycles left (a valid bit falling, a counter cleared), and the tail lets those land before
// the edges stop. `busy` must depend on registers only, as en does then; `kick` may depend on the
// core's inputs (it reaches en a cycle later): where it is high the harness opens the gate itself.
`default_nettype none

module ntpu_vsim_gate #(
  parameter int TAIL = 2  // cycles the gate stays open after busy falls, 1..15
) (
  input  logic clk,
  input  logic rst,
  input  logic busy,
  input  logic kick,
  output logic en
);
  if (TAIL == 1) begin : g_one
    // One cycle: a bit, set and cleared without a test (the gates run on clk, every cycle).
    logic last_q;  // busy or kicked in the cycle before
    always_ff @(posedge clk) last_q <= rst || busy || kick;
    assign en = busy || last_q;
  end else begin : g_count
    logic [3:0] tail_q;
    always_ff @(posedge clk) begin
      if (rst || busy || kick) tail_q <= 4'(TAIL);
      else if (tail_q != 4'd0) tail_q <= tail_q - 4'd1;
    end
    assign en = busy || (tail_q != 4'd0);
  end
endmodule

`default_nettype wire
