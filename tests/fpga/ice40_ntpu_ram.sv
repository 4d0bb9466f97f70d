// SPDX-License-Identifier: Apache-2.0
// Bench for fpga/prim/ice40/ntpu_ram.sv against Yosys's simulation models of the iCE40 cells
// (cells_sim.v, given on the command line): the SPRAM mapping (32 x 32768: two slices, two banks,
// all four blocks) and the EBR mapping (64 x 512, reads and writes in the same cycle), each next
// to the generic contract: zero contents at start (the SPRAM clear), a read's word in the next
// cycle and held until the next read (through writes and idle cycles), old data on a same-cycle
// read of the word being written. Run by `make fpga-sim` (and so by `make fpga`).
`default_nettype none
`timescale 1ns / 1ps

module tb_ram_run #(
  parameter int W = 32,
  parameter int D = 32768,
  parameter bit BOTH = 0    // may read and write in one cycle
) (
  input  logic clk,
  output logic done,
  output int   errors
);
  localparam int AW = $clog2(D);
  logic we = 1'b0, re = 1'b0;
  logic [AW-1:0] waddr, raddr;
  logic [W-1:0] wdata, rdata, want;
  logic [W-1:0] model [D];
  logic pend = 1'b0;

  ntpu_ram #(.WIDTH(W), .DEPTH(D)) dut (
    .clk(clk), .we(we), .waddr(waddr), .wdata(wdata), .re(re), .raddr(raddr), .rdata(rdata)
  );

  function automatic logic [AW-1:0] pick_addr();
    // Half the accesses in a small window, so reads find written words.
    return ($urandom % 2) ? AW'($urandom % 64) : AW'($urandom);
  endfunction

  initial begin
    done = 1'b0;
    errors = 0;
    for (int i = 0; i < D; i++) model[i] = '0;
    repeat (16400) @(posedge clk);  // the SPRAM clear after configuration
    for (int c = 0; c < 100000; c++) begin
      @(negedge clk);
      if (pend && rdata !== want) begin
        errors++;
        if (errors <= 10) $display("FAIL ice40 ntpu_ram %0dx%0d: cycle %0d: rdata %h, want %h", W, D, c, rdata, want);
      end
      we = 1'b0;
      re = 1'b0;
      case ($urandom % 4)
        0: we = 1'b1;
        1: re = 1'b1;
        2: begin we = 1'b1; re = BOTH; end
        default: ;
      endcase
      waddr = pick_addr();
      raddr = ($urandom % 4 == 0) ? waddr : pick_addr();
      for (int k = 0; k < W; k += 32) wdata[k +: 32] = $urandom;
      @(posedge clk);
      if (re) begin
        want = model[raddr];
        pend = 1'b1;
      end
      if (we) model[waddr] = wdata;
    end
    done = 1'b1;
  end
endmodule

module tb;
  logic clk = 1'b0;
  logic [1:0] done;
  int errors [2];
  always #5 clk = ~clk;

  tb_ram_run #(.W(32), .D(32768), .BOTH(0)) u_spram (.clk(clk), .done(done[0]), .errors(errors[0]));
  tb_ram_run #(.W(64), .D(512), .BOTH(1)) u_ebr (.clk(clk), .done(done[1]), .errors(errors[1]));

  initial begin
    wait (done === 2'b11);
    if (errors[0] + errors[1] != 0) $fatal(1, "FAIL ice40 ntpu_ram: %0d SPRAM, %0d EBR errors", errors[0], errors[1]);
    $display("PASS ice40 ntpu_ram: SPRAM 32x32768 (4 blocks, power-on clear) and EBR 64x512 match the generic contract");
    $finish;
  end
endmodule

`default_nettype wire
