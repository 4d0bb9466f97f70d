// SPDX-License-Identifier: Apache-2.0
// Drives an iterative fp32 operator (start, x, y in; busy, done, result out) through the vectors
// gen.c wrote to +dir=DIR (vectors.hex: x, y, expected result as 24 hex digits a line; count.hex:
// the number of lines) and checks every result bit for bit, that done comes exactly LATENCY cycles
// after its start and that the result holds until the next start. Starts come back to back (in the
// done cycle), after random gaps, and now and then in the middle of an operation (which must be
// abandoned). Prints PASS and raises passed, or stops with $fatal; the bench ends the run once every
// checker has passed. Shared by the ntpu_fp32_div and ntpu_fp32_sqrt benches.
`default_nettype none
`timescale 1ns / 1ps

module fp32_iter_check #(
  parameter NAME = "dut",    // module under test, for the messages
  parameter int LATENCY = 26  // cycles from start to done
) (
  input  wire         clk,
  output logic        rst,
  output logic        start,
  output logic [31:0] x,
  output logic [31:0] y,
  input  wire         busy,
  input  wire         done,
  input  wire  [31:0] r,
  output logic        passed
);
  localparam int MAX_VECTORS = 1 << 20;

  logic [95:0] vectors [0:MAX_VECTORS-1];
  logic [31:0] count [0:0];
  string       dir;
  int          errors, seed;

  task automatic fail(input string what);
    errors++;
    if (errors <= 20) $display("FAIL %0s: %0s", NAME, what);
  endtask

  initial begin
    errors = 0;
    passed = 1'b0;
    seed = 7;
    if (!$value$plusargs("dir=%s", dir)) $fatal(1, "FAIL %0s: no +dir=DIR", NAME);
    count[0] = 0;
    $readmemh({dir, "/count.hex"}, count);
    if (count[0] == 0 || count[0] > MAX_VECTORS) $fatal(1, "FAIL %0s: bad vector count %0d", NAME, count[0]);
    $readmemh({dir, "/vectors.hex"}, vectors, 0, count[0] - 1);

    rst = 1'b1;
    start = 1'b0;
    x = '0;
    y = '0;
    repeat (3) @(posedge clk);
    #1 rst = 1'b0;
    if (busy || done) fail("busy or done after reset");

    for (int k = 0; k < count[0]; k++) begin
      int gap;
      // Now and then an operation that the next start abandons halfway.
      if ($urandom(seed) % 16 == 0) begin
        seed++;
        start = 1'b1;
        {x, y} = ~vectors[k][95:32];
        @(posedge clk);
        #1 start = 1'b0;
        repeat (1 + $urandom(seed) % (LATENCY - 2)) @(posedge clk);
        #1;
      end
      seed++;
      start = 1'b1;
      {x, y} = vectors[k][95:32];
      @(posedge clk);
      #1 start = 1'b0;
      x = 32'hDEAD_BEEF;  // read in the start cycle only
      y = 32'hDEAD_BEEF;
      for (int c = 1; c < LATENCY; c++) begin
        if (done) fail($sformatf("vector %0d: done %0d cycles after start", k, c));
        if (!busy) fail($sformatf("vector %0d: not busy %0d cycles after start", k, c));
        @(posedge clk);
        #1;
      end
      if (!done) fail($sformatf("vector %0d: no done after %0d cycles", k, LATENCY));
      if (r !== vectors[k][31:0]) begin
        fail($sformatf("vector %0d: %08h, %08h gives %08h, expected %08h", k, vectors[k][95:64],
                       vectors[k][63:32], r, vectors[k][31:0]));
      end
      gap = $urandom(seed) % 4;
      if (gap != 0) begin  // the result holds until the next start
        repeat (gap) @(posedge clk);
        #1;
        if (done || busy) fail($sformatf("vector %0d: done or busy after the result", k));
        if (r !== vectors[k][31:0]) fail($sformatf("vector %0d: the result did not hold", k));
      end
    end

    if (errors != 0) $fatal(1, "FAIL %0s: %0d errors in %0d vectors", NAME, errors, count[0]);
    $display("PASS %0s: %0d vectors bit-exact, latency %0d", NAME, count[0], LATENCY);
    passed = 1'b1;
  end
endmodule

`default_nettype wire
