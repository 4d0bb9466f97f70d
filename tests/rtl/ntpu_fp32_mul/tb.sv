// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_fp32_mul: every vector from gen.c (special cases and random pairs, with the
// product ntpu_f32_mul gives) must come out bit for bit; with en low the output must be 0.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  logic        en;
  logic [31:0] x, y, p;

  ntpu_fp32_mul dut (
    .en(en),
    .x (x),
    .y (y),
    .p (p)
  );

  fp32_vector_check #(
    .NAME("ntpu_fp32_mul"),
    .OP  ("*")
  ) check (
    .en(en),
    .x (x),
    .y (y),
    .r (p)
  );
endmodule

`default_nettype wire
