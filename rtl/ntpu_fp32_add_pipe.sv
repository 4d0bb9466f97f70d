// SPDX-License-Identifier: Apache-2.0
// ntpu_fp32_add_pipe: ntpu_fp32_add (docs/numerics.md: fp32 add, RNE, subnormals read as zero and
// flushed, canonical NaN) cut into five parts with registers between some of them, for FPGAs where
// the combinational adder is far too slow (about 7 MHz on an iCE40UP5K).
//
// Contract: s is bit-exact with ntpu_fp32_add's s for the x, y that entered STAGES cycles earlier;
// one new pair per cycle (fully pipelined, no stall, no valid bit: the caller tracks validity).
// The parts, and where STAGES puts the registers ("|"):
//   A1 classify, compare magnitudes, exponent difference   A2 order, align, sticky
//   B1 add, count leading zeros                            B2 normalize   C round, pack
//   STAGES = 1:  A1 A2 | B1 B2 C          STAGES = 3:  A1 | A2 | B1 | B2 C
//   STAGES = 2:  A1 A2 | B1 | B2 C        STAGES = 4:  A1 | A2 | B1 | B2 | C
// s is combinational from the last register; the caller registers it (ntpu_pe does).
// The datapath registers have no reset and no enable.
`default_nettype none

module ntpu_fp32_add_pipe #(
  parameter int STAGES = 2  // registers inside, 1..4 (see the header)
) (
  input  logic        clk,
  input  logic [31:0] x,
  input  logic [31:0] y,
  output logic [31:0] s     // x + y of STAGES cycles ago
);

  if (STAGES < 1 || STAGES > 4) begin : g_bad_cfg
    initial $fatal(1, "ntpu_fp32_add_pipe: STAGES must be 1..4");
  end

  localparam bit CUT_A1 = STAGES >= 3;  // a register after A1
  localparam bit CUT_B1 = STAGES >= 2;  // after B1
  localparam bit CUT_B2 = STAGES >= 4;  // after B2 (there is always one after A2)

  // Result kinds decided from the operands alone; anything else comes out of the datapath.
  localparam logic [1:0] K_NUM = 2'd0;   // the datapath's sum
  localparam logic [1:0] K_NAN = 2'd1;   // canonical NaN
  localparam logic [1:0] K_INF = 2'd2;   // Inf of sign sp_sign
  localparam logic [1:0] K_ZERO = 2'd3;  // zero of sign sp_sign (both operands zero)

  // ---------------------------------------------------------------- A1
  // The magnitude compare and both exponent differences run side by side; the compare picks one.
  // One operand zero (not both): the other is the larger, and forcing the smaller's significand
  // to 0 makes the datapath return it unchanged (1.f + 0 normalizes and rounds back to itself).
  logic [1:0]  a1_kind;
  logic        a1_sp_sign, a1_swap, a1_one_zero;
  logic [4:0]  a1_sh;

  always @* begin
    logic x_zero, y_zero, x_inf, y_inf, x_nan, y_nan;
    logic [7:0] dxy, dyx;
    x_zero = x[30:23] == 8'h00;
    y_zero = y[30:23] == 8'h00;
    x_inf = x[30:23] == 8'hFF && x[22:0] == 23'd0;
    y_inf = y[30:23] == 8'hFF && y[22:0] == 23'd0;
    x_nan = x[30:23] == 8'hFF && x[22:0] != 23'd0;
    y_nan = y[30:23] == 8'hFF && y[22:0] != 23'd0;
    a1_swap = y[30:0] > x[30:0];
    dxy = x[30:23] - y[30:23];
    dyx = y[30:23] - x[30:23];
    // A difference of 27 or more already shifts the whole significand into the sticky bit.
    if (a1_swap) a1_sh = dyx > 8'd27 ? 5'd27 : dyx[4:0];
    else a1_sh = dxy > 8'd27 ? 5'd27 : dxy[4:0];
    a1_one_zero = x_zero || y_zero;
    a1_kind = K_NUM;
    a1_sp_sign = 1'b0;
    if (x_nan || y_nan || (x_inf && y_inf && x[31] != y[31])) begin
      a1_kind = K_NAN;
    end else if (x_inf || y_inf) begin
      a1_kind = K_INF;
      a1_sp_sign = x_inf ? x[31] : y[31];
    end else if (x_zero && y_zero) begin
      a1_kind = K_ZERO;
      a1_sp_sign = x[31] & y[31];
    end
  end

  // A2's inputs.
  localparam int A1_W = 64 + 2 + 1 + 1 + 1 + 5;
  logic [A1_W-1:0] a1_d, a2_in;
  logic [31:0] a2_x, a2_y;
  logic [1:0]  a2_kind;
  logic        a2_sp_sign, a2_swap, a2_one_zero;
  logic [4:0]  a2_sh;

  assign a1_d = {x, y, a1_kind, a1_sp_sign, a1_swap, a1_one_zero, a1_sh};
  if (CUT_A1) begin : g_cut_a1
    always_ff @(posedge clk) a2_in <= a1_d;
  end else begin : g_join_a1
    assign a2_in = a1_d;
  end
  assign {a2_x, a2_y, a2_kind, a2_sp_sign, a2_swap, a2_one_zero, a2_sh} = a2_in;

  // ---------------------------------------------------------------- A2
  // The sticky bit comes from the bits the shift drops, found with a mask instead of a wider
  // shifter: the same bit as ntpu_fp32_add's OR over the 27 bits shifted out.
  logic        a2_sign, a2_sub;
  logic [7:0]  a2_exp;
  logic [26:0] a2_m_hi, a2_m_lo;

  always @* begin
    logic [31:0] hi;
    logic [22:0] lo_frac;
    logic lo_sign;
    logic [26:0] lo_m, mask;
    hi = a2_swap ? a2_y : a2_x;
    lo_frac = a2_swap ? a2_x[22:0] : a2_y[22:0];
    lo_sign = a2_swap ? a2_x[31] : a2_y[31];
    lo_m = {1'b1, lo_frac, 3'b000};
    mask = ~(27'h7FF_FFFF << a2_sh);
    a2_sign = hi[31];
    a2_exp = hi[30:23];
    a2_m_hi = {1'b1, hi[22:0], 3'b000};
    a2_m_lo = a2_one_zero ? 27'd0 : (lo_m >> a2_sh) | {26'd0, (lo_m & mask) != 27'd0};
    a2_sub = hi[31] != lo_sign && !a2_one_zero;
  end

  localparam int A2_W = 2 + 1 + 1 + 1 + 8 + 27 + 27;
  logic [A2_W-1:0] b1_in;
  logic [1:0]  b1_kind;
  logic        b1_sp_sign, b1_sign, b1_sub;
  logic [7:0]  b1_exp;
  logic [26:0] b1_m_hi, b1_m_lo;

  always_ff @(posedge clk) begin
    b1_in <= {a2_kind, a2_sp_sign, a2_sign, a2_sub, a2_exp, a2_m_hi, a2_m_lo};
  end
  assign {b1_kind, b1_sp_sign, b1_sign, b1_sub, b1_exp, b1_m_hi, b1_m_lo} = b1_in;

  // ---------------------------------------------------------------- B1: add, leading zeros
  logic [27:0] b1_sum;
  logic [4:0]  b1_lz;   // leading zeros of the sum in 28 bits (don't care for a zero sum)

  // The count is a tree (nibbles, then pairs of pairs), not a priority chain: a chain of 28 is
  // the slowest path of the adder on an iCE40. The four ones below the sum keep every level's
  // "is there a one" flag simple; they only matter for a zero sum, whose count nobody uses.
  always @* begin
    logic [31:0] t;
    logic [7:0] nz1;    // nibble g has a one
    logic [15:0] lz1;   // nibble g's leading zeros at [2g +: 2]
    logic [3:0] nz2;
    logic [11:0] lz2;   // [3g +: 3]
    logic [7:0] lz3;    // [4g +: 4]
    logic nz3;          // a one in the top half
    b1_sum = b1_sub ? {1'b0, b1_m_hi} - {1'b0, b1_m_lo} : {1'b0, b1_m_hi} + {1'b0, b1_m_lo};
    t = {b1_sum, 4'hF};
    for (int g = 0; g < 8; g++) begin  // nibble g holds bits 31-4g .. 28-4g
      logic [3:0] q;
      q = t[31 - 4 * g -: 4];
      nz1[g] = q != 4'd0;
      lz1[2 * g +: 2] = q[3] ? 2'd0 : q[2] ? 2'd1 : q[1] ? 2'd2 : 2'd3;
    end
    for (int g = 0; g < 4; g++) begin
      nz2[g] = nz1[2 * g] || nz1[2 * g + 1];
      lz2[3 * g +: 3] = nz1[2 * g] ? {1'b0, lz1[4 * g +: 2]} : {1'b1, lz1[4 * g + 2 +: 2]};
    end
    for (int g = 0; g < 2; g++) begin
      lz3[4 * g +: 4] = nz2[2 * g] ? {1'b0, lz2[6 * g +: 3]} : {1'b1, lz2[6 * g + 3 +: 3]};
    end
    nz3 = nz2[0] || nz2[1];
    b1_lz = nz3 ? {1'b0, lz3[3:0]} : {1'b1, lz3[7:4]};
  end

  localparam int B1_W = 2 + 1 + 1 + 8 + 28 + 5;
  logic [B1_W-1:0] b1_d, b2_in;
  logic [1:0]  b2_kind;
  logic        b2_sp_sign, b2_sign;
  logic [7:0]  b2_exp;
  logic [27:0] b2_sum;
  logic [4:0]  b2_lz;

  assign b1_d = {b1_kind, b1_sp_sign, b1_sign, b1_exp, b1_sum, b1_lz};
  if (CUT_B1) begin : g_cut_b1
    always_ff @(posedge clk) b2_in <= b1_d;
  end else begin : g_join_b1
    assign b2_in = b1_d;
  end
  assign {b2_kind, b2_sp_sign, b2_sign, b2_exp, b2_sum, b2_lz} = b2_in;

  // ---------------------------------------------------------------- B2: normalize
  // The sum's leading one goes to bit 31 of {sum, 4'h0}, as ntpu_fp32_add's halving steps put it.
  // Everything C needs beyond the rounding increment is prepared here, for both outcomes of the
  // increment's carry-out (which happens exactly when the significand is all ones and rounds up).
  logic [23:0] b2_sig;    // significand before rounding
  logic        b2_up;     // round up: round bit set, and sticky or the significand odd
  logic        b2_all1;   // the significand is all ones: rounding up carries out
  logic        b2_zero;   // the sum is exactly 0
  logic [7:0]  b2_e0, b2_e1;        // exponent bits without and with the carry
  logic        b2_und0, b2_und1;    // below 2^-126, without and with the carry
  logic        b2_ovf0, b2_ovf1;    // Inf, without and with the carry

  always @* begin
    logic [31:0] v;
    logic [9:0] e0, e1;
    v = {b2_sum, 4'h0} << b2_lz;
    b2_sig = v[31:8];
    b2_up = v[7] && (v[6:0] != 7'd0 || v[8]);
    b2_all1 = v[31:8] == 24'hFF_FFFF;
    b2_zero = b2_sum == 28'd0;
    // sum's leading one at bit 27 (lz = 0) is one binade above the larger operand's hidden bit.
    e0 = {2'b00, b2_exp} + 10'd1 - {5'd0, b2_lz};
    e1 = e0 + 10'd1;
    b2_e0 = e0[7:0];
    b2_e1 = e1[7:0];
    b2_und0 = e0[9] || e0 == 10'd0;
    b2_und1 = e1[9] || e1 == 10'd0;
    b2_ovf0 = e0 >= 10'd255;
    b2_ovf1 = e1 >= 10'd255;
  end

  localparam int B2_W = 2 + 1 + 1 + 24 + 1 + 1 + 1 + 8 + 8 + 4;
  logic [B2_W-1:0] b2_d, c_in;
  logic [1:0]  c_kind;
  logic        c_sp_sign, c_sign, c_up, c_all1, c_zero, c_und0, c_und1, c_ovf0, c_ovf1;
  logic [23:0] c_sig;
  logic [7:0]  c_e0, c_e1;

  assign b2_d = {b2_kind, b2_sp_sign, b2_sign, b2_sig, b2_up, b2_all1, b2_zero, b2_e0, b2_e1,
                 b2_und0, b2_und1, b2_ovf0, b2_ovf1};
  if (CUT_B2) begin : g_cut_b2
    always_ff @(posedge clk) c_in <= b2_d;
  end else begin : g_join_b2
    assign c_in = b2_d;
  end
  assign {c_kind, c_sp_sign, c_sign, c_sig, c_up, c_all1, c_zero, c_e0, c_e1,
          c_und0, c_und1, c_ovf0, c_ovf1} = c_in;

  // ---------------------------------------------------------------- C: round, pack
  // A carry out of the rounding leaves a significand of 2^24, whose fraction bits are zero: the
  // increment's low 23 bits are then zero too.
  logic [23:0] m_rnd;
  logic        carry;
  logic unused_hidden;    // the hidden bit of the rounded significand
  assign unused_hidden = m_rnd[23];

  always @* begin
    m_rnd = c_sig + {23'd0, c_up};
    carry = c_all1 && c_up;
    if (c_kind == K_NAN) begin
      s = 32'h7FC0_0000;
    end else if (c_kind == K_INF) begin
      s = {c_sp_sign, 8'hFF, 23'd0};
    end else if (c_kind == K_ZERO) begin
      s = {c_sp_sign, 31'd0};
    end else if (c_zero) begin
      s = 32'd0;  // exact cancellation is +0 in round-to-nearest
    end else if (carry ? c_und1 : c_und0) begin
      // Below 2^-126: operands on the 2^-149 grid make such a sum exact, so flush.
      s = {c_sign, 31'd0};
    end else if (carry ? c_ovf1 : c_ovf0) begin
      s = {c_sign, 8'hFF, 23'd0};
    end else begin
      s = {c_sign, carry ? c_e1 : c_e0, m_rnd[22:0]};
    end
  end

endmodule

`default_nettype wire
