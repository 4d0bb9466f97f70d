// SPDX-License-Identifier: Apache-2.0
// ntpu_pe: one processing element of the weight-stationary systolic array (rtl/ntpu_array.sv).
//
// Holds two weights (a double buffer: one loads while the other computes). Each cycle it takes an
// activation from the left and a partial sum from above, and registers
//   psum_q = mac(psum_in, a_in, w_q[a_buf_in])
// with mac = ntpu_mac_bf16 when a_bf16_in is 1 (bf16 operands, fp32 sums) and ntpu_mac_int8 when 0
// (the low bytes as int8, int32 sums with wrap-around), per docs/numerics.md. The activation and its
// two control bits are registered unchanged for the PE on the right. Latency 1 cycle, one MAC per
// cycle. The datapath runs every cycle with no valid bit: the array tracks validity, and a cycle
// without a valid row just computes a value nobody reads.
//
// Weight load: when w_valid is 1, buffer w_buf takes w_top[w_buf] (w_transpose = 0: the shift runs
// down the columns) or w_left[w_buf] (w_transpose = 1: the shift runs along the rows); the other
// buffer holds. w_q exposes both buffers to the neighbours below and to the right.
//
// The weights have no reset (datapath registers): they are undefined until loaded.
//
// STAGES > 1 pipelines the MAC for FPGAs (the single-cycle fp32 add runs at ~7 MHz on an
// iCE40UP5K): the product is registered on its own, so an activation (a_in) meets the partial sum
// it is added to one cycle later (psum_in of the next cycle), and the add takes STAGES cycles
// (ntpu_fp32_add_pipe with STAGES - 1 registers, then psum_q):
//   psum_q(t + STAGES) = mac(psum_in(t), a_in(t - 1), w_q[a_buf_in(t - 1)] at t - 1)
// Same results bit for bit; ntpu_array skews its rows to match.
//
// BF16_EN = 0 (ntpu_array with BF16_SHARED): int8 only, STAGES = 1; a bf16 row computes a value
// nobody reads (the array's shared unit does bf16 rows).
//
// en = 0 holds the activation and partial-sum registers (and keeps the fp units idle in
// simulation): the array drops it when no row is in flight, which is the same as those cycles not
// happening. With STAGES > 1 the adder's own pipeline cannot hold, so the array keeps en at 1.
`default_nettype none

module ntpu_pe #(
  parameter int STAGES = 1,  // cycles from psum_in to psum_q: 1 (simulation) .. 5 (see above)
  parameter bit BF16_EN = 1  // 0: int8 MAC only (see above)
) (
  input  logic             clk,
  input  logic             en,           // 0: hold (no row in flight); weights load regardless
  // Weight shift
  input  logic             w_valid,      // shift buffer w_buf this cycle
  input  logic             w_buf,        // which buffer shifts
  input  logic             w_transpose,  // 0: take w_top, 1: take w_left
  input  logic [1:0][15:0] w_top,        // both buffers of the PE above (row 0: the beat's lane)
  input  logic [1:0][15:0] w_left,       // both buffers of the PE on the left (column 0: the lane)
  output logic [1:0][15:0] w_q,          // this PE's buffers: [b] is buffer b
  // Activation from the left, passed on to the right
  input  logic [15:0]      a_in,         // bf16, or int8 in the low byte
  input  logic             a_buf_in,     // weight buffer this activation multiplies with
  input  logic             a_bf16_in,    // dtype: 1 bf16 / fp32, 0 int8 / int32
  output logic [15:0]      a_q,
  output logic             a_buf_q,
  output logic             a_bf16_q,
  // Partial sum from above, passed down
  input  logic [31:0]      psum_in,      // fp32 or int32 bits
  output logic [31:0]      psum_q
);
  if (STAGES < 1 || STAGES > 5) begin : g_bad_cfg
    initial $fatal(1, "ntpu_pe: STAGES must be 1..5");
  end
  if (!BF16_EN && STAGES != 1) begin : g_bad_int8
    initial $fatal(1, "ntpu_pe: an int8-only PE has STAGES = 1");
  end

  logic [15:0] w_sel;

  assign w_sel = a_buf_in ? w_q[1] : w_q[0];

  always_ff @(posedge clk) begin
    if (en) begin
      a_q      <= a_in;
      a_buf_q  <= a_buf_in;
      a_bf16_q <= a_bf16_in;
    end
  end

  if (!BF16_EN) begin : g_int8
    logic unused_w_hi;  // bf16 weights are read by the array's shared unit
    assign unused_w_hi = ^w_sel[15:8];

    // One signed expression, the same sum modulo 2^32: Yosys then puts the multiply and the add
    // into the iCE40 DSP (42 LUT4s and 50 flip-flops a PE instead of 74 and 82). The sum's register
    // is kept in the fabric: Yosys 0.70's ice40_dsp otherwise packed one PE's psum register into
    // the next PE's SB_MAC16 as its C/D input register and left those inputs undriven, so the
    // iCEBreaker's bitstream lost a column's partial sums (found by make fpga-test; the netlist
    // check there, fpga/tools/netlist_check.py, fails on it).
    (* keep *) logic [31:0] sum_q;
    always_ff @(posedge clk) begin
      if (en) sum_q <= $signed(psum_in) + $signed(a_in[7:0]) * $signed(w_sel[7:0]);
    end
    assign psum_q = sum_q;
  end else if (STAGES == 1) begin : g_comb
    logic [31:0] prod_bf16;
    logic [31:0] sum_bf16;

    // Enabled only for bf16 rows: in Verilator the fp units then cost nothing on int8 rows.
    ntpu_bf16_mul u_mul (
      .en(a_bf16_in && en),
      .a (a_in),
      .b (w_sel),
      .p (prod_bf16)
    );

    ntpu_fp32_add u_add (
      .en(a_bf16_in && en),
      .x (psum_in),
      .y (prod_bf16),
      .s (sum_bf16)
    );

    // The int8 MAC in the register update alone (no 16-bit product in between), in 32-bit
    // unsigned words: the same sum modulo 2^32 as g_int8's signed expression. (b ^ 0x80) - 0x80 is
    // b's sign extension; Verilator writes $signed's as a mask, a negation and an OR that gcc does
    // not see as one sign-extending move (+9 % int8 speed while vsim ran these PEs, before decision
    // 0020). No board uses this PE, so no DSP mapping is lost.
    always_ff @(posedge clk) begin
      if (en && a_bf16_in) psum_q <= sum_bf16;
      else if (en) psum_q <= psum_in + ((32'(a_in[7:0]) ^ 32'h80) - 32'h80) * ((32'(w_sel[7:0]) ^ 32'h80) - 32'h80);
    end
  end else begin : g_pipe
    localparam int D = STAGES - 1;  // registers inside the adder, and on the int8 path to match
    logic [15:0] prod_int8;
    logic [31:0] prod_bf16;
    logic [31:0] prod_q;            // fp32 bits (bf16 row) or the sign-extended int8 product
    logic        bf16_q;
    logic [31:0] sum_bf16;
    logic [31:0] int_q [D];
    logic        bf16_d_q [D];

    assign prod_int8 = 16'($signed(a_in[7:0]) * $signed(w_sel[7:0]));

    ntpu_bf16_mul u_mul (
      .en(1'b1),
      .a (a_in),
      .b (w_sel),
      .p (prod_bf16)
    );

    always_ff @(posedge clk) begin
      prod_q <= a_bf16_in ? prod_bf16 : {{16{prod_int8[15]}}, prod_int8};
      bf16_q <= a_bf16_in;
    end

    ntpu_fp32_add_pipe #(
      .STAGES(D)
    ) u_add (
      .clk(clk),
      .x  (psum_in),
      .y  (prod_q),
      .s  (sum_bf16)
    );

    always_ff @(posedge clk) begin
      int_q[0] <= psum_in + prod_q;
      bf16_d_q[0] <= bf16_q;
      for (int k = 1; k < D; k++) begin
        int_q[k] <= int_q[k-1];
        bf16_d_q[k] <= bf16_d_q[k-1];
      end
      psum_q <= bf16_d_q[D-1] ? sum_bf16 : int_q[D-1];
    end
  end

  always_ff @(posedge clk) begin
    if (w_valid && !w_buf) begin
      w_q[0] <= w_transpose ? w_left[0] : w_top[0];
    end
    if (w_valid && w_buf) begin
      w_q[1] <= w_transpose ? w_left[1] : w_top[1];
    end
  end
endmodule

`default_nettype wire
