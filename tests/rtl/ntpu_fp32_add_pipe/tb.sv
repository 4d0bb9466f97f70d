// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_fp32_add_pipe at STAGES = 1 .. 4: gen.c's vectors (those of the ntpu_fp32_add
// bench) stream in one pair per cycle, and each sum must come out bit for bit exactly STAGES
// cycles later.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int MAX_VECTORS = 1 << 20;

  logic [95:0] vectors [0:MAX_VECTORS-1];
  logic [31:0] count [0:0];
  logic        clk = 1'b0;
  logic [31:0] x, y;
  logic [31:0] s [1:4];
  string       dir;
  int          errors = 0;

  always #5 clk = ~clk;

  for (genvar k = 1; k <= 4; k++) begin : g_dut
    ntpu_fp32_add_pipe #(.STAGES(k)) dut (.clk(clk), .x(x), .y(y), .s(s[k]));
  end

  task automatic check(input int stages, input logic [31:0] s, input int k);
    if (k >= 0 && s !== vectors[k][31:0]) begin
      errors++;
      if (errors <= 20)
        $display("FAIL ntpu_fp32_add_pipe STAGES=%0d: vector %0d: %08h + %08h = %08h, expected %08h",
                 stages, k, vectors[k][95:64], vectors[k][63:32], s, vectors[k][31:0]);
    end
  endtask

  initial begin
    int n;
    if (!$value$plusargs("dir=%s", dir)) $fatal(1, "FAIL ntpu_fp32_add_pipe: no +dir=DIR");
    count[0] = 0;
    $readmemh({dir, "/count.hex"}, count);
    n = count[0];
    if (n == 0 || n > MAX_VECTORS) $fatal(1, "FAIL ntpu_fp32_add_pipe: bad vector count %0d", n);
    $readmemh({dir, "/vectors.hex"}, vectors, 0, n - 1);
    // Cycle k: drive pair k before the edge; after it, stage outputs belong to pairs k-1, k-2.
    // Cycle k: pair k goes in before the edge; after it, stage count j shows pair k+1-j.
    for (int k = 0; k < n + 4; k++) begin
      {x, y} = (k < n) ? vectors[k][95:32] : 64'd0;
      @(posedge clk);
      #1;
      for (int j = 1; j <= 4; j++) begin
        if (k + 1 - j >= 0 && k + 1 - j < n) check(j, s[j], k + 1 - j);
      end
    end
    if (errors != 0) $fatal(1, "FAIL ntpu_fp32_add_pipe: %0d errors", errors);
    $display("PASS ntpu_fp32_add_pipe: %0d vectors bit-exact at STAGES 1, 2, 3 and 4, one per cycle", n);
    $finish;
  end
endmodule

`default_nettype wire
