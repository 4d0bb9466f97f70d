// SPDX-License-Identifier: Apache-2.0
// vsim's simulation form of rtl/ntpu_vadam.sv (docs/decisions/0025-one-rtl.md): the same module, written to
// simulate fast in Verilator, and held to its twin by the lockstep check (sim/vsim/README.md).
// ntpu_vadam: the lane datapath of OPTIM ADAM (docs/isa.md, "Version 1.4"), N lanes, each with one
// fp32 multiplier, one fp32 adder, two dividers and a square root unit, stepped through one row at
// a time by its own step counter; ntpu_vseq loads the operands and writes the results back.
//
// Per lane n, with k0..k8 the constants and g, m, p, v loaded, the steps compute exactly
// ntpu_adam_f32 (sim/ref/numerics.c), one rounding each (mul = ntpu_fp32_mul, add = ntpu_fp32_add,
// div = ntpu_fp32_div, sqrt = ntpu_fp32_sqrt, t1, t2 temporaries):
//   0: dec ? p = mul(p, k1) : t1 = mul(k1, p)     7: v = add(t1, t2)
//   1: dec ? -             : g = add(g, t1)       8: start divB(v, k7)
//   2: t1 = mul(k2, m)                            9: wait for divB (divA finished meanwhile);
//   3: t2 = mul(k3, g)                               t1 = mul(k0, divA); start sqrt(divB)
//   4: m = add(t1, t2); t1 = mul(k4, v)           10: wait for sqrt; t2 = add(sqrt, k8)
//   5: t2 = mul(k5, g); start divA(m, k6)         11: start divA(t1, t2)
//   6: t2 = mul(t2, g)                            12: wait for divA; p = add(p, -divA)
// so the two divisions of m / c1 and v / c2 overlap; a row takes ROW_CYCLES = 13 + 3 * L - 3 cycles
// from the one after ld_pv, with L = 25 / DIV_BITS + 1 the latency of ntpu_fp32_div / _sqrt (every
// lane in lockstep): 28 at the default DIV_BITS = 5, 88 at 1 (docs/decisions/0016-device-adam.md).
//
// Contract:
// - ld_k takes rdata into constant k_idx (0..8), for every lane; the constants hold until the next.
// - ld_gm takes g from rdata and m from os_rdata; ld_pv takes p from rdata and v from os_rdata and
//   starts the steps in the next cycle. fin is high in the cycle of the last step; from the next
//   cycle p_out, m_out and v_out hold the row's results until the next ld_gm / ld_pv.
// - dec (AdamW) is held by the caller from ld_pv until fin. No reset but the step counter's.
`default_nettype none

module ntpu_vadam #(
  parameter int N = 8,        // lanes, 2..32
  parameter int DIV_BITS = 5  // result bits a cycle of the dividers and the square root: 1, 5 or 25
) (
  input  logic            clk,
  input  logic            rst,
  input  logic            ld_k,
  input  logic [3:0]      k_idx,
  input  logic            ld_gm,
  input  logic            ld_pv,
  input  logic [N*32-1:0] rdata,     // ACC row being loaded
  input  logic [N*32-1:0] os_rdata,  // OS row being loaded
  input  logic            dec,       // AdamW: decoupled weight decay
  output logic            fin,
  output logic [N*32-1:0] p_out,
  output logic [N*32-1:0] m_out,
  output logic [N*32-1:0] v_out
);

  if (N < 2 || N > 32) begin : g_bad_n
    initial $fatal(1, "ntpu_vadam: N must be 2..32");
  end

  // ---------------------------------------------------------------- steps (shared by the lanes)
  logic        run_q;
  logic [3:0]  step_q;
  logic        da_done, db_done, sq_done;  // lane 0's units: every lane finishes in the same cycle
  logic        adv;                         // the step is over this cycle

  always_comb begin
    case (step_q)
      4'd9: adv = db_done;
      4'd10: adv = sq_done;
      4'd12: adv = da_done;
      default: adv = 1'b1;
    endcase
  end
  assign fin = run_q && step_q == 4'd12 && da_done;

  always_ff @(posedge clk) begin
    if (rst) begin
      run_q <= 1'b0;
      step_q <= '0;
    end else if (ld_pv) begin
      run_q <= 1'b1;
      step_q <= '0;
    end else if (run_q && adv) begin
      if (step_q == 4'd12) run_q <= 1'b0;
      step_q <= step_q + 4'd1;
    end
  end

  logic s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12;
  // Simulation only. The steps as below, from a one-hot copy of step_q kept with run_q and step_q
  // (bit k is run_q && step_q == k after every edge: the same reset, load and advance), so that no
  // compare runs between rows.
  logic [12:0] oh_q;
  always_ff @(posedge clk) begin
    if (rst) oh_q <= '0;
    else if (ld_pv) oh_q <= 13'd1;
    else if (run_q && adv) oh_q <= oh_q << 1;  // past step 12: 0, as run_q
  end
  assign s0 = oh_q[0];
  assign s1 = oh_q[1];
  assign s2 = oh_q[2];
  assign s3 = oh_q[3];
  assign s4 = oh_q[4];
  assign s5 = oh_q[5];
  assign s6 = oh_q[6];
  assign s7 = oh_q[7];
  assign s8 = oh_q[8];
  assign s9 = oh_q[9] && db_done;
  assign s10 = oh_q[10] && sq_done;
  assign s11 = oh_q[11];
  // The dividers' and square roots' act: every start is a step and every unit is idle again by the
  // step that waits for it, so no unit is busy while no row runs (rst included to clear them).
  // The lanes' registers change only on a load or a step.
  logic act, lact;
  assign act = run_q || rst;
  assign lact = ld_gm || ld_pv || run_q;
  assign s12 = fin;

  logic mul_en, add_en;
  assign mul_en = s0 || s2 || s3 || s4 || s5 || s6 || s9;
  assign add_en = (s1 && !dec) || s4 || s7 || s10 || s12;

  // ---------------------------------------------------------------- lanes
  for (genvar n = 0; n < N; n++) begin : g_lane
    logic [31:0] p_q, g_q, m_q, v_q, t1_q, t2_q;
    logic [31:0] mx, my, mp, ax, ay, as;
    logic [31:0] qa, qb, sr;
    logic        da_busy, db_busy, sq_busy, da_dn, db_dn, sq_dn;

    // Operands per step (a plain mux chain, no unpacked-array reads in functions: Icarus 11).
    logic [31:0] k0, k1, k2, k3, k4, k5, k6, k7, k8;
    // Simulation only: the constants as nine registers, the same writes; an array written at a
    // variable index costs Verilator a flag set and tested every cycle in every lane.
    always_ff @(posedge clk) begin
      if (ld_k) begin
        case (k_idx)
          4'd0: k0 <= rdata[32*n +: 32];
          4'd1: k1 <= rdata[32*n +: 32];
          4'd2: k2 <= rdata[32*n +: 32];
          4'd3: k3 <= rdata[32*n +: 32];
          4'd4: k4 <= rdata[32*n +: 32];
          4'd5: k5 <= rdata[32*n +: 32];
          4'd6: k6 <= rdata[32*n +: 32];
          4'd7: k7 <= rdata[32*n +: 32];
          4'd8: k8 <= rdata[32*n +: 32];
          default: ;
        endcase
      end
    end

    logic [31:0] da_x, da_y;  // divA's operands, read at its start
    // Simulation only: the same operands, as a latch open while run_q. Only the steps read them
    // (every enable and start below is a step), so Verilator skips the muxes between rows, which
    // are most cycles (docs/decisions/0017-vsim-speed.md).
    always_latch begin
      if (run_q) begin
        mx = s0 ? (dec ? p_q : k1) : s2 ? k2 : s3 ? k3 : s4 ? k4 : s5 ? k5 : s6 ? t2_q : k0;
        my = s0 ? (dec ? k1 : p_q) : s2 ? m_q : s4 ? v_q : s9 ? qa : g_q;
        ax = s1 ? g_q : s4 ? t1_q : s7 ? t1_q : s10 ? sr : p_q;
        ay = s1 ? t1_q : s4 ? t2_q : s7 ? t2_q : s10 ? k8 : {~qa[31], qa[30:0]};
        da_x = s5 ? m_q : t1_q;
        da_y = s5 ? k6 : t2_q;
      end
    end

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

    // divA: m / c1, then num / den; divB: v / c2.
    ntpu_fp32_div #(
      .BITS(DIV_BITS)
    ) u_div_a (
      .clk  (clk),
      .rst  (rst),
      .act  (act),
      .start(s5 || s11),
      .x    (da_x),
      .y    (da_y),
      .busy (da_busy),
      .done (da_dn),
      .q    (qa)
    );

    ntpu_fp32_div #(
      .BITS(DIV_BITS)
    ) u_div_b (
      .clk  (clk),
      .rst  (rst),
      .act  (act),
      .start(s8),
      .x    (v_q),
      .y    (k7),
      .busy (db_busy),
      .done (db_dn),
      .q    (qb)
    );

    ntpu_fp32_sqrt #(
      .BITS(DIV_BITS)
    ) u_sqrt (
      .clk  (clk),
      .rst  (rst),
      .act  (act),
      .start(s9),
      .x    (qb),
      .busy (sq_busy),
      .done (sq_dn),
      .r    (sr)
    );

    always_ff @(posedge clk) begin
      if (lact) begin  // simulation only: every write below is a load or a step
      if (ld_gm) g_q <= rdata[32*n +: 32];
      else if (s1 && !dec) g_q <= as;
      if (ld_gm) m_q <= os_rdata[32*n +: 32];
      else if (s4) m_q <= as;
      if (ld_pv) p_q <= rdata[32*n +: 32];
      else if (s0 && dec) p_q <= mp;
      else if (s12) p_q <= as;
      if (ld_pv) v_q <= os_rdata[32*n +: 32];
      else if (s7) v_q <= as;
      if ((s0 && !dec) || s2 || s4 || s9) t1_q <= mp;
      if (s3 || s5 || s6) t2_q <= mp;
      else if (s10) t2_q <= as;
      end
    end

    assign p_out[32*n +: 32] = p_q;
    assign m_out[32*n +: 32] = m_q;
    assign v_out[32*n +: 32] = v_q;

    if (n == 0) begin : g_lane0_done
      assign da_done = da_dn;
      assign db_done = db_dn;
      assign sq_done = sq_dn;
    end
    logic unused_lane;
    assign unused_lane = ^{da_busy, db_busy, sq_busy, (n == 0) ? 1'b0 : (da_dn ^ db_dn ^ sq_dn)};
  end

endmodule

`default_nettype wire
