// Bench for ntpu_fp32_sqrt: every vector from gen.c (special cases, every exponent, squares and
// their neighbours, random patterns, with the root ntpu_f32_sqrt gives) must come out bit for
// bit, on time.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  logic        clk = 1'b0;
  logic        rst, start, busy, done;
  logic [31:0] x, y, r;

  always #5 clk = ~clk;

  ntpu_fp32_sqrt dut (
    .clk  (clk),
    .rst  (rst),
    .start(start),
    .x    (x),
    .busy (busy),
    .done (done),
    .r    (r)
  );

  fp32_iter_check #(
    .NAME("ntpu_fp32_sqrt")
  ) check (
    .clk  (clk),
    .rst  (rst),
    .start(start),
    .x    (x),
    .y    (y),
    .busy (busy),
    .done (done),
    .r    (r)
  );
endmodule

`default_nettype wire
