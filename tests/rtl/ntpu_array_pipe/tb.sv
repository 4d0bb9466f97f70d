// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_array with pipelined PEs (PE_STAGES 2 at N = 4, 5 at N = 4, 3 at N = 8): the
// ntpu_array bench's checks (tb_array_run: every row bit for bit against the golden numerics,
// y_valid exactly LATENCY = N + 1 + N*PE_STAGES after a_valid) on a schedule made for that latency.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  logic clk = 1'b0;
  logic [2:0] done;
  int   errors [3];

  always #5 clk = ~clk;

  tb_array_run #(.N(4), .S(2)) u_n4s2 (.clk(clk), .done(done[0]), .errors(errors[0]));
  tb_array_run #(.N(4), .S(5)) u_n4s5 (.clk(clk), .done(done[1]), .errors(errors[1]));
  tb_array_run #(.N(8), .S(3)) u_n8s3 (.clk(clk), .done(done[2]), .errors(errors[2]));

  initial begin
    wait (done === 3'b111);
    if (errors[0] + errors[1] + errors[2] != 0) begin
      $fatal(1, "FAIL ntpu_array_pipe: %0d, %0d, %0d errors", errors[0], errors[1], errors[2]);
    end
    $display("PASS ntpu_array_pipe: PE_STAGES 2 and 5 at N=4, 3 at N=8 bit-exact, %s",
              "y_valid exactly LATENCY after a_valid");
    $finish;
  end
endmodule

`default_nettype wire
