// ntpu_bf16_mul: the exact product of two bf16 values, as fp32 bits (docs/numerics.md, step 2).
//
// Combinational. Two 8-bit significands give at most 16 significant bits, so the product is exact
// whenever its exponent is in fp32's normal range; above it the result is ±Inf, below it zero of the
// product's sign (fp32 would give a subnormal there, which the device flushes). Subnormal inputs
// read as zero of their sign; Inf·0 and NaN inputs give the canonical NaN 0x7FC00000.
//
// en is operand isolation: with en low the output is 0 and, in Verilator, none of the logic runs,
// which keeps int8 rows fast in simulation (the PE computes one dtype at a time).
`default_nettype none

module ntpu_bf16_mul (
  input  logic        en,  // 0: p = 0, nothing evaluated
  input  logic [15:0] a,   // bf16
  input  logic [15:0] b,   // bf16
  output logic [31:0] p    // fp32 bits of a·b
);
  // The whole computation sits in one function called under `if (en)`, so that Verilator inlines it
  // inside the branch instead of evaluating it every cycle.
  function automatic logic [31:0] mul(input logic [15:0] x, input logic [15:0] y);
    logic        sign;
    logic        x_zero, y_zero, x_inf, y_inf, x_nan, y_nan;
    logic [15:0] sig;  // product of the significands, 1.0 at bit 14, in [2^14, 2^16)
    logic [9:0]  exp;  // biased product exponent, two's complement: -125 .. 382
    logic [22:0] frac;

    sign   = x[15] ^ y[15];
    x_zero = x[14:7] == 8'h00;
    y_zero = y[14:7] == 8'h00;
    x_inf  = x[14:7] == 8'hFF && x[6:0] == 7'h00;
    y_inf  = y[14:7] == 8'hFF && y[6:0] == 7'h00;
    x_nan  = x[14:7] == 8'hFF && x[6:0] != 7'h00;
    y_nan  = y[14:7] == 8'hFF && y[6:0] != 7'h00;

    sig  = {8'h00, 1'b1, x[6:0]} * {8'h00, 1'b1, y[6:0]};
    exp  = {2'b00, x[14:7]} + {2'b00, y[14:7]} + {9'd0, sig[15]} - 10'd127;
    frac = sig[15] ? {sig[14:0], 8'h00} : {sig[13:0], 9'h000};

    if (x_nan || y_nan || (x_inf && y_zero) || (y_inf && x_zero)) begin
      mul = 32'h7FC0_0000;
    end else if (x_inf || y_inf) begin
      mul = {sign, 8'hFF, 23'd0};
    end else if (x_zero || y_zero || exp[9] || exp == 10'd0) begin
      mul = {sign, 31'd0};
    end else if (exp >= 10'd255) begin
      mul = {sign, 8'hFF, 23'd0};
    end else begin
      mul = {sign, exp[7:0], frac};
    end
  endfunction

  always_comb begin
    if (en) begin
      p = mul(a, b);
    end else begin
      p = 32'd0;
    end
  end
endmodule

`default_nettype wire
