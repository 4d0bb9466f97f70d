// SPDX-License-Identifier: Apache-2.0
// vsim's simulation form of rtl/ntpu_fp32_add.sv (docs/decisions/0025-one-rtl.md): the same module, written to
// simulate fast in Verilator, and held to its twin by the lockstep check (sim/vsim/README.md).
// ntpu_fp32_add: fp32 addition as the device defines it (docs/numerics.md, steps 1, 3 and 4).
//
// Combinational. IEEE 754 round to nearest, ties to even, except that subnormal inputs read as zero
// of their sign and a subnormal result is flushed to zero of its sign; x + (−x) = +0, −0 + −0 = −0,
// Inf + (−Inf) and any NaN input give the canonical NaN 0x7FC00000. Bit-exact with the fp32 add in
// ntpu_mac_bf16 (sim/ref/numerics.c) for every pair of inputs.
//
// en is operand isolation: with en low the output is 0 and, in Verilator, none of the logic runs.
`default_nettype none

module ntpu_fp32_add (
  input  logic        en,  // 0: s = 0, nothing evaluated
  input  logic [31:0] x,
  input  logic [31:0] y,
  output logic [31:0] s    // x + y
);
  // For two normal operands: the smaller magnitude is aligned to the larger with three extra bits
  // below its significand, guard, round, and a sticky bit ORing everything shifted further. That is
  // enough for correct rounding: bits are only lost when the exponents differ by 4 or more, and then
  // the result needs at most one bit of normalisation to the left, so the rounding position stays
  // above the sticky bit and the sticky bit only has to say "strictly between". When the exponents
  // differ by less, nothing is lost and even a long cancellation is exact.
  logic        x_zero, y_zero, x_inf, y_inf, x_nan, y_nan;
  logic        swap;     // |y| > |x|
  logic [31:0] hi, lo;   // the operands ordered by magnitude
  logic [7:0]  d;        // exponent difference, >= 0
  logic [4:0]  sh;       // d clamped: 27 already shifts the whole significand out
  logic [53:0] al;       // lo's significand and GRS bits, shifted; the low half is what fell off
  logic [26:0] m_hi, m_lo;
  logic [27:0] sum;      // one bit of carry above the 27
  logic [31:0] v;        // sum normalised so that its leading one is at bit 31
  logic [4:0]  lz;       // leading zeros of sum, counted in v's 32-bit frame
  logic [24:0] m_rnd;    // rounded significand with its carry-out; bit 23 is the hidden bit
  logic [9:0]  e;        // biased result exponent, two's complement
  logic        unused_hidden;

  assign unused_hidden = m_rnd[23];  // 1 unless the rounding carried out, which m_rnd[24] tells

  // Everything sits under `if (en)`, after defaults, so that Verilator keeps the branch and skips
  // the adder for int8 rows. `always @*` rather than always_comb: for always_comb, Icarus 11's
  // -Wall prints a "sorry: constant selects" line per part-select and instance, thousands in the
  // array.
  always @* begin
    x_zero = 1'b0;
    y_zero = 1'b0;
    x_inf  = 1'b0;
    y_inf  = 1'b0;
    x_nan  = 1'b0;
    y_nan  = 1'b0;
    swap   = 1'b0;
    hi     = 32'd0;
    lo     = 32'd0;
    d      = 8'd0;
    sh     = 5'd0;
    al     = 54'd0;
    m_hi   = 27'd0;
    m_lo   = 27'd0;
    sum    = 28'd0;
    v      = 32'd0;
    lz     = 5'd0;
    m_rnd  = 25'd0;
    e      = 10'd0;
    s      = 32'd0;
    if (en) begin   if (fast_ok) s = fast_s; else begin
      x_zero = x[30:23] == 8'h00;
      y_zero = y[30:23] == 8'h00;
      x_inf  = x[30:23] == 8'hFF && x[22:0] == 23'd0;
      y_inf  = y[30:23] == 8'hFF && y[22:0] == 23'd0;
      x_nan  = x[30:23] == 8'hFF && x[22:0] != 23'd0;
      y_nan  = y[30:23] == 8'hFF && y[22:0] != 23'd0;

      swap = y[30:0] > x[30:0];
      hi   = swap ? y : x;
      lo   = swap ? x : y;
      d    = hi[30:23] - lo[30:23];
      sh   = d > 8'd27 ? 5'd27 : d[4:0];
      m_hi = {1'b1, hi[22:0], 3'b000};
      al   = {1'b1, lo[22:0], 3'b000, 27'd0} >> sh;
      m_lo = al[53:27] | {26'd0, al[26:0] != 27'd0};
      if (hi[31] != lo[31]) begin
        sum = {1'b0, m_hi} - {1'b0, m_lo};
      end else begin
        sum = {1'b0, m_hi} + {1'b0, m_lo};
      end
      // Normalise by halving steps.

      v = {sum, 4'h0};
      if (v[31:16] == 16'd0) begin v = v << 16; lz = lz + 5'd16; end
      if (v[31:24] == 8'd0)  begin v = v << 8;  lz = lz + 5'd8;  end
      if (v[31:28] == 4'd0)  begin v = v << 4;  lz = lz + 5'd4;  end
      if (v[31:30] == 2'd0)  begin v = v << 2;  lz = lz + 5'd2;  end
      if (!v[31])            begin v = v << 1;  lz = lz + 5'd1;  end

      // v[31:8] is the significand, v[7] the round bit, v[6:0] sticky.
      m_rnd = {1'b0, v[31:8]} + {24'd0, v[7] && (v[6:0] != 7'd0 || v[8])};
      // sum's leading one at bit 27 (lz = 0) is one binade above hi's hidden bit at 26.
      e = {2'b00, hi[30:23]} + 10'd1 - {5'd0, lz} + {9'd0, m_rnd[24]};
      // vsim (docs/decisions/0019-vsim-fp-add.md): Verilator runs the steps above only when the
      // double add at the end of this module did not decide s (fast_ok low): for a zero,
      // subnormal, Inf or NaN operand, or a sum that cancels, overflows or falls below 2^-126.
      // Every other sum comes from the host's double add, the same value (the comment there says
      // why); this chain alone is what synthesis reads.






      if (x_nan || y_nan || (x_inf && y_inf && x[31] != y[31])) begin
        s = 32'h7FC0_0000;
      end else if (x_inf) begin
        s = {x[31], 8'hFF, 23'd0};
      end else if (y_inf) begin
        s = {y[31], 8'hFF, 23'd0};
      end else if (x_zero && y_zero) begin
        s = {x[31] & y[31], 31'd0};
      end else if (x_zero) begin
        s = y;
      end else if (y_zero) begin
        s = x;
      end else if (sum == 28'd0) begin
        s = 32'd0;  // exact cancellation is +0 in round-to-nearest
      end else if (e[9] || e == 10'd0) begin
        // Below 2^-126. Operands on the 2^-149 grid make such a sum exact, so no rounding
        // happened that could have lifted it back into range: flush.
        s = {hi[31], 31'd0};
      end else if (e >= 10'd255) begin
        s = {hi[31], 8'hFF, 23'd0};
      end else begin
        // A rounding carry-out leaves m_rnd = 2^24, whose fraction bits are zero either way.
        s = {hi[31], e[7:0], m_rnd[22:0]};
      end
    end   end
  end
  // The sum by the host's double add, when x and y are normal and their sum rounds to a normal fp32
  // value (fast_ok); the chain gives the same s then. Exact: the double add gives x + y rounded to 53
  // bits, and rounding that to 24 (to nearest, ties to even: add 2^28 - 1 and the lowest kept bit,
  // drop 29 bits, a carry moving into the exponent) gives x + y rounded once to 24 bits, because
  // 53 >= 2 * 24 + 2 (Figueroa, 1995). A block of its own, not a function: Verilator keeps a
  // function's arguments and locals in the model, a store and a load each.
  logic [63:0] fast_r;  // the double sum's bits
  logic [33:0] fast_m;  // its magnitude rounded to 24 bits: double exponent, 23 fraction bits
  logic        fast_ok;
  logic [31:0] fast_s;
  // A latch open while en: its outputs are read only then, and with en low (int8 rows) Verilator
  // does nothing but the test.
  always_latch begin
    if (en) begin
      // A normal fp32 value's bits as the same double: the exponent rebased from 127 to 1023.
      fast_r  = $realtobits($bitstoreal((64'({x[31], 3'b000, x[30:0]}) << 29) + 64'h3800_0000_0000_0000) +
                            $bitstoreal((64'({y[31], 3'b000, y[30:0]}) << 29) + 64'h3800_0000_0000_0000));
      fast_m  = 34'(({1'b0, fast_r[62:0]} + 64'h0FFF_FFFF + {63'd0, fast_r[29]}) >> 29);
      fast_ok = 8'(x[30:23] - 8'd1) < 8'd254 && 8'(y[30:23] - 8'd1) < 8'd254 &&
                11'(fast_m[33:23] - 11'd897) < 11'd254;
      fast_s  = {fast_r[63], 31'(fast_m - 34'h1_C000_0000)};
    end
  end
endmodule

`default_nettype wire
