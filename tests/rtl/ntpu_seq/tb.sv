// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_seq with the real array (N = 4) and three ntpu_ram memories: gen.c's LOAD_W /
// MATMUL stream is offered back to back (or after short random gaps), far faster than the link
// could bring it, so MATMULs queue behind each other, tiles load while rows stream, MATMULs wait
// for their tile and for ACC rows still in flight, all hazard slots fill, and TRANSPOSE_A MATMULs
// take their rows from the transposer, also right at a tile's last beat. At each CHECK the
// bench waits for `idle` and compares every ACC row with gen.c's model. It also checks that a
// weight buffer never shifts while a row that uses it is inside the array, and that the streams
// reach every stall path (coverage counts must be non-zero). Every cycle it also asks the overlap
// query (q_*) about a random range: an answer of "no conflict" must hold against the bench's own
// lists of the UB and WB rows still to be read and the ACC rows still to be written by accepted
// commands, and only the three overlappable kinds may ever get it.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int N = 4;
  localparam int UB_ROWS = 64, WB_ROWS = 32, ACC_ROWS = 48;
  localparam int LATENCY = 2 * N;  // the array's documented latency, for the buffer-use check only
  localparam int MAX_CMDS = 4096, MAX_CHECKS = 256;

  logic clk = 1'b0;
  logic rst = 1'b1;
  always #5 clk = ~clk;

  logic cmd_valid = 1'b0, cmd_ready, cmd_matmul, idle;
  logic [7:0] cmd_flags;
  logic [15:0] cmd_addr, cmd_acc_addr, cmd_rows, cmd_stride;
  logic ub_re, wb_re, acc_re, acc_we;
  logic [5:0] ub_raddr, acc_raddr, acc_waddr;
  logic [4:0] wb_raddr;
  logic [N*16-1:0] ub_rdata, wb_rdata, w_row, a_row;
  logic [N*32-1:0] acc_rdata, acc_wdata, a_acc, y_row;
  logic w_valid, w_buf, w_transpose, a_valid, a_buf, a_bf16, y_valid;
  logic stall_weight, stall_hazard;
  logic [1:0] q_mem = 2'd0;
  logic q_write = 1'b0, q_conflict;
  logic [15:0] q_addr = 16'd0, q_rows = 16'd0;

  ntpu_seq #(
    .N(N), .UB_ROWS(UB_ROWS), .WB_ROWS(WB_ROWS), .ACC_ROWS(ACC_ROWS), .MEM_OVERLAP(1)
  ) dut (
    .clk(clk), .rst(rst),
`ifdef VERILATOR
    // Built by Verilator, the bench runs vsim's form (sim/vsim/ntpu_seq.sv), whose weight loader has a
    // gated clock of its own: here it ticks with clk.
    .clk_load(clk), .load_busy(),
`endif
    .s_cmd_valid(cmd_valid), .s_cmd_ready(cmd_ready), .s_cmd_matmul(cmd_matmul),
    .s_cmd_flags(cmd_flags), .s_cmd_addr(cmd_addr), .s_cmd_acc_addr(cmd_acc_addr),
    .s_cmd_rows(cmd_rows), .s_cmd_stride(cmd_stride), .idle(idle),
    .s_cmd_in_h(8'd0), .s_cmd_in_w(8'd0), .s_cmd_out_w(8'd0), .s_cmd_mb(8'd0), .s_cmd_cstride(8'd0),
    .s_cmd_k(8'd0), .s_cmd_ct(16'd0), .s_cmd_dy(16'd0), .s_cmd_dx(16'd0),
    .ub_re(ub_re), .ub_raddr(ub_raddr), .ub_rdata(ub_rdata),
    .wb_re(wb_re), .wb_raddr(wb_raddr), .wb_rdata(wb_rdata),
    .acc_re(acc_re), .acc_raddr(acc_raddr), .acc_rdata(acc_rdata),
    .acc_we(acc_we), .acc_waddr(acc_waddr), .acc_wdata(acc_wdata),
    .w_valid(w_valid), .w_buf(w_buf), .w_transpose(w_transpose), .w_row(w_row),
    .a_valid(a_valid), .a_buf(a_buf), .a_bf16(a_bf16), .a_row(a_row), .a_acc(a_acc),
    .y_valid(y_valid), .y_row(y_row),
    .stall_weight(stall_weight), .stall_hazard(stall_hazard),
    .q_mem(q_mem), .q_write(q_write), .q_addr(q_addr), .q_rows(q_rows), .q_conflict(q_conflict)
  );

  ntpu_array #(.N(N)) u_array (
    .clk(clk), .rst(rst),
    .w_valid(w_valid), .w_buf(w_buf), .w_transpose(w_transpose), .w_row(w_row),
    .a_valid(a_valid), .a_buf(a_buf), .a_bf16(a_bf16), .a_row(a_row), .a_acc(a_acc),
    .y_valid(y_valid), .y_row(y_row)
  );

  ntpu_ram #(.WIDTH(N * 16), .DEPTH(UB_ROWS)) u_ub (
    .clk(clk), .we(1'b0), .waddr(6'd0), .wdata({(N * 16){1'b0}}),
    .re(ub_re), .raddr(ub_raddr), .rdata(ub_rdata));
  ntpu_ram #(.WIDTH(N * 16), .DEPTH(WB_ROWS)) u_wb (
    .clk(clk), .we(1'b0), .waddr(5'd0), .wdata({(N * 16){1'b0}}),
    .re(wb_re), .raddr(wb_raddr), .rdata(wb_rdata));
  ntpu_ram #(.WIDTH(N * 32), .DEPTH(ACC_ROWS)) u_acc (
    .clk(clk), .we(acc_we), .waddr(acc_waddr), .wdata(acc_wdata),
    .re(acc_re), .raddr(acc_raddr), .rdata(acc_rdata));

  int errors = 0;
  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_seq: %s", msg);
    if (errors > 50) $fatal(1, "FAIL ntpu_seq: too many errors");
  endtask

  // ---------------------------------------------------------------- buffer-use check
  // last_use[b]: the cycle the last row using buffer b entered the array.
  longint cycle = 0;
  longint last_use [2];
  initial begin
    last_use[0] = -1000;
    last_use[1] = -1000;
  end
  int cov_hazard = 0, cov_weight = 0, cov_seg_full = 0, cov_overlap = 0, cov_b2b = 0;
  int cov_tr_rows = 0, cov_tr_weight = 0, cov_edge = 0, cov_tr_edge = 0;
  logic a_valid_q = 1'b0;
  always @(posedge clk) begin
    if (!rst) begin
      cycle++;
      if (a_valid) last_use[a_buf] = cycle;
      if (w_valid && cycle - last_use[w_buf] < LATENCY - 1) begin
        fail($sformatf("cycle %0d: buffer %0d shifts %0d cycles after a row using it entered",
                       cycle, w_buf, cycle - last_use[w_buf]));
      end
      if (stall_hazard) cov_hazard++;
      if (stall_weight) cov_weight++;
      if (dut.seg_full) cov_seg_full++;
      if (w_valid && dut.mm_busy_q && !dut.ld_zero_q) cov_overlap++;
      if (a_valid && a_valid_q && dut.mm_busy_q && dut.mm_left_q == 16'd1) cov_b2b++;
      if (dut.mm_issue && dut.mm_tr_q) cov_tr_rows++;
      // A transposed row ready but held for its tile.
      if (stall_weight && dut.mm_tr_q && dut.tr_m_valid) cov_tr_weight++;
      // A row issued in the cycle of its own tile's last beat (the earliest the sequencer allows).
      if (dut.mm_issue && w_valid && w_buf == dut.mm_buf_q) begin
        if (dut.mm_tr_q) cov_tr_edge++;
        else cov_edge++;
      end
      a_valid_q <= a_valid;
    end
  end

  // ---------------------------------------------------------------- overlap query check
  // Rows still to be read (UB, WB) or written (ACC) by accepted commands, oldest first (rings).
  localparam int QN = 4096;
  int ubq [QN], wbq [QN], accq [QN];
  int ub_h = 0, ub_t = 0, wb_h = 0, wb_t = 0, acc_h = 0, acc_t = 0;
  int cov_q_free = 0;  // "no conflict" answers while the sequencer was busy

  // Static, not automatic: Icarus 11 pitfall (rtl/README.md); called from one process only.
  function logic pending_in(input int mem, input int lo, input int hi);
    pending_in = 1'b0;
    if (mem == 0) for (int k = ub_h; k != ub_t; k = (k + 1) % QN) pending_in |= ubq[k] >= lo && ubq[k] < hi;
    if (mem == 1) for (int k = wb_h; k != wb_t; k = (k + 1) % QN) pending_in |= wbq[k] >= lo && wbq[k] < hi;
    if (mem == 2) for (int k = acc_h; k != acc_t; k = (k + 1) % QN) pending_in |= accq[k] >= lo && accq[k] < hi;
  endfunction

  always @(posedge clk) begin
    if (!rst) begin
      // The answer for this cycle's query, against the lists before this edge's reads and writes.
      if (!q_conflict) begin
        if (!((q_write && q_mem == 2'd1) || (q_write && q_mem == 2'd0) || (!q_write && q_mem == 2'd2))) begin
          fail($sformatf("cycle %0d: no conflict for mem %0d write %0d", cycle, q_mem, q_write));
        end else if (pending_in(q_mem, q_addr, q_addr + q_rows)) begin
          fail($sformatf("cycle %0d: no conflict for mem %0d write %0d rows %0d..%0d, but they are in use",
                         cycle, q_mem, q_write, q_addr, q_addr + q_rows));
        end
        if (!idle) cov_q_free++;
      end
      if (ub_re) ub_h = (ub_h + 1) % QN;
      if (wb_re) wb_h = (wb_h + 1) % QN;
      if (acc_we) acc_h = (acc_h + 1) % QN;
      if (cmd_valid && cmd_ready && !cmd_matmul) begin
        for (int i = N - 1; i >= 0; i--) begin  // the loader reads the tile's last row first
          wbq[wb_t] = cmd_addr + i;
          wb_t = (wb_t + 1) % QN;
        end
      end
      if (cmd_valid && cmd_ready && cmd_matmul) begin
        for (int m = 0; m < cmd_rows; m++) begin
          if (cmd_flags[2]) ubq[ub_t] = cmd_addr + (m / N) * cmd_stride + m % N;  // TRANSPOSE_A blocks
          else ubq[ub_t] = cmd_addr + m;
          ub_t = (ub_t + 1) % QN;
          accq[acc_t] = cmd_acc_addr + m;
          acc_t = (acc_t + 1) % QN;
        end
      end
      q_mem <= 2'($urandom % 3);
      q_write <= 1'($urandom);
      q_addr <= 16'($urandom % 64);
      q_rows <= 16'($urandom % 9);
    end
  end

  logic [31:0] cmds [0:MAX_CMDS-1][0:6];
  logic [N*32-1:0] want [0:MAX_CHECKS*ACC_ROWS-1];

  initial begin
    string dir;
    int fd, ncmds, nchecks, chk, wait_cycles;
    logic taken;
    logic [31:0] word;
    if (!$value$plusargs("dir=%s", dir)) dir = ".";
    fd = $fopen({dir, "/counts.hex"}, "r");
    if (fd == 0 || $fscanf(fd, "%h %h", ncmds, nchecks) != 2) $fatal(1, "FAIL ntpu_seq: counts.hex");
    $fclose(fd);
    fd = $fopen({dir, "/cmds.hex"}, "r");
    for (int i = 0; i < ncmds; i++) begin
      for (int j = 0; j < 7; j++) begin
        if ($fscanf(fd, "%h", word) != 1) $fatal(1, "FAIL ntpu_seq: cmds.hex");
        cmds[i][j] = word;
      end
    end
    $fclose(fd);
    $readmemh({dir, "/want.hex"}, want, 0, nchecks * ACC_ROWS - 1);
    #1;  // after ntpu_ram's own zeroing at time 0
    $readmemh({dir, "/ub.hex"}, u_ub.mem, 0, UB_ROWS - 1);
    $readmemh({dir, "/wb.hex"}, u_wb.mem, 0, WB_ROWS - 1);
    $readmemh({dir, "/acc.hex"}, u_acc.mem, 0, ACC_ROWS - 1);

    // Inputs change and outputs are sampled at the falling edge (1 ns after it, once the sequencer's
    // combinational ready has followed this side's inputs): a value read there holds through the
    // next rising edge, the edge that takes the command. Sampling just after a rising edge instead
    // would race the design's registers (Verilator's --timing resumes such waits after they have
    // updated).
    repeat (3) @(negedge clk);
    rst = 1'b0;
    chk = 0;
    for (int i = 0; i < ncmds; i++) begin
      if (cmds[i][0] == 2) begin
        wait_cycles = 0;
        do begin
          @(negedge clk);
          wait_cycles++;
          if (wait_cycles > 10000) $fatal(1, "FAIL ntpu_seq: never idle (check %0d)", chk);
        end while (!idle);
        for (int r = 0; r < ACC_ROWS; r++) begin
          if (u_acc.mem[r] !== want[chk * ACC_ROWS + r]) begin
            fail($sformatf("check %0d (command %0d): ACC row %0d = %h, want %h", chk, i, r,
                           u_acc.mem[r], want[chk * ACC_ROWS + r]));
          end
        end
        chk++;
      end else begin
        repeat (cmds[i][6]) @(negedge clk);
        cmd_valid = 1'b1;
        cmd_matmul = cmds[i][0] == 1;
        cmd_flags = 8'(cmds[i][1]);
        cmd_addr = 16'(cmds[i][2]);
        cmd_acc_addr = 16'(cmds[i][3]);
        cmd_rows = 16'(cmds[i][4]);
        cmd_stride = 16'(cmds[i][5]);
        wait_cycles = 0;
        do begin
          #1 taken = cmd_ready;
          @(negedge clk);
          wait_cycles++;
          if (wait_cycles > 10000) $fatal(1, "FAIL ntpu_seq: command %0d never accepted", i);
        end while (!taken);
        cmd_valid = 1'b0;
        cmd_flags = $urandom;
        cmd_addr = $urandom;
        cmd_stride = $urandom;
      end
    end
    if (chk != nchecks) fail($sformatf("%0d checks, want %0d", chk, nchecks));
    $display("coverage: %0d cycles ACC-hazard stall, %0d weight stall, %0d hazard slots full,",
             cov_hazard, cov_weight, cov_seg_full);
    $display("          %0d weight beats during a MATMUL, %0d back-to-back MATMUL rows,",
             cov_overlap, cov_b2b);
    $display("          %0d transposed rows, %0d cycles a transposed row waits for its tile,",
             cov_tr_rows, cov_tr_weight);
    $display("          rows issued at their tile's last beat: %0d plain, %0d transposed", cov_edge,
             cov_tr_edge);
    if (cov_hazard == 0 || cov_weight == 0 || cov_seg_full == 0 || cov_overlap == 0 ||
        cov_b2b == 0 || cov_tr_rows == 0 || cov_tr_weight == 0 || cov_edge == 0 ||
        cov_tr_edge == 0) begin
      fail("the stream no longer reaches every stall path");
    end
    $display("          overlap query: %0d 'no conflict' answers while busy", cov_q_free);
    if (cov_q_free == 0) fail("the overlap query never said yes while the sequencer was busy");
    if (errors != 0) $fatal(1, "FAIL ntpu_seq: %0d errors", errors);
    $display("PASS ntpu_seq: %0d commands, %0d ACC checks, %0d cycles", ncmds - nchecks, chk, cycle);
    $finish;
  end
endmodule

`default_nettype wire
