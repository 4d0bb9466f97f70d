// Bench for ntpu_fp32_add_pipe at STAGES = 1 and 2: gen.c's vectors (those of the ntpu_fp32_add
// bench) stream in one pair per cycle, and each sum must come out bit for bit exactly STAGES
// cycles later (plus the register the caller adds).
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int MAX_VECTORS = 1 << 20;

  logic [95:0] vectors [0:MAX_VECTORS-1];
  logic [31:0] count [0:0];
  logic        clk = 1'b0;
  logic [31:0] x, y, s1, s2;
  string       dir;
  int          errors = 0;

  always #5 clk = ~clk;

  ntpu_fp32_add_pipe #(.STAGES(1)) dut1 (.clk(clk), .x(x), .y(y), .s(s1));
  ntpu_fp32_add_pipe #(.STAGES(2)) dut2 (.clk(clk), .x(x), .y(y), .s(s2));

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
    for (int k = 0; k < n + 2; k++) begin
      {x, y} = (k < n) ? vectors[k][95:32] : 64'd0;
      @(posedge clk);
      #1;
      if (k < n + 1) check(1, s1, (k < n) ? k : -1);
      if (k >= 1) check(2, s2, k - 1 < n ? k - 1 : -1);
    end
    if (errors != 0) $fatal(1, "FAIL ntpu_fp32_add_pipe: %0d errors", errors);
    $display("PASS ntpu_fp32_add_pipe: %0d vectors bit-exact at STAGES 1 and 2, one per cycle", n);
    $finish;
  end
endmodule

`default_nettype wire
