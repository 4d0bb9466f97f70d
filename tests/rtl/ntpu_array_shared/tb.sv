// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_array with BF16_SHARED = 1 (one bf16 multiplier and fp32 adder for the whole array,
// the iCEBreaker's configuration): the ntpu_array bench's checks (tb_array_run: every row bit for
// bit against the golden numerics, y_valid exactly 2N cycles after an int8 a_valid and BF16_LATENCY
// after a bf16 one) at N = 2 with PE_STAGES 5 (the board) and 1 (the combinational adder), N = 3
// with 2, N = 4 with 4, N = 8 with 5 (the ULX3S's 8x8 build).
`default_nettype none
`timescale 1ns / 1ps

module tb;
  logic clk = 1'b0;
  logic [4:0] done;
  int   errors [5];

  always #5 clk = ~clk;

  tb_array_run #(.N(2), .S(5), .SH(1)) u_n2s5 (.clk(clk), .done(done[0]), .errors(errors[0]));
  tb_array_run #(.N(2), .S(1), .SH(1)) u_n2s1 (.clk(clk), .done(done[1]), .errors(errors[1]));
  tb_array_run #(.N(3), .S(2), .SH(1)) u_n3s2 (.clk(clk), .done(done[2]), .errors(errors[2]));
  tb_array_run #(.N(4), .S(4), .SH(1)) u_n4s4 (.clk(clk), .done(done[3]), .errors(errors[3]));
  tb_array_run #(.N(8), .S(5), .SH(1)) u_n8s5 (.clk(clk), .done(done[4]), .errors(errors[4]));

  initial begin
    wait (done === 5'b11111);
    if (errors[0] + errors[1] + errors[2] + errors[3] + errors[4] != 0) begin
      $fatal(1, "FAIL ntpu_array_shared: %0d, %0d, %0d, %0d, %0d errors", errors[0], errors[1],
             errors[2], errors[3], errors[4]);
    end
    $display("PASS ntpu_array_shared: BF16_SHARED at N=2 (PE_STAGES 5, 1), N=3 (2), N=4 (4), N=8 (5) bit-exact, %s",
              "y_valid exactly LATENCY / BF16_LATENCY after a_valid");
    $finish;
  end
endmodule

`default_nettype wire
