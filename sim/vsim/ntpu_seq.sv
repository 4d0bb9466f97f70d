// SPDX-License-Identifier: Apache-2.0
// vsim's simulation form of rtl/ntpu_seq.sv (docs/decisions/0025-one-rtl.md): the same module, written to
// simulate fast in Verilator, and held to its twin by the lockstep check (sim/vsim/README.md).
// Weight loader and matmul sequencer: executes LOAD_W and MATMUL (docs/isa.md) on the systolic array.
//
// Contract:
// - s_cmd: LOAD_W (s_cmd_matmul = 0) and MATMUL (1), already checked by the command processor, in
//   command order. A command is accepted when its engine is free: LOAD_W when the loader is idle,
//   MATMUL when the streamer has issued all rows of the previous one (it takes the next one in the
//   cycle the last row issues, so rows stream back to back) and a hazard slot is free.
//   After acceptance each command behaves as if every earlier command had finished.
// - Weights: the array holds two weight buffers. MATMULs use the active one; LOAD_W fills the other
//   (pending) one, so a tile loads while the previous MATMUL streams. A MATMUL after a LOAD_W swaps
//   the two, and its first row waits until the tile is in (stall_weight). A buffer is loaded only
//   when no row that used it is still inside the array. After reset the loader fills the active
//   buffer with zeros (the golden model's initial weights); that takes N cycles.
// - Rows: one row per cycle enters the array (UB row and, with accumulate, ACC row, read one cycle
//   earlier); every array output row is written back to ACC in issue order. A row that reads an ACC
//   row an earlier MATMUL still has in flight waits for that write (stall_hazard). The array's
//   latency is not assumed anywhere: each a_valid is answered by one y_valid, in order, and a row
//   no longer uses its weights once its y_valid has been seen.
// - TRANSPOSE_A: the UB rows of the blocks (block j row i at ub_addr + j*stride + i) are read ahead
//   into ntpu_transpose as it takes them, and the rows entering the array are its columns: the
//   first issues N+2 cycles after the MATMUL is accepted, then one per cycle, blocks back to back.
// - CONV / CONV_T (1.5, CONV_EN = 1): row m reads UB[ub_addr + (y*in_w + x)*mb + b] for the pixel
//   docs/isa.md gives it, or is a zero row (no UB read) outside the map; counters, not dividers,
//   walk (b, ox, oy) and the coordinates, one row per cycle as a plain MATMUL. CONV with
//   TRANSPOSE_A: the feeder walks the blocks in (ky, kx, t) order and feeds N zero rows for a block
//   outside the map. The setup (first pixel address, steps, CONV_T's phases: dy, dx floor-divided
//   by the stride, 8-bit operands) is computed from the command as it is accepted.
// - BF16_GAP > 0 (an array with BF16_SHARED): after a bf16 row the next row of any dtype enters the
//   array BF16_GAP cycles later at the earliest (stall_bf16).
// - idle: nothing accepted is left to do, every ACC write has landed.
// - q_*: the command processor asks whether a WRITE_MEM or READ_MEM of rows [q_addr, q_addr +
//   q_rows) of q_mem could run now, beside the accepted commands, with the result of running it
//   after them. q_conflict is 0 only for a WRITE_MEM to WB while no LOAD_W has WB rows left to
//   read, a WRITE_MEM to UB that no MATMUL has rows left to read from (any TRANSPOSE_A MATMUL still
//   reading counts as a conflict), and a READ_MEM of ACC rows that no accepted MATMUL has left to
//   write. Accepted work only shrinks these ranges, so the answer holds until the next command.
//   MEM_OVERLAP = 0 (the boards): no query logic, q_conflict is always 1.
`default_nettype none

module ntpu_seq #(
  parameter int N = 8,            // array size
  parameter int UB_ROWS = 8192,   // unified buffer rows
  parameter int WB_ROWS = 4096,   // weight buffer rows
  parameter int ACC_ROWS = 2048,  // accumulator rows
  parameter int SEG_DEPTH = 4,    // MATMULs that may have rows in flight at once (power of 2)
  parameter int BF16_GAP = 0,     // cycles from a bf16 row to the next row (0, 1: none)
  parameter int MEM_OVERLAP = 0,  // 0: no overlap query (q_conflict is always 1)
  parameter int CONV_EN = 0,      // 1: MATMUL CONV / CONV_T addressing (1.5); 0: the flags are ignored
  parameter int UB_AW = (UB_ROWS > 1) ? $clog2(UB_ROWS) : 1,    // leave at the default
  parameter int WB_AW = (WB_ROWS > 1) ? $clog2(WB_ROWS) : 1,    // leave at the default
  parameter int ACC_AW = (ACC_ROWS > 1) ? $clog2(ACC_ROWS) : 1  // leave at the default
) (
  input  logic              clk,   input logic clk_load, output logic load_busy,  // vsim: see the end
  input  logic              rst,
  // commands
  input  logic              s_cmd_valid,
  output logic              s_cmd_ready,
  input  logic              s_cmd_matmul,   // 1 MATMUL, 0 LOAD_W
  input  logic [7:0]        s_cmd_flags,
  input  logic [15:0]       s_cmd_addr,     // LOAD_W: wb_addr; MATMUL: ub_addr
  input  logic [15:0]       s_cmd_acc_addr, // MATMUL only
  input  logic [15:0]       s_cmd_rows,     // MATMUL only
  input  logic [15:0]       s_cmd_stride,   // MATMUL with TRANSPOSE_A only (CONV: tile_stride)
  // MATMUL with CONV (1.5): the map and the tap; unused fields of the command's form are 0
  input  logic [7:0]        s_cmd_in_h,
  input  logic [7:0]        s_cmd_in_w,
  input  logic [7:0]        s_cmd_out_w,    // without TRANSPOSE_A
  input  logic [7:0]        s_cmd_mb,
  input  logic [7:0]        s_cmd_cstride,  // without TRANSPOSE_A: the conv's stride
  input  logic [7:0]        s_cmd_k,        // with TRANSPOSE_A: the kernel size
  input  logic [15:0]       s_cmd_ct,       // with TRANSPOSE_A: channel tiles, rows / (N*k*k)
  input  logic [15:0]       s_cmd_dy,       // two's complement; without TRANSPOSE_A an i8, sign-extended
  input  logic [15:0]       s_cmd_dx,
  output logic              idle,
  // memories (read data one cycle after the read)
  output logic              ub_re,
  output logic [UB_AW-1:0]  ub_raddr,
  input  logic [N*16-1:0]   ub_rdata,
  output logic              wb_re,
  output logic [WB_AW-1:0]  wb_raddr,
  input  logic [N*16-1:0]   wb_rdata,
  output logic              acc_re,
  output logic [ACC_AW-1:0] acc_raddr,
  input  logic [N*32-1:0]   acc_rdata,
  output logic              acc_we,
  output logic [ACC_AW-1:0] acc_waddr,
  output logic [N*32-1:0]   acc_wdata,
  // systolic array
  output logic              w_valid,
  output logic              w_buf,
  output logic              w_transpose,
  output logic [N*16-1:0]   w_row,
  output logic              a_valid,
  output logic              a_buf,
  output logic              a_bf16,
  output logic [N*16-1:0]   a_row,
  output logic [N*32-1:0]   a_acc,
  input  logic              y_valid,
  input  logic [N*32-1:0]   y_row,
  // events for the performance counters
  output logic              stall_weight,   // a MATMUL row waits for its weight tile
  output logic              stall_hazard,   // a MATMUL waits for earlier rows to be written back
  // overlap query from the command processor
  input  logic [1:0]        q_mem,          // ntpu_pkg::MEM_*
  input  logic              q_write,        // WRITE_MEM (1) or READ_MEM (0)
  input  logic [15:0]       q_addr,
  input  logic [15:0]       q_rows,
  output logic              q_conflict
);

  import ntpu_pkg::LOADW_TRANSPOSE;
  import ntpu_pkg::MATMUL_BF16;
  import ntpu_pkg::MATMUL_ACCUMULATE;
  import ntpu_pkg::MATMUL_TRANSPOSE_A;
  import ntpu_pkg::MATMUL_CONV;
  import ntpu_pkg::MATMUL_CONV_T;

  if (N < 2 || N > 32) begin : g_bad_n
    initial $fatal(1, "ntpu_seq: N must be 2..32");
  end
  if (SEG_DEPTH < 2 || (SEG_DEPTH & (SEG_DEPTH - 1)) != 0) begin : g_bad_seg
    initial $fatal(1, "ntpu_seq: SEG_DEPTH must be a power of 2, >= 2");
  end

  localparam int EW = ACC_AW + 1;  // an ACC row index or one past the last row
  localparam int SP_W = $clog2(SEG_DEPTH);
  localparam int NCNT_W = $clog2(N + 1);
  localparam int GAP_W = (BF16_GAP > 1) ? $clog2(BF16_GAP) : 1;

  // ---------------------------------------------------------------- weight state
  logic act_q;   // buffer MATMULs use
  logic pend_q;  // a LOAD_W has run since the last MATMUL: its tile is in buffer ~act_q

  // ---------------------------------------------------------------- loader
  logic              ld_busy_q;   // WB reads left to issue
  logic              ld_beat_q;   // a read was issued last cycle: its beat goes out now
  logic              ld_zero_q;   // load zeros instead of WB rows (after reset)
  logic              ld_buf_q;
  logic              ld_tr_q;
  logic [WB_AW-1:0]  ld_addr_q;   // next WB row (the tile goes out last row first)
  logic [NCNT_W-1:0] ld_cnt_q;    // reads left
  logic              ld_active;
  logic              ld_guard;    // rows that used ld_buf_q are still in the array
  logic              ld_issue;

  // ---------------------------------------------------------------- matmul streamer
  logic             mm_busy_q;
  logic             mm_buf_q, mm_bf16_q, mm_accum_q;
  logic [UB_AW-1:0] mm_ub_q;
  logic [EW-1:0]    mm_acc_q;
  logic [15:0]      mm_left_q;    // rows left to issue
  logic             mm_wait_w, mm_hazard, mm_issue, mm_last, mm_free;
  logic             gap_wait;     // a bf16 row issued less than BF16_GAP cycles ago
  logic             iss_q, iss_buf_q, iss_bf16_q, iss_accum_q;  // the row whose reads were issued
  logic             mm_tr_q, iss_tr_q;  // TRANSPOSE_A: rows come from the transposer
  logic [N*16-1:0]  iss_row_q;          // ... and this one was taken from it
  logic             mm_cv_q;            // CONV / CONV_T without TRANSPOSE_A: rows by cv_addr
  logic             iss_zero_q;         // the issued row is outside the map: a zero row
  logic [UB_AW-1:0] cv_addr;            // CONV: the UB row of the row to issue ...
  logic             cv_inside;          // ... if it is inside the map
  logic             cmd_conv, cmd_ta;   // the command offered: CONV, TRANSPOSE_A

  // TRANSPOSE_A feeder: reads the UB rows of the blocks in order into the transposer. ub_rdata
  // holds a row until the next UB read, so a row the transposer does not take at once simply
  // waits there (fd_v_q).
  logic              fd_busy_q;    // UB rows left to read
  logic [15:0]       fd_left_q;
  logic [UB_AW-1:0]  fd_addr_q, fd_base_q;
  logic [UB_AW-1:0]  fd_stride_q;  // modulo 2^UB_AW, like the block starts
  logic [NCNT_W-1:0] fd_i_q;       // row within the block
  logic              fd_v_q;       // ub_rdata holds a row for the transposer
  logic              fd_issue;
  logic              fd_cv_q;      // CONV with TRANSPOSE_A: blocks in (ky, kx, t) order
  logic              fd_out;       // CONV: the block being read is outside the map (zero rows)
  logic              fd_zrow_q;    // the row in hand is a zero row
  logic              fd_blk_end;   // the block's last row is read now
  logic [UB_AW-1:0]  fd_start;     // the first block's start
  logic [UB_AW-1:0]  fd_next;      // the next block's start
  logic              tr_s_ready, tr_m_valid;
  logic [N*16-1:0]   tr_m_data;

  // ---------------------------------------------------------------- in-flight MATMULs
  // One segment per MATMUL with rows still to write back: ACC rows [base, end), base being the next
  // row to be written. The newest segment belongs to the MATMUL being issued.
  logic [EW-1:0]   seg_base_q [SEG_DEPTH];
  logic [EW-1:0]   seg_end_q [SEG_DEPTH];
  logic            seg_buf_q [SEG_DEPTH];
  logic            seg_vld_q [SEG_DEPTH];
  logic [SP_W-1:0] seg_head_q, seg_tail_q;
  logic [SP_W:0]   seg_cnt_q;
  logic            seg_full, seg_push, seg_pop;
  logic [SP_W-1:0] seg_own;  // the streamer's own segment

  // ---------------------------------------------------------------- commands
  logic acc_mm, acc_ld, new_act;

  assign mm_last = mm_issue && (mm_left_q == 16'd1);
  assign mm_free = !mm_busy_q || mm_last;
  assign seg_full = (seg_cnt_q == (SP_W + 1)'(SEG_DEPTH));
  assign ld_active = ld_busy_q || ld_beat_q;

  assign s_cmd_ready = s_cmd_matmul ? (mm_free && !seg_full) : !ld_active;
  assign acc_mm = s_cmd_valid && s_cmd_ready && s_cmd_matmul;
  assign acc_ld = s_cmd_valid && s_cmd_ready && !s_cmd_matmul;
  assign new_act = pend_q ? ~act_q : act_q;
  assign seg_push = acc_mm && (s_cmd_rows != 16'd0);

  always_ff @(posedge clk) begin
    if (rst) begin
      act_q <= 1'b0;
      pend_q <= 1'b0;
    end else if (acc_mm) begin
      act_q <= new_act;
      pend_q <= 1'b0;
    end else if (acc_ld) begin
      pend_q <= 1'b1;
    end
  end

  // ---------------------------------------------------------------- loader
  // The streamer's own segment is left out: a row of it using ld_buf_q waits for this very tile.
  // vsim evaluates the loop only while ld_busy_q, the only time ld_guard is read (ld_issue).
  always_comb begin
    ld_guard = 1'b0;   if (ld_busy_q)
    for (int i = 0; i < SEG_DEPTH; i++) begin
      if (seg_vld_q[i] && seg_buf_q[i] == ld_buf_q && !(mm_busy_q && SP_W'(i) == seg_own)) begin
        ld_guard = 1'b1;
      end
    end
  end

  assign ld_issue = ld_busy_q && !ld_guard;

  always_ff @(posedge clk_load) begin
    if (rst) begin
      ld_busy_q <= 1'b1;
      ld_beat_q <= 1'b0;
      ld_zero_q <= 1'b1;
      ld_buf_q <= 1'b0;
      ld_tr_q <= 1'b0;
      ld_cnt_q <= NCNT_W'(N);
    end else begin
      ld_beat_q <= ld_issue;
      if (acc_ld) begin
        ld_busy_q <= 1'b1;
        ld_zero_q <= 1'b0;
        ld_buf_q <= ~act_q;
        ld_tr_q <= (s_cmd_flags & LOADW_TRANSPOSE) != 8'd0;
        ld_cnt_q <= NCNT_W'(N);
      end else if (ld_issue) begin
        ld_cnt_q <= ld_cnt_q - NCNT_W'(1);
        if (ld_cnt_q == NCNT_W'(1)) ld_busy_q <= 1'b0;
      end
    end
  end

  always_ff @(posedge clk_load) begin
    if (acc_ld) ld_addr_q <= WB_AW'(s_cmd_addr) + WB_AW'(N - 1);
    else if (ld_issue) ld_addr_q <= ld_addr_q - WB_AW'(1);
  end

  assign wb_re = ld_issue && !ld_zero_q;
  assign wb_raddr = ld_addr_q;
  assign w_valid = ld_beat_q;
  assign w_buf = ld_buf_q;
  assign w_transpose = ld_tr_q;
  // vsim: see the end

  // ---------------------------------------------------------------- TRANSPOSE_A feeder
  // The block starts ub_addr + j*stride are exact below UB_ROWS (the range check), so arithmetic
  // modulo 2^UB_AW gives them; only the start after the last block may wrap, and it is not read.
  assign fd_issue = fd_busy_q && (!fd_v_q || tr_s_ready);
  assign fd_blk_end = fd_issue && fd_i_q == NCNT_W'(N - 1);

  always_ff @(posedge clk_load) begin
    if (rst) begin
      fd_busy_q <= 1'b0;
      fd_v_q <= 1'b0;
      fd_zrow_q <= 1'b0;
    end else begin
      fd_v_q <= fd_issue || (fd_v_q && !tr_s_ready);
      if (fd_issue) fd_zrow_q <= fd_out;
      if (seg_push && (s_cmd_flags & MATMUL_TRANSPOSE_A) != 8'd0) fd_busy_q <= 1'b1;
      else if (fd_issue && fd_left_q == 16'd1) fd_busy_q <= 1'b0;
    end
  end

  always_ff @(posedge clk_load) begin
    if (seg_push  && (s_cmd_flags & MATMUL_TRANSPOSE_A) != 8'd0) begin
      fd_left_q <= s_cmd_rows;
      fd_addr_q <= fd_start;
      fd_base_q <= fd_start;
      fd_stride_q <= UB_AW'(s_cmd_stride);
      fd_cv_q <= cmd_conv;
      fd_i_q <= '0;
    end else if (fd_issue) begin
      fd_left_q <= fd_left_q - 16'd1;
      if (fd_i_q == NCNT_W'(N - 1)) begin
        fd_i_q <= '0;
        fd_base_q <= fd_next;
        fd_addr_q <= fd_next;
      end else begin
        fd_i_q <= fd_i_q + NCNT_W'(1);
        fd_addr_q <= fd_addr_q + UB_AW'(1);
      end
    end
  end

  ntpu_transpose #(
    .N(N)
  ) u_tr (
    .clk        (clk_load),
    .rst        (rst),
    .s_row_valid(fd_v_q),
    .s_row_ready(tr_s_ready),
    .s_row_data (fd_zrow_q ? '0 : ub_rdata),
    .m_col_valid(tr_m_valid),
    .m_col_ready(mm_issue && mm_tr_q),
    .m_col_data (tr_m_data)
  );

  // ---------------------------------------------------------------- hazard check
  assign seg_own = seg_tail_q - SP_W'(1);
  // vsim: only where it is read (mm_busy_q: mm_issue, stall_hazard) and another MATMUL is in flight.
  always_comb begin
    mm_hazard = 1'b0;   if (mm_busy_q && seg_cnt_q > (SP_W + 1)'(1))
    if (mm_accum_q) begin
      for (int i = 0; i < SEG_DEPTH; i++) begin
        if (seg_vld_q[i] && SP_W'(i) != seg_own &&
            mm_acc_q >= seg_base_q[i] && mm_acc_q < seg_end_q[i]) begin
          mm_hazard = 1'b1;
        end
      end
    end
  end

  // ---------------------------------------------------------------- streamer
  // A row issued in the cycle of the tile's last beat enters the array one cycle later, after the
  // beat: so only reads still to issue hold the streamer back. A transposed row is no different:
  // its column is registered at issue (iss_row_q) and enters in the same cycle a UB row would.
  assign mm_wait_w = ld_busy_q && (ld_buf_q == mm_buf_q);
  assign mm_issue = mm_busy_q && !mm_wait_w && !mm_hazard && (!mm_tr_q || tr_m_valid) && !gap_wait;

  // The bf16 gap: cycles left before the next row may issue.
  if (BF16_GAP > 1) begin : g_gap
    logic [GAP_W-1:0] gap_q;

    always_ff @(posedge clk) begin
      if (rst) begin
        gap_q <= '0;
      end else if (mm_issue && mm_bf16_q) begin
        gap_q <= GAP_W'(BF16_GAP - 1);
      end else if (gap_q != '0) begin
        gap_q <= gap_q - GAP_W'(1);
      end
    end

    assign gap_wait = gap_q != '0;
  end else begin : g_no_gap
    assign gap_wait = 1'b0;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      mm_busy_q <= 1'b0;
      iss_q <= 1'b0;
    end else begin
      iss_q <= mm_issue;
      if (seg_push) mm_busy_q <= 1'b1;
      else if (mm_last) mm_busy_q <= 1'b0;
    end
  end

  always_ff @(posedge clk) begin
    if (seg_push) begin
      mm_buf_q <= new_act;
      mm_bf16_q <= (s_cmd_flags & MATMUL_BF16) != 8'd0;
      mm_accum_q <= (s_cmd_flags & MATMUL_ACCUMULATE) != 8'd0;
      mm_tr_q <= cmd_ta;
      mm_cv_q <= cmd_conv && !cmd_ta;
      mm_ub_q <= UB_AW'(s_cmd_addr);
      mm_acc_q <= EW'(s_cmd_acc_addr);
      mm_left_q <= s_cmd_rows;
    end else if (mm_issue) begin
      mm_ub_q <= mm_ub_q + UB_AW'(1);
      mm_acc_q <= mm_acc_q + EW'(1);
      mm_left_q <= mm_left_q - 16'd1;
    end
    if (mm_issue) begin
      iss_buf_q <= mm_buf_q;
      iss_bf16_q <= mm_bf16_q;
      iss_accum_q <= mm_accum_q;
      iss_tr_q <= mm_tr_q;
      iss_zero_q <= mm_cv_q && !cv_inside;
    end
    if (mm_issue && mm_tr_q) iss_row_q <= tr_m_data;
  end

  // One MATMUL streams at a time, so the UB port serves either the transposer or the rows.
  assign ub_re = mm_tr_q ? (fd_issue && !fd_out) : (mm_issue && !(mm_cv_q && !cv_inside));
  assign ub_raddr = mm_tr_q ? fd_addr_q : mm_cv_q ? cv_addr : mm_ub_q;
  assign acc_re = mm_issue && mm_accum_q;
  assign acc_raddr = mm_acc_q[ACC_AW-1:0];

  assign a_valid = iss_q;
  assign a_buf = iss_buf_q;
  assign a_bf16 = iss_bf16_q;
  assign a_row = iss_tr_q ? iss_row_q : iss_zero_q ? '0 : ub_rdata;
  assign a_acc = iss_accum_q ? acc_rdata : '0;

  // ---------------------------------------------------------------- write-back and segments
  assign acc_we = y_valid;
  assign acc_waddr = seg_base_q[seg_head_q][ACC_AW-1:0];
  assign acc_wdata = y_row;
  assign seg_pop = y_valid && (seg_base_q[seg_head_q] + EW'(1) == seg_end_q[seg_head_q]);

  always_ff @(posedge clk) begin
    if (rst) begin
      seg_head_q <= '0;
      seg_tail_q <= '0;
      seg_cnt_q <= '0;
      for (int i = 0; i < SEG_DEPTH; i++) seg_vld_q[i] <= 1'b0;
    end else begin
      if (seg_push) begin
        seg_vld_q[seg_tail_q] <= 1'b1;
        seg_tail_q <= seg_tail_q + SP_W'(1);
      end
      if (seg_pop) begin
        seg_vld_q[seg_head_q] <= 1'b0;
        seg_head_q <= seg_head_q + SP_W'(1);
      end
      seg_cnt_q <= seg_cnt_q + (SP_W + 1)'(seg_push) - (SP_W + 1)'(seg_pop);
    end
  end

  // A push never lands on the head entry being written back: a full FIFO refuses MATMULs.
  always_ff @(posedge clk) begin
    if (y_valid) seg_base_q[seg_head_q] <= seg_base_q[seg_head_q] + EW'(1);
    if (seg_push) begin
      seg_base_q[seg_tail_q] <= EW'(s_cmd_acc_addr);
      seg_end_q[seg_tail_q] <= EW'(s_cmd_acc_addr) + EW'(s_cmd_rows);
      seg_buf_q[seg_tail_q] <= new_act;
    end
  end

  assign idle = !mm_busy_q && !ld_active && (seg_cnt_q == '0);
  assign cmd_ta = (s_cmd_flags & MATMUL_TRANSPOSE_A) != 8'd0;

  // ---------------------------------------------------------------- CONV addressing (1.5)
  if (CONV_EN != 0) begin : g_conv
    localparam int YW = 26;  // y = oy*stride + dy below 2^24 (oy < 2^16), with its sign
    localparam int XW = 18;  // x = ox*stride + dx below 2^16 + 2^7

    // Setup from the offered command. With CONV_T a coordinate walks as y' = qy*stride + ry
    // (0 <= ry < stride), starting at dy = floor(dy/stride)*stride + (dy mod stride); the
    // row is inside where both phases are 0 and the quotients lie in the map. The forward case is
    // the same walk with a phase of period 1 and a step of stride.
    logic              su_t;                 // CONV_T
    logic [7:0]        su_step, su_per;      // coordinate step, phase period - 1
    logic signed [16:0] su_y0, su_x0;        // the first coordinates (weight gradient: i16 offsets)
    logic [7:0]        su_py0, su_px0;       // ... and phases
    logic [UB_AW-1:0]  su_p0, su_dpx, su_dpy;  // first pixel's row; row steps per x, per y step
    logic signed [39:0] su_pix;

    logic signed [8:0] dv_fq [2];
    logic [7:0] dv_fr [2];
    ntpu_floor_div8 u_div_y (.d(s_cmd_dy[7:0]), .s(s_cmd_cstride), .q(dv_fq[0]), .r(dv_fr[0]));
    ntpu_floor_div8 u_div_x (.d(s_cmd_dx[7:0]), .s(s_cmd_cstride), .q(dv_fq[1]), .r(dv_fr[1]));

    assign su_t = (s_cmd_flags & MATMUL_CONV_T) != 8'd0;
    assign su_step = (su_t || cmd_ta) ? 8'd1 : s_cmd_cstride;
    assign su_per = su_t ? s_cmd_cstride - 8'd1 : 8'd0;
    assign su_y0 = su_t ? 17'(dv_fq[0]) : 17'($signed(s_cmd_dy));
    assign su_x0 = su_t ? 17'(dv_fq[1]) : 17'($signed(s_cmd_dx));
    assign su_py0 = su_t ? dv_fr[0] : 8'd0;
    assign su_px0 = su_t ? dv_fr[1] : 8'd0;
    assign su_pix = (40'(su_y0) * $signed({32'd0, s_cmd_in_w}) + 40'(su_x0)) * $signed({32'd0, s_cmd_mb});
    assign su_p0 = UB_AW'(40'(s_cmd_addr) + su_pix);
    assign su_dpx = UB_AW'(16'(su_step) * 16'(s_cmd_mb));
    assign su_dpy = UB_AW'(24'(su_step) * 24'(s_cmd_in_w) * 24'(s_cmd_mb));

    logic [7:0]       in_h_q, in_w_q, mb_m1_q, ow_m1_q, step_q, per_q, x0_ph_q;
    logic [UB_AW-1:0] dpx_q, dpy_q;
    logic signed [16:0] x0_q;
    always_ff @(posedge clk) begin
      if (seg_push && cmd_conv) begin
        in_h_q <= s_cmd_in_h;
        in_w_q <= s_cmd_in_w;
        mb_m1_q <= s_cmd_mb - 8'd1;
        ow_m1_q <= s_cmd_out_w - 8'd1;
        step_q <= su_step;
        per_q <= su_per;
        x0_q <= su_x0;
        x0_ph_q <= su_px0;
        dpx_q <= su_dpx;
        dpy_q <= su_dpy;
      end
    end

    // The row generator: b, ox and the phases count; y, x and the pixel's UB row p follow them.
    logic [7:0]              b_q, ox_q, px_q, py_q;
    logic signed [XW-1:0]    x_q;
    logic signed [YW-1:0]    y_q;
    logic [UB_AW-1:0]        p_q, prow_q;
    always_ff @(posedge clk) begin
      if (seg_push && cmd_conv && !cmd_ta) begin
        b_q <= 8'd0;
        ox_q <= 8'd0;
        px_q <= su_px0;
        py_q <= su_py0;
        x_q <= XW'(su_x0);
        y_q <= YW'(su_y0);
        p_q <= su_p0;
        prow_q <= su_p0;
      end else if (mm_issue && mm_cv_q) begin
        if (b_q != mb_m1_q) begin
          b_q <= b_q + 8'd1;
        end else begin
          b_q <= 8'd0;
          if (ox_q == ow_m1_q) begin
            ox_q <= 8'd0;
            x_q <= XW'(x0_q);
            px_q <= x0_ph_q;
            if (py_q == per_q) begin
              py_q <= 8'd0;
              y_q <= y_q + YW'(step_q);
              prow_q <= prow_q + dpy_q;
              p_q <= prow_q + dpy_q;
            end else begin
              py_q <= py_q + 8'd1;
              p_q <= prow_q;
            end
          end else begin
            ox_q <= ox_q + 8'd1;
            if (px_q == per_q) begin
              px_q <= 8'd0;
              x_q <= x_q + XW'(step_q);
              p_q <= p_q + dpx_q;
            end else begin
              px_q <= px_q + 8'd1;
            end
          end
        end
      end
    end
    assign cv_addr = p_q + UB_AW'(b_q);
    assign cv_inside = px_q == 8'd0 && py_q == 8'd0 && x_q >= 0 && x_q < $signed(XW'(in_w_q)) &&
                       y_q >= 0 && y_q < $signed(YW'(in_h_q));

    // The weight-gradient feeder's blocks: t counts the tiles, kx the taps of a kernel row; (fy, fx)
    // is the block's pixel, pix its tile-0 row, prow pix at kx = 0.
    logic [15:0]       t_q, ct_m1_q;
    logic [7:0]        kx_q, k_m1_q;
    logic signed [17:0] fx_q, fy_q, fx0_q;  // dy + ky with an i16 dy
    logic [UB_AW-1:0]  pix_q, fprow_q;
    always_ff @(posedge clk) begin
      if (seg_push && cmd_conv && cmd_ta) begin
        t_q <= 16'd0;
        ct_m1_q <= s_cmd_ct - 16'd1;
        kx_q <= 8'd0;
        k_m1_q <= s_cmd_k - 8'd1;
        fx_q <= 18'(su_x0);
        fx0_q <= 18'(su_x0);
        fy_q <= 18'(su_y0);
        pix_q <= su_p0;
        fprow_q <= su_p0;
      end else if (fd_blk_end && fd_cv_q) begin
        if (t_q != ct_m1_q) begin
          t_q <= t_q + 16'd1;
        end else begin
          t_q <= 16'd0;
          if (kx_q != k_m1_q) begin
            kx_q <= kx_q + 8'd1;
            fx_q <= fx_q + 18'sd1;
            pix_q <= pix_q + dpx_q;
          end else begin
            kx_q <= 8'd0;
            fx_q <= fx0_q;
            fy_q <= fy_q + 18'sd1;
            fprow_q <= fprow_q + dpy_q;
            pix_q <= fprow_q + dpy_q;
          end
        end
      end
    end
    always_comb begin
      if (!fd_cv_q) fd_next = fd_base_q + fd_stride_q;
      else if (t_q != ct_m1_q) fd_next = fd_base_q + fd_stride_q;
      else if (kx_q != k_m1_q) fd_next = pix_q + dpx_q;
      else fd_next = fprow_q + dpy_q;
    end
    assign fd_start = cmd_conv ? su_p0 : UB_AW'(s_cmd_addr);
    assign fd_out = fd_cv_q && !(fx_q >= 0 && fx_q < $signed(18'(in_w_q)) && fy_q >= 0 &&
                                 fy_q < $signed(18'(in_h_q)));
    assign cmd_conv = (s_cmd_flags & MATMUL_CONV) != 8'd0;
  end else begin : g_no_conv
    assign cmd_conv = 1'b0;
    assign cv_addr = '0;
    assign cv_inside = 1'b1;
    assign fd_out = 1'b0;
    assign fd_start = UB_AW'(s_cmd_addr);
    assign fd_next = fd_base_q + fd_stride_q;
    logic unused_conv;
    assign unused_conv = ^{s_cmd_in_h, s_cmd_in_w, s_cmd_out_w, s_cmd_mb, s_cmd_cstride, s_cmd_k, s_cmd_ct,
                           s_cmd_dy, s_cmd_dx, fd_cv_q, fd_blk_end};
  end
  assign stall_weight = mm_busy_q && mm_wait_w;
  // ---------------------------------------------------------------- overlap query
  if (MEM_OVERLAP != 0) begin : g_query
    logic [17:0] q_lo, q_hi, mm_ub_end;
    assign q_lo = 18'(q_addr);
    assign q_hi = 18'(q_addr) + 18'(q_rows);
    assign mm_ub_end = 18'(mm_ub_q) + 18'(mm_left_q);
    always_comb begin
      q_conflict = 1'b1;
      if (q_write && q_mem == 2'(ntpu_pkg::MEM_WB)) begin
        q_conflict = ld_busy_q;
      end else if (q_write && q_mem == 2'(ntpu_pkg::MEM_UB)) begin
        q_conflict = fd_busy_q ||
                     (mm_busy_q && (mm_tr_q || mm_cv_q || (q_lo < mm_ub_end && 18'(mm_ub_q) < q_hi)));
      end else if (!q_write && q_mem == 2'(ntpu_pkg::MEM_ACC)) begin
        q_conflict = 1'b0;
        for (int i = 0; i < SEG_DEPTH; i++) begin
          if (seg_vld_q[i] && q_lo < 18'(seg_end_q[i]) && 18'(seg_base_q[i]) < q_hi) q_conflict = 1'b1;
        end
      end
    end
  end else begin : g_no_query
    // Nothing runs beside the sequencer: every range conflicts.
    logic unused_q;
    assign unused_q = ^{q_mem, q_write, q_addr, q_rows};
    assign q_conflict = 1'b1;
  end

  assign stall_hazard = (mm_busy_q && !mm_wait_w && mm_hazard) ||
                        (s_cmd_valid && s_cmd_matmul && mm_free && seg_full);

  // vsim's gated clock clk_load (ntpu_core; docs/decisions/0024-vsim-load-clock.md): the weight
  // loader, the TRANSPOSE_A feeder and the transposer. Their registers change only while
  // load_busy: the loader while it has reads or a beat left or a LOAD_W is offered, the feeder and
  // the transposer while the feeder has rows left or in hand, a TRANSPOSE_A MATMUL streams (it takes
  // the transposer's columns) or is offered. The feeder's registers are loaded by TRANSPOSE_A
  // MATMULs only (by every MATMUL in the synthesised form): they are read only while the feeder
  // runs, after such a load.
  // load_busy depends on registers only (s_cmd_* come from the command processor's).
  assign load_busy = ld_active || fd_busy_q || fd_v_q || (mm_busy_q && mm_tr_q) ||
                     (s_cmd_valid && (!s_cmd_matmul || (s_cmd_flags & MATMUL_TRANSPOSE_A) != 8'd0));

  // The weight row only in the cycles of a beat, the only ones the array reads it in (a latch):
  // as a net it followed wb_rdata, which changes on clk, and was recomputed after every edge.
  /* verilator lint_off LATCH */
  always_comb begin
    if (ld_beat_q) w_row = ld_zero_q ? '0 : wb_rdata;
  end
  /* verilator lint_on LATCH */

  // Reserved flag bits and the address bits above a memory's size are zero in a checked command.
  logic unused_cmd_bits;
  assign unused_cmd_bits = ^{s_cmd_flags, s_cmd_addr, s_cmd_acc_addr, s_cmd_stride};

endmodule

`default_nettype wire
