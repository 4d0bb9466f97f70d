// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_vadam (N = 3 lanes): every row from gen.c (Adam or AdamW, per-lane constants,
// ordinary and arbitrary operands) is loaded the way ntpu_vseq loads it (nine constant rows, then
// g with m, then p with v) and must finish with p, m and v equal to ntpu_adam_f32's bit for bit,
// fin exactly ROW_CYCLES cycles after the cycle that loads p and v, and the operands read only when
// loaded.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int N = 3;
  localparam int DIV_BITS = 5;  // the device's
  localparam int ROW_CYCLES = 13 + 3 * (25 / DIV_BITS + 1) - 3;
  localparam int WORDS = 1 + 16 * N;
  localparam int MAX_ROWS = 4096;

  logic            clk = 1'b0;
  logic            rst, ld_k, ld_gm, ld_pv, dec, fin;
  logic [3:0]      k_idx;
  logic [N*32-1:0] rdata, os_rdata, p_out, m_out, v_out;

  always #5 clk = ~clk;

  ntpu_vadam #(
    .N       (N),
    .DIV_BITS(DIV_BITS)
  ) dut (
    .clk     (clk),
    .rst     (rst),
    .ld_k    (ld_k),
    .k_idx   (k_idx),
    .ld_gm   (ld_gm),
    .ld_pv   (ld_pv),
    .rdata   (rdata),
    .os_rdata(os_rdata),
    .dec     (dec),
    .fin     (fin),
    .p_out   (p_out),
    .m_out   (m_out),
    .v_out   (v_out)
  );

  logic [31:0] vec [0:MAX_ROWS*WORDS-1];
  logic [31:0] count [0:0];
  string dir;
  int errors, cycles;

  function automatic logic [31:0] w(input int row, input int lane, input int i);
    w = vec[row * WORDS + 1 + 16 * lane + i];
  endfunction

  initial begin
    errors = 0;
    if (!$value$plusargs("dir=%s", dir)) $fatal(1, "FAIL ntpu_vadam: no +dir=DIR");
    count[0] = 0;
    $readmemh({dir, "/count.hex"}, count);
    if (count[0] == 0 || count[0] > MAX_ROWS) $fatal(1, "FAIL ntpu_vadam: bad row count %0d", count[0]);
    $readmemh({dir, "/vectors.hex"}, vec, 0, count[0] * WORDS - 1);
    rst = 1'b1;
    {ld_k, ld_gm, ld_pv} = '0;
    k_idx = '0;
    dec = 1'b0;
    rdata = '0;
    os_rdata = '0;
    repeat (2) @(posedge clk);
    #1 rst = 1'b0;
    for (int r = 0; r < count[0]; r++) begin
      // The nine constants (gen.c draws new ones every row), one a cycle as ntpu_vseq loads them.
      for (int i = 0; i < 9; i++) begin
        ld_k = 1'b1;
        k_idx = 4'(i);
        for (int n = 0; n < N; n++) rdata[32*n +: 32] = w(r, n, i);
        @(posedge clk);
        #1;
      end
      ld_k = 1'b0;
      ld_gm = 1'b1;
      for (int n = 0; n < N; n++) begin
        rdata[32*n +: 32] = w(r, n, 9);
        os_rdata[32*n +: 32] = w(r, n, 10);
      end
      @(posedge clk);
      #1 ld_gm = 1'b0;
      ld_pv = 1'b1;
      dec = vec[r * WORDS][0];
      for (int n = 0; n < N; n++) begin
        rdata[32*n +: 32] = w(r, n, 11);
        os_rdata[32*n +: 32] = w(r, n, 12);
      end
      @(posedge clk);
      #1 ld_pv = 1'b0;
      rdata = {N{32'hDEAD_BEEF}};  // loaded once: later changes must not matter
      os_rdata = {N{32'hDEAD_BEEF}};
      cycles = 1;
      while (!fin && cycles < 200) begin
        @(posedge clk);
        #1 cycles++;
      end
      if (cycles != ROW_CYCLES) begin
        errors++;
        if (errors <= 20)
          $display("FAIL ntpu_vadam: row %0d: fin after %0d cycles, not %0d", r, cycles, ROW_CYCLES);
      end
      @(posedge clk);
      #1;
      if (fin) begin
        errors++;
        $display("FAIL ntpu_vadam: row %0d: fin twice", r);
      end
      for (int n = 0; n < N; n++) begin
        if (p_out[32*n +: 32] !== w(r, n, 13) || m_out[32*n +: 32] !== w(r, n, 14) ||
            v_out[32*n +: 32] !== w(r, n, 15)) begin
          errors++;
          if (errors <= 20) begin
            $display("FAIL ntpu_vadam: row %0d lane %0d (dec %0d): p m v = %08h %08h %08h, expected %08h %08h %08h",
                     r, n, dec, p_out[32*n +: 32], m_out[32*n +: 32], v_out[32*n +: 32], w(r, n, 13),
                     w(r, n, 14), w(r, n, 15));
          end
        end
      end
    end
    if (errors != 0) $fatal(1, "FAIL ntpu_vadam: %0d errors in %0d rows", errors, count[0]);
    $display("PASS ntpu_vadam: %0d rows of %0d lanes bit-exact (Adam and AdamW), %0d cycles each", count[0], N,
             ROW_CYCLES);
    $finish;
  end
endmodule

`default_nettype wire
