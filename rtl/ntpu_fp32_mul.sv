// SPDX-License-Identifier: Apache-2.0
// ntpu_fp32_mul: fp32 multiplication as the device defines it (docs/numerics.md, "fp32 multiply").
//
// Combinational. Subnormal inputs read as zero of their sign; the exact 48-bit product of the
// significands is rounded to 24 bits, to nearest, ties to even, with an unbounded exponent; then a
// result below 2^-126 in magnitude is flushed to zero of its sign and one past the largest finite
// value is ±Inf. Inf · 0 and any NaN input give the canonical NaN 0x7FC00000. Bit-exact with
// ntpu_f32_mul (sim/ref/numerics.c) for every pair of inputs.
//
// en is operand isolation, as in ntpu_fp32_add: with en low the output is 0 and, in Verilator,
// none of the logic runs.
`default_nettype none

module ntpu_fp32_mul (
  input  logic        en,  // 0: p = 0, nothing evaluated
  input  logic [31:0] x,
  input  logic [31:0] y,
  output logic [31:0] p    // x * y
);
  logic        sgn;
  logic        x_zero, y_zero, x_inf, y_inf, x_nan, y_nan;
  logic [47:0] prod;      // 1.f x 1.f: in [2^46, 2^48)
  logic [23:0] m;         // the 24 kept bits
  logic        g, st;     // guard bit and sticky OR of everything below it
  logic [24:0] m_rnd;     // rounded, with its carry-out
  logic [9:0]  e;         // biased result exponent, two's complement
  logic        unused_hidden;

  assign unused_hidden = m_rnd[23];  // 1 unless the rounding carried out, which m_rnd[24] tells

  // `always @*` as in ntpu_fp32_add: everything under `if (en)` after defaults.
  always @* begin
    sgn    = 1'b0;
    x_zero = 1'b0;
    y_zero = 1'b0;
    x_inf  = 1'b0;
    y_inf  = 1'b0;
    x_nan  = 1'b0;
    y_nan  = 1'b0;
    prod   = 48'd0;
    m      = 24'd0;
    g      = 1'b0;
    st     = 1'b0;
    m_rnd  = 25'd0;
    e      = 10'd0;
    p      = 32'd0;
    if (en) begin
      sgn    = x[31] ^ y[31];
      x_zero = (x[30:23] == 8'h00);
      y_zero = (y[30:23] == 8'h00);
      x_inf  = (x[30:23] == 8'hFF) && (x[22:0] == 23'd0);
      y_inf  = (y[30:23] == 8'hFF) && (y[22:0] == 23'd0);
      x_nan  = (x[30:23] == 8'hFF) && (x[22:0] != 23'd0);
      y_nan  = (y[30:23] == 8'hFF) && (y[22:0] != 23'd0);
      if (x_nan || y_nan || (x_inf && y_zero) || (y_inf && x_zero)) begin
        p = 32'h7FC0_0000;
      end else if (x_inf || y_inf) begin
        p = {sgn, 8'hFF, 23'd0};
      end else if (x_zero || y_zero) begin
        p = {sgn, 31'd0};
      end else begin
        prod = {24'd0, 1'b1, x[22:0]} * {24'd0, 1'b1, y[22:0]};
        e = 10'(x[30:23]) + 10'(y[30:23]) - 10'd127;
        if (prod[47]) begin
          m  = prod[47:24];
          g  = prod[23];
          st = |prod[22:0];
          e  = e + 10'd1;
        end else begin
          m  = prod[46:23];
          g  = prod[22];
          st = |prod[21:0];
        end
        m_rnd = {1'b0, m} + {24'd0, g && (st || m[0])};
        if (m_rnd[24]) e = e + 10'd1;  // all ones rounded up: 1.0 · 2^(e+1), fraction 0
        if ($signed(e) >= 10'sd255) p = {sgn, 8'hFF, 23'd0};
        else if ($signed(e) <= 10'sd0) p = {sgn, 31'd0};
        else p = {sgn, e[7:0], m_rnd[22:0]};
      end
    end
  end

endmodule

`default_nettype wire
