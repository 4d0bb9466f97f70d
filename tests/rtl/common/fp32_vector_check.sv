// SPDX-License-Identifier: Apache-2.0
// Drives a combinational fp32 operator (x, y, en in; result out) through the vectors gen.c wrote
// to +dir=DIR (vectors.hex: x, y, expected result as 24 hex digits a line; count.hex: the number
// of lines) and checks every result bit for bit; with en low the result must be 0. Prints PASS,
// or stops with $fatal. Shared by the ntpu_fp32_add and ntpu_fp32_mul benches.
`default_nettype none
`timescale 1ns / 1ps

module fp32_vector_check #(
  parameter NAME = "dut",  // module under test, for the messages
  parameter OP   = "?"     // its operator, for the messages
) (
  output logic        en,
  output logic [31:0] x,
  output logic [31:0] y,
  input  wire  [31:0] r
);
  localparam int MAX_VECTORS = 1 << 20;

  logic [95:0] vectors [0:MAX_VECTORS-1];
  logic [31:0] count [0:0];
  string       dir;
  int          errors;

  initial begin
    errors = 0;
    if (!$value$plusargs("dir=%s", dir)) begin
      $fatal(1, "FAIL %0s: no +dir=DIR", NAME);
    end
    count[0] = 0;
    $readmemh({dir, "/count.hex"}, count);
    if (count[0] == 0 || count[0] > MAX_VECTORS) begin
      $fatal(1, "FAIL %0s: bad vector count %0d", NAME, count[0]);
    end
    $readmemh({dir, "/vectors.hex"}, vectors, 0, count[0] - 1);

    en = 1'b1;
    for (int k = 0; k < count[0]; k++) begin
      {x, y} = vectors[k][95:32];
      #1;
      if (r !== vectors[k][31:0]) begin
        errors++;
        if (errors <= 20) begin
          $display("FAIL %0s: vector %0d: %08h %0s %08h = %08h, expected %08h", NAME, k, x, OP, y, r,
                   vectors[k][31:0]);
        end
      end
    end

    en = 1'b0;
    x  = 32'h3F80_0000;
    y  = 32'h4000_0000;
    #1;
    if (r !== 32'd0) begin
      errors++;
      $display("FAIL %0s: en = 0 gives %08h, expected 0", NAME, r);
    end

    if (errors != 0) begin
      $fatal(1, "FAIL %0s: %0d of %0d vectors wrong", NAME, errors, count[0]);
    end
    $display("PASS %0s: %0d vectors bit-exact", NAME, count[0]);
    $finish;
  end
endmodule

`default_nettype wire
