// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_vpool (POOL, protocol 1.5) with N = 4 and UB and ACC ntpu_ram memories of 128 rows:
// gen.c's POOL commands of every MODE, one at a time (start, then wait for busy to fall); after each
// the whole UB and ACC must equal gen.c's model. Also checks the cycle count of each command against
// the contract's (MAX / AVG: k*k + 2 or + 3 a pooled row, the grads: the map plus k*k + 2 a pooled row).
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int N = 4, ROWS = 128, MAX_CMDS = 512;

  logic clk = 1'b0;
  logic rst = 1'b1;
  always #5 clk = ~clk;

  logic start = 1'b0, busy;
  logic [1:0] mode;
  logic [15:0] src, dst, aux;
  logic [7:0] in_h, in_w, mb, k;
  logic acc_re, ub_re, wr_we, wr_acc;
  logic [6:0] acc_raddr, ub_raddr;
  logic [15:0] wr_addr;
  logic [N*32-1:0] acc_rdata, wr_data;
  logic [N*16-1:0] ub_rdata;

  ntpu_vpool #(.N(N), .UB_AW(7), .ACC_AW(7)) dut (
    .clk(clk), .rst(rst), .start(start), .mode(mode), .src(src), .dst(dst), .aux(aux),
    .in_h(in_h), .in_w(in_w), .mb(mb), .k(k), .busy(busy),
    .acc_re(acc_re), .acc_raddr(acc_raddr), .acc_rdata(acc_rdata),
    .ub_re(ub_re), .ub_raddr(ub_raddr), .ub_rdata(ub_rdata),
    .wr_we(wr_we), .wr_acc(wr_acc), .wr_addr(wr_addr), .wr_data(wr_data)
  );
  ntpu_ram #(.WIDTH(N * 16), .DEPTH(ROWS)) u_ub (
    .clk(clk), .we(wr_we && !wr_acc), .waddr(wr_addr[6:0]), .wdata(wr_data[N*16-1:0]),
    .re(ub_re), .raddr(ub_raddr), .rdata(ub_rdata));
  ntpu_ram #(.WIDTH(N * 32), .DEPTH(ROWS)) u_acc (
    .clk(clk), .we(wr_we && wr_acc), .waddr(wr_addr[6:0]), .wdata(wr_data),
    .re(acc_re), .raddr(acc_raddr), .rdata(acc_rdata));

  int errors = 0;
  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_vpool: %s", msg);
    if (errors > 50) $fatal(1, "FAIL ntpu_vpool: too many errors");
  endtask

  // Writes must stay inside the command's destination ranges: out-of-range writes would show as
  // memory differences, and a write past 127 would wrap: flag it here.
  always @(posedge clk) begin
    if (!rst && wr_we && wr_addr >= 16'(ROWS)) fail($sformatf("write to row %0d", wr_addr));
  end

  logic [31:0] cmds [0:MAX_CMDS-1][0:7];
  logic [N*16-1:0] want_ub [0:MAX_CMDS*ROWS-1];
  logic [N*32-1:0] want_acc [0:MAX_CMDS*ROWS-1];
  logic [N*16-1:0] pre_ub [0:MAX_CMDS*ROWS-1];
  logic [N*32-1:0] pre_acc [0:MAX_CMDS*ROWS-1];

  initial begin
    string dir;
    int fd, ncmds, cycles, expect_cycles, oh, ow, kk, pooled;
    int maxes [4];
    logic [31:0] word;
    if (!$value$plusargs("dir=%s", dir)) dir = ".";
    fd = $fopen({dir, "/counts.hex"}, "r");
    if (fd == 0 || $fscanf(fd, "%h", ncmds) != 1) $fatal(1, "FAIL ntpu_vpool: counts.hex");
    $fclose(fd);
    fd = $fopen({dir, "/cmds.hex"}, "r");
    for (int i = 0; i < ncmds; i++) begin
      for (int j = 0; j < 8; j++) begin
        if ($fscanf(fd, "%h", word) != 1) $fatal(1, "FAIL ntpu_vpool: cmds.hex");
        cmds[i][j] = word;
      end
    end
    $fclose(fd);
    $readmemh({dir, "/want_ub.hex"}, want_ub, 0, ncmds * ROWS - 1);
    $readmemh({dir, "/want_acc.hex"}, want_acc, 0, ncmds * ROWS - 1);
    $readmemh({dir, "/pre_ub.hex"}, pre_ub, 0, ncmds * ROWS - 1);
    $readmemh({dir, "/pre_acc.hex"}, pre_acc, 0, ncmds * ROWS - 1);
    #1;
    for (int m = 0; m < 4; m++) maxes[m] = 0;
    repeat (3) @(negedge clk);
    rst = 1'b0;
    for (int i = 0; i < ncmds; i++) begin
      for (int r = 0; r < ROWS; r++) begin
        u_ub.mem[r] = pre_ub[i * ROWS + r];
        u_acc.mem[r] = pre_acc[i * ROWS + r];
      end
      mode = 2'(cmds[i][0]);
      src = 16'(cmds[i][1]);
      dst = 16'(cmds[i][2]);
      aux = 16'(cmds[i][3]);
      in_h = 8'(cmds[i][4]);
      in_w = 8'(cmds[i][5]);
      mb = 8'(cmds[i][6]);
      k = 8'(cmds[i][7]);
      start = 1'b1;
      @(negedge clk);
      start = 1'b0;
      cycles = 1;
      while (busy) begin
        @(negedge clk);
        cycles++;
        if (cycles > 100000) $fatal(1, "FAIL ntpu_vpool: command %0d never ends", i);
      end
      oh = in_h / k;
      ow = in_w / k;
      kk = k * k;
      pooled = oh * ow * mb;
      case (mode)
        2'd0: expect_cycles = 1 + pooled * (kk + 3);
        2'd1: expect_cycles = 3 + pooled * (kk + 2);
        2'd2: expect_cycles = 1 + in_h * in_w * mb + pooled * (kk + 2);
        default: expect_cycles = 3 + in_h * in_w * mb + pooled * (kk + 2);
      endcase
      if (cycles != expect_cycles) fail($sformatf("command %0d (mode %0d): %0d cycles, want %0d", i, mode,
                                                  cycles, expect_cycles));
      maxes[mode]++;
      for (int r = 0; r < ROWS; r++) begin
        if (u_ub.mem[r] !== want_ub[i * ROWS + r])
          fail($sformatf("command %0d (mode %0d k %0d %0dx%0dx%0d): UB row %0d = %h, want %h", i, mode, k, in_h,
                         in_w, mb, r, u_ub.mem[r], want_ub[i * ROWS + r]));
        if (u_acc.mem[r] !== want_acc[i * ROWS + r])
          fail($sformatf("command %0d (mode %0d k %0d %0dx%0dx%0d): ACC row %0d = %h, want %h", i, mode, k, in_h,
                         in_w, mb, r, u_acc.mem[r], want_acc[i * ROWS + r]));
      end
    end
    if (maxes[0] == 0 || maxes[1] == 0 || maxes[2] == 0 || maxes[3] == 0) fail("not every MODE ran");
    if (errors != 0) $fatal(1, "FAIL ntpu_vpool: %0d errors", errors);
    $display("PASS ntpu_vpool: %0d POOL commands (MAX %0d, AVG %0d, MAX_GRAD %0d, AVG_GRAD %0d)", ncmds, maxes[0],
             maxes[1], maxes[2], maxes[3]);
    $finish;
  end
endmodule

`default_nettype wire
