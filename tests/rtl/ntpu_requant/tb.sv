// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_requant: every vector from gen.c (every shift, saturation, ties, clamp edges,
// random operands, with the int8 ntpu_requantize gives) goes in while ce toggles at random; each
// y must match the vector presented two ce-cycles earlier, and hold while ce is low.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int MAX_VECTORS = 1 << 18;

  logic [103:0] vectors [0:MAX_VECTORS-1];
  logic [31:0]  count [0:0];
  logic         clk = 1'b0;
  logic         ce;
  logic [31:0]  x, mult, shift;
  logic [7:0]   y;
  string        dir;
  int           errors, nvec, checked;
  int           idx_q1, idx_q2;  // vector in stage 1 and stage 2 (-1: none)
  int           ce_pct;

  always #5 clk = ~clk;

  ntpu_requant dut (
    .clk  (clk),
    .ce   (ce),
    .x    (x),
    .mult (mult),
    .shift(shift),
    .y    (y)
  );

  initial begin
    logic [7:0] held;
    int next;
    errors = 0;
    checked = 0;
    if (!$value$plusargs("dir=%s", dir)) $fatal(1, "FAIL ntpu_requant: no +dir=DIR");
    count[0] = 0;
    $readmemh({dir, "/count.hex"}, count);
    nvec = count[0];
    if (nvec == 0 || nvec > MAX_VECTORS) $fatal(1, "FAIL ntpu_requant: bad vector count %0d", nvec);
    $readmemh({dir, "/vectors.hex"}, vectors, 0, nvec - 1);

    idx_q1 = -1;
    idx_q2 = -1;
    next = 0;
    ce = 1'b0;
    {x, mult, shift} = '0;
    @(negedge clk);
    // Drive on the falling edge, check after the rising one. Phases of ce duty: always, 70 %, 20 %.
    while (next < nvec || idx_q1 >= 0 || idx_q2 >= 0) begin
      ce_pct = (next / 4000) % 3 == 0 ? 100 : (next / 4000) % 3 == 1 ? 70 : 20;
      ce = ($urandom % 100) < ce_pct;
      if (next < nvec) {x, mult, shift} = vectors[next][103:8];
      else {x, mult, shift} = {$urandom, $urandom, $urandom};
      held = y;
      @(posedge clk);
      #1;
      if (ce) begin
        idx_q2 = idx_q1;
        idx_q1 = next < nvec ? next : -1;
        if (next < nvec) next++;
        if (idx_q2 >= 0) begin
          checked++;
          if (y !== vectors[idx_q2][7:0]) begin
            errors++;
            if (errors <= 20) begin
              $display("FAIL ntpu_requant: vector %0d: x %08h mult %08h shift %08h: y %02h, want %02h",
                       idx_q2, vectors[idx_q2][103:72], vectors[idx_q2][71:40], vectors[idx_q2][39:8],
                       y, vectors[idx_q2][7:0]);
            end
          end
        end
      end else if (y !== held) begin
        errors++;
        if (errors <= 20) $display("FAIL ntpu_requant: y changed with ce low");
      end
      @(negedge clk);
    end

    if (checked != nvec) $fatal(1, "FAIL ntpu_requant: checked %0d of %0d", checked, nvec);
    if (errors != 0) $fatal(1, "FAIL ntpu_requant: %0d of %0d vectors wrong", errors, nvec);
    $display("PASS ntpu_requant: %0d vectors bit-exact with random clock enables", nvec);
    $finish;
  end
endmodule

`default_nettype wire
