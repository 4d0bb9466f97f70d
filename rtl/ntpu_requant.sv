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
// operand set per ce-cycle. ce is also operand isolation: with ce low, the simulators evaluate
// none of the logic (the registers do not change anyway).
`default_nettype none

module ntpu_requant (
  input  logic        clk,
  input  logic        ce,     // advance both stages
  input  logic [31:0] x,      // int32
  input  logic [31:0] mult,   // int32 Q31 multiplier
  input  logic [31:0] shift,  // int32 right shift, clamped to 0 .. 31
  output logic [7:0]  y       // int8
);
  // Stage 1: the exact product (|x * mult| <= 2^62 fits a signed 64-bit number) and the shift.
  logic signed [63:0] prod_d, prod_q;
  logic [4:0]         sh_d, sh_q;

  // Stage 2. Rounding half away from zero of v / 2^k is floor((v + 2^(k-1) - [v < 0]) / 2^k): for
  // v < 0 it is -floor((-v + h) / 2^k) = ceil((v - h) / 2^k) = floor((v + h - 1) / 2^k), h = 2^(k-1).
  logic signed [63:0] p_rnd;    // prod + 2^30 - [prod < 0]; |prod| <= 2^62 leaves room
  logic signed [32:0] q;        // p_rnd >>> 31: -2^31 .. 2^31, the top only when x = mult = -2^31
  logic signed [32:0] half;     // 2^(s-1), 0 for s = 0
  logic signed [33:0] q_rnd;    // q + half - [q < 0 and s > 0]
  logic signed [33:0] r;        // q_rnd >>> s
  logic [7:0]         y_d;
  logic [30:0]        unused_p_rnd;  // below the rounding point

  assign unused_p_rnd = p_rnd[30:0];

  // `always @*` with everything under `if (ce)`, as in ntpu_fp32_add: skipped in Verilator while
  // the pipeline stands still, and no Icarus "constant selects" noise per instance.
  always @* begin
    prod_d = '0;
    sh_d   = 5'd0;
    p_rnd  = '0;
    q      = '0;
    half   = '0;
    q_rnd  = '0;
    r      = '0;
    y_d    = 8'd0;
    if (ce) begin
      prod_d = $signed({{32{x[31]}}, x}) * $signed({{32{mult[31]}}, mult});
      if (shift[31]) sh_d = 5'd0;
      else if (shift[30:5] != 26'd0) sh_d = 5'd31;
      else sh_d = shift[4:0];

      p_rnd = prod_q + 64'sh4000_0000 - {63'd0, prod_q[63]};
      q     = p_rnd[63:31];
      half  = (sh_q == 5'd0) ? 33'sd0 : (33'sd1 <<< (sh_q - 5'd1));
      q_rnd = {q[32], q} + {half[32], half} - {33'd0, q[32] && sh_q != 5'd0};
      r     = q_rnd >>> sh_q;
      if (r < -34'sd128) y_d = 8'h80;
      else if (r > 34'sd127) y_d = 8'h7F;
      else y_d = r[7:0];
    end
  end

  always_ff @(posedge clk) begin
    if (ce) begin
      prod_q <= prod_d;
      sh_q   <= sh_d;
      y      <= y_d;
    end
  end

endmodule

`default_nettype wire
