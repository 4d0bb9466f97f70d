// SPDX-License-Identifier: Apache-2.0
// ntpu_fp32_div: fp32 division as the device defines it (docs/numerics.md, "fp32 divide and square
// root"), BITS quotient bits a cycle.
//
// Subnormal inputs read as zero of their sign; the exact quotient is rounded to 24 bits, to nearest,
// ties to even, with an unbounded exponent (restoring division to 25 bits, the remainder as the
// sticky bit); then a result below 2^-126 in magnitude is flushed to zero of its sign and one past
// the largest finite value is ±Inf. x / 0 = ±Inf (x ≠ 0), 0 / 0, Inf / Inf and any NaN input give
// the canonical NaN 0x7FC00000. Bit-exact with ntpu_f32_div (sim/ref/numerics.c).
//
// Contract:
// - start is taken in any cycle (a start while busy abandons the division under way); x and y are
//   read in that cycle only.
// - done is high for one cycle, LATENCY = 25 / BITS + 1 cycles after the start cycle (26 at BITS = 1,
//   6 at BITS = 5), for every start, special operands included (lanes in lockstep stay in lockstep);
//   q is the quotient from then until the next start. busy is high from the cycle after start until
//   done.
// - BITS is 1, 5 or 25: BITS chained subtract-and-select stages a cycle, each about a 26-bit adder.
`default_nettype none

module ntpu_fp32_div #(
  parameter int BITS = 1  // quotient bits a cycle: 1, 5 or 25
) (
  input  logic        clk,
  input  logic        rst,
  input  logic        start,
  input  logic [31:0] x,
  input  logic [31:0] y,
  output logic        busy,
  output logic        done,
  output logic [31:0] q    // x / y, from done until the next start
);
  if (BITS != 1 && BITS != 5 && BITS != 25) begin : g_bad_bits
    initial $fatal(1, "ntpu_fp32_div: BITS must divide the 25 quotient bits: 1, 5 or 25");
  end
  localparam int STEPS = 25 / BITS;  // cycles of subtract-and-select; then the cycle that shows q

  logic        step;      // a cycle of subtract-and-select steps
  logic [25:0] rem_q;     // partial remainder, < 2 * divisor
  logic [24:0] quo_q;     // quotient bits so far: 1 integer bit, 23 fraction bits, guard
  logic [23:0] dv_q;      // divisor significand
  logic [9:0]  e_q;       // biased result exponent before rounding, two's complement
  logic        sgn_q;
  logic        spec_q;    // a special case: the result is spec_r_q
  logic [31:0] spec_r_q;

  ntpu_iter_count #(
    .STEPS(STEPS)
  ) u_count (
    .clk  (clk),
    .rst  (rst),
    .start(start),
    .step (step),
    .busy (busy),
    .done (done)
  );

  // One block, the steps before a start, so that every read of a register comes before any write
  // to it: Verilator then keeps no shadow copy of them, which it would otherwise make and copy back
  // every cycle in each of the idle Adam lanes' units.
  always_ff @(posedge clk) begin
    // ---------------------------------------------------------------- datapath
    if (!start && step) begin
      logic [25:0] rem;
      logic [24:0] quo;
      rem = rem_q;
      quo = quo_q;
      for (int i = 0; i < BITS; i++) begin
        if (rem >= {2'b00, dv_q}) begin
          rem = (rem - {2'b00, dv_q}) << 1;
          quo = {quo[23:0], 1'b1};
        end else begin
          rem = rem << 1;
          quo = {quo[23:0], 1'b0};
        end
      end
      rem_q <= rem;
      quo_q <= quo;
    end else if (start) begin
      logic xz, yz, xi, yi, xn, yn;
      logic [23:0] mx, my;
      xz = (x[30:23] == 8'h00);
      yz = (y[30:23] == 8'h00);
      xi = (x[30:23] == 8'hFF) && (x[22:0] == 23'd0);
      yi = (y[30:23] == 8'hFF) && (y[22:0] == 23'd0);
      xn = (x[30:23] == 8'hFF) && (x[22:0] != 23'd0);
      yn = (y[30:23] == 8'hFF) && (y[22:0] != 23'd0);
      mx = {1'b1, x[22:0]};
      my = {1'b1, y[22:0]};
      sgn_q <= x[31] ^ y[31];
      spec_q <= xz || yz || xi || yi || xn || yn;
      if (xn || yn || (xz && yz) || (xi && yi)) spec_r_q <= 32'h7FC0_0000;
      else if (xi || yz) spec_r_q <= {x[31] ^ y[31], 8'hFF, 23'd0};
      else spec_r_q <= {x[31] ^ y[31], 31'd0};  // 0 / y, x / Inf
      dv_q <= my;
      quo_q <= '0;
      // Scale the dividend so that the quotient is in [1, 2): its first bit is the integer bit.
      if (mx < my) begin
        rem_q <= {1'b0, mx, 1'b0};
        e_q <= 10'(x[30:23]) - 10'(y[30:23]) + 10'd126;
      end else begin
        rem_q <= {2'b00, mx};
        e_q <= 10'(x[30:23]) - 10'(y[30:23]) + 10'd127;
      end
    end
  end

  // ---------------------------------------------------------------- rounding (combinational)
  logic [24:0] m_rnd;     // rounded significand with its carry-out
  logic [9:0]  e;
  logic        unused_hidden;
  assign unused_hidden = m_rnd[23];
  assign m_rnd = {1'b0, quo_q[24:1]} + {24'd0, quo_q[0] && (rem_q != 26'd0 || quo_q[1])};
  assign e = e_q + {9'd0, m_rnd[24]};  // all ones rounded up: 1.0 · 2^(e+1), fraction 0
  assign q = spec_q ? spec_r_q
           : ($signed(e) >= 10'sd255) ? {sgn_q, 8'hFF, 23'd0}
           : ($signed(e) <= 10'sd0) ? {sgn_q, 31'd0}
           : {sgn_q, e[7:0], m_rnd[22:0]};

endmodule

`default_nettype wire
