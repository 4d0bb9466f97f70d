// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_fp32_add: every vector from gen.c (special cases and random pairs, with the sum
// the golden numerics give) must come out bit for bit; with en low the output must be 0.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  logic        en;
  logic [31:0] x, y, s;

  ntpu_fp32_add dut (
    .en(en),
    .x (x),
    .y (y),
    .s (s)
  );

  fp32_vector_check #(
    .NAME("ntpu_fp32_add"),
    .OP  ("+")
  ) check (
    .en(en),
    .x (x),
    .y (y),
    .r (s)
  );
endmodule

`default_nettype wire
