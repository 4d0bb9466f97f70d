// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_array at N = 3, 4 and 8 (three instances side by side), against the golden
// numerics. gen.c plays the sequencer: weight tiles loaded normal and transposed into both buffers
// with gaps between beats, rows of both dtypes with gaps, rows using one buffer while the other
// loads, all at the tightest timing the array's header allows. Every cycle the bench checks that
// y_valid is a_valid delayed by exactly LATENCY = 2*N cycles, and every row's y_row bit for bit.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  logic clk = 1'b0;
  logic done3, done4, done8;
  int   errors3, errors4, errors8;

  always #5 clk = ~clk;

  tb_array_run #(.N(3), .S(1)) u_n3 (.clk(clk), .done(done3), .errors(errors3));
  tb_array_run #(.N(4), .S(1)) u_n4 (.clk(clk), .done(done4), .errors(errors4));
  tb_array_run #(.N(8), .S(1)) u_n8 (.clk(clk), .done(done8), .errors(errors8));

  initial begin
    wait (done3 === 1'b1 && done4 === 1'b1 && done8 === 1'b1);
    if (errors3 != 0 || errors4 != 0 || errors8 != 0) begin
      $fatal(1, "FAIL ntpu_array: %0d errors at N=3, %0d at N=4, %0d at N=8", errors3, errors4, errors8);
    end
    $display("PASS ntpu_array: N=3, 4 and 8 bit-exact, y_valid exactly LATENCY = 2*N after a_valid");
    $finish;
  end
endmodule

`default_nettype wire
