// Bench for ntpu_fp32_div: every vector from gen.c (special cases, the flush edge, overflow and
// random pairs, with the quotient ntpu_f32_div gives) must come out bit for bit, on time.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  logic        clk = 1'b0;
  logic        rst, start, busy, done;
  logic [31:0] x, y, q;

  always #5 clk = ~clk;

  ntpu_fp32_div dut (
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
    .NAME("ntpu_fp32_div")
  ) check (
    .clk  (clk),
    .rst  (rst),
    .start(start),
    .x    (x),
    .y    (y),
    .busy (busy),
    .done (done),
    .r    (q)
  );
endmodule

`default_nettype wire
