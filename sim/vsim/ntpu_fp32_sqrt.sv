// SPDX-License-Identifier: Apache-2.0
// vsim's simulation form of rtl/ntpu_fp32_sqrt.sv (docs/decisions/0025-one-rtl.md): the same module, written to
// simulate fast in Verilator, and held to its twin by the lockstep check (sim/vsim/README.md).
// ntpu_fp32_sqrt: fp32 square root as the device defines it (docs/numerics.md, "fp32 divide and
// square root"), BITS root bits a cycle.
//
// A subnormal input reads as zero of its sign; sqrt(±0) = ±0, sqrt(+Inf) = +Inf; a NaN or anything
// below zero (−Inf included, −0 not) gives the canonical NaN 0x7FC00000; otherwise the exact root is
// rounded to 24 bits, to nearest, ties to even (digit-by-digit to 25 bits, the remainder as the
// sticky bit). The root of a normal number is normal. Bit-exact with ntpu_f32_sqrt
// (sim/ref/numerics.c).
//
// Contract: as ntpu_fp32_div (start any cycle, x read then; done LATENCY = 25 / BITS + 1 cycles later
// for every start; r holds from done until the next start; busy from the cycle after start until
// done; BITS 1, 5 or 25 chained digit stages a cycle; in Verilator, act as there).
`default_nettype none

module ntpu_fp32_sqrt #(
  parameter int BITS = 1  // root bits a cycle: 1, 5 or 25
) (
  input  logic        clk,
  input  logic        rst,
  input  logic        start,
  input  logic        act,    // simulation only: high in every cycle with rst, start or busy
  input  logic [31:0] x,
  output logic        busy,
  output logic        done,
  output logic [31:0] r    // sqrt(x), from done until the next start
);
  if (BITS != 1 && BITS != 5 && BITS != 25) begin : g_bad_bits
    initial $fatal(1, "ntpu_fp32_sqrt: BITS must divide the 25 root bits: 1, 5 or 25");
  end
  localparam int STEPS = 25 / BITS;  // cycles of digit steps; then the cycle that shows r

  logic        step;      // a cycle of digit steps
  logic [49:0] rad_q;     // radicand bits still to bring down, two a step, from the top
  logic [27:0] rem_q;     // partial remainder, <= 2 * root
  logic [24:0] root_q;    // root bits so far: 1 integer bit, 23 fraction bits, guard
  logic [7:0]  e_q;       // biased result exponent
  logic        spec_q;    // a special case: the result is spec_r_q
  logic [31:0] spec_r_q;

  ntpu_iter_count #(
    .STEPS(STEPS)
  ) u_count (
    .clk  (clk),
    .rst  (rst),
    .start(start),
    .act  (act),
    .step (step),
    .busy (busy),
    .done (done)
  );

  // One block, every read of a register before any write to it (as in ntpu_fp32_div).
  always_ff @(posedge clk) begin
    // Simulation only: with act low there is no start and no step, so nothing below runs; one
    // test of act for every idle unit instead of their own conditions.
    if (act) begin
    if (!start && step) begin
      logic [27:0] rem, rt, trial;
      logic [24:0] root;
      logic [49:0] rad;
      rem = rem_q;
      root = root_q;
      rad = rad_q;
      for (int i = 0; i < BITS; i++) begin
        rt = {rem[25:0], rad[49:48]};
        trial = {1'b0, root, 2'b01};
        if (rt >= trial) begin
          rem = rt - trial;
          root = {root[23:0], 1'b1};
        end else begin
          rem = rt;
          root = {root[23:0], 1'b0};
        end
        rad = rad << 2;
      end
      rem_q <= rem;
      root_q <= root;
      rad_q <= rad;
    end else if (start) begin
      logic xz, xi, xn;
      xz = (x[30:23] == 8'h00);
      xi = (x[30:23] == 8'hFF) && (x[22:0] == 23'd0);
      xn = (x[30:23] == 8'hFF) && (x[22:0] != 23'd0);
      spec_q <= xz || xi || xn || x[31];
      if (xz) spec_r_q <= {x[31], 31'd0};
      else if (xn || x[31]) spec_r_q <= 32'h7FC0_0000;
      else spec_r_q <= 32'h7F80_0000;  // +Inf
      // x = 1.f · 2^E, E = exp - 127. E even: the root of 1.f; E odd: of 2 · 1.f, E - 1. Scaled by
      // 2^48 (as 1.f · 2^23 · 2^25) so that the integer root has 24 fraction bits and a guard bit.
      if (x[23]) begin  // exp odd: E even
        rad_q <= {2'b00, 1'b1, x[22:0], 24'd0} << 1;
        e_q <= 8'((9'(x[30:23]) + 9'd127) >> 1);
      end else begin
        rad_q <= {1'b0, 1'b1, x[22:0], 25'd0} << 1;
        e_q <= 8'((9'(x[30:23]) + 9'd126) >> 1);
      end
      rem_q <= '0;
      root_q <= '0;
    end
    end
  end

  logic [24:0] m_rnd;
  logic [7:0]  e;
  logic        unused_bits;
  assign unused_bits = m_rnd[23];
  // Simulation only: the same, as a latch open while act, as in ntpu_fp32_div: the registers change
  // only at a start or a step, each followed by a busy cycle, so r is always the rounding of the
  // present registers, and Verilator skips the rounding while the unit is idle.
  always_latch begin
    if (act) begin
      m_rnd = {1'b0, root_q[24:1]} + {24'd0, root_q[0] && (rem_q != 28'd0 || root_q[1])};
      e = e_q + {7'd0, m_rnd[24]};
      r = spec_q ? spec_r_q : {1'b0, e, m_rnd[22:0]};
    end
  end

endmodule

`default_nettype wire
