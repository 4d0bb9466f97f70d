// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_fp32_div: every vector from gen.c (special cases, the flush edge, overflow and
// random pairs, with the quotient ntpu_f32_div gives) must come out bit for bit, on time, from the
// one-bit-a-cycle unit and from the five-bit one ntpu_vadam uses.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  logic clk = 1'b0;
  logic [1:0] passed;

  always #5 clk = ~clk;

  for (genvar i = 0; i < 2; i++) begin : g_unit
    localparam int BITS = i == 0 ? 1 : 5;
    logic        rst, start, busy, done;
    logic [31:0] x, y, q;

    ntpu_fp32_div #(
      .BITS(BITS)
    ) dut (
      .clk  (clk),
      .rst  (rst),
      .start(start),
      .x    (x),
      .y    (y),
      .busy (busy),
      .done (done),
      .q    (q)
    );

    fp32_iter_check #(
      .NAME   (i == 0 ? "ntpu_fp32_div BITS=1" : "ntpu_fp32_div BITS=5"),
      .LATENCY(25 / BITS + 1)
    ) check (
      .clk   (clk),
      .rst   (rst),
      .start (start),
      .x     (x),
      .y     (y),
      .busy  (busy),
      .done  (done),
      .r     (q),
      .passed(passed[i])
    );
  end

  initial begin
    wait (passed == 2'b11);
    $finish;
  end
endmodule

`default_nettype wire
