// SPDX-License-Identifier: Apache-2.0
// vsim's simulation form of rtl/ntpu_cmd.sv (docs/decisions/0025-one-rtl.md): the same module, written to
// simulate fast in Verilator, and held to its twin by the lockstep check (sim/vsim/README.md).
// Command processor: decodes each received frame (docs/isa.md), executes the memory, status and
// control commands itself, hands LOAD_W and MATMUL to the sequencer and ACT, RELU_GRAD and COLSUM
// to the vector sequencer, and sends one reply per frame.
//
// Contract:
// - Frames are taken from s_frm one at a time, in order; each is released (s_frm_ready) in the cycle
//   its last reply byte goes to the transmitter, so replies leave in frame order.
// - A frame that arrived with ERR_CRC or ERR_LENGTH is answered with that status. A good SYNC frame
//   is answered with expected_seq, whatever its SEQ. Any other good frame whose SEQ is not
//   expected_seq is answered with ERR_SEQ and not run; one whose SEQ is expected_seq advances it and
//   is checked in the order of docs/isa.md (opcode, length, memory id, reserved flags, data length,
//   address ranges); the first failing check gives the status and the command does nothing else.
// - LOAD_W and MATMUL are answered once the sequencer accepts them; they are handed over only while
//   the vector sequencer is idle (they must see its writes). ACT, RELU_GRAD and COLSUM are
//   answered once the vector sequencer accepts them; they, WRITE_MEM, READ_MEM, FENCE and COUNTERS
//   first wait until both sequencers are idle (so they see every earlier command finished).
//   NOP, INFO and STATUS do not wait (STATUS reports busy). With MEM_OVERLAP, WRITE_MEM and
//   READ_MEM wait only for the vector sequencer and for the sequencer's answer that no accepted
//   LOAD_W / MATMUL still uses their rows (q_conflict); READ_MEM of ACC then reads a mirror of
//   ACC (acc_rdata), so the sequencer keeps its own port.
// - Memory port: used only while both sequencers are idle; reads return data one cycle later and
//   the memories hold it until their next read.
// - LINK_BYTES: frame bytes are fetched, and READ_MEM reply bytes sent, up to LINK_BYTES per cycle
//   (never across a memory row), COUNTERS reply bytes up to LINK_BYTES per cycle (never across a
//   counter); m_body_valid is a thermometer code of the bytes offered.
//   LINK_BYTES = 1 (the boards): every byte count is the constant 1, frame bytes are fetched from
//   S_HDR on and READ_MEM reads each row in S_RD_ISSUE, so none of the wide logic is built.
// - STATUS counters: `commands` counts replies sent with DEV_OK (when the frame is released),
//   `errors` the others (when the reply header is handed to the transmitter); a STATUS reports the
//   values from before itself.
// - RUN (PM_ROWS > 0): the commands of the program in PM go through the same fetch, decode and
//   execute path as frames, fetched from PM (a row read per fetch, never across a row) instead of
//   the frame buffer, with no reply and no SEQ of their own; a LEN prefix takes two cycles, a
//   fixed part two more. The first that fails ends the program. RUN is answered when its last
//   command has been accepted (as MATMUL is), with the status and the count of commands run.
//   Where the program is, its LEN prefixes and the PM reads are ntpu_prog_fetch's; PM itself and
//   the bytes' path are here. PM_ROWS = 0 (the boards): RUN is an unknown opcode, memory 3 an
//   unknown memory, and none of the program logic is built (`run` is the constant 0).
`default_nettype none

module ntpu_cmd
  import ntpu_pkg::*;
#(
  parameter int N = 8,                        // array size
  parameter int UB_ROWS = 8192,               // unified buffer rows
  parameter int WB_ROWS = 4096,               // weight buffer rows
  parameter int ACC_ROWS = 2048,              // accumulator rows
  parameter int MAX_PAYLOAD = 4112,           // largest frame payload, bytes
  parameter logic [31:0] CLOCK_HZ = 32'd0,    // reported by INFO
  parameter int VEC_EN = 1,                   // 0: no vector unit, its opcodes are unknown
  parameter int TRANSPOSE_A_EN = 1,           // 0: MATMUL's TRANSPOSE_A flag is reserved (ERR_ARG)
  parameter int COUNTER_W = 64,               // performance counter width (zero-extended to u64)
  parameter int LINK_BYTES = 1,               // frame / reply bytes per cycle (ntpu_link_rx, _tx)
  parameter int MEM_OVERLAP = 0,              // 1: WRITE_MEM / READ_MEM may run beside the sequencer
  parameter int PM_ROWS = 0,                  // program memory rows of 2N bytes; 0: no PM, no RUN
  parameter int OS_ROWS = 0,                  // optimizer-state rows (memory OS, OPTIM ADAM); 0: none
  parameter int CONV_EN = 0,                  // 1: MATMUL flags CONV, CONV_T (1.5); 0: reserved (ERR_ARG)
  parameter int POOL_EN = 0,                  // 1: POOL (1.5, with VEC_EN); 0: an unknown opcode
  parameter int OFF_W = $clog2(MAX_PAYLOAD)   // payload offset bits; leave at the default
) (
  input  logic                       clk,
  input  logic                       rst,
  // frames from the receiver
  input  logic                       s_frm_valid,
  output logic                       s_frm_ready,
  input  logic [7:0]                 s_frm_seq,
  input  logic [15:0]                s_frm_len,
  input  logic [7:0]                 s_frm_status,
  output logic                       frm_re,
  output logic [OFF_W-1:0]           frm_raddr,
  input  logic [8*LINK_BYTES-1:0]    frm_rdata,
  input  logic                       drop,
  // replies to the transmitter
  output logic                       m_hdr_valid,
  input  logic                       m_hdr_ready,
  output logic [7:0]                 m_hdr_seq,
  output logic [15:0]                m_hdr_len,
  output logic [7:0]                 m_hdr_status,
  output logic [8*LINK_BYTES-1:0]    m_body_data,
  output logic [LINK_BYTES-1:0]      m_body_valid,
  input  logic                       m_body_ready,
  // sequencer
  output logic                       m_seq_valid,
  input  logic                       m_seq_ready,
  output logic                       m_seq_matmul,
  output logic [7:0]                 m_seq_flags,
  output logic [15:0]                m_seq_addr,
  output logic [15:0]                m_seq_acc_addr,
  output logic [15:0]                m_seq_rows,
  output logic [15:0]                m_seq_stride,  // MATMUL with TRANSPOSE_A (CONV: tile_stride)
  // MATMUL CONV (1.5): {ct u16, in_h, in_w, out_w, mb, stride, k, dy i16, dx i16}, the fields the form
  // lacks 0 (without TRANSPOSE_A dy and dx are i8s, sign-extended)
  output logic [95:0]                m_seq_conv,
  input  logic                       seq_idle,
  output logic [1:0]                 q_mem,         // overlap query (ntpu_seq)
  output logic                       q_write,
  output logic [15:0]                q_addr,
  output logic [15:0]                q_rows,
  input  logic                       q_conflict,
  // vector sequencer
  output logic                       m_vec_valid,
  input  logic                       m_vec_ready,
  output logic [7:0]                 m_vec_op,      // OP_ACT, OP_RELU_GRAD, OP_COLSUM, OP_OPTIM, POOL
  output logic [7:0]                 m_vec_flags,
  output logic [15:0]                m_vec_src,
  output logic [15:0]                m_vec_dst,
  output logic [15:0]                m_vec_rows,    // POOL: {in_w, in_h}
  output logic [15:0]                m_vec_aux,     // ACT: aux; RELU_GRAD: mask; POOL: aux
  output logic [15:0]                m_vec_s,       // OPTIM ADAM: s (OS rows of m and v); POOL: {k, mb}
  input  logic                       vec_idle,
  // memories
  output logic [2:0]                 mem_sel,    // ntpu_pkg::MEM_*
  output logic                       mem_we,
  output logic                       mem_re,
  output logic [15:0]                mem_addr,
  output logic [N*32-1:0]            mem_wdata,  // UB/WB rows in the low N*16 bits
  input  logic [N*16-1:0]            ub_rdata,
  input  logic [N*16-1:0]            wb_rdata,
  input  logic [N*32-1:0]            acc_rdata,
  input  logic [N*32-1:0]            os_rdata,   // OS_ROWS > 0
  // performance counters
  input  logic [CNT_COUNT*COUNTER_W-1:0] cnt,
  output logic                       cnt_pick_en,   // vsim: the counter COUNTERS reads, from ntpu_perf
  output logic [3:0]                 cnt_pick_idx,
  input  logic [COUNTER_W-1:0]       cnt_pick,
  output logic [CNT_COUNT-1:0]       cnt_clear,  // COUNTERS CLEAR: counter k is read out now
  output logic                       wait_frame,  // no frame to work on
  output logic                       wait_drain,  // waiting for earlier commands to finish
  output logic                       gate_wait    // vsim: nothing here changes (ntpu_core's clock gate)
);

  if (N < 2 || N > 32) begin : g_bad_n
    initial $fatal(1, "ntpu_cmd: N must be 2..32");
  end
  if (UB_ROWS < 1 || UB_ROWS > 65536 || ACC_ROWS < 1 || ACC_ROWS > 65536 ||
      WB_ROWS < N || WB_ROWS > 65536) begin : g_bad_rows
    initial $fatal(1, "ntpu_cmd: UB_ROWS, ACC_ROWS must be 1..65536, WB_ROWS N..65536");
  end
  if (PM_ROWS < 0 || PM_ROWS > 65536) begin : g_bad_pm
    initial $fatal(1, "ntpu_cmd: PM_ROWS must be 0..65536");
  end
  if (MAX_PAYLOAD < 1 + COUNTERS_BYTES || MAX_PAYLOAD > 65535) begin : g_bad_payload
    initial $fatal(1, "ntpu_cmd: MAX_PAYLOAD must hold the COUNTERS reply (73) and be <= 65535");
  end
  if (OS_ROWS < 0 || OS_ROWS > 65536 || (OS_ROWS > 0 && VEC_EN == 0)) begin : g_bad_os
    initial $fatal(1, "ntpu_cmd: OS_ROWS must be 0..65536, and 0 without the vector unit");
  end
  // The fixed part read into hdr_q: OPTIM ADAM's s field exists only on a core with OS.
  // MATMUL CONV with TRANSPOSE_A's 18 bytes exist only on a core with CONV, POOL's 12 with POOL.
  localparam int HDR_MAX = (CONV_EN != 0) ? CMD_HDR_MAX : (OS_ROWS > 0 || POOL_EN != 0) ? 12 : 10;
  localparam int HI_W = (HDR_MAX > 16) ? 5 : 4;  // a byte index into hdr_q
  localparam bit POOL_ON = (POOL_EN != 0) && (VEC_EN != 0);

  if (LINK_BYTES < 1 || LINK_BYTES > 64) begin : g_bad_width
    initial $fatal(1, "ntpu_cmd: LINK_BYTES must be 1..64");
  end
  localparam int W = LINK_BYTES;
  localparam int KW = $clog2(W + 1);  // a byte count 0..W

  localparam int ROW16_BYTES = 2 * N;  // UB and WB rows on the wire
  localparam int ROW32_BYTES = 4 * N;  // ACC rows on the wire
  // One register serializes every memory row (both ways). The COUNTERS reply passes through it one
  // counter at a time (COUNTER_W <= 64 <= 32 * N); the ID block (constants) and the STATUS block
  // (registers that hold still while it is sent) go out through byte multiplexers instead.
  localparam int SH_W = 32 * N;

  typedef enum logic [3:0] {
    S_IDLE,      // wait for a frame
    S_HDR,       // fetch the command's fixed part
    S_DECODE,    // check it and pick the action
    S_DRAIN,     // wait for the sequencer to finish earlier commands
    S_WRITE,     // WRITE_MEM: frame bytes -> rows -> memory
    S_CNT,       // COUNTERS: take counter 0 (and clear it)
    S_DISPATCH,  // LOAD_W / MATMUL -> sequencer
    S_VDISPATCH, // ACT / RELU_GRAD / COLSUM -> vector sequencer
    S_REPLY,     // reply header -> transmitter
    S_BLOCK,     // reply data from the shift register
    S_RD_ISSUE,  // READ_MEM: read the first row
    S_RD_SEND,   // ... send a row's bytes, reading the next one with the last of them (W > 1)
    S_PLEN       // RUN: fetch the next command's LEN prefix from PM (or end the program)
  } state_e;

  state_e state_q, state_d;
  state_e after_drain_q, after_drain_d;  // where S_DRAIN goes
  state_e after_reply_q, after_reply_d;  // where S_REPLY goes (S_IDLE: done)

  logic [8*HDR_MAX-1:0] hdr_q;      // payload bytes 0..HDR_MAX-1 (byte k at [8k +: 8]), zero past LEN
  logic [15:0] fb_off_q;            // next frame byte to fetch
  logic [15:0] fb_off;              // ... (0 in S_IDLE)
  logic fb_vld_q;                   // frm_rdata holds fb_k_q bytes from offset fb_idx_q on
  logic [15:0] fb_idx_q;
  logic [KW-1:0] fb_n, fb_k_q;      // bytes fetched now / in frm_rdata
  logic [7:0] iss_row_q;            // WRITE_MEM: bytes of the current row fetched so far
  logic [15:0] fb_end;              // fetch up to here (exclusive)

  logic [7:0] rep_status_q, rep_status_d;
  logic [15:0] rep_len_q, rep_len_d;
  logic [SH_W-1:0] sh_q;
  logic [7:0] left_q, left_d;       // bytes left in the block or row being sent
  logic [15:0] rows_left_q, rows_left_d;
  logic [15:0] addr_q, addr_d;
  logic [7:0] row_byte_q;           // WRITE_MEM: bytes of the current row taken so far
  logic rd_fresh_q;                 // READ_MEM: the row to send is still on the memory's output
  logic [SH_W-1:0] rd_row;          // READ_MEM: the rest of the row being sent
  logic [KW-1:0] rd_n;              // READ_MEM: bytes of it offered now
  logic rd_last;                    // ... the row's last ones
  logic wr_pend_q;                  // WRITE_MEM: a complete row waits in sh_q

  logic [3:0] cnt_idx_q;            // COUNTERS: the counter being sent
  logic cnt_load;                   // a counter moves into sh_q (and is cleared with CLEAR)
  logic [3:0] cnt_load_idx;
  logic [COUNTER_W-1:0] cnt_sel;    // counter cnt_load_idx

  logic [31:0] errors_q, commands_q, dropped_q;
  logic [31:0] st_dropped_q;        // STATUS: dropped_q and busy when it was decoded
  logic st_busy_q;
  logic [7:0] last_error_q;
  logic [7:0] expected_seq_q;       // SEQ of the next frame to run (docs/protocol.md)

  // ---------------------------------------------------------------- decode
  logic [7:0] op, f1;
  logic [15:0] len;
  logic [15:0] a16, b16, c16, d16;  // the u16 fields at payload offsets 2, 4, 6, 8
  logic [15:0] e16;                 // ... and 10 (OPTIM ADAM's s; 0 on a core without OS)
  logic [2:0] mem;
  logic is_acc;                     // 32-bit lanes: ACC or OS
  logic [7:0] row_bytes;
  logic [23:0] data_bytes;     // rows x row bytes for WRITE_MEM / READ_MEM
  logic [15:0] read_reply_len;
  logic [16:0] mem_rows;
  logic [7:0] err;
  logic [7:0] dec_status;      // err, unless SEQ is out of order
  logic all_idle;              // both sequencers: every earlier command has finished
  // MATMUL TRANSPOSE_A: rows / N blocks, the UB rows they span, and whether rows is a multiple of N.
  logic tr_a;
  logic [15:0] blocks;
  logic [33:0] ub_end_t;
  logic rows_whole;
  // ACT / RELU_GRAD: rows of the OUT memory, and the aux rows ACT uses (end, exclusive; 0: none).
  logic [1:0] out_f;
  logic [16:0] out_rows;
  logic [17:0] aux_end;

  assign op = hdr_q[7:0];
  assign f1 = hdr_q[15:8];
  assign a16 = hdr_q[31:16];
  assign b16 = hdr_q[47:32];
  assign c16 = hdr_q[63:48];
  assign d16 = hdr_q[79:64];
  // ---------------------------------------------------------------- programs (RUN)
  // The program's place, LEN prefixes and PM reads: ntpu_prog_fetch (u_fetch, under program memory
  // below); without PM these are constants.
  localparam bit PM_EN = (PM_ROWS > 0);
  logic run;                            // the command being worked on comes from PM
  logic in_plen;                        // state S_PLEN
  logic run_rep;                        // the reply being sent is RUN's (data: run_done)
  logic [15:0] run_len;                 // the LEN of the command from PM
  logic [15:0] run_done;                // commands of the program that ran
  logic plen_go;                        // S_PLEN: LEN is in and good, on to the command
  logic plen_end;                       // S_PLEN: the program ends ...
  logic [7:0] plen_status;              // ... with this status
  logic prog_end;                       // the program ends now: RUN's reply
  logic [7:0] prog_status;              // ... with this status
  logic inner_next;                     // a command of the program is done: on to the next
  logic [7:0] pm_room;                  // PM bytes a fetch may take now (the rest of the row)
  logic [7:0] pm_byte_q;                // the PM row read holds the fetched bytes from this byte on
  logic [N*16-1:0] pm_rdata;
  logic [8*W-1:0] src_data;             // fetched bytes: the frame buffer's or PM's
  logic fetch_re;                       // a fetch of frame bytes (from either) this cycle
  assign in_plen = PM_EN && (state_q == S_PLEN);

  if (OS_ROWS > 0) begin : g_e16
    assign e16 = hdr_q[95:80];
  end else begin : g_no_e16
    assign e16 = 16'd0;
  end
  assign len = run ? run_len : s_frm_len;
  // Without OS, bit 2 of the id is never a memory's (f1 > 3 is ERR_MEM): left out of the logic.
  assign mem = (OS_ROWS > 0) ? f1[2:0] : {1'b0, f1[1:0]};
  assign is_acc = (mem == 3'(MEM_ACC)) || (OS_ROWS > 0 && mem == 3'(MEM_OS));
  assign row_bytes = is_acc ? 8'(ROW32_BYTES) : 8'(ROW16_BYTES);
  // Two constant factors (shifts when N is a power of two) rather than one multiplier.
  assign data_bytes = is_acc ? 24'(b16) * 24'(ROW32_BYTES) : 24'(b16) * 24'(ROW16_BYTES);
  assign read_reply_len = 16'd1 + data_bytes[15:0];  // fits: checked against MAX_PAYLOAD
  always_comb begin
    case (mem)
      3'(MEM_UB): mem_rows = 17'(UB_ROWS);
      3'(MEM_WB): mem_rows = 17'(WB_ROWS);
      3'(MEM_PM): mem_rows = PM_EN ? 17'(PM_ROWS) : 17'(ACC_ROWS);  // without PM: ERR_MEM first
      3'(MEM_OS): mem_rows = (OS_ROWS > 0) ? 17'(OS_ROWS) : 17'(ACC_ROWS);  // without OS: ERR_MEM first
      default: mem_rows = 17'(ACC_ROWS);
    endcase
  end
  // A memory id WRITE_MEM / READ_MEM accept: 0..2; 3 (PM) on a core with PM, never inside a program;
  // 4 (OS) on a core with OS.
  logic mem_bad, mem_pm;
  assign mem_bad = (f1 > 8'd4) || (f1 == 8'(MEM_PM) && (!PM_EN || run)) || (f1 == 8'(MEM_OS) && !(OS_ROWS > 0));
  assign mem_pm = PM_EN && (mem == 3'(MEM_PM));

  assign all_idle = seq_idle && vec_idle;

  // Overlap: a memory command may start beside the sequencer's work when none of its rows is used
  // by that work (ntpu_seq's query); the vector sequencer must still be idle.
  logic mem_go;
    // OS reads as UB: at worst a needless wait (vsim: at the end)
  assign q_write = (op == OP_WRITE_MEM);
  assign q_addr = a16;
  assign q_rows = b16;
  assign mem_go = (MEM_OVERLAP != 0) && vec_idle && !q_conflict &&
                  (op == OP_WRITE_MEM || op == OP_READ_MEM);

  // Without TRANSPOSE_A_EN the flag only picks the length check; tr_a is constant 0, so the
  // transposed range check and the sequencer's transposer path drop out of the netlist.
  logic tr_flag;
  assign tr_flag = (f1 & MATMUL_TRANSPOSE_A) != 8'd0;
  assign tr_a = (TRANSPOSE_A_EN != 0) && tr_flag;
  assign blocks = c16 / 16'(N);
  assign rows_whole = (c16 % 16'(N)) == 16'd0;
  // The last block starts (blocks - 1) * stride after ub_addr and ends N rows later; no rows: the
  // empty range at ub_addr. Below 2^32 for any fields, so 34 bits are exact.
  assign ub_end_t = (c16 == 16'd0) ? 34'(a16)
                                   : 34'(a16) + (34'(blocks) - 34'd1) * 34'(d16) + 34'(N);

  // MATMUL CONV (1.5). The flags pick the length even without CONV_EN (then ERR_ARG, as
  // TRANSPOSE_A); cv_* are what the checks need, constant 0 / OK without CONV_EN.
  logic cv_flag, cvt_flag;
  logic [15:0] mm_len;
  logic cv_arg_bad;    // flag combination or field values CONV forbids
  logic cv_range_bad;  // UB or ACC range
  logic [7:0] cv_b [18];  // the payload's bytes (0 past HDR_MAX)
  for (genvar k = 0; k < 18; k++) begin : g_cv_b
    assign cv_b[k] = (k < HDR_MAX) ? hdr_q[8*(k % HDR_MAX) +: 8] : 8'd0;
  end
  assign cv_flag = (f1 & MATMUL_CONV) != 8'd0;
  assign cvt_flag = (f1 & MATMUL_CONV_T) != 8'd0;
  assign mm_len = cv_flag ? (tr_flag ? 16'(LEN_MATMUL_CONV_DW) : 16'(LEN_MATMUL_CONV))
                          : (tr_flag ? 16'(LEN_MATMUL_T) : 16'(LEN_MATMUL));
  if (CONV_EN != 0) begin : g_conv
    logic [7:0] in_h, in_w, out_w, mb, cs, k;
    logic [15:0] dy, dx;
    logic [15:0] ct;
    logic [21:0] nkk;           // N*k*k
    logic [24:0] map_rows;      // in_h*in_w*mb
    logic [33:0] ub_end_c;      // the TRANSPOSE_A blocks' end
    assign in_h = tr_flag ? cv_b[10] : cv_b[8];
    assign in_w = tr_flag ? cv_b[11] : cv_b[9];
    assign out_w = tr_flag ? 8'd0 : cv_b[10];
    assign mb = tr_flag ? cv_b[12] : cv_b[11];
    assign cs = tr_flag ? 8'd0 : cv_b[12];
    assign k = tr_flag ? cv_b[13] : 8'd0;
    assign dy = tr_flag ? {cv_b[15], cv_b[14]} : {{8{cv_b[13][7]}}, cv_b[13]};
    assign dx = tr_flag ? {cv_b[17], cv_b[16]} : {{8{cv_b[14][7]}}, cv_b[14]};
    assign nkk = 22'(N) * 22'(k) * 22'(k);
    // rows / (N*k*k) and its remainder: a divider, in the CONV build only.
    assign ct = (nkk == 22'd0) ? 16'd0 : 16'(22'(c16) / nkk);
    assign map_rows = 25'(in_h) * 25'(in_w) * 25'(mb);
    assign ub_end_c = 34'(a16) + (34'(ct) - 34'd1) * 34'(d16) + 34'(map_rows) - 34'(mb) + 34'(N);
    assign cv_arg_bad = cv_flag && (
        (cvt_flag && tr_flag) || in_h == 8'd0 || in_w == 8'd0 || mb == 8'd0 ||
        (!tr_flag && (out_w == 8'd0 || cs == 8'd0)) ||
        (tr_flag && (k == 8'd0 || 22'(c16) != 22'(ct) * nkk)));
    assign cv_range_bad = cv_flag && (
        (tr_flag ? (c16 != 16'd0 && ub_end_c > 34'(UB_ROWS)) : 26'(a16) + 26'(map_rows) > 26'(UB_ROWS)) ||
        17'(b16) + 17'(c16) > 17'(ACC_ROWS));
    assign m_seq_conv = {ct, in_h, in_w, out_w, mb, cs, k, dy, dx};
  end else begin : g_no_conv
    assign cv_arg_bad = 1'b0;
    assign cv_range_bad = 1'b0;
    assign m_seq_conv = '0;
  end

  // POOL (1.5): fields, ranges and overlaps; constant OK without POOL_ON.
  logic pl_arg_bad, pl_range_bad, pl_overlap;
  if (POOL_ON) begin : g_pool
    logic [7:0] in_h, in_w, mb, k;
    logic [1:0] mode;
    logic [24:0] map_rows, pooled;
    logic [7:0] oh, ow;
    logic [25:0] src_lo, src_hi, dst_lo, dst_hi, aux_lo, aux_hi;
    assign in_h = cv_b[8];
    assign in_w = cv_b[9];
    assign mb = cv_b[10];
    assign k = cv_b[11];
    assign mode = f1[1:0];
    assign map_rows = 25'(in_h) * 25'(in_w) * 25'(mb);
    // OH, OW: 8-bit dividers, in the POOL build only.
    assign oh = (k == 8'd0) ? 8'd0 : in_h / k;
    assign ow = (k == 8'd0) ? 8'd0 : in_w / k;
    assign pooled = 25'(oh) * 25'(ow) * 25'(mb);
    assign src_lo = 26'(a16);
    assign src_hi = 26'(a16) + (mode[1] ? 26'(pooled) : 26'(map_rows));
    assign dst_lo = 26'(b16);
    assign dst_hi = 26'(b16) + (mode[1] ? 26'(map_rows) : 26'(pooled));
    assign aux_lo = 26'(c16);
    assign aux_hi = 26'(c16) + (mode[0] ? 26'd1 : 26'(pooled));
    assign pl_arg_bad = (f1 & POOL_RESERVED) != 8'd0 || k == 8'd0 || in_h < k || in_w < k || mb == 8'd0;
    // src and dst: UB (forward) or ACC (grads); aux: UB for MAX and MAX_GRAD, ACC for the AVGs.
    assign pl_range_bad = src_hi > 26'(mode[1] ? ACC_ROWS : UB_ROWS) || dst_hi > 26'(mode[1] ? ACC_ROWS : UB_ROWS) ||
                          aux_hi > 26'(mode[0] ? ACC_ROWS : UB_ROWS);
    // Pairs in the same memory must not overlap: src-dst always; aux with them where it shares it.
    assign pl_overlap = (src_lo < dst_hi && dst_lo < src_hi) ||
                        ((mode == 2'd0 || mode == 2'd3) &&
                         ((src_lo < aux_hi && aux_lo < src_hi) || (dst_lo < aux_hi && aux_lo < dst_hi)));
  end else begin : g_no_pool
    assign pl_arg_bad = 1'b0;
    assign pl_range_bad = 1'b0;
    assign pl_overlap = 1'b0;
  end

  assign out_f = f1[3:2];
  assign out_rows = (out_f == OUT_WB[3:2]) ? 17'(WB_ROWS)
                  : (out_f == OUT_ACC[3:2]) ? 17'(ACC_ROWS) : 17'(UB_ROWS);  // OUT_UB, OUT_INT8
  assign aux_end = (out_f == OUT_INT8[3:2]) ? 18'(d16) + 18'd3
                 : ((f1 & ACT_BIAS) != 8'd0) ? 18'(d16) + 18'd1 : 18'd0;

  logic adam_flag, dec_flag, mom_flag;  // OPTIM's flags
  assign adam_flag = (f1 & OPTIM_ADAM) != 8'd0;
  assign dec_flag = (f1 & OPTIM_DECOUPLED) != 8'd0;
  assign mom_flag = (f1 & OPTIM_MOMENTUM) != 8'd0;
  // vsim: only S_DECODE reads err (through dec_status), so Verilator computes it only there.
  always_comb begin
    err = DEV_OK;   if (state_q == S_DECODE) begin
    case (op)
      OP_NOP, OP_INFO, OP_FENCE, OP_STATUS: begin
        if (len != 16'd1) err = DEV_ERR_LENGTH;
      end
      OP_WRITE_MEM: begin
        if (len < 16'(LEN_MEM_HDR)) err = DEV_ERR_LENGTH;
        else if (mem_bad) err = DEV_ERR_MEM;
        else if (24'(len) != 24'(LEN_MEM_HDR) + data_bytes) err = DEV_ERR_LENGTH;
        else if (17'(a16) + 17'(b16) > mem_rows) err = DEV_ERR_RANGE;
      end
      OP_READ_MEM: begin
        if (len != 16'(LEN_MEM_HDR)) err = DEV_ERR_LENGTH;
        else if (mem_bad) err = DEV_ERR_MEM;
        else if (24'd1 + data_bytes > 24'(MAX_PAYLOAD)) err = DEV_ERR_LENGTH;
        else if (17'(a16) + 17'(b16) > mem_rows) err = DEV_ERR_RANGE;
      end
      OP_LOAD_W: begin
        if (len != 16'(LEN_LOAD_W)) err = DEV_ERR_LENGTH;
        else if ((f1 & LOADW_RESERVED) != 8'd0) err = DEV_ERR_ARG;
        else if (17'(a16) + 17'(N) > 17'(WB_ROWS)) err = DEV_ERR_RANGE;
      end
      OP_MATMUL: begin
        // Past LEN the fixed part reads as zero, so a MATMUL of LEN 1 asks for 8 bytes and fails.
        if (len != mm_len) err = DEV_ERR_LENGTH;
        else if ((f1 & MATMUL_RESERVED) != 8'd0 || (tr_flag && !tr_a) ||
                 (CONV_EN == 0 && (f1 & (MATMUL_CONV | MATMUL_CONV_T)) != 8'd0) || (cvt_flag && !cv_flag)) begin
          err = DEV_ERR_ARG;
        end
        else if (cv_flag ? cv_arg_bad : (tr_a && !rows_whole)) err = DEV_ERR_ARG;
        else if (cv_flag ? cv_range_bad
                         : ((tr_a ? ub_end_t > 34'(UB_ROWS) : 17'(a16) + 17'(c16) > 17'(UB_ROWS)) ||
                            17'(b16) + 17'(c16) > 17'(ACC_ROWS))) err = DEV_ERR_RANGE;
      end
      OP_ACT: begin
        if (VEC_EN == 0) err = DEV_ERR_OPCODE;
        else if (len != 16'(LEN_ACT)) err = DEV_ERR_LENGTH;
        else if ((f1 & ACT_RESERVED) != 8'd0) err = DEV_ERR_ARG;
        else if (17'(a16) + 17'(c16) > 17'(ACC_ROWS) || 17'(b16) + 17'(c16) > out_rows ||
                 aux_end > 18'(ACC_ROWS)) err = DEV_ERR_RANGE;
      end
      OP_RELU_GRAD: begin
        if (VEC_EN == 0) err = DEV_ERR_OPCODE;
        else if (len != 16'(LEN_RELU_GRAD)) err = DEV_ERR_LENGTH;
        else if ((f1 & RELU_GRAD_RESERVED) != 8'd0 || out_f == OUT_INT8[3:2]) err = DEV_ERR_ARG;
        else if (17'(a16) + 17'(c16) > 17'(ACC_ROWS) || 17'(d16) + 17'(c16) > 17'(UB_ROWS) ||
                 17'(b16) + 17'(c16) > out_rows) err = DEV_ERR_RANGE;
      end
      OP_COLSUM: begin
        if (VEC_EN == 0) err = DEV_ERR_OPCODE;
        else if (len != 16'(LEN_COLSUM)) err = DEV_ERR_LENGTH;
        else if ((f1 & COLSUM_RESERVED) != 8'd0) err = DEV_ERR_ARG;
        else if (17'(a16) + 17'(c16) > 17'(ACC_ROWS) || 17'(b16) + 17'd1 > 17'(ACC_ROWS)) begin
          err = DEV_ERR_RANGE;
        end
      end
      OP_OPTIM: begin
        // p rows, then as many momentum rows; lr, wd (and mu) at aux. ADAM: m and v rows in OS at
        // s, nine constant rows at aux; its LEN is 12 on every core, OS or not.
        if (VEC_EN == 0) err = DEV_ERR_OPCODE;
        else if (len != (adam_flag ? 16'(LEN_OPTIM_ADAM) : 16'(LEN_OPTIM))) err = DEV_ERR_LENGTH;
        else if ((f1 & OPTIM_RESERVED) != 8'd0 || (adam_flag && (OS_ROWS == 0 || mom_flag)) ||
                 (dec_flag && !adam_flag)) err = DEV_ERR_ARG;
        else if (adam_flag) begin
          if (17'(a16) + 17'(c16) > 17'(ACC_ROWS) || 17'(b16) + 17'(c16) > 17'(ACC_ROWS) ||
              17'(d16) + 17'(ADAM_AUX_ROWS) > 17'(ACC_ROWS) || 18'(e16) + 18'(c16) + 18'(c16) > 18'(OS_ROWS)) begin
            err = DEV_ERR_RANGE;
          end
        end
        else if (18'(a16) + 18'(c16) + (((f1 & OPTIM_MOMENTUM) != 8'd0) ? 18'(c16) : 18'd0) > 18'(ACC_ROWS) ||
                 17'(b16) + 17'(c16) > 17'(ACC_ROWS) ||
                 18'(d16) + (((f1 & OPTIM_MOMENTUM) != 8'd0) ? 18'd3 : 18'd2) > 18'(ACC_ROWS)) begin
          err = DEV_ERR_RANGE;
        end
      end
      OP_POOL: begin
        if (!POOL_ON) err = DEV_ERR_OPCODE;
        else if (len != 16'(LEN_POOL)) err = DEV_ERR_LENGTH;
        else if (pl_arg_bad || pl_overlap) err = DEV_ERR_ARG;
        else if (pl_range_bad) err = DEV_ERR_RANGE;
      end
      OP_COUNTERS: begin
        if (len != 16'(LEN_COUNTERS)) err = DEV_ERR_LENGTH;
        else if ((f1 & COUNTERS_RESERVED) != 8'd0) err = DEV_ERR_ARG;
      end
      OP_SYNC: begin
        if (len != 16'(LEN_SYNC)) err = DEV_ERR_LENGTH;
      end
      OP_RUN: begin
        if (!PM_EN) err = DEV_ERR_OPCODE;
        else if (len != 16'(LEN_RUN)) err = DEV_ERR_LENGTH;
        else if (f1 != 8'd0) err = DEV_ERR_ARG;
        else if (17'(a16) + 17'(b16) > 17'(PM_ROWS)) err = DEV_ERR_RANGE;
      end
      default: err = DEV_ERR_OPCODE;
    endcase
    // Inside a program, what replies with data or touches the link is an unknown opcode.
    if (run && (op == OP_INFO || op == OP_READ_MEM || op == OP_STATUS || op == OP_COUNTERS ||
                op == OP_SYNC || op == OP_RUN)) err = DEV_ERR_OPCODE;   end
  end

  // A frame after a lost one must not run until the lost one comes again; SYNC runs with any SEQ.
  // A program's commands have no SEQ: RUN's was checked.
  assign dec_status = (!run && op != OP_SYNC && s_frm_seq != expected_seq_q) ? DEV_ERR_SEQ : err;

  // ---------------------------------------------------------------- reply blocks
  logic [8*ID_BYTES-1:0] id_block;
  logic [8*STATUS_BYTES-1:0] status_block;

  // os_rows, pm_rows, then the 1.3 block.
  assign id_block = {32'(OS_ROWS), 32'(PM_ROWS),
                     24'd0, PLATFORM_RTL, CLOCK_HZ, 32'(ACC_ROWS), 32'(WB_ROWS), 32'(UB_ROWS),
                     16'(MAX_PAYLOAD),
                     FEATURE_TRANSPOSE_BIT |
                     ((TRANSPOSE_A_EN != 0) ? FEATURE_TRANSPOSE_A_BIT : 8'd0) |
                     ((VEC_EN != 0) ? (FEATURE_VECTOR_BIT | FEATURE_OPTIM_BIT) : 8'd0) |
                     (PM_EN ? FEATURE_PROGRAM_BIT : 8'd0) |
                     ((OS_ROWS > 0) ? FEATURE_ADAM_BIT : 8'd0) |
                     ((CONV_EN != 0) ? FEATURE_CONV_BIT : 8'd0) |
                     (POOL_ON ? FEATURE_POOL_BIT : 8'd0),
                     DTYPE_INT8_BIT | DTYPE_BF16_BIT,
                     8'(N), 8'(N), VERSION_MINOR, VERSION_MAJOR, ID_MAGIC};
  // commands_q and the error fields cannot change before this STATUS frame is released.
  assign status_block = {st_dropped_q, commands_q, errors_q, 16'd0, last_error_q, 7'd0, st_busy_q};

  // ---------------------------------------------------------------- control
  logic hdr_go;     // the reply header moves to the transmitter
  logic body_go;    // reply data bytes move
  logic fb_take;    // a fetched frame byte is in frm_rdata this cycle

  assign hdr_go = m_hdr_valid && m_hdr_ready;
  assign body_go = m_body_valid[0] && m_body_ready;
  assign fb_take = fb_vld_q;
  // Bytes per fetch: up to W, never past fb_end, and (WRITE_MEM) never across a row. Every byte
  // count in this module is a constant 1 at W = 1 (it is read only while bytes move), so the
  // arithmetic of the wide link folds away on the boards.
  logic [15:0] fb_left;
  logic [7:0] row_room;
  logic [KW-1:0] fb_k;              // fb_k_q, or 1 at W = 1
  always_comb begin
    fb_left = fb_end - fb_off;
    row_room = row_bytes - iss_row_q;
    fb_n = (fb_left < 16'(W)) ? KW'(fb_left) : KW'(W);
    if (state_q == S_WRITE && 16'(row_room) < 16'(fb_n)) fb_n = KW'(row_room);
    if (run && 16'(pm_room) < 16'(fb_n)) fb_n = KW'(pm_room);
    if (W == 1) fb_n = KW'(1);
  end
  assign fb_k = (W == 1) ? KW'(1) : fb_k_q;
  // The fixed part is at most CMD_HDR_MAX bytes; WRITE_MEM goes on to the end of the frame.
  assign fb_end = (state_q == S_WRITE) ? len : ((len < 16'(HDR_MAX)) ? len : 16'(HDR_MAX));
  // A good frame's first bytes are fetched already in S_IDLE, as it arrives (W > 1: at W = 1 the
  // cycle saved is nothing beside a UART byte time, and the offset's multiplexer costs LUTs).
  assign fb_off = (W > 1 && state_q == S_IDLE) ? 16'd0 : fb_off_q;
  assign fetch_re = ((W > 1 && state_q == S_IDLE && s_frm_valid && s_frm_status == DEV_OK) || state_q == S_HDR ||
                     state_q == S_WRITE) && (fb_off < fb_end);
  assign frm_re = fetch_re && !run;
  assign frm_raddr = OFF_W'(fb_off);

  // Handshakes and strobes are plain assigns of the state: a default-then-override inside the
  // always_comb below would glitch them, and two modules' always_comb blocks reacting to each
  // other's glitches never settle in an event-driven simulator.
  assign m_hdr_valid = (state_q == S_REPLY);  // never for a command of a program (inner_next)
  assign rd_n = (W == 1) ? KW'(1) : (left_q < 8'(W)) ? KW'(left_q) : KW'(W);
  assign rd_last = (left_q <= 8'(W));
  // Blocks leave a byte per beat, but a COUNTERS reply a counter (its rest) per beat, up to W.
  logic [7:0] cnt_rest;
  logic [KW-1:0] blk_n;
  logic cnt_end;                    // this beat ends a counter
  assign cnt_rest = ((left_q - 8'd1) & 8'd7) + 8'd1;
  assign blk_n = (W == 1 || op != OP_COUNTERS || run_rep) ? KW'(1) : (cnt_rest < 8'(W)) ? KW'(cnt_rest) : KW'(W);
  assign cnt_end = (W == 1) ? (left_q[2:0] == 3'd1) : (8'(blk_n) == cnt_rest);
  // see the end
  // LOAD_W and MATMUL must see the vector unit's writes: they are handed over only while it is idle.
  assign m_seq_valid = (state_q == S_DISPATCH) && vec_idle;
  assign m_vec_valid = (state_q == S_VDISPATCH);
  assign mem_we = (state_q == S_WRITE) && wr_pend_q && !mem_pm;
  // READ_MEM reads the next row as the last bytes of the current one leave (W > 1; at W = 1 it goes
  // back through S_RD_ISSUE, a cycle per row that the byte-wide link never notices).
  logic rd_re;  // READ_MEM reads a row (of mem_sel; PM's own port for memory 3)
  assign rd_re = (state_q == S_RD_ISSUE) ||
                 (W > 1 && state_q == S_RD_SEND && m_body_ready && rd_last && rows_left_q != 16'd0);
  assign mem_re = rd_re && !mem_pm;
  // (vsim: cnt_sel and cnt_clear below have Verilator forms at the end of the module.)
  // COUNTERS: counter 0 in S_CNT, counter k+1 as the last byte of counter k leaves (read whole).
  assign cnt_load = (state_q == S_CNT) ||
                    (state_q == S_BLOCK && op == OP_COUNTERS && !run_rep && m_body_ready &&
                     cnt_end && left_q != 8'(blk_n));
  assign cnt_load_idx = (state_q == S_CNT) ? 4'd0 : cnt_idx_q + 4'd1;
  assign s_frm_ready = (state_q == S_REPLY && m_hdr_ready && after_reply_q == S_IDLE) ||
                       (state_q == S_BLOCK && m_body_ready && left_q == 8'(blk_n)) ||
                       (state_q == S_RD_SEND && m_body_ready && rd_last && rows_left_q == 16'd0);

  always_comb begin
    state_d = state_q;
    after_drain_d = after_drain_q;
    after_reply_d = after_reply_q;
    rep_status_d = rep_status_q;
    rep_len_d = rep_len_q;
    left_d = left_q;
    rows_left_d = rows_left_q;
    addr_d = addr_q;
    inner_next = 1'b0;  // vsim: see the end
    prog_end = 1'b0;
    prog_status = rep_status_q;
    if (!gate_wait) begin
    case (state_q)
      S_IDLE: begin
        if (s_frm_valid) begin
          if (s_frm_status != DEV_OK) begin
            rep_status_d = s_frm_status;
            rep_len_d = 16'd1;
            after_reply_d = S_IDLE;
            state_d = S_REPLY;
          end else begin
            state_d = S_HDR;
          end
        end
      end
      S_HDR: begin
        if (fb_take && fb_idx_q + 16'(fb_k) == fb_end) state_d = S_DECODE;
      end
      S_DECODE: begin
        rep_status_d = dec_status;
        rep_len_d = 16'd1;
        after_reply_d = S_IDLE;
        addr_d = a16;
        rows_left_d = b16;
        state_d = S_REPLY;
        if (dec_status == DEV_OK) begin
          case (op)
            OP_INFO: begin
              rep_len_d = 16'(1 + ID_BYTES);
              left_d = 8'(ID_BYTES);
              after_reply_d = S_BLOCK;
            end
            OP_STATUS: begin
              rep_len_d = 16'(1 + STATUS_BYTES);
              left_d = 8'(STATUS_BYTES);
              after_reply_d = S_BLOCK;
            end
            OP_WRITE_MEM: begin
              after_drain_d = S_WRITE;
              state_d = S_DRAIN;
            end
            OP_READ_MEM: begin
              rep_len_d = read_reply_len;
              if (b16 != 16'd0) after_reply_d = S_RD_ISSUE;
              after_drain_d = S_REPLY;
              state_d = S_DRAIN;
            end
            OP_FENCE: begin
              after_drain_d = S_REPLY;
              state_d = S_DRAIN;
            end
            OP_COUNTERS: begin
              after_drain_d = S_CNT;
              state_d = S_DRAIN;
            end
            OP_SYNC: begin
              rep_len_d = 16'd2;
              left_d = 8'd1;
              after_reply_d = S_BLOCK;
            end
            OP_LOAD_W, OP_MATMUL: state_d = S_DISPATCH;
            OP_RUN: if (PM_EN) state_d = S_PLEN;
            OP_ACT, OP_RELU_GRAD, OP_COLSUM, OP_OPTIM, OP_POOL: begin
              after_drain_d = S_VDISPATCH;
              state_d = S_DRAIN;
            end
            default: ;  // NOP
          endcase
          // Nothing to wait for: straight on.
          if (state_d == S_DRAIN && (all_idle || mem_go)) state_d = after_drain_d;
        end
      end
      S_DRAIN: begin
        if (all_idle || mem_go) state_d = after_drain_q;
      end
      S_WRITE: begin
        if (wr_pend_q) begin
          addr_d = addr_q + 16'd1;
          rows_left_d = rows_left_q - 16'd1;
        end
        if (rows_left_d == 16'd0 && !(fb_take && row_byte_q + 8'(fb_k) == row_bytes)) begin
          state_d = S_REPLY;
        end
      end
      S_CNT: begin
        rep_len_d = 16'(1 + COUNTERS_BYTES);
        left_d = 8'(COUNTERS_BYTES);
        after_reply_d = S_BLOCK;
        state_d = S_REPLY;
      end
      S_DISPATCH: begin
        if (m_seq_valid && m_seq_ready) state_d = S_REPLY;
      end
      S_VDISPATCH: begin
        if (m_vec_ready) state_d = S_REPLY;
      end
      S_REPLY: begin
        if (m_hdr_ready) state_d = after_reply_q;
      end
      S_BLOCK: begin
        if (m_body_ready) begin
          left_d = left_q - 8'(blk_n);
          if (left_q == 8'(blk_n)) state_d = S_IDLE;
        end
      end
      S_RD_ISSUE: begin
        state_d = S_RD_SEND;
      end
      S_PLEN: begin
        if (!PM_EN) state_d = S_IDLE;
        else if (plen_end) state_d = S_REPLY;  // prog_end
        else if (plen_go) state_d = S_HDR;
      end
      S_RD_SEND: begin
        if (m_body_ready) begin
          left_d = left_q - 8'(rd_n);
          if (rd_last && rows_left_q == 16'd0) state_d = S_IDLE;
          else if (W == 1 && rd_last) state_d = S_RD_ISSUE;
        end
      end
      default: state_d = S_IDLE;
    endcase
    if (rd_re) begin
      left_d = row_bytes;
      addr_d = addr_q + 16'd1;
      rows_left_d = rows_left_q - 16'd1;
    end
    // A command of the program that would now be answered goes on to the next instead; the first
    // that fails ends the program, and RUN is answered. So does the end of the program.
    inner_next = run && state_q != S_REPLY && !in_plen && state_d == S_REPLY &&
                 rep_status_d == DEV_OK;
    prog_end = run && state_d == S_REPLY && !inner_next;
    prog_status = in_plen ? plen_status : rep_status_d;
    if (inner_next) state_d = S_PLEN;
    if (prog_end) begin
      rep_status_d = prog_status;
      rep_len_d = 16'(1 + RUN_REPLY_BYTES);
      left_d = 8'(RUN_REPLY_BYTES);
      after_reply_d = S_BLOCK;
    end   end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      state_q <= S_IDLE;
      fb_vld_q <= 1'b0;
      wr_pend_q <= 1'b0;
    end else begin
      state_q <= state_d;
      fb_vld_q <= fetch_re;
      wr_pend_q <= (state_q == S_WRITE) && fb_take && (row_byte_q + 8'(fb_k) == row_bytes);
    end
  end

  always_ff @(posedge clk) begin
    after_drain_q <= after_drain_d;
    after_reply_q <= after_reply_d;
    rep_status_q <= rep_status_d;
    rep_len_q <= rep_len_d;
    left_q <= left_d;
    rows_left_q <= rows_left_d;
    addr_q <= addr_d;
    fb_idx_q <= fb_off;
    fb_k_q <= fb_n;
    if (rd_re) rd_fresh_q <= 1'b1;
    else if (body_go) rd_fresh_q <= 1'b0;
    if (cnt_load) cnt_idx_q <= cnt_load_idx;

    // Frame fetch: the fixed part from offset 0, then WRITE_MEM's rows from offset 6.
    if (state_q == S_DECODE) fb_off_q <= 16'(LEN_MEM_HDR);
    else if (fetch_re) fb_off_q <= fb_off + 16'(fb_n);
    else if (state_q == S_IDLE || in_plen) fb_off_q <= '0;

    if (state_q == S_IDLE || in_plen) hdr_q <= '0;
    else if (state_q == S_HDR && fb_take) begin
      for (int i = 0; i < W; i++) begin
        // Byte 0 is always inside the fixed part (fetched below fb_end).
        if (KW'(i) < fb_k && (i == 0 || fb_idx_q + 16'(i) < 16'(HDR_MAX))) begin
          hdr_q[8*(HI_W'(fb_idx_q) + HI_W'(i)) +: 8] <= src_data[8*i +: 8];
        end
      end
    end

    if (state_q == S_DECODE) row_byte_q <= '0;
    else if (state_q == S_WRITE && fb_take) begin
      row_byte_q <= (row_byte_q + 8'(fb_k) == row_bytes) ? 8'd0 : row_byte_q + 8'(fb_k);
    end
    if (state_q == S_DECODE) iss_row_q <= '0;
    else if (state_q == S_WRITE && fetch_re) begin
      iss_row_q <= (iss_row_q + 8'(fb_n) == row_bytes) ? 8'd0 : iss_row_q + 8'(fb_n);
    end

    // The shift register: blocks load whole and leave low byte first; WRITE_MEM rows enter at the
    // top, so a complete row sits in the top bits with lane 0's low byte lowest.
    if (state_q == S_DECODE && op == OP_STATUS) begin
      st_dropped_q <= dropped_q;
      st_busy_q <= !all_idle;
    end
    if (cnt_load) sh_q <= SH_W'(cnt_sel);  // zero-extended to the u64 on the wire
    else if (prog_end) sh_q <= SH_W'(run_done);
    else if (state_q == S_DECODE && op == OP_SYNC) sh_q <= SH_W'(expected_seq_q);
    else if (state_q == S_RD_SEND && body_go) sh_q <= rd_row >> (8 * rd_n);
    else if (state_q == S_WRITE && fb_take) sh_q <= wr_shift;
    else if (body_go) sh_q <= sh_q >> (8 * blk_n);
  end

  // WRITE_MEM: the fb_k_q new bytes enter at the top, the row so far moves down by as many.
  logic [SH_W-1:0] wr_shift;
  if (W == 1) begin : g_wr_byte
    assign wr_shift = {src_data, sh_q[SH_W-1:8]};
  end else begin : g_wr_wide
  // see the end
  end
  /* verilator lint_off LATCH */
  // READ_MEM: a row just read comes straight from the memory's output (vsim: ntpu_core's), later bytes from sh_q.
  always_comb begin   if (state_q == S_RD_SEND) begin  // vsim: see the end
    if (!rd_fresh_q) rd_row = sh_q;
    else begin
      case (mem)
        3'(MEM_UB): rd_row = SH_W'(ub_rdata);
        3'(MEM_WB): rd_row = SH_W'(wb_rdata);
        3'(MEM_PM): rd_row = PM_EN ? SH_W'(pm_rdata) : SH_W'(acc_rdata);
        3'(MEM_OS): rd_row = SH_W'(os_rdata);
        default: rd_row = SH_W'(acc_rdata);
      endcase
    end   end
  end  /* verilator lint_on LATCH */

  // ---------------------------------------------------------------- sequence numbers
  always_ff @(posedge clk) begin
    if (rst) expected_seq_q <= '0;
    else if (state_q == S_DECODE && !run && op != OP_SYNC && s_frm_seq == expected_seq_q) begin
      expected_seq_q <= expected_seq_q + 8'd1;
    end
  end

  // ---------------------------------------------------------------- STATUS bookkeeping
  always_ff @(posedge clk) begin
    if (rst) begin
      errors_q <= '0;
      commands_q <= '0;
      dropped_q <= '0;
      last_error_q <= '0;
    end else begin
      if (drop) dropped_q <= dropped_q + 32'd1;
      if (s_frm_ready && rep_status_q == DEV_OK) commands_q <= commands_q + 32'd1;
      if (hdr_go && m_hdr_status != DEV_OK) begin
        errors_q <= errors_q + 32'd1;
        last_error_q <= m_hdr_status;
      end
    end
  end

  // ---------------------------------------------------------------- outputs
  assign m_hdr_seq = s_frm_seq;
  assign m_hdr_len = rep_len_q;
  assign m_hdr_status = rep_status_q;
  // INFO, STATUS: byte BYTES - left_q of the block; everything else from the register.
  logic [$clog2(ID_BYTES)-1:0] id_idx;
  logic [$clog2(STATUS_BYTES)-1:0] st_idx;
  assign id_idx = $clog2(ID_BYTES)'(8'(ID_BYTES) - left_q);
  assign st_idx = $clog2(STATUS_BYTES)'(8'(STATUS_BYTES) - left_q);
  assign m_body_data = (state_q == S_RD_SEND) ? (8*W)'(rd_row)
                     : (op == OP_INFO && !run_rep) ? (8*W)'(id_block[8*id_idx +: 8])
                     : (op == OP_STATUS && !run_rep) ? (8*W)'(status_block[8*st_idx +: 8]) : (8*W)'(sh_q);

  assign m_seq_matmul = (op == OP_MATMUL);
  assign m_seq_flags = f1 & ~((TRANSPOSE_A_EN != 0) ? 8'd0 : MATMUL_TRANSPOSE_A)
                          & ~((CONV_EN != 0) ? 8'd0 : (MATMUL_CONV | MATMUL_CONV_T));
  assign m_seq_addr = a16;
  assign m_seq_acc_addr = b16;
  assign m_seq_rows = c16;
  assign m_seq_stride = d16;

  assign m_vec_op = op;
  assign m_vec_flags = f1;
  assign m_vec_src = a16;
  assign m_vec_dst = b16;
  assign m_vec_rows = (POOL_ON && op == OP_POOL) ? d16 : c16;
  assign m_vec_aux = (POOL_ON && op == OP_POOL) ? c16 : d16;
  assign m_vec_s = (POOL_ON && op == OP_POOL) ? {cv_b[11], cv_b[10]} : e16;

  assign mem_sel = mem;
  assign mem_addr = addr_q;
  // vsim: see the end

  // ---------------------------------------------------------------- program memory
  // PM (memory 3): written by WRITE_MEM, read by READ_MEM and by the fetch inside a program, at the
  // row u_fetch gives. S_HDR and S_WRITE fetch payload bytes from PM as they would from the frame
  // buffer: the bytes of the row from pm_byte_q on are src_data.
  logic [8*W+16*N-1:0] pm_shifted;
  // see the end
  logic unused_pm_shifted;  // only the low W bytes (and two for LEN) are ever needed
  assign unused_pm_shifted = ^pm_shifted;
  assign src_data = run ? pm_shifted[8*W-1:0] : frm_rdata;

  localparam int PM_AW = (PM_ROWS > 1) ? $clog2(PM_ROWS) : 1;
  if (PM_EN) begin : g_pm
    logic pm_re;
    logic [15:0] pm_raddr;
    logic unused_pm_raddr;  // the high bits are 0 (RUN's and READ_MEM's range checks)
    assign unused_pm_raddr = ^pm_raddr;
    ntpu_prog_fetch #(
      .N          (N),
      .LINK_BYTES (LINK_BYTES),
      .MAX_PAYLOAD(MAX_PAYLOAD)
    ) u_fetch (
      .clk        (clk),
      .rst        (rst),
      .decode     (state_q == S_DECODE),
      .start      (state_q == S_DECODE && op == OP_RUN && dec_status == DEV_OK),
      .prog_row   (a16),
      .prog_rows  (b16),
      .plen       (in_plen),
      .idle       (state_q == S_IDLE),
      .cmd_next   (inner_next),
      .prog_end   (prog_end),
      .run        (run),
      .run_rep    (run_rep),
      .run_len    (run_len),
      .run_done   (run_done),
      .plen_go    (plen_go),
      .plen_end   (plen_end),
      .plen_status(plen_status),
      .fetch_re   (fetch_re),
      .fb_off     (fb_off),
      .pm_room    (pm_room),
      .pm_byte_q  (pm_byte_q),
      .pm_head    (pm_shifted[15:0]),
      .rd_pm      (rd_re && mem_pm),
      .rd_addr    (addr_q),
      .pm_re      (pm_re),
      .pm_raddr   (pm_raddr)
    );
    ntpu_ram #(
      .WIDTH(N * 16),
      .DEPTH(PM_ROWS)
    ) u_pm (
      .clk  (clk),
      .we   ((state_q == S_WRITE) && wr_pend_q && mem_pm),
      .waddr(PM_AW'(addr_q)),
      .wdata(sh_q[SH_W-1 -: 16 * N]),
      .re   (pm_re),
      .raddr(PM_AW'(pm_raddr)),
      .rdata(pm_rdata)
    );
  end else begin : g_no_pm
    assign run = 1'b0;
    assign run_rep = 1'b0;
    assign run_len = '0;
    assign run_done = '0;
    assign plen_go = 1'b0;
    assign plen_end = 1'b0;
    assign plen_status = DEV_OK;
    assign pm_room = '0;
    assign pm_byte_q = '0;
    assign pm_rdata = '0;
  end

  assign wait_frame = (state_q == S_IDLE) && !s_frm_valid;
  assign wait_drain = ((state_q == S_DRAIN) && !all_idle && !mem_go) || ((state_q == S_DISPATCH) && !vec_idle);

  // ---------------------------------------------------------------- simulation-only forms
  // vsim speed: the same logic, written so that Verilator skips it on the cycles nobody reads it.
  // cnt_sel is read only with cnt_load; cnt_clear as one shift rather than a bit per counter (an
  // index past the last counter clears none, as the per-bit compares do). The gated build takes the
  // counter from the counters themselves (cnt_pick, ntpu_perf) and leaves cnt unread.
  assign cnt_pick_en = cnt_load;
  assign cnt_pick_idx = cnt_load_idx;
  assign cnt_sel = cnt_pick;
  logic unused_cnt;
  assign unused_cnt = ^cnt;
  assign cnt_clear = (cnt_load && (f1 & COUNTERS_CLEAR) != 8'd0) ? CNT_COUNT'(1) << cnt_load_idx
                                                                : '0;

  // PM bytes are read only inside a program (src_data with run; u_fetch reads pm_head, LEN, only in
  // S_PLEN), and WRITE_MEM's shifted row only in S_WRITE as a byte is taken: the wide shifts only
  // then, and otherwise they hold (latches, rather than being cleared after every edge). This is
  // why the alignment of PM's bytes is ntpu_cmd's and not ntpu_prog_fetch's: vsim has no form of
  // ntpu_prog_fetch, it runs rtl/'s.
  /* verilator lint_off LATCH */
  always_comb begin
    if (run || in_plen) pm_shifted = {(8*W)'(0), pm_rdata} >> (8 * pm_byte_q);
  end
  // A fetch of a whole UB / WB row (2N bytes, every fetch of such a row on a link that wide) is a
  // shift by a constant: word moves, where the variable shift of the 2 * SH_W bits costs ~100
  // instructions in every cycle of a WRITE_MEM.
  if (W > 1 && 2 * N <= W) begin : g_wr_wide_v
    always_comb begin
      // (Two tests rather than an else: Verilator computes a branch's wide temporaries before the
      // whole if statement.)
      if (state_q == S_WRITE && fb_take && fb_k_q == KW'(2 * N)) begin
        wr_shift = {src_data[16*N-1:0], sh_q[SH_W-1:16*N]};
      end
      if (state_q == S_WRITE && fb_take && fb_k_q != KW'(2 * N)) begin
        wr_shift = SH_W'({src_data, sh_q} >> (8 * fb_k_q));
      end
    end
  end else if (W > 1) begin : g_wr_narrow_v
    always_comb begin
      if (state_q == S_WRITE && fb_take) wr_shift = SH_W'({src_data, sh_q} >> (8 * fb_k_q));
    end
  end
  /* verilator lint_on LATCH */

  // The overlap query's answer is read only in S_DECODE and S_DRAIN (mem_go). Elsewhere the query
  // names PM, which no query covers (a conflict at once), so that the sequencer's loop over its
  // MATMULs in flight, rerun after every edge of its clock, does not run.
  assign q_mem = (state_q == S_DECODE || state_q == S_DRAIN) ? mem[1:0] : 2'(MEM_PM);

  // m_body_valid as two thermometer codes by shifts, not a compare per bit (W compares twice over);
  // bit 0 from the state alone, as in the per-bit form.
  always_comb begin
    m_body_valid = '0;
    if (state_q == S_RD_SEND) m_body_valid = ~({W{1'b1}} << rd_n);
    else if (state_q == S_BLOCK) m_body_valid = ~({W{1'b1}} << blk_n);
    m_body_valid[0] = (state_q == S_BLOCK || state_q == S_RD_SEND);
  end

  // vsim's clock gate (ntpu_core): waiting for a frame, for other units to finish or for one to take
  // a command, nothing here changes (frm_re and m_frm_ready are low then too). S_REPLY is not among
  // these: the transmitter is busy while the header is offered, which keeps the gate open anyway.
  assign gate_wait = wait_frame || ((state_q == S_DRAIN) && !all_idle && !mem_go) ||
                     ((state_q == S_DISPATCH) && !(m_seq_valid && m_seq_ready)) ||
                     ((state_q == S_VDISPATCH) && !m_vec_ready);
  // The next-state block reads the sequencers' handshakes, so Verilator runs it after every edge of
  // clk. While gate_wait is high it only holds (each *_d its register, inner_next and prog_end low:
  // no state above leaves, and rd_re is low), so there it keeps those defaults and skips the rest
  // (the test at the top of the block).
  //
  // Two wide values are computed only in the cycles that read them, and hold otherwise (latches):
  // READ_MEM's rd_row only in S_RD_SEND (m_body_data and sh_q read it only there), and mem_wdata
  // only with mem_we (the memories read it only with their write enables).
  /* verilator lint_off LATCH */
  always_comb begin
    if (mem_we) mem_wdata = is_acc ? sh_q[SH_W-1 -: 32 * N] : {{(16 * N){1'b0}}, sh_q[SH_W-1 -: 16 * N]};
  end
  /* verilator lint_on LATCH */

endmodule

`default_nettype wire
