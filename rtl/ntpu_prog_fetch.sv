// SPDX-License-Identifier: Apache-2.0
// RUN's program fetch (docs/isa.md, Programs): the pointer into PM, each command's LEN prefix, and
// the PM reads of ntpu_cmd's fetch. ntpu_cmd builds it only with PM_ROWS > 0; it keeps PM itself
// (also memory 3 of WRITE_MEM and READ_MEM) and the path of the bytes.
//
// Contract (an input named after one of ntpu_cmd's states is high in that state):
// - `start` (in S_DECODE: a RUN that passed its checks) raises `run` from the next cycle to the
//   cycle of `prog_end`. The program is PM rows prog_row .. prog_row + prog_rows - 1, taken in
//   every S_DECODE outside a program (`decode` without `run`).
// - S_PLEN (`plen`) reads the LEN prefix of the next command: a PM read, LEN on the memory's output
//   the next cycle; a second read and two cycles more where its low byte is the last of a row or
//   LINK_BYTES = 1. Then `plen_go` (LEN good, in `run_len` from the next cycle: fetch the command) or
//   `plen_end` (the program ends: fewer than 2 bytes left, seen in the first cycle, or LEN 0, or a
//   LEN past the program or over MAX_PAYLOAD) with `plen_status` (DEV_OK; DEV_ERR_LENGTH for a LEN
//   not 0). In S_PLEN ntpu_cmd raises `prog_end` exactly with `plen_end`.
// - Command bytes: with `run`, a fetch (`fetch_re`) of the payload bytes from offset fb_off on
//   reads their PM row; the next cycle the row is on the memory's output, the bytes from byte
//   pm_byte_q of it on. A fetch takes at most pm_room bytes (never past the row).
// - `cmd_next` (a command of the program passed and is done) moves on to the next LEN prefix and
//   counts the command in `run_done` (RUN's reply data).
// - `rd_pm` (READ_MEM of PM, never with `run`) reads PM row rd_addr.
// - `run_rep` is high from the cycle after `prog_end` through the next `idle` cycle.
`default_nettype none

module ntpu_prog_fetch
  import ntpu_pkg::*;
#(
  parameter int N = 8,               // array size: a PM row is 2N bytes
  parameter int LINK_BYTES = 1,      // most bytes a fetch takes (ntpu_cmd's W)
  parameter int MAX_PAYLOAD = 4112   // a longer LEN is ERR_LENGTH
) (
  input  logic        clk,
  input  logic        rst,
  // ntpu_cmd's state
  input  logic        decode,       // S_DECODE
  input  logic        start,        // ... of a RUN that passed its checks
  input  logic [15:0] prog_row,     // ... RUN's addr field: the first PM row of the program
  input  logic [15:0] prog_rows,    // ... and its rows field
  input  logic        plen,         // S_PLEN
  input  logic        idle,         // S_IDLE
  input  logic        cmd_next,     // a command of the program is done: on to the next
  input  logic        prog_end,     // the program ends now (RUN is answered)
  output logic        run,          // the command being worked on comes from PM
  output logic        run_rep,      // the reply being sent is RUN's (data: run_done)
  output logic [15:0] run_len,      // the command's LEN
  output logic [15:0] run_done,     // the commands of the program that ran
  output logic        plen_go,      // S_PLEN: the LEN is in and good
  output logic        plen_end,     // S_PLEN: the program ends
  output logic [7:0]  plen_status,  // ... with this status
  // the fetch of the command's bytes
  input  logic        fetch_re,     // ntpu_cmd fetches payload bytes
  input  logic [15:0] fb_off,       // ... from this offset
  output logic [7:0]  pm_room,      // ... at most these (the rest of the row)
  output logic [7:0]  pm_byte_q,    // the row read last holds the wanted bytes from this byte on
  input  logic [15:0] pm_head,      // ... and these are the first two of them (S_PLEN: LEN)
  // PM's read port
  input  logic        rd_pm,        // READ_MEM reads PM
  input  logic [15:0] rd_addr,      // ... this row
  output logic        pm_re,
  output logic [15:0] pm_raddr
);

  if (N < 2 || N > 32 || LINK_BYTES < 1 || LINK_BYTES > 64) begin : g_bad_cfg
    initial $fatal(1, "ntpu_prog_fetch: N must be 2..32, LINK_BYTES 1..64");
  end

  localparam int W = LINK_BYTES;
  localparam int ROW16_BYTES = 2 * N;  // a PM row
  localparam int PB_W = 24;            // PM byte addresses: 65536 rows x 64 bytes at most, twice

  logic run_q;
  logic run_rep_q;
  logic [PB_W-1:0] pm_ptr_q;            // next LEN prefix
  logic [PB_W-1:0] pm_end_q;            // end of the program (exclusive)
  logic [PB_W-1:0] cmd_base_q;          // the current command's payload
  logic [15:0] run_len_q;               // ... its LEN
  logic [15:0] run_done_q;
  logic pl_wait_q;                      // S_PLEN: a PM read is on its way
  logic pl_have_q;                      // S_PLEN: the low byte of LEN is in pl_lo_q
  logic [7:0] pl_lo_q;
  logic [PB_W-1:0] pm_rem;              // program bytes from pm_ptr_q on
  logic [15:0] pl_len;                  // S_PLEN: LEN, when pl_got
  logic pl_got;
  logic pl_two;
  logic pl_bad;                         // ... a LEN that ends the program
  logic [PB_W-1:0] pm_baddr;            // PM byte read now, its byte in the row
  logic [7:0] pm_byte;

  assign run = run_q;
  assign run_rep = run_rep_q;
  assign run_len = run_len_q;
  assign run_done = run_done_q;

  // S_PLEN reads the row holding the next LEN byte; S_HDR and S_WRITE fetch payload bytes from PM
  // as they would from the frame buffer.
  assign pm_rem = pm_end_q - pm_ptr_q;
  assign pm_baddr = plen ? pm_ptr_q + PB_W'(pl_have_q) : cmd_base_q + PB_W'(fb_off);
  assign pm_byte = 8'(pm_baddr % PB_W'(ROW16_BYTES));
  assign pm_room = 8'(ROW16_BYTES) - pm_byte;
  assign pm_re = (run && fetch_re) || (plen && run && !pl_wait_q && !prog_end) || rd_pm;
  assign pm_raddr = run ? 16'(pm_baddr / PB_W'(ROW16_BYTES)) : rd_addr;

  // S_PLEN: LEN is complete once a read brought its byte(s): both at once unless LEN's low byte is
  // the last of a row (or the link is a byte wide), then the high byte with a second read.
  assign pl_two = (W > 1) && (pm_byte_q != 8'(ROW16_BYTES - 1));
  assign pl_got = plen && pl_wait_q && (pl_have_q || pl_two);
  assign pl_len = pl_have_q ? {pm_head[7:0], pl_lo_q} : pm_head;
  // LEN 0 ends the program; a LEN past it (or over MAX_PAYLOAD) ends it with ERR_LENGTH.
  assign pl_bad = pl_len == 16'd0 || pl_len > 16'(MAX_PAYLOAD) ||
                  PB_W'(pl_len) > pm_rem - PB_W'(PROG_LEN_BYTES);
  assign plen_go = pl_got && !pl_bad;
  assign plen_end = plen && ((!pl_wait_q && pm_rem < PB_W'(PROG_LEN_BYTES)) || (pl_got && pl_bad));
  assign plen_status = (pl_got && pl_len != 16'd0) ? DEV_ERR_LENGTH : DEV_OK;

  always_ff @(posedge clk) begin
    if (rst) begin
      run_q <= 1'b0;
      run_rep_q <= 1'b0;
    end else begin
      if (start) run_q <= 1'b1;
      else if (prog_end) run_q <= 1'b0;
      if (prog_end) run_rep_q <= 1'b1;
      else if (idle) run_rep_q <= 1'b0;
    end
  end

  always_ff @(posedge clk) begin
    if (pm_re) pm_byte_q <= pm_byte;
    if (decode && !run) begin
      // (Any frame's a16, b16: only a RUN that passed its checks uses them.)
      pm_ptr_q <= PB_W'(prog_row) * PB_W'(ROW16_BYTES);
      pm_end_q <= (PB_W'(prog_row) + PB_W'(prog_rows)) * PB_W'(ROW16_BYTES);
      run_done_q <= '0;
    end
    if (decode && !run) pl_wait_q <= 1'b0;
    else if (plen) pl_wait_q <= !pl_wait_q ? (pm_re) : 1'b0;
    if (!plen) pl_have_q <= 1'b0;
    else if (pl_wait_q && !pl_got) begin
      pl_have_q <= 1'b1;
      pl_lo_q <= pm_head[7:0];
    end
    if (pl_got) begin
      run_len_q <= pl_len;
      cmd_base_q <= pm_ptr_q + PB_W'(PROG_LEN_BYTES);
    end
    if (cmd_next) begin
      pm_ptr_q <= cmd_base_q + PB_W'(run_len_q);
      run_done_q <= run_done_q + 16'd1;
    end
  end

endmodule

`default_nettype wire
