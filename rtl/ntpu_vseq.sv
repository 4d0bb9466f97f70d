// SPDX-License-Identifier: Apache-2.0
// Vector sequencer: executes ACT, RELU_GRAD and COLSUM (docs/isa.md, "Version 1.1") on the lane
// datapath ntpu_vec, reading ACC (and UB mask) rows and writing result rows to UB, WB or ACC; and
// OPTIM ("Version 1.3") on the lane datapath ntpu_vopt.
//
// Contract:
// - s_cmd: one command at a time, already checked by the command processor; taken only while idle.
//   The command processor starts a vector command only once every earlier command has finished, and
//   starts nothing else (nor touches memory) until this unit is idle again, so its memory ports
//   are its own while it runs: the read data hold between its reads, and its writes never wait.
// - Order: first the aux rows the command uses, read once (ACT: ACC[aux] with BIAS, ACC[aux+1] and
//   ACC[aux+2] in int8 mode; COLSUM with ACCUMULATE: ACC[dst]); then one source row (and, for
//   RELU_GRAD, mask row) per cycle into ntpu_vec, each result row written as it comes out. The
//   results are those of the ISA's row-at-a-time order: where a destination range starts inside
//   the source range further on in the same memory (d = dst - src, or dst - mask, with 0 < d), row r
//   is read only after row r - d was written, i.e. while fewer than d rows are in flight. Other
//   overlaps are harmless for a pipeline that reads every row before it writes it.
// - OPTIM: after its aux rows (lr, wd, and mu with MOMENTUM, into the registers ACT uses), one
//   row at a time and nothing overlapped: read g, p (and s), run ntpu_vopt's steps, write s, then
//   p. 11 cycles a row with momentum, 8 without (plain SGD skips two steps, a read and a write).
//   The next row's reads come after this row's writes, so every overlap of the ranges gets the
//   ISA's row-at-a-time result.
// - OPTIM ADAM (OS_ROWS > 0, "Version 1.4"): its nine constant rows into ntpu_vadam, one a cycle;
//   then one row at a time and nothing overlapped: read g and m, then p and v, run ntpu_vadam's
//   steps, write p and m (ACC and OS in the same cycle), then v. 33 cycles a row (ntpu_vadam: 28).
// - idle: nothing accepted is left to do, every write has landed.
`default_nettype none

module ntpu_vseq
  import ntpu_pkg::*;
#(
  parameter int N = 8,            // lanes
  parameter int UB_ROWS = 16384,  // unified buffer rows
  parameter int ACC_ROWS = 32768, // accumulator rows
  parameter int OS_ROWS = 0,      // optimizer-state rows (OPTIM ADAM); 0: none, no Adam logic
  parameter int UB_AW = (UB_ROWS > 1) ? $clog2(UB_ROWS) : 1,    // leave at the default
  parameter int ACC_AW = (ACC_ROWS > 1) ? $clog2(ACC_ROWS) : 1,  // leave at the default
  parameter int OS_AW = (OS_ROWS > 1) ? $clog2(OS_ROWS) : 1       // leave at the default
) (
  input  logic              clk,
  input  logic              rst,
  // commands
  input  logic              s_cmd_valid,
  output logic              s_cmd_ready,
  input  logic [7:0]        s_cmd_op,     // OP_ACT, OP_RELU_GRAD, OP_COLSUM or OP_OPTIM
  input  logic [7:0]        s_cmd_flags,
  input  logic [15:0]       s_cmd_src,    // OPTIM: p
  input  logic [15:0]       s_cmd_dst,    // OPTIM: g
  input  logic [15:0]       s_cmd_rows,
  input  logic [15:0]       s_cmd_aux,    // ACT: aux; RELU_GRAD: mask
  input  logic [15:0]       s_cmd_s,      // OPTIM ADAM: m and v rows in OS
  output logic              idle,
  // memories (read data one cycle after the read, held until the next read)
  output logic              acc_re,
  output logic [ACC_AW-1:0] acc_raddr,
  input  logic [N*32-1:0]   acc_rdata,
  output logic              ub_re,
  output logic [UB_AW-1:0]  ub_raddr,
  input  logic [N*16-1:0]   ub_rdata,
  output logic              wr_we,
  output logic [1:0]        wr_mem,       // MEM_UB, MEM_WB or MEM_ACC
  output logic [15:0]       wr_addr,      // a row of wr_mem
  output logic [N*32-1:0]   wr_data,      // UB and WB rows in the low N*16 bits
  // optimizer state (OS_ROWS > 0; read data as ACC's)
  output logic              os_re,
  output logic [OS_AW-1:0]  os_raddr,
  input  logic [N*32-1:0]   os_rdata,
  output logic              os_we,
  output logic [OS_AW-1:0]  os_waddr,
  output logic [N*32-1:0]   os_wdata,
  // events for the performance counters
  output logic              stall_hazard  // a row waits for an earlier row's write
);

  typedef enum logic [4:0] {
    S_IDLE,
    S_AUX0,  // read aux row 0
    S_AUX1,  // take it, read aux row 1
    S_AUX2,  // take it, read aux row 2
    S_AUX3,  // take it
    S_RUN,   // stream the rows
    S_OG,    // OPTIM: read g
    S_OP,    // take it, read p
    S_OS,    // take it, read s (momentum)
    S_OX,    // ntpu_vopt's steps (taking s in step 0)
    S_OWS,   // write s (momentum)
    S_OWP,   // write p; next row
    S_AK,    // ADAM: read the constants, take each a cycle later
    S_AG,    // ADAM: read g and m
    S_AP,    // take them, read p and v
    S_AX,    // take them; ntpu_vadam's steps
    S_AW,    // write p and m
    S_AV     // write v; next row
  } state_e;

  state_e state_q, state_d;
  // The ADAM states for the datapath: 0 without OS (never entered then), so no multiplexers.
  logic st_ak, st_ag, st_ap, st_ax, st_aw, st_av;
  assign st_ak = (OS_ROWS > 0) && state_q == S_AK;
  assign st_ag = (OS_ROWS > 0) && state_q == S_AG;
  assign st_ap = (OS_ROWS > 0) && state_q == S_AP;
  assign st_ax = (OS_ROWS > 0) && state_q == S_AX;
  assign st_aw = (OS_ROWS > 0) && state_q == S_AW;
  assign st_av = (OS_ROWS > 0) && state_q == S_AV;
  logic [7:0]  op_q;
  logic [3:0]  flags_q;                     // the defined bits; the rest are 0 once checked
  logic [15:0] dst_q;
  logic [15:0] aux_base_q;
  logic [2:0]  need_q;                      // aux rows 0..2 used
  logic [N*32-1:0] aux0_q, mult_q, shift_q;
  logic        is_colsum, is_rg, is_opt, mom, void_q;
  logic [ACC_AW-1:0] o_p_q, o_g_q, o_s_q;   // OPTIM: this row's p, g, s rows
  logic [15:0] o_left_q;                    // OPTIM: rows still to do, this one included
  logic [2:0]  o_k_q;                       // OPTIM: the step in S_OX
  logic [N*32-1:0] o_p, o_s;
  logic [1:0]  out_q;
  logic        adam_q, dec_q;               // OPTIM ADAM, DECOUPLED
  logic [3:0]  ak_q;                        // ADAM: constant rows read so far
  logic [OS_AW-1:0] o_m_q, o_v_q;           // ADAM: this row's m, v rows in OS
  logic        a_fin;
  logic [N*32-1:0] a_p, a_m, a_v;

  logic [16:0] beats_left_q;                // beats still to send into ntpu_vec
  logic [16:0] results_left_q;              // result rows still to write
  logic [15:0] rd_idx_q, wr_idx_q;          // rows read, rows written
  logic [ACC_AW-1:0] rd_src_q;
  logic [UB_AW-1:0]  rd_mask_q;
  logic        hz_en_q;                     // the source and destination share a memory
  logic signed [17:0] hz_d_q;               // destination start - source start
  logic        in_v_q, in_last_q;           // a beat waits on the read data for ntpu_vec

  logic        vec_ready, vec_out_valid, vec_busy;
  logic [N*32-1:0] vec_out_data;
  logic        issue, hazard;
  logic [15:0] in_flight;
  assign is_colsum = (op_q == OP_COLSUM);
  assign is_rg = (op_q == OP_RELU_GRAD);
  assign is_opt = (op_q == OP_OPTIM);
  assign mom = flags_q[0];
  assign out_q = flags_q[3:2];

  // ---------------------------------------------------------------- control
  assign s_cmd_ready = (state_q == S_IDLE);
  logic cmd_adam;  // an OPTIM ADAM arrives (outside always_comb: Icarus 11 and constant selects)
  assign cmd_adam = (OS_ROWS > 0) && s_cmd_op == OP_OPTIM && s_cmd_flags[1];

  always_comb begin
    state_d = state_q;
    case (state_q)
      S_IDLE: begin
        if (s_cmd_valid && cmd_adam) state_d = S_AK;
        else if (s_cmd_valid) state_d = S_AUX0;
      end
      S_AK: begin
        if (ak_q == 4'(ADAM_AUX_ROWS) && o_left_q == 16'd0) state_d = S_IDLE;
        else if (ak_q == 4'(ADAM_AUX_ROWS)) state_d = S_AG;
      end
      S_AG: state_d = S_AP;
      S_AP: state_d = S_AX;
      S_AX: if (a_fin) state_d = S_AW;
      S_AW: state_d = S_AV;
      S_AV: if (o_left_q == 16'd1) state_d = S_IDLE; else state_d = S_AG;
      S_AUX0: state_d = S_AUX1;
      S_AUX1: state_d = S_AUX2;
      S_AUX2: state_d = S_AUX3;
      // if/else, not ?: : Icarus 11 wants a cast for an enum out of a conditional.
      S_AUX3: if (is_opt && o_left_q != 16'd0) state_d = S_OG; else state_d = S_RUN;
      S_RUN: if (results_left_q == 17'd0 && beats_left_q == 17'd0) state_d = S_IDLE;
      S_OG: state_d = S_OP;
      S_OP: state_d = S_OS;
      S_OS: state_d = S_OX;
      S_OX: begin
        if (o_k_q == 3'd5 && mom) state_d = S_OWS;
        else if (o_k_q == 3'd5) state_d = S_OWP;
      end
      S_OWS: state_d = S_OWP;
      S_OWP: if (o_left_q == 16'd1) state_d = S_IDLE; else state_d = S_OG;
      default: state_d = S_IDLE;
    endcase
  end
  always_ff @(posedge clk) begin
    if (rst) state_q <= S_IDLE;
    else state_q <= state_d;
  end
  // ---------------------------------------------------------------- command fields
  always_ff @(posedge clk) begin
    if (s_cmd_valid && s_cmd_ready) begin
      logic int8, colsum, rg, opt;
      logic [1:0] out;
      int8 = (s_cmd_op == OP_ACT) && (s_cmd_flags[3:2] == OUT_INT8[3:2]);
      colsum = (s_cmd_op == OP_COLSUM);
      rg = (s_cmd_op == OP_RELU_GRAD);
      opt = (s_cmd_op == OP_OPTIM);
      out = s_cmd_flags[3:2];
      op_q <= s_cmd_op;
      flags_q <= s_cmd_flags[3:0];
      dst_q <= s_cmd_dst;
      aux_base_q <= colsum ? s_cmd_dst : s_cmd_aux;
      need_q <= opt ? {s_cmd_flags[0], 2'b11} : {int8, int8, s_cmd_flags[0] && s_cmd_op != OP_RELU_GRAD};
      void_q <= colsum && s_cmd_rows == 16'd0;
      beats_left_q <= opt ? 17'd0 : (colsum && s_cmd_rows == 16'd0) ? 17'd1 : 17'(s_cmd_rows);
      results_left_q <= opt ? 17'd0 : colsum ? 17'd1 : 17'(s_cmd_rows);
      o_p_q <= ACC_AW'(s_cmd_src);
      o_s_q <= ACC_AW'(s_cmd_src + s_cmd_rows);
      o_g_q <= ACC_AW'(s_cmd_dst);
      o_left_q <= s_cmd_rows;
      adam_q <= opt && s_cmd_flags[1];
      dec_q <= s_cmd_flags[2];
      o_m_q <= OS_AW'(s_cmd_s);
      o_v_q <= OS_AW'(s_cmd_s + s_cmd_rows);
      rd_src_q <= ACC_AW'(s_cmd_src);
      rd_mask_q <= UB_AW'(s_cmd_aux);
      hz_en_q <= !colsum && (out == OUT_ACC[3:2] || (rg && out == OUT_UB[3:2]));
      hz_d_q <= 18'(s_cmd_dst) - ((rg && out == OUT_UB[3:2]) ? 18'(s_cmd_aux) : 18'(s_cmd_src));
    end else begin
      if (issue) begin
        beats_left_q <= beats_left_q - 17'd1;
        rd_src_q <= rd_src_q + ACC_AW'(1);
        rd_mask_q <= rd_mask_q + UB_AW'(1);
      end
      if (wr_we && !is_opt) results_left_q <= results_left_q - 17'd1;
      if (st_av) begin
        o_m_q <= o_m_q + OS_AW'(1);
        o_v_q <= o_v_q + OS_AW'(1);
      end
      if (state_q == S_OWP || st_av) begin
        o_p_q <= o_p_q + ACC_AW'(1);
        o_s_q <= o_s_q + ACC_AW'(1);
        o_g_q <= o_g_q + ACC_AW'(1);
        o_left_q <= o_left_q - 16'd1;
      end
    end
    // SGD skips the momentum steps 2 and 3.
    if (state_q != S_OX) o_k_q <= 3'd0;
    else o_k_q <= (o_k_q == 3'd1 && !mom) ? 3'd4 : o_k_q + 3'd1;
    if (!st_ak) ak_q <= '0;
    else ak_q <= ak_q + 4'd1;
    if (state_q == S_AUX1 && need_q[0]) aux0_q <= acc_rdata;
    if (state_q == S_AUX2 && need_q[1]) mult_q <= acc_rdata;
    if (state_q == S_AUX3 && need_q[2]) shift_q <= acc_rdata;
  end

  // ---------------------------------------------------------------- reads
  assign in_flight = rd_idx_q - wr_idx_q;
  assign hazard = hz_en_q && hz_d_q > 18'sd0 && $signed({2'b00, in_flight}) >= hz_d_q;
  assign issue = (state_q == S_RUN) && beats_left_q != 17'd0 && (!in_v_q || vec_ready) && !hazard;

  always_ff @(posedge clk) begin
    if (rst) begin
      in_v_q <= 1'b0;
    end else begin
      in_v_q <= issue || (in_v_q && !vec_ready);
    end
  end

  always_ff @(posedge clk) begin
    if (state_q == S_IDLE) begin
      rd_idx_q <= '0;
      wr_idx_q <= '0;
    end else begin
      if (issue) rd_idx_q <= rd_idx_q + 16'd1;
      if (wr_we) wr_idx_q <= wr_idx_q + 16'd1;
    end
    if (issue) in_last_q <= (beats_left_q == 17'd1);
  end
  // Plain assigns, no default-then-override: a strobe must not glitch (see ntpu_cmd).
  logic [1:0] aux_k;  // aux row read in this state
  assign aux_k = (state_q == S_AUX1) ? 2'd1 : (state_q == S_AUX2) ? 2'd2 : 2'd0;
  logic o_re;  // OPTIM reads g, p and (momentum) s
  assign o_re = (state_q == S_OG) || (state_q == S_OP) || (state_q == S_OS && mom);
  logic a_kre;  // ADAM reads a constant row
  assign a_kre = (st_ak) && ak_q != 4'(ADAM_AUX_ROWS);
  assign acc_re = (state_q == S_AUX0 || state_q == S_AUX1 || state_q == S_AUX2) ? need_q[aux_k]
                : o_re || a_kre || st_ag || st_ap || (issue && !void_q);
  assign acc_raddr = (state_q == S_RUN) ? rd_src_q
                   : (state_q == S_OG || st_ag) ? o_g_q
                   : (state_q == S_OP || st_ap) ? o_p_q : (state_q == S_OS) ? o_s_q
                   : (st_ak) ? ACC_AW'(aux_base_q + 16'(ak_q))
                   : ACC_AW'(aux_base_q + 16'(aux_k));

  assign ub_re = issue && is_rg;
  assign ub_raddr = rd_mask_q;

  // ---------------------------------------------------------------- lanes
  logic [1:0] vop;
  assign vop = is_colsum ? 2'd2 : is_rg ? 2'd1 : 2'd0;
  ntpu_vec #(
    .N(N)
  ) u_vec (
    .clk        (clk),
    .rst        (rst),
    .op         (vop),
    .bias       (flags_q[0]),
    .relu       (flags_q[1]),
    .out        (out_q),
    .accumulate (flags_q[0]),
    .aux0       (aux0_q),
    .mult       (mult_q),
    .shift      (shift_q),
    .s_in_valid (in_v_q),
    .s_in_ready (vec_ready),
    .s_in_acc   (acc_rdata),
    .s_in_mask  (ub_rdata),
    .s_in_last  (in_last_q),
    .s_in_void  (void_q),
    .m_out_valid(vec_out_valid),
    .m_out_ready(1'b1),
    .m_out_data (vec_out_data),
    .busy       (vec_busy)
  );

  // aux0_q, mult_q, shift_q hold lr, wd, mu for OPTIM.
  ntpu_vopt #(
    .N(N)
  ) u_vopt (
    .clk    (clk),
    .ld_g   (state_q == S_OP),
    .ld_p   (state_q == S_OS),
    .ld_s   (state_q == S_OX && o_k_q == 3'd0 && mom),
    .rdata  (acc_rdata),
    .step_en(state_q == S_OX),
    .step   (o_k_q),
    .mom    (mom),
    .lr     (aux0_q),
    .wd     (mult_q),
    .mu     (shift_q),
    .p_out  (o_p),
    .s_out  (o_s)
  );

  // ---------------------------------------------------------------- Adam
  logic ax_q;  // ld_pv only in the first cycle of S_AX
  always_ff @(posedge clk) ax_q <= (st_ax);

  if (OS_ROWS > 0) begin : g_adam
    ntpu_vadam #(
      .N(N)
    ) u_vadam (
      .clk     (clk),
      .rst     (rst),
      .ld_k    (st_ak && ak_q != 4'd0),
      .k_idx   (ak_q - 4'd1),
      .ld_gm   (st_ap),
      .ld_pv   (st_ax && !ax_q),
      .rdata   (acc_rdata),
      .os_rdata(os_rdata),
      .dec     (dec_q),
      .fin     (a_fin),
      .p_out   (a_p),
      .m_out   (a_m),
      .v_out   (a_v)
    );
  end else begin : g_no_adam
    // The command processor answers ADAM with ERR_ARG: these states are never entered.
    logic unused_adam;
    assign unused_adam = ^{os_rdata, dec_q, ax_q};
    assign a_fin = 1'b1;
    assign a_p = '0;
    assign a_m = '0;
    assign a_v = '0;
  end
  assign os_re = (st_ag) || (st_ap);
  assign os_raddr = (st_ag) ? o_m_q : o_v_q;
  assign os_we = (st_aw) || (st_av);
  assign os_waddr = (st_aw) ? o_m_q : o_v_q;
  assign os_wdata = (st_aw) ? a_m : a_v;

  // ---------------------------------------------------------------- writes
  logic o_wr;  // OPTIM writes s, then p; ADAM p (with m in OS)
  assign o_wr = (state_q == S_OWS) || (state_q == S_OWP) || (st_aw);
  assign wr_we = vec_out_valid || o_wr;
  assign wr_data = (state_q == S_OWS) ? o_s : (state_q == S_OWP) ? o_p : (st_aw) ? a_p : vec_out_data;
  assign wr_addr = (state_q == S_OWS) ? 16'(o_s_q) : (state_q == S_OWP || st_aw) ? 16'(o_p_q)
                 : dst_q + wr_idx_q;
  assign wr_mem = (is_colsum || is_opt || out_q == OUT_ACC[3:2]) ? 2'(MEM_ACC)
                : (out_q == OUT_WB[3:2]) ? 2'(MEM_WB) : 2'(MEM_UB);

  assign idle = (state_q == S_IDLE);
  assign stall_hazard = (state_q == S_RUN) && beats_left_q != 17'd0 && hazard;
  // The unit is empty whenever the last result has been written: busy adds nothing here. Reserved
  // flag bits are zero in a checked command.
  logic unused_bits;
  assign unused_bits = ^{vec_busy, s_cmd_flags[7:4], adam_q};





endmodule

`default_nettype wire
