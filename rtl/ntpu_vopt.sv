// SPDX-License-Identifier: Apache-2.0
// ntpu_vopt: the lane datapath of OPTIM (docs/isa.md, "Version 1.3"), N lanes, one fp32
// multiplier and one fp32 adder per lane, stepped by ntpu_vseq through one row at a time.
//
// Per lane n, with the operand registers loaded (g, p, and s for momentum), the steps compute
// exactly ntpu_optim_f32 (sim/ref/numerics.c), one rounding each:
//   step 0: m = fmul(wd[n], p)       step 3: s = fadd(m, t)          (momentum)
//   step 1: t = fadd(g, m)           step 4: m = fmul(lr[n], mom ? s : t)
//   step 2: m = fmul(mu[n], s)  (momentum)      step 5: p = fadd(p, -m)
// fmul is ntpu_fp32_mul, fadd ntpu_fp32_add; -m flips the sign bit.
//
// Contract:
// - One action per cycle, chosen by the caller: ld_g / ld_p / ld_s take rdata into g / p / s;
//   step_en runs step `step`. Results are in the registers the next cycle; p_out and s_out are
//   those registers.
// - lr, wd, mu and mom are held by the caller while a row is in the steps.
// - No valid bits and no reset: the caller's FSM knows what the registers hold.
`default_nettype none

module ntpu_vopt #(
  parameter int N = 8  // lanes, 2..32
) (
  input  logic            clk,
  input  logic            ld_g,
  input  logic            ld_p,
  input  logic            ld_s,
  input  logic [N*32-1:0] rdata,   // ACC row being loaded
  input  logic            step_en,
  input  logic [2:0]      step,    // 0..5
  input  logic            mom,     // momentum: steps 2, 3 run, step 4 reads s
  input  logic [N*32-1:0] lr,
  input  logic [N*32-1:0] wd,
  input  logic [N*32-1:0] mu,
  output logic [N*32-1:0] p_out,
  output logic [N*32-1:0] s_out
);

  if (N < 2 || N > 32) begin : g_bad_n
    initial $fatal(1, "ntpu_vopt: N must be 2..32");
  end

  logic mul_en, add_en;
  assign mul_en = step_en && (step == 3'd0 || step == 3'd2 || step == 3'd4);
  assign add_en = step_en && (step == 3'd1 || step == 3'd3 || step == 3'd5);

  for (genvar n = 0; n < N; n++) begin : g_lane
    logic [31:0] p_q, g_q, s_q, t_q, m_q;
    logic [31:0] mx, my, mp, ax, ay, as;
    assign mx = (step == 3'd0) ? wd[32*n +: 32] : (step == 3'd2) ? mu[32*n +: 32] : lr[32*n +: 32];
    assign my = (step == 3'd0) ? p_q : (step == 3'd2 || mom) ? s_q : t_q;
    assign ax = (step == 3'd1) ? g_q : (step == 3'd3) ? m_q : p_q;
    assign ay = (step == 3'd1) ? m_q : (step == 3'd3) ? t_q : {~m_q[31], m_q[30:0]};
    ntpu_fp32_mul u_mul (
      .en(mul_en),
      .x (mx),
      .y (my),
      .p (mp)
    );

    ntpu_fp32_add u_add (
      .en(add_en),
      .x (ax),
      .y (ay),
      .s (as)
    );

    always_ff @(posedge clk) begin
      if (ld_g) g_q <= rdata[32*n +: 32];
      if (ld_s) s_q <= rdata[32*n +: 32];
      else if (add_en && step == 3'd3) s_q <= as;
      if (ld_p) p_q <= rdata[32*n +: 32];
      else if (add_en && step == 3'd5) p_q <= as;
      if (mul_en) m_q <= mp;
      if (add_en && step == 3'd1) t_q <= as;
    end

    assign p_out[32*n +: 32] = p_q;
    assign s_out[32*n +: 32] = s_q;
  end

endmodule

`default_nettype wire
