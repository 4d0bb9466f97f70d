// SPDX-License-Identifier: Apache-2.0
// ntpu_vec: the vector unit's lane datapath for ACT, RELU_GRAD and COLSUM (docs/isa.md, "Version
// 1.1"), N lanes wide, one row per cycle.
//
// Per lane n of each row in (x = s_in_acc lane n, m = s_in_mask lane n):
//   ACT, OUT 0..2 (fp32):  t = bias ? fadd(x, aux0[n]) : x;  t = relu ? relu_f32(t) : t
//   ACT, OUT 3 (int8):     t = x + (bias ? aux0[n] : 0) mod 2^32;  t = relu ? max(t, 0) : t;
//                          y = requantize(t, mult[n], clamp(shift[n], 0, 31), 0), sign-extended
//   RELU_GRAD:             t = positive(m) ? x : +0
//   COLSUM:                s = fadd(s, x) for every row, s starting at accumulate ? aux0[n] : +0;
//                          one row out, s, after the row marked last
// fadd is ntpu_fp32_add, relu_f32 ntpu_relu_f32, positive() "bf16 > 0" (a subnormal is zero), and
// the result row is written as OUT says: 0 and 1 as bf16 (ntpu_bf16_from_f32_bits) in the low N*16
// bits, 2 (and COLSUM) as the 32 bits, 3 as int8 sign-extended to 16 bits in the low N*16 bits.
// Unused high bits are 0.
//
// Contract:
// - s_in and m_out are valid/ready streams. A beat with s_in_void carries no row: it adds nothing
//   and produces nothing, except that, marked last, it ends a COLSUM (so COLSUM of 0 rows sends one
//   void last beat and gets aux0 or +0 back, bit for bit, with nothing flushed).
// - The operation inputs (op ... shift) are held constant from the first beat of an operation in
//   until its last result is out (busy low); the unit keeps no copy of them.
// - Pipeline: one input register, then three stages (add / select; multiply; round), all moving
//   together: s_in_ready = !m_out_valid || m_out_ready (ready follows ready, combinationally).
//   Latency 4 cycles from an accepted beat to its m_out_valid when nothing stalls; one row per
//   cycle sustained, COLSUM included (its fp32 add closes the loop within one cycle).
// - m_out_data comes from registers (through a 2:1 select held by the operation inputs).
// - Simulation cost: the fp32 adders are enabled only in cycles where stage B takes a row that
//   adds, the requantizers only while an int8 ACT runs, and the rest of the lane logic sits in the
//   clocked blocks under the stage enables, so an idle unit costs Verilator little.
`default_nettype none

module ntpu_vec #(
  parameter int N = 8  // lanes, 2..32
) (
  input  logic            clk,
  input  logic            rst,
  // operation (held while busy)
  input  logic [1:0]      op,          // VOP_ACT, VOP_RELU_GRAD, VOP_COLSUM
  input  logic            bias,        // ACT: add aux0
  input  logic            relu,        // ACT: ReLU
  input  logic [1:0]      out,         // ACT, RELU_GRAD: OUT field (docs/isa.md); 3 = int8, ACT only
  input  logic            accumulate,  // COLSUM: the sum starts at aux0
  input  logic [N*32-1:0] aux0,        // ACT: bias row; COLSUM: start row
  input  logic [N*32-1:0] mult,        // ACT int8: multiplier row (int32 lanes)
  input  logic [N*32-1:0] shift,       // ACT int8: shift row (int32 lanes)
  // rows in
  input  logic            s_in_valid,
  output logic            s_in_ready,
  input  logic [N*32-1:0] s_in_acc,    // ACC row: lane n at [32*n +: 32]
  input  logic [N*16-1:0] s_in_mask,   // RELU_GRAD: UB mask row, lane n at [16*n +: 16]
  input  logic            s_in_last,   // COLSUM: the sum's last beat
  input  logic            s_in_void,   // no row in this beat
  // rows out
  output logic            m_out_valid,
  input  logic            m_out_ready,
  output logic [N*32-1:0] m_out_data,
  output logic            busy         // a beat or a partial sum is inside
);

  localparam logic [1:0] VOP_ACT = 2'd0;
  localparam logic [1:0] VOP_RELU_GRAD = 2'd1;
  localparam logic [1:0] VOP_COLSUM = 2'd2;
  localparam logic [1:0] OUT_ACC = 2'd2;
  localparam logic [1:0] OUT_INT8 = 2'd3;

  if (N < 2 || N > 32) begin : g_bad_n
    initial $fatal(1, "ntpu_vec: N must be 2..32");
  end

  logic adv;        // every stage moves
  logic is_colsum, is_int8, bf16_out, use_add;

  assign adv = !m_out_valid || m_out_ready;
  assign s_in_ready = adv;
  assign is_colsum = (op == VOP_COLSUM);
  assign is_int8 = (op == VOP_ACT) && (out == OUT_INT8);
  assign bf16_out = !is_colsum && out != OUT_ACC && out != OUT_INT8;
  assign use_add = is_colsum || (op == VOP_ACT && bias && !is_int8);

  // ---------------------------------------------------------------- stage A: input register
  logic            a_v_q, a_last_q, a_void_q;
  logic [N*32-1:0] a_x_q;
  logic [N*16-1:0] a_m_q;

  always_ff @(posedge clk) begin
    if (rst) a_v_q <= 1'b0;
    else if (adv) a_v_q <= s_in_valid;
  end

  always_ff @(posedge clk) begin
    if (adv && s_in_valid) begin
      a_x_q <= s_in_acc;
      a_m_q <= s_in_mask;
      a_last_q <= s_in_last;
      a_void_q <= s_in_void;
    end
  end

  // ---------------------------------------------------------------- stage B: add, ReLU, select
  // b_q doubles as COLSUM's running sum: it changes only when a beat passes, and sum_q says that
  // it holds a partial sum (otherwise the sum starts from aux0 or +0).
  //
  // Simulation speed: the lane logic of stages B and D is written as functions called inside the
  // clocked blocks, under the enable of the stage, so that Verilator runs none of it while the unit
  // is idle (always_comb logic would run every cycle). Only the adders are separate, as modules.
  logic            b_v_q, sum_q;
  logic [N*32-1:0] b_q;
  logic            a_go;     // stage A's beat moves into stage B
  logic            add_en;
  logic [N*32-1:0] s_cur;    // COLSUM: the sum so far
  logic [N*32-1:0] add_a, add_b, add_s;

  assign a_go = adv && a_v_q;
  assign add_en = a_go && use_add && !a_void_q;
  assign s_cur = sum_q ? b_q : (accumulate ? aux0 : '0);
  assign add_a = is_colsum ? s_cur : a_x_q;
  assign add_b = is_colsum ? a_x_q : aux0;

  for (genvar n = 0; n < N; n++) begin : g_add
    ntpu_fp32_add u_add (
      .en(add_en),
      .x (add_a[32*n +: 32]),
      .y (add_b[32*n +: 32]),
      .s (add_s[32*n +: 32])
    );
  end

  // One lane of stage B. x: ACC lane, ax: aux0 lane, sc: the sum so far, sum: add_s, m: mask lane.
  function automatic logic [31:0] lane_b(input logic [31:0] x, input logic [31:0] ax,
                                         input logic [31:0] sc, input logic [31:0] sum,
                                         input logic [15:0] m);
    logic [31:0] t;
    t = x;
    if (is_colsum) begin
      t = a_void_q ? sc : sum;
    end else if (op == VOP_RELU_GRAD) begin
      // bf16 m > 0, a subnormal being zero: sign clear, exponent not 0, not NaN.
      t = (!m[15] && m[14:7] != 8'h00 && m[14:0] <= 15'h7F80) ? x : 32'd0;
    end else if (is_int8) begin
      t = bias ? x + ax : x;
      if (relu && t[31]) t = 32'd0;
    end else begin
      if (bias) t = sum;
      // ReLU is a select: NaN keeps its bits, -0 and -Inf become +0.
      if (relu && t[31] && !(t[30:23] == 8'hFF && t[22:0] != 23'd0)) t = 32'd0;
    end
    return t;
  endfunction

  always_ff @(posedge clk) begin
    if (rst) begin
      b_v_q <= 1'b0;
      sum_q <= 1'b0;
    end else if (adv) begin
      b_v_q <= a_v_q && (is_colsum ? a_last_q : !a_void_q);
      if (a_v_q && is_colsum) sum_q <= !a_last_q;
    end
  end

  always_ff @(posedge clk) begin
    if (a_go) begin
      for (int n = 0; n < N; n++) begin
        b_q[32*n +: 32] <= lane_b(a_x_q[32*n +: 32], aux0[32*n +: 32], s_cur[32*n +: 32],
                                 add_s[32*n +: 32], a_m_q[16*n +: 16]);
      end
    end
  end

  // ---------------------------------------------------------------- stages C and D
  // fp32 results: C holds the value, D its output form. int8: the requantizer's two stages.
  logic            c_v_q, d_v_q;
  logic [N*32-1:0] c_q, d_q;
  logic [N*8-1:0]  y8;
  logic            rq_ce;

  assign rq_ce = adv && is_int8;

  for (genvar n = 0; n < N; n++) begin : g_rq
    ntpu_requant u_rq (
      .clk  (clk),
      .ce   (rq_ce),
      .x    (b_q[32*n +: 32]),
      .mult (mult[32*n +: 32]),
      .shift(shift[32*n +: 32]),
      .y    (y8[8*n +: 8])
    );
  end

  // fp32 -> bf16 as ntpu_bf16_from_f32_bits: NaN keeps sign and top fraction bits and is made
  // quiet; a subnormal becomes zero of its sign; otherwise RNE on the 16 dropped bits (adding
  // 0x7FFF plus the kept LSB), carrying into the exponent up to Inf. Never past 32 bits.
  function automatic logic [15:0] bf16_of(input logic [31:0] c);
    logic [31:0] f;
    if (c[30:23] == 8'hFF && c[22:0] != 23'd0) return c[31:16] | 16'h0040;
    f = (c[30:23] == 8'h00) ? {c[31], 31'd0} : c;
    return 16'((f + 32'h0000_7FFF + {31'd0, f[16]}) >> 16);
  endfunction

  always_ff @(posedge clk) begin
    if (rst) begin
      c_v_q <= 1'b0;
      d_v_q <= 1'b0;
    end else if (adv) begin
      c_v_q <= b_v_q;
      d_v_q <= c_v_q;
    end
  end

  // Separate blocks for c_q and d_q: d_q reads the old c_q, and Verilator would otherwise keep a
  // shadow copy of c_q every cycle.
  always_ff @(posedge clk) begin
    if (adv && b_v_q && !is_int8) c_q <= b_q;
  end

  always_ff @(posedge clk) begin
    if (adv && c_v_q && !is_int8) begin
      if (bf16_out) begin
        d_q[N*32-1:N*16] <= '0;
        for (int n = 0; n < N; n++) d_q[16*n +: 16] <= bf16_of(c_q[32*n +: 32]);
      end else begin
        d_q <= c_q;
      end
    end
  end

  // 16-bit lanes of the int8 result: in the low N*16 bits, the rest 0.
  logic [N*16-1:0] y16;
  for (genvar n = 0; n < N; n++) begin : g_lane_y
    assign y16[16*n +: 16] = {{8{y8[8*n+7]}}, y8[8*n +: 8]};
  end

  assign m_out_valid = d_v_q;
  assign m_out_data = is_int8 ? {{(N * 16){1'b0}}, y16} : d_q;
  assign busy = a_v_q || b_v_q || c_v_q || d_v_q || sum_q;

endmodule

`default_nettype wire
