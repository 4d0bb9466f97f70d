// SPDX-License-Identifier: Apache-2.0
// nanoTPU core: link framing, command processor, sequencer, memories, the systolic array and the
// vector unit, behind one byte stream in and one byte stream out (docs/protocol.md, docs/isa.md).
//
// Contract: s_rx carries the host -> device byte stream, m_tx the device -> host stream, up to
// LINK_BYTES bytes per cycle each (byte 0 first in the data word; s_rx_valid, s_rx_ready and
// m_tx_valid are thermometer codes of the bytes offered / taken; m_tx_ready takes every byte
// offered). LINK_BYTES = 1 is the plain byte-wide valid/ready stream of the boards. Every frame
// gets exactly one reply, in order; any byte sequence leaves the core able to take the next good
// frame after the host's resync procedure. m_tx is driven from registers.
// The ports are fixed: the Verilator harnesses (sim/vsim/) and the board tops (fpga/) depend on them.
`default_nettype none

module ntpu_core
  import ntpu_pkg::*;
#(
  parameter int N = 8,               // array size, 2..32
  parameter int UB_ROWS = 16384,     // unified buffer rows (N x 16 bit)
  parameter int WB_ROWS = 32768,     // weight buffer rows (N x 16 bit)
  parameter int ACC_ROWS = 32768,    // accumulator rows (N x 32 bit)
  parameter int MAX_PAYLOAD = 4112,  // largest frame payload in bytes
  parameter logic [31:0] CLOCK_HZ = 32'd0,  // reported by INFO; 0 = simulation
  parameter int PE_STAGES = 1,       // pipelined PEs for FPGAs (ntpu_array); same results
  parameter int VEC_EN = 1,          // the vector unit; 0: ACT, RELU_GRAD, COLSUM are unknown opcodes
  parameter int TRANSPOSE_A_EN = 1,  // 0: MATMUL's TRANSPOSE_A flag is reserved (ERR_ARG)
  parameter int COUNTER_W = 64,      // performance counter width, 16..64 (zero-extended on the wire)
  parameter int BF16_SHARED = 0,     // 1: one fp32 adder for the array's bf16 rows (ntpu_array); same results
  parameter int SEG_DEPTH = 4,       // MATMULs with rows in flight at once (ntpu_seq), power of 2 >= 2
  parameter int LINK_BYTES = 1,      // link bytes per cycle each way: 1 on boards, wider in vsim
  parameter int PM_ROWS = 0,         // program memory rows (protocol 1.4 RUN, ntpu_cmd); 0: none
  parameter int MEM_OVERLAP = 0,     // 1: WRITE_MEM / READ_MEM beside LOAD_W / MATMUL (ntpu_cmd; a
                                     // mirror of ACC for READ_MEM: twice the ACC memory)
  parameter int OS_ROWS = 0,         // optimizer-state rows (N x 32 bit; OPTIM ADAM, with VEC_EN);
                                     // 0: no OS and no Adam logic (the boards)
  parameter int CONV_EN = 0,         // 1: MATMUL CONV / CONV_T addressing (1.5, ntpu_seq); 0: the boards
  parameter int POOL_EN = 0          // 1: POOL (1.5, ntpu_vpool, with VEC_EN); 0: the boards
) (
  input  logic                    clk,
  input  logic                    rst,
  input  logic [8*LINK_BYTES-1:0] s_rx_data,
  input  logic [LINK_BYTES-1:0]   s_rx_valid,
  output logic [LINK_BYTES-1:0]   s_rx_ready,
  output logic [8*LINK_BYTES-1:0] m_tx_data,
  output logic [LINK_BYTES-1:0]   m_tx_valid,
  input  logic                    m_tx_ready
);

  if (N < 2 || N > 32) begin : g_bad_n
    initial $fatal(1, "ntpu_core: N must be 2..32");
  end
  if (UB_ROWS < 1 || UB_ROWS > 65536 || ACC_ROWS < 1 || ACC_ROWS > 65536 ||
      WB_ROWS < N || WB_ROWS > 65536) begin : g_bad_rows
    initial $fatal(1, "ntpu_core: UB_ROWS, ACC_ROWS must be 1..65536, WB_ROWS N..65536");
  end
  if (MAX_PAYLOAD < 1 + COUNTERS_BYTES || MAX_PAYLOAD > 65535) begin : g_bad_payload
    initial $fatal(1, "ntpu_core: MAX_PAYLOAD must be 73..65535");
  end
  if (LINK_BYTES < 1 || LINK_BYTES > 64) begin : g_bad_link_bytes
    initial $fatal(1, "ntpu_core: LINK_BYTES must be 1..64");
  end
  if (COUNTER_W < 16 || COUNTER_W > CNT_W) begin : g_bad_counter_w
    initial $fatal(1, "ntpu_core: COUNTER_W must be 16..64");
  end
  if (OS_ROWS < 0 || OS_ROWS > 65536 || (OS_ROWS > 0 && VEC_EN == 0)) begin : g_bad_os_rows
    initial $fatal(1, "ntpu_core: OS_ROWS must be 0..65536, and 0 without the vector unit");
  end

  localparam int OFF_W = $clog2(MAX_PAYLOAD);
  localparam int UB_AW = (UB_ROWS > 1) ? $clog2(UB_ROWS) : 1;
  localparam int WB_AW = (WB_ROWS > 1) ? $clog2(WB_ROWS) : 1;
  localparam int ACC_AW = (ACC_ROWS > 1) ? $clog2(ACC_ROWS) : 1;
  localparam int OS_AW = (OS_ROWS > 1) ? $clog2(OS_ROWS) : 1;
  // ntpu_array's BF16_LATENCY with BF16_SHARED (ntpu_bf16_shared's header; the array checks it).
  localparam int SH_P = (N > PE_STAGES) ? N : PE_STAGES;
  localparam int BF16_GAP = (BF16_SHARED != 0) ? 2 + (N - 1) * SH_P + N + PE_STAGES - 1 : 0;

  // ---------------------------------------------------------------- link
  logic frm_valid, frm_ready;
  logic [7:0] frm_seq, frm_status;
  logic [15:0] frm_len;
  logic frm_re;
  logic [OFF_W-1:0] frm_raddr;
  logic [8*LINK_BYTES-1:0] frm_rdata;
  logic drop;

  logic hdr_valid, hdr_ready;
  logic [7:0] hdr_seq, hdr_status;
  logic [15:0] hdr_len;
  logic [8*LINK_BYTES-1:0] body_data;
  logic [LINK_BYTES-1:0] body_valid;
  logic body_ready;

  ntpu_link_rx #(
    .MAX_PAYLOAD(MAX_PAYLOAD),
    .LINK_BYTES (LINK_BYTES)
  ) u_rx (
    .clk         (clk),
    .rst         (rst),
    .s_rx_data   (s_rx_data),
    .s_rx_valid  (s_rx_valid),
    .s_rx_ready  (s_rx_ready),
    .m_frm_valid (frm_valid),
    .m_frm_ready (frm_ready),
    .m_frm_seq   (frm_seq),
    .m_frm_len   (frm_len),
    .m_frm_status(frm_status),
    .frm_re      (frm_re),
    .frm_raddr   (frm_raddr),
    .frm_rdata   (frm_rdata),
    .drop        (drop)
  );

  ntpu_link_tx #(
    .LINK_BYTES(LINK_BYTES)
  ) u_tx (
    .clk         (clk),
    .rst         (rst),
    .s_hdr_valid (hdr_valid),
    .s_hdr_ready (hdr_ready),
    .s_hdr_seq   (hdr_seq),
    .s_hdr_len   (hdr_len),
    .s_hdr_status(hdr_status),
    .s_body_data (body_data),
    .s_body_valid(body_valid),
    .s_body_ready(body_ready),
    .m_tx_data   (m_tx_data),
    .m_tx_valid  (m_tx_valid),
    .m_tx_ready  (m_tx_ready)
  );

  // ---------------------------------------------------------------- command processor
  logic seq_valid, seq_ready, seq_matmul, seq_idle;
  logic [7:0] seq_flags;
  logic [15:0] seq_addr, seq_acc_addr, seq_rows, seq_stride;
  logic [95:0] seq_conv;  // MATMUL CONV fields (ntpu_cmd m_seq_conv)
  logic vec_valid, vec_ready, vec_idle;
  logic [7:0] vec_op, vec_flags;
  logic [15:0] vec_src, vec_dst, vec_rows, vec_aux, vec_s;
  logic [2:0] cmd_mem_sel;
  logic cmd_mem_we, cmd_mem_re;
  logic [15:0] cmd_mem_addr;
  logic [N*32-1:0] cmd_mem_wdata;
  logic [N*16-1:0] ub_rdata, wb_rdata;
  logic [N*32-1:0] acc_rdata, os_rdata;
  logic [CNT_COUNT*COUNTER_W-1:0] cnt;
  logic [CNT_COUNT-1:0] cnt_clear;
  logic wait_frame, wait_drain;
  logic [1:0] q_mem;
  logic q_write, q_conflict;
  logic [15:0] q_addr, q_rows;
  logic [N*32-1:0] cmd_acc_rdata;

  ntpu_cmd #(
    .N          (N),
    .UB_ROWS    (UB_ROWS),
    .WB_ROWS    (WB_ROWS),
    .ACC_ROWS   (ACC_ROWS),
    .MAX_PAYLOAD(MAX_PAYLOAD),
    .CLOCK_HZ   (CLOCK_HZ),
    .VEC_EN     (VEC_EN),
    .TRANSPOSE_A_EN(TRANSPOSE_A_EN),
    .COUNTER_W  (COUNTER_W),
    .LINK_BYTES (LINK_BYTES),
    .MEM_OVERLAP(MEM_OVERLAP),
    .PM_ROWS    (PM_ROWS),
    .OS_ROWS    (OS_ROWS),
    .CONV_EN    (CONV_EN),
    .POOL_EN    (POOL_EN)
  ) u_cmd (
    .clk           (clk),
    .rst           (rst),
    .s_frm_valid   (frm_valid),
    .s_frm_ready   (frm_ready),
    .s_frm_seq     (frm_seq),
    .s_frm_len     (frm_len),
    .s_frm_status  (frm_status),
    .frm_re        (frm_re),
    .frm_raddr     (frm_raddr),
    .frm_rdata     (frm_rdata),
    .drop          (drop),
    .m_hdr_valid   (hdr_valid),
    .m_hdr_ready   (hdr_ready),
    .m_hdr_seq     (hdr_seq),
    .m_hdr_len     (hdr_len),
    .m_hdr_status  (hdr_status),
    .m_body_data   (body_data),
    .m_body_valid  (body_valid),
    .m_body_ready  (body_ready),
    .m_seq_valid   (seq_valid),
    .m_seq_ready   (seq_ready),
    .m_seq_matmul  (seq_matmul),
    .m_seq_flags   (seq_flags),
    .m_seq_addr    (seq_addr),
    .m_seq_acc_addr(seq_acc_addr),
    .m_seq_rows    (seq_rows),
    .m_seq_stride  (seq_stride),
    .m_seq_conv    (seq_conv),
    .seq_idle      (seq_idle),
    .q_mem         (q_mem),
    .q_write       (q_write),
    .q_addr        (q_addr),
    .q_rows        (q_rows),
    .q_conflict    (q_conflict),
    .m_vec_valid   (vec_valid),
    .m_vec_ready   (vec_ready),
    .m_vec_op      (vec_op),
    .m_vec_flags   (vec_flags),
    .m_vec_src     (vec_src),
    .m_vec_dst     (vec_dst),
    .m_vec_rows    (vec_rows),
    .m_vec_aux     (vec_aux),
    .m_vec_s       (vec_s),
    .vec_idle      (vec_idle),
    .mem_sel       (cmd_mem_sel),
    .mem_we        (cmd_mem_we),
    .mem_re        (cmd_mem_re),
    .mem_addr      (cmd_mem_addr),
    .mem_wdata     (cmd_mem_wdata),
    .ub_rdata      (ub_rdata),
    .wb_rdata      (wb_rdata),
    .acc_rdata     (cmd_acc_rdata),
    .os_rdata      (os_rdata),
    .cnt           (cnt),
    .cnt_clear     (cnt_clear),
    .wait_frame    (wait_frame),
    .wait_drain    (wait_drain)
  );

  // ---------------------------------------------------------------- sequencer and array
  logic sq_ub_re, sq_wb_re, sq_acc_re, sq_acc_we;
  logic [UB_AW-1:0] sq_ub_raddr;
  logic [WB_AW-1:0] sq_wb_raddr;
  logic [ACC_AW-1:0] sq_acc_raddr, sq_acc_waddr;
  logic [N*32-1:0] sq_acc_wdata;
  logic w_valid, w_buf, w_transpose, a_valid, a_buf, a_bf16, y_valid;
  logic [N*16-1:0] w_row, a_row;
  logic [N*32-1:0] a_acc, y_row;
  logic stall_weight, stall_hazard;

  ntpu_seq #(
    .N       (N),
    .UB_ROWS (UB_ROWS),
    .WB_ROWS (WB_ROWS),
    .ACC_ROWS(ACC_ROWS),
    .SEG_DEPTH(SEG_DEPTH),
    .BF16_GAP(BF16_GAP),
    .MEM_OVERLAP(MEM_OVERLAP),
    .CONV_EN (CONV_EN)
  ) u_seq (
    .clk           (clk),
    .rst           (rst),
    .s_cmd_valid   (seq_valid),
    .s_cmd_ready   (seq_ready),
    .s_cmd_matmul  (seq_matmul),
    .s_cmd_flags   (seq_flags),
    .s_cmd_addr    (seq_addr),
    .s_cmd_acc_addr(seq_acc_addr),
    .s_cmd_rows    (seq_rows),
    .s_cmd_stride  (seq_stride),
    .s_cmd_ct      (seq_conv[95:80]),
    .s_cmd_in_h    (seq_conv[79:72]),
    .s_cmd_in_w    (seq_conv[71:64]),
    .s_cmd_out_w   (seq_conv[63:56]),
    .s_cmd_mb      (seq_conv[55:48]),
    .s_cmd_cstride (seq_conv[47:40]),
    .s_cmd_k       (seq_conv[39:32]),
    .s_cmd_dy      (seq_conv[31:16]),
    .s_cmd_dx      (seq_conv[15:0]),
    .idle          (seq_idle),
    .ub_re         (sq_ub_re),
    .ub_raddr      (sq_ub_raddr),
    .ub_rdata      (ub_rdata),
    .wb_re         (sq_wb_re),
    .wb_raddr      (sq_wb_raddr),
    .wb_rdata      (wb_rdata),
    .acc_re        (sq_acc_re),
    .acc_raddr     (sq_acc_raddr),
    .acc_rdata     (acc_rdata),
    .acc_we        (sq_acc_we),
    .acc_waddr     (sq_acc_waddr),
    .acc_wdata     (sq_acc_wdata),
    .w_valid       (w_valid),
    .w_buf         (w_buf),
    .w_transpose   (w_transpose),
    .w_row         (w_row),
    .a_valid       (a_valid),
    .a_buf         (a_buf),
    .a_bf16        (a_bf16),
    .a_row         (a_row),
    .a_acc         (a_acc),
    .y_valid       (y_valid),
    .y_row         (y_row),
    .stall_weight  (stall_weight),
    .stall_hazard  (stall_hazard),
    .q_mem         (q_mem),
    .q_write       (q_write),
    .q_addr        (q_addr),
    .q_rows        (q_rows),
    .q_conflict    (q_conflict)
  );

  ntpu_array #(
    .N(N),
    .PE_STAGES(PE_STAGES),
    .BF16_SHARED(BF16_SHARED),
    .BF16_GAP(BF16_GAP)
  ) u_array (
    .clk        (clk),
    .rst        (rst),
    .w_valid    (w_valid),
    .w_buf      (w_buf),
    .w_transpose(w_transpose),
    .w_row      (w_row),
    .a_valid    (a_valid),
    .a_buf      (a_buf),
    .a_bf16     (a_bf16),
    .a_row      (a_row),
    .a_acc      (a_acc),
    .y_valid    (y_valid),
    .y_row      (y_row)
  );

  // ---------------------------------------------------------------- vector unit
  logic vs_acc_re, vs_ub_re, vs_we;
  logic [ACC_AW-1:0] vs_acc_raddr;
  logic [UB_AW-1:0] vs_ub_raddr;
  logic [1:0] vs_wr_mem;
  logic [15:0] vs_wr_addr;
  logic [N*32-1:0] vs_wr_data;
  logic vs_stall_hazard;
  logic vs_os_re, vs_os_we;
  logic [OS_AW-1:0] vs_os_raddr, vs_os_waddr;
  logic [N*32-1:0] vs_os_wdata;

  if (VEC_EN != 0) begin : g_vec
    // POOL (1.5) goes to ntpu_vpool, every other vector command to ntpu_vseq; one runs at a time
    // (the command processor starts a vector command only while the unit is idle), so their memory
    // ports merge by who is busy.
    logic q_valid, q_ready, q_idle, is_pool;
    logic q_acc_re, q_ub_re, q_we;
    logic [ACC_AW-1:0] q_acc_raddr;
    logic [UB_AW-1:0] q_ub_raddr;
    logic [1:0] q_wr_mem;
    logic [15:0] q_wr_addr;
    logic [N*32-1:0] q_wr_data;
    assign is_pool = (POOL_EN != 0) && vec_op == OP_POOL;
    assign q_valid = vec_valid && !is_pool;
    ntpu_vseq #(
      .N       (N),
      .UB_ROWS (UB_ROWS),
      .ACC_ROWS(ACC_ROWS),
      .OS_ROWS (OS_ROWS)
    ) u_vseq (
      .clk         (clk),
      .rst         (rst),
      .s_cmd_valid (q_valid),
      .s_cmd_ready (q_ready),
      .s_cmd_op    (vec_op),
      .s_cmd_flags (vec_flags),
      .s_cmd_src   (vec_src),
      .s_cmd_dst   (vec_dst),
      .s_cmd_rows  (vec_rows),
      .s_cmd_aux   (vec_aux),
      .s_cmd_s     (vec_s),
      .idle        (q_idle),
      .acc_re      (q_acc_re),
      .acc_raddr   (q_acc_raddr),
      .acc_rdata   (acc_rdata),
      .ub_re       (q_ub_re),
      .ub_raddr    (q_ub_raddr),
      .ub_rdata    (ub_rdata),
      .wr_we       (q_we),
      .wr_mem      (q_wr_mem),
      .wr_addr     (q_wr_addr),
      .wr_data     (q_wr_data),
      .os_re       (vs_os_re),
      .os_raddr    (vs_os_raddr),
      .os_rdata    (os_rdata),
      .os_we       (vs_os_we),
      .os_waddr    (vs_os_waddr),
      .os_wdata    (vs_os_wdata),
      .stall_hazard(vs_stall_hazard)
    );
    if (POOL_EN != 0) begin : g_pool
      logic p_busy, p_acc_re, p_ub_re, p_we, p_acc;
      logic [ACC_AW-1:0] p_acc_raddr;
      logic [UB_AW-1:0] p_ub_raddr;
      logic [15:0] p_wr_addr;
      logic [N*32-1:0] p_wr_data;
      ntpu_vpool #(
        .N    (N),
        .UB_AW(UB_AW),
        .ACC_AW(ACC_AW)
      ) u_vpool (
        .clk      (clk),
        .rst      (rst),
        .start    (vec_valid && is_pool && !p_busy),
        .mode     (vec_flags[1:0]),
        .src      (vec_src),
        .dst      (vec_dst),
        .aux      (vec_aux),
        .in_h     (vec_rows[7:0]),
        .in_w     (vec_rows[15:8]),
        .mb       (vec_s[7:0]),
        .k        (vec_s[15:8]),
        .busy     (p_busy),
        .acc_re   (p_acc_re),
        .acc_raddr(p_acc_raddr),
        .acc_rdata(acc_rdata),
        .ub_re    (p_ub_re),
        .ub_raddr (p_ub_raddr),
        .ub_rdata (ub_rdata),
        .wr_we    (p_we),
        .wr_acc   (p_acc),
        .wr_addr  (p_wr_addr),
        .wr_data  (p_wr_data)
      );
      assign vec_ready = is_pool ? !p_busy : q_ready;
      assign vec_idle = q_idle && !p_busy;
      assign vs_acc_re = q_acc_re || p_acc_re;
      assign vs_acc_raddr = p_busy ? p_acc_raddr : q_acc_raddr;
      assign vs_ub_re = q_ub_re || p_ub_re;
      assign vs_ub_raddr = p_busy ? p_ub_raddr : q_ub_raddr;
      assign vs_we = q_we || p_we;
      assign vs_wr_mem = p_busy ? (p_acc ? 2'(MEM_ACC) : 2'(MEM_UB)) : q_wr_mem;
      assign vs_wr_addr = p_busy ? p_wr_addr : q_wr_addr;
      assign vs_wr_data = p_busy ? p_wr_data : q_wr_data;
    end else begin : g_no_pool
      assign vec_ready = q_ready;
      assign vec_idle = q_idle;
      assign vs_acc_re = q_acc_re;
      assign vs_acc_raddr = q_acc_raddr;
      assign vs_ub_re = q_ub_re;
      assign vs_ub_raddr = q_ub_raddr;
      assign vs_we = q_we;
      assign vs_wr_mem = q_wr_mem;
      assign vs_wr_addr = q_wr_addr;
      assign vs_wr_data = q_wr_data;
    end
  end else begin : g_no_vec
    // The command processor answers vector opcodes with ERR_OPCODE and never starts this unit.
    logic unused_vec;
    assign unused_vec = ^{vec_valid, vec_op, vec_flags, vec_src, vec_dst, vec_rows, vec_aux, vec_s};
    assign vec_ready = 1'b0;
    assign vec_idle = 1'b1;
    assign vs_acc_re = 1'b0;
    assign vs_acc_raddr = '0;
    assign vs_ub_re = 1'b0;
    assign vs_ub_raddr = '0;
    assign vs_we = 1'b0;
    assign vs_wr_mem = '0;
    assign vs_wr_addr = '0;
    assign vs_wr_data = '0;
    assign vs_stall_hazard = 1'b0;
    assign vs_os_re = 1'b0;
    assign vs_os_raddr = '0;
    assign vs_os_we = 1'b0;
    assign vs_os_waddr = '0;
    assign vs_os_wdata = '0;
  end

  // ---------------------------------------------------------------- memories
  // The command processor touches memory only while both sequencers are idle, and it starts the
  // vector sequencer only while the other one is idle and the other way round, so at most one of
  // the three uses a port at a time: the muxes below are plain priorities. With MEM_OVERLAP the
  // command processor also writes UB / WB beside the sequencer, which only reads them, and reads
  // ACC from a mirror that every ACC write also updates.
  logic cmd_ub, cmd_wb, cmd_acc, vs_ub, vs_wb, vs_acc;
  logic unused_addr_bits;  // above the memory's size: zero after the range check
  assign unused_addr_bits = ^{cmd_mem_addr, vs_wr_addr};
  assign vs_ub = vs_we && (vs_wr_mem == 2'(MEM_UB));
  assign vs_wb = vs_we && (vs_wr_mem == 2'(MEM_WB));
  assign vs_acc = vs_we && (vs_wr_mem == 2'(MEM_ACC));
  assign cmd_ub = (cmd_mem_sel == 3'(MEM_UB));
  assign cmd_wb = (cmd_mem_sel == 3'(MEM_WB));
  assign cmd_acc = (cmd_mem_sel == 3'(MEM_ACC));

  ntpu_ram #(
    .WIDTH(N * 16),
    .DEPTH(UB_ROWS)
  ) u_ub (
    .clk  (clk),
    .we   (vs_ub || (cmd_mem_we && cmd_ub)),
    .waddr(vs_ub ? UB_AW'(vs_wr_addr) : UB_AW'(cmd_mem_addr)),
    .wdata(vs_ub ? vs_wr_data[N*16-1:0] : cmd_mem_wdata[N*16-1:0]),
    .re   (sq_ub_re || vs_ub_re || (cmd_mem_re && cmd_ub)),
    .raddr(sq_ub_re ? sq_ub_raddr : vs_ub_re ? vs_ub_raddr : UB_AW'(cmd_mem_addr)),
    .rdata(ub_rdata)
  );

  ntpu_ram #(
    .WIDTH(N * 16),
    .DEPTH(WB_ROWS)
  ) u_wb (
    .clk  (clk),
    .we   (vs_wb || (cmd_mem_we && cmd_wb)),
    .waddr(vs_wb ? WB_AW'(vs_wr_addr) : WB_AW'(cmd_mem_addr)),
    .wdata(vs_wb ? vs_wr_data[N*16-1:0] : cmd_mem_wdata[N*16-1:0]),
    .re   (sq_wb_re || (cmd_mem_re && cmd_wb)),
    .raddr(sq_wb_re ? sq_wb_raddr : WB_AW'(cmd_mem_addr)),
    .rdata(wb_rdata)
  );

  logic acc_we;
  logic [ACC_AW-1:0] acc_waddr;
  logic [N*32-1:0] acc_wdata;
  assign acc_we = sq_acc_we || vs_acc || (cmd_mem_we && cmd_acc);
  assign acc_waddr = sq_acc_we ? sq_acc_waddr : vs_acc ? ACC_AW'(vs_wr_addr) : ACC_AW'(cmd_mem_addr);
  assign acc_wdata = sq_acc_we ? sq_acc_wdata : vs_acc ? vs_wr_data : cmd_mem_wdata;

  ntpu_ram #(
    .WIDTH(N * 32),
    .DEPTH(ACC_ROWS)
  ) u_acc (
    .clk  (clk),
    .we   (acc_we),
    .waddr(acc_waddr),
    .wdata(acc_wdata),
    .re   (sq_acc_re || vs_acc_re || (MEM_OVERLAP == 0 && cmd_mem_re && cmd_acc)),
    .raddr(sq_acc_re ? sq_acc_raddr : vs_acc_re ? vs_acc_raddr : ACC_AW'(cmd_mem_addr)),
    .rdata(acc_rdata)
  );

  if (MEM_OVERLAP != 0) begin : g_acc_mirror
    ntpu_ram #(
      .WIDTH(N * 32),
      .DEPTH(ACC_ROWS)
    ) u_acc_cmd (
      .clk  (clk),
      .we   (acc_we),
      .waddr(acc_waddr),
      .wdata(acc_wdata),
      .re   (cmd_mem_re && cmd_acc),
      .raddr(ACC_AW'(cmd_mem_addr)),
      .rdata(cmd_acc_rdata)
    );
  end else begin : g_acc_shared
    assign cmd_acc_rdata = acc_rdata;
  end

  // OS: the command processor's WRITE_MEM / READ_MEM and ADAM's reads and writes, never at once.
  if (OS_ROWS > 0) begin : g_os
    logic cmd_os;
    assign cmd_os = (cmd_mem_sel == 3'(MEM_OS));
    ntpu_ram #(
      .WIDTH(N * 32),
      .DEPTH(OS_ROWS)
    ) u_os (
      .clk  (clk),
      .we   (vs_os_we || (cmd_mem_we && cmd_os)),
      .waddr(vs_os_we ? vs_os_waddr : OS_AW'(cmd_mem_addr)),
      .wdata(vs_os_we ? vs_os_wdata : cmd_mem_wdata),
      .re   (vs_os_re || (cmd_mem_re && cmd_os)),
      .raddr(vs_os_re ? vs_os_raddr : OS_AW'(cmd_mem_addr)),
      .rdata(os_rdata)
    );
  end else begin : g_no_os
    logic unused_os;
    assign unused_os = ^{vs_os_re, vs_os_raddr, vs_os_we, vs_os_waddr, vs_os_wdata};
    assign os_rdata = '0;
  end

  // ---------------------------------------------------------------- performance counters
  // Link bytes per cycle: thermometer codes, so the count is the number of bits set (vsim's form
  // of this module counts them by the exponent of a double: sim/vsim/ntpu_vsim_pkg.sv).
  logic [7:0] rx_n, tx_n;
  assign rx_n = 8'($countones(s_rx_valid & s_rx_ready));
  assign tx_n = m_tx_ready ? 8'($countones(m_tx_valid)) : 8'd0;

  ntpu_perf #(
    .N        (N),
    .COUNTER_W(COUNTER_W)
  ) u_perf (
    .clk         (clk),
    .rst         (rst),
    .clear       (cnt_clear),
    .array_busy  (a_valid),
    .macs_add    (seq_valid && seq_ready && seq_matmul),
    .macs_rows   (seq_rows),
    .stall_link  (wait_frame && seq_idle && vec_idle),
    .stall_weight(stall_weight),
    // Waiting to drain counts only while the array has nothing else to do.
    .stall_hazard(stall_hazard || vs_stall_hazard || (wait_drain && !a_valid && !stall_weight)),
    .stall_tx    (m_tx_valid[0] && !m_tx_ready),
    .rx_bytes    (rx_n),
    .tx_bytes    (tx_n),
    .cnt         (cnt)
  );




endmodule

`default_nettype wire
