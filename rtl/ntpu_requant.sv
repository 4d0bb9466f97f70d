// SPDX-License-Identifier: Apache-2.0
// ntpu_requant: int32 -> int8 requantization, bit for bit ntpu_requantize(x, mult, shift, 0)
// (docs/numerics.md, "Requantization"; sim/ref/numerics.c).
//
//   q = round(x * mult / 2^31), halves away from zero, computed exactly (x = mult = -2^31 gives 2^31,
//       which the golden model saturates to 2^31 - 1; both give the same y for every shift: 0 clamps
//       to 127, and for s >= 1 both round to 2^(31-s), so the saturation is left out)
//   r = round(q / 2^s), halves away from zero, with s = shift clamped to 0 .. 31
//   y = clamp(r, -128, 127)
// Every int32 multiplier is accepted, and every int32 shift (below 0 acts as 0, above 31 as 31).
//
// Contract: a two-stage pipeline with one clock enable and no valid bits (the user tracks them).
// In each cycle with ce high, stage 1 takes x, mult, shift and stage 2 takes stage 1's result; so y
// belongs to the operands presented two ce-cycles earlier and holds while ce is low. Throughput one
// operand set per ce-cycle.
`default_nettype none

module ntpu_requant (
  input  logic        clk,
  input  logic        ce,     // advance both stages
  input  logic [31:0] x,      // int32
  input  logic [31:0] mult,   // int32 Q31 multiplier
  input  logic [31:0] shift,  // int32 right shift, clamped to 0 .. 31
  output logic [7:0]  y       // int8
);
  // Stage 1: the exact product (|x * mult| <= 2^62 fits a signed 64-bit number) and the shift,
  // clamped. Stage 2: the two roundings and the clamp. Both are computed inside the clocked block,
  // under ce, so that Verilator evaluates nothing while the pipeline stands still.
  logic signed [63:0] prod_q;
  logic [4:0]         sh_q;

  function automatic logic [4:0] clamp_shift(input logic [31:0] s);
    if (s[31]) return 5'd0;
    if (s[30:5] != 26'd0) return 5'd31;
    return s[4:0];
  endfunction

  // Rounding half away from zero of v / 2^k is floor((v + 2^(k-1) - [v < 0]) / 2^k): for v < 0 it
  // is -floor((-v + h) / 2^k) = ceil((v - h) / 2^k) = floor((v + h - 1) / 2^k), h = 2^(k-1).
  function automatic logic [7:0] round_clamp(input logic signed [63:0] p, input logic [4:0] sh);
    logic signed [63:0] p_rnd;  // p + 2^30 - [p < 0]; |p| <= 2^62 leaves room
    logic signed [32:0] q;      // p_rnd >>> 31: -2^31 .. 2^31, the top only when x = mult = -2^31
    logic signed [32:0] half;   // 2^(sh-1), 0 for sh = 0
    logic signed [33:0] t;      // q + half - [q < 0 and sh > 0]: declared signed for the >>>
    logic signed [33:0] r;
    p_rnd = p + 64'sh4000_0000 - {63'd0, p[63]};
    q = 33'(p_rnd >>> 31);
    half = (sh == 5'd0) ? 33'sd0 : (33'sd1 <<< (sh - 5'd1));
    t = {q[32], q} + {half[32], half} - {33'd0, q[32] && sh != 5'd0};
    r = t >>> sh;
    if (r < -34'sd128) return 8'h80;
    if (r > 34'sd127) return 8'h7F;
    return r[7:0];
  endfunction
  always_ff @(posedge clk) begin
    if (ce) begin
      prod_q <= $signed({{32{x[31]}}, x}) * $signed({{32{mult[31]}}, mult});
      sh_q   <= clamp_shift(shift);
      y      <= round_clamp(prod_q, sh_q);
    end
  end

endmodule

`default_nettype wire
