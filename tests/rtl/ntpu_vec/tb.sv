// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_vec at N = 8 and N = 3 (instances side by side): gen.c's operations (ACT in every
// flag combination, RELU_GRAD, COLSUM with 0 rows and more, void beats, special values) go in with
// random gaps and the results come out with random stalls, in phases from none to heavy. Every
// result row must equal the golden numerics bit for bit; m_out_valid/m_out_data must hold while
// stalled; busy must fall after each operation; in the phases without stalls the input must never
// wait (one row per cycle).
`default_nettype none
`timescale 1ns / 1ps

module tb_vec_run #(
  parameter int N = 8
) (
  input  logic clk,
  input  logic rst,
  output logic done,
  output int   errors,
  output int   free_waits,  // input waits in the phases without stalls
  output int   results
);
  localparam int W = N * 32;
  localparam int MAX_WORDS = 1 << 16;
  localparam int PHASE = 25;  // operations per phase

  logic [1:0]   op, out;
  logic         bias, relu, accumulate;
  logic [W-1:0] aux0, mult, shift;
  logic         s_in_valid, s_in_ready, s_in_last, s_in_void;
  logic [W-1:0] s_in_acc;
  logic [N*16-1:0] s_in_mask;
  logic         m_out_valid, m_out_ready;
  logic [W-1:0] m_out_data;
  logic         busy;

  ntpu_vec #(
    .N(N)
  ) dut (
    .clk        (clk),
    .rst        (rst),
    .op         (op),
    .bias       (bias),
    .relu       (relu),
    .out        (out),
    .accumulate (accumulate),
    .aux0       (aux0),
    .mult       (mult),
    .shift      (shift),
    .s_in_valid (s_in_valid),
    .s_in_ready (s_in_ready),
    .s_in_acc   (s_in_acc),
    .s_in_mask  (s_in_mask),
    .s_in_last  (s_in_last),
    .s_in_void  (s_in_void),
    .m_out_valid(m_out_valid),
    .m_out_ready(m_out_ready),
    .m_out_data (m_out_data),
    .busy       (busy)
  );

  logic [W-1:0] ops [0:MAX_WORDS-1];
  logic [W-1:0] want [0:MAX_WORDS-1];
  logic [31:0]  count [0:2];
  int phase;        // of the operation being sent
  int got;
  logic was_stalled;
  logic [W-1:0] stalled_data;

  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_vec N=%0d: %s", N, msg);
  endtask

  // ---------------------------------------------------------------- sink
  always @(posedge clk) begin
    if (rst) begin
      m_out_ready <= 1'b0;
      was_stalled <= 1'b0;
    end else begin
      if (was_stalled && (!m_out_valid || m_out_data !== stalled_data)) begin
        fail("m_out_valid/m_out_data changed while stalled");
      end
      was_stalled <= m_out_valid && !m_out_ready;
      stalled_data <= m_out_data;
      if (m_out_valid && m_out_ready) begin
        if (got >= count[2]) fail("extra result");
        else if (m_out_data !== want[got]) begin
          fail($sformatf("result %0d: %h, want %h", got, m_out_data, want[got]));
        end
        got <= got + 1;
      end
      if (phase == 0 && s_in_valid && !s_in_ready) free_waits <= free_waits + 1;
      m_out_ready <= ($urandom % 100) < ((phase == 2) ? 50 : (phase == 3) ? 20 : 100);
    end
  end

  // ---------------------------------------------------------------- source
  initial begin
    string dir;
    int nops, w, beats, waited;
    logic [W-1:0] hdr, mw;
    errors = 0;
    free_waits = 0;
    got = 0;
    done = 1'b0;
    phase = 0;
    s_in_valid = 1'b0;
    if (!$value$plusargs("dir=%s", dir)) $fatal(1, "FAIL ntpu_vec: no +dir=DIR");
    $readmemh($sformatf("%s/n%0d_count.hex", dir, N), count);
    nops = count[0];
    if (nops == 0 || count[1] > MAX_WORDS || count[2] > MAX_WORDS) $fatal(1, "FAIL ntpu_vec: counts");
    $readmemh($sformatf("%s/n%0d_ops.hex", dir, N), ops, 0, count[1] - 1);
    $readmemh($sformatf("%s/n%0d_exp.hex", dir, N), want, 0, count[2] - 1);
    @(negedge rst);
    @(posedge clk);
    w = 0;
    for (int k = 0; k < nops; k++) begin
      hdr = ops[w];
      beats = int'(hdr[31:16]);
      // Operation inputs change only while the unit is empty; garbage in between.
      op <= hdr[1:0];
      bias <= hdr[8];
      relu <= hdr[9];
      out <= hdr[11:10];
      accumulate <= hdr[8];
      aux0 <= ops[w + 1];
      mult <= ops[w + 2];
      shift <= ops[w + 3];
      w = w + 4;
      phase = (k / PHASE) % 4;
      for (int b = 0; b < beats; b++) begin
        while (($urandom % 100) < ((phase == 1) ? 40 : (phase == 3) ? 70 : 0)) begin
          s_in_valid <= 1'b0;
          s_in_acc <= {N{$urandom}};
          @(posedge clk);
        end
        mw = ops[w + 1];
        s_in_valid <= 1'b1;
        s_in_acc <= ops[w];
        s_in_mask <= mw[N*16-1:0];
        s_in_void <= mw[N*16];
        s_in_last <= mw[N*16+1];
        w = w + 2;
        do @(posedge clk); while (!s_in_ready);
      end
      s_in_valid <= 1'b0;
      s_in_acc <= 'x;
      s_in_last <= 1'bx;
      // Wait for the unit to empty (its last beat went in at this edge), then allow a bounded
      // time for busy to fall.
      waited = 0;
      do begin
        @(posedge clk);
        waited++;
      end while (busy && waited < 100000);
      if (busy) fail($sformatf("busy after operation %0d", k));
      op <= 2'($urandom);
      aux0 <= {N{$urandom}};
    end
    repeat (10) @(posedge clk);
    if (got != count[2]) fail($sformatf("%0d of %0d results came out", got, count[2]));
    if (w != count[1]) fail("ops.hex misread");
    results = got;
    done = 1'b1;
  end
endmodule

module tb;
  logic clk = 1'b0;
  logic rst = 1'b1;
  logic done8, done3;
  int err8, err3, waits8, waits3, res8, res3;

  always #5 clk = ~clk;

  tb_vec_run #(.N(8)) u_n8 (.clk(clk), .rst(rst), .done(done8), .errors(err8), .free_waits(waits8),
                            .results(res8));
  tb_vec_run #(.N(3)) u_n3 (.clk(clk), .rst(rst), .done(done3), .errors(err3), .free_waits(waits3),
                            .results(res3));

  initial begin
    int cycles;
    repeat (3) @(posedge clk);
    rst <= 1'b0;
    cycles = 0;
    while (!(done8 && done3) && cycles < 400000) begin
      @(posedge clk);
      cycles++;
    end
    if (!(done8 && done3)) $fatal(1, "FAIL ntpu_vec: timeout");
    if (waits8 + waits3 != 0) begin
      $fatal(1, "FAIL ntpu_vec: input waited without stalls (%0d/%0d cycles)", waits8, waits3);
    end
    if (err8 + err3 != 0) $fatal(1, "FAIL ntpu_vec: %0d errors", err8 + err3);
    $display("PASS ntpu_vec: N=8 and N=3, %0d and %0d result rows bit-exact, random stalls, %0d cycles",
             res8, res3, cycles);
    $finish;
  end
endmodule

`default_nettype wire
