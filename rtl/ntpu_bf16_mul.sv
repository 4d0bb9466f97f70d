// SPDX-License-Identifier: Apache-2.0
// ntpu_bf16_mul: the exact product of two bf16 values, as fp32 bits (docs/numerics.md, step 2).
//
// Combinational. Two 8-bit significands give at most 16 significant bits, so the product is exact
// whenever its exponent is in fp32's normal range; above it the result is ±Inf, below it zero of the
// product's sign (fp32 would give a subnormal there, which the device flushes). Subnormal inputs
// read as zero of their sign; Inf·0 and NaN inputs give the canonical NaN 0x7FC00000.
//
// en is operand isolation: with en low the output is 0 and, in Verilator, none of the logic runs,
// which keeps int8 rows fast in simulation (a PE computes one dtype at a time).
`default_nettype none

module ntpu_bf16_mul (
  input  logic        en,  // 0: p = 0, nothing evaluated
  input  logic [15:0] a,   // bf16
  input  logic [15:0] b,   // bf16
  output logic [31:0] p    // fp32 bits of a·b
);
  logic        a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
  logic [15:0] sig;   // product of the significands, 1.0 at bit 14, in [2^14, 2^16)
  logic [9:0]  exp;   // biased product exponent, two's complement: -125 .. 382

  // Everything sits under `if (en)`, after defaults, so that Verilator keeps the branch and skips
  // the multiplier for int8 rows. `always @*` rather than always_comb: for always_comb, Icarus 11's
  // -Wall prints a "sorry: constant selects" line per part-select and instance, thousands in the
  // array.
  always @* begin
    a_zero = 1'b0;
    b_zero = 1'b0;
    a_inf  = 1'b0;
    b_inf  = 1'b0;
    a_nan  = 1'b0;
    b_nan  = 1'b0;
    sig    = 16'd0;
    exp    = 10'd0;
    p      = 32'd0;
    if (en) begin
      a_zero = a[14:7] == 8'h00;
      b_zero = b[14:7] == 8'h00;
      a_inf  = a[14:7] == 8'hFF && a[6:0] == 7'h00;
      b_inf  = b[14:7] == 8'hFF && b[6:0] == 7'h00;
      a_nan  = a[14:7] == 8'hFF && a[6:0] != 7'h00;
      b_nan  = b[14:7] == 8'hFF && b[6:0] != 7'h00;
      sig    = {8'h00, 1'b1, a[6:0]} * {8'h00, 1'b1, b[6:0]};
      exp    = {2'b00, a[14:7]} + {2'b00, b[14:7]} + {9'd0, sig[15]} - 10'd127;

      if (a_nan || b_nan || (a_inf && b_zero) || (b_inf && a_zero)) begin
        p = 32'h7FC0_0000;
      end else if (a_inf || b_inf || (!a_zero && !b_zero && !exp[9] && exp >= 10'd255)) begin
        p = {a[15] ^ b[15], 8'hFF, 23'd0};
      end else if (a_zero || b_zero || exp[9] || exp == 10'd0) begin
        p = {a[15] ^ b[15], 31'd0};
      end else if (sig[15]) begin
        p = {a[15] ^ b[15], exp[7:0], sig[14:0], 8'h00};
      end else begin
        p = {a[15] ^ b[15], exp[7:0], sig[13:0], 9'h000};
      end
    end
  end
endmodule

`default_nettype wire
