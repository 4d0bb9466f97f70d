// ntpu_fp32_add_pipe: ntpu_fp32_add (docs/numerics.md: fp32 add, RNE, subnormals read as zero and
// flushed, canonical NaN) split into three parts with registers between them, for FPGAs where the
// combinational adder is far too slow.
//
// Contract: s is bit-exact with ntpu_fp32_add's s for the x, y that entered STAGES cycles earlier;
// one new pair per cycle (fully pipelined, no stall, no valid bit: the caller tracks validity).
// The parts are: A classify, order and align; B add and normalize; C round and pack.
//   STAGES = 1: A | B, C -> s       (one register: between A and B)
//   STAGES = 2: A | B | C -> s      (registers after A and after B)
// s itself is combinational from the last register; the caller registers it (ntpu_pe does).
// The datapath registers have no reset and no enable.
`default_nettype none

module ntpu_fp32_add_pipe #(
  parameter int STAGES = 2  // register stages inside, 1 or 2 (see the header)
) (
  input  logic        clk,
  input  logic [31:0] x,
  input  logic [31:0] y,
  output logic [31:0] s     // x + y of STAGES cycles ago
);

  if (STAGES < 1 || STAGES > 2) begin : g_bad_cfg
    initial $fatal(1, "ntpu_fp32_add_pipe: STAGES must be 1 or 2");
  end

  // Result kinds decided in A from the operands alone; anything else comes out of the datapath.
  localparam logic [1:0] K_NUM = 2'd0;   // the datapath's sum
  localparam logic [1:0] K_NAN = 2'd1;   // canonical NaN
  localparam logic [1:0] K_INF = 2'd2;   // Inf of sign sp_sign
  localparam logic [1:0] K_ZERO = 2'd3;  // zero of sign sp_sign (both operands zero)

  // ---------------------------------------------------------------- A: classify, order, align
  // As ntpu_fp32_add: the smaller magnitude aligned to the larger with guard, round and sticky
  // bits. One operand zero (not both): the other one is the larger, so forcing the smaller's
  // significand to 0 makes the datapath return it unchanged (1.f + 0 normalizes and rounds back
  // to itself), and no separate result path is needed.
  logic [1:0]  a_kind;
  logic        a_sp_sign, a_sign, a_sub;
  logic [7:0]  a_exp;
  logic [26:0] a_m_hi, a_m_lo;

  always @* begin
    logic x_zero, y_zero, x_inf, y_inf, x_nan, y_nan, swap;
    logic [31:0] hi, lo;
    logic [7:0] d;
    logic [4:0] sh;
    logic [53:0] al;
    x_zero = x[30:23] == 8'h00;
    y_zero = y[30:23] == 8'h00;
    x_inf = x[30:23] == 8'hFF && x[22:0] == 23'd0;
    y_inf = y[30:23] == 8'hFF && y[22:0] == 23'd0;
    x_nan = x[30:23] == 8'hFF && x[22:0] != 23'd0;
    y_nan = y[30:23] == 8'hFF && y[22:0] != 23'd0;
    swap = y[30:0] > x[30:0];
    hi = swap ? y : x;
    lo = swap ? x : y;
    d = hi[30:23] - lo[30:23];
    sh = d > 8'd27 ? 5'd27 : d[4:0];
    al = {1'b1, lo[22:0], 3'b000, 27'd0} >> sh;
    a_sign = hi[31];
    a_exp = hi[30:23];
    a_m_hi = {1'b1, hi[22:0], 3'b000};
    a_m_lo = (x_zero || y_zero) ? 27'd0 : al[53:27] | {26'd0, al[26:0] != 27'd0};
    a_sub = hi[31] != lo[31] && !(x_zero || y_zero);
    a_kind = K_NUM;
    a_sp_sign = 1'b0;
    if (x_nan || y_nan || (x_inf && y_inf && x[31] != y[31])) begin
      a_kind = K_NAN;
    end else if (x_inf || y_inf) begin
      a_kind = K_INF;
      a_sp_sign = x_inf ? x[31] : y[31];
    end else if (x_zero && y_zero) begin
      a_kind = K_ZERO;
      a_sp_sign = x[31] & y[31];
    end
  end

  logic [1:0]  b_kind_q;
  logic        b_sp_sign_q, b_sign_q, b_sub_q;
  logic [7:0]  b_exp_q;
  logic [26:0] b_m_hi_q, b_m_lo_q;

  always_ff @(posedge clk) begin
    b_kind_q <= a_kind;
    b_sp_sign_q <= a_sp_sign;
    b_sign_q <= a_sign;
    b_sub_q <= a_sub;
    b_exp_q <= a_exp;
    b_m_hi_q <= a_m_hi;
    b_m_lo_q <= a_m_lo;
  end

  // ---------------------------------------------------------------- B: add, normalize
  logic [24:0] b_v;     // the normalized sum's top 25 bits: significand and round bit
  logic        b_stk;   // sticky: any bit below the round bit
  logic        b_zero;  // the sum is exactly 0
  logic [4:0]  b_lz;

  always @* begin
    logic [27:0] sum;
    logic [31:0] v;
    logic [4:0] lz;
    sum = b_sub_q ? {1'b0, b_m_hi_q} - {1'b0, b_m_lo_q} : {1'b0, b_m_hi_q} + {1'b0, b_m_lo_q};
    v = {sum, 4'h0};
    lz = 5'd0;
    if (v[31:16] == 16'd0) begin v = v << 16; lz = lz + 5'd16; end
    if (v[31:24] == 8'd0)  begin v = v << 8;  lz = lz + 5'd8;  end
    if (v[31:28] == 4'd0)  begin v = v << 4;  lz = lz + 5'd4;  end
    if (v[31:30] == 2'd0)  begin v = v << 2;  lz = lz + 5'd2;  end
    if (!v[31])            begin v = v << 1;  lz = lz + 5'd1;  end
    b_v = v[31:7];
    b_stk = v[6:0] != 7'd0;
    b_zero = sum == 28'd0;
    b_lz = lz;
  end

  // C's inputs: registered (STAGES = 2) or straight from B (STAGES = 1).
  logic [1:0]  c_kind;
  logic        c_sp_sign, c_sign, c_stk, c_zero;
  logic [7:0]  c_exp;
  logic [24:0] c_v;
  logic [4:0]  c_lz;

  if (STAGES == 2) begin : g_reg_c
    always_ff @(posedge clk) begin
      c_kind <= b_kind_q;
      c_sp_sign <= b_sp_sign_q;
      c_sign <= b_sign_q;
      c_exp <= b_exp_q;
      c_v <= b_v;
      c_stk <= b_stk;
      c_zero <= b_zero;
      c_lz <= b_lz;
    end
  end else begin : g_comb_c
    assign c_kind = b_kind_q;
    assign c_sp_sign = b_sp_sign_q;
    assign c_sign = b_sign_q;
    assign c_exp = b_exp_q;
    assign c_v = b_v;
    assign c_stk = b_stk;
    assign c_zero = b_zero;
    assign c_lz = b_lz;
  end

  // ---------------------------------------------------------------- C: round, pack
  logic [24:0] m_rnd;     // rounded significand with its carry-out; bit 23 is the hidden bit
  logic unused_hidden;    // 1 unless the rounding carried out, which m_rnd[24] tells
  assign unused_hidden = m_rnd[23];

  always @* begin
    logic [9:0] e;
    // c_v[24:1] is the significand, c_v[0] the round bit.
    m_rnd = {1'b0, c_v[24:1]} + {24'd0, c_v[0] && (c_stk || c_v[1])};
    e = {2'b00, c_exp} + 10'd1 - {5'd0, c_lz} + {9'd0, m_rnd[24]};
    if (c_kind == K_NAN) begin
      s = 32'h7FC0_0000;
    end else if (c_kind == K_INF) begin
      s = {c_sp_sign, 8'hFF, 23'd0};
    end else if (c_kind == K_ZERO) begin
      s = {c_sp_sign, 31'd0};
    end else if (c_zero) begin
      s = 32'd0;  // exact cancellation is +0 in round-to-nearest
    end else if (e[9] || e == 10'd0) begin
      s = {c_sign, 31'd0};
    end else if (e >= 10'd255) begin
      s = {c_sign, 8'hFF, 23'd0};
    end else begin
      s = {c_sign, e[7:0], m_rnd[22:0]};
    end
  end

endmodule

`default_nettype wire
