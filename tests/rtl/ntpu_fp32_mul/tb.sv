// Bench for ntpu_fp32_mul: every vector from gen.c (special cases and random pairs, with the
// product ntpu_f32_mul gives) must come out bit for bit; with en low the output must be 0.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int MAX_VECTORS = 1 << 20;

  logic [95:0] vectors [0:MAX_VECTORS-1];
  logic [31:0] count [0:0];
  logic        en;
  logic [31:0] x, y, s;
  string       dir;
  int          errors;

  ntpu_fp32_mul dut (
    .en(en),
    .x (x),
    .y (y),
    .p (s)
  );

  initial begin
    errors = 0;
    if (!$value$plusargs("dir=%s", dir)) begin
      $fatal(1, "FAIL ntpu_fp32_mul: no +dir=DIR");
    end
    count[0] = 0;
    $readmemh({dir, "/count.hex"}, count);
    if (count[0] == 0 || count[0] > MAX_VECTORS) begin
      $fatal(1, "FAIL ntpu_fp32_mul: bad vector count %0d", count[0]);
    end
    $readmemh({dir, "/vectors.hex"}, vectors, 0, count[0] - 1);

    en = 1'b1;
    for (int k = 0; k < count[0]; k++) begin
      {x, y} = vectors[k][95:32];
      #1;
      if (s !== vectors[k][31:0]) begin
        errors++;
        if (errors <= 20) begin
          $display("FAIL ntpu_fp32_mul: vector %0d: %08h * %08h = %08h, expected %08h", k, x, y, s,
                   vectors[k][31:0]);
        end
      end
    end

    en = 1'b0;
    x  = 32'h3F80_0000;
    y  = 32'h4000_0000;
    #1;
    if (s !== 32'd0) begin
      errors++;
      $display("FAIL ntpu_fp32_mul: en = 0 gives %08h, expected 0", s);
    end

    if (errors != 0) begin
      $fatal(1, "FAIL ntpu_fp32_mul: %0d of %0d vectors wrong", errors, count[0]);
    end
    $display("PASS ntpu_fp32_mul: %0d vectors bit-exact", count[0]);
    $finish;
  end
endmodule

`default_nettype wire
