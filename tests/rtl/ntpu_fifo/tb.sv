// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_fifo (DEPTH 16 and 2, WIDTH 9): random stalls on both sides, phases where the
// consumer stops (the FIFO must take exactly DEPTH + 2 words, then hold s_in_ready low) and where
// both run flat out (one word per cycle). Checks order, no loss or duplication, and the
// valid/ready rules on the output (a raised valid holds its word until taken).
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int W = 9;
  localparam int NDUT = 2;
  localparam int NWORDS = 20000;

  logic clk = 1'b0;
  logic rst = 1'b1;
  always #5 clk = ~clk;

  logic [W-1:0] s_data;
  logic [NDUT-1:0] s_valid, s_ready, m_valid, m_ready;
  logic [NDUT*W-1:0] m_data;

  for (genvar k = 0; k < NDUT; k++) begin : g_dut
    ntpu_fifo #(
      .WIDTH(W),
      .DEPTH(k == 0 ? 16 : 2)
    ) dut (
      .clk        (clk),
      .rst        (rst),
      .s_in_data  (s_data),
      .s_in_valid (s_valid[k]),
      .s_in_ready (s_ready[k]),
      .m_out_data (m_data[W*k +: W]),
      .m_out_valid(m_valid[k]),
      .m_out_ready(m_ready[k])
    );
  end

  int errors = 0;
  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_fifo: %s", msg);
    if (errors > 50) $fatal(1, "FAIL ntpu_fifo: too many errors");
  endtask

  int cur = 0;
  int in_pct = 50, out_pct = 50;
  int n_in = 0, n_out = 0, max_fill = 0, full_cycles = 0;
  logic held = 1'b0;
  logic [W-1:0] held_data;

  // Word i is (i * 37 + k) mod 2^W: loss, duplication and reordering all show.
  function automatic logic [W-1:0] word(input int i);
    return W'(i * 37 + cur);
  endfunction

  always @(posedge clk) begin
    if (!rst) begin
      if (s_valid[cur] && s_ready[cur]) n_in++;
      if (m_valid[cur] && m_ready[cur]) begin
        if (m_data[W*cur +: W] !== word(n_out))
           fail($sformatf("word %0d is %0d, want %0d", n_out, m_data[W*cur +: W], word(n_out)));
        n_out++;
      end
      if (held && !m_valid[cur]) fail("valid fell before the word was taken");
      if (held && m_data[W*cur +: W] !== held_data) fail("data changed while held");
      held = m_valid[cur] && !m_ready[cur];
      held_data = m_data[W*cur +: W];
      if (n_in - n_out > max_fill) max_fill = n_in - n_out;
      if (!s_ready[cur]) full_cycles++;
      // The source keeps a raised valid and its word until the transfer.
      if (!(s_valid[cur] && !s_ready[cur])) begin
        s_valid <= '0;
        if (n_in < NWORDS && ($urandom % 100) < in_pct) begin  // n_in counts this cycle's word
          s_valid[cur] <= 1'b1;
          s_data <= word(n_in);
        end
      end
      m_ready <= '0;
      m_ready[cur] <= ($urandom % 100) < out_pct;
    end
  end

  initial begin
    s_valid = '0;
    m_ready = '0;
    repeat (3) @(posedge clk);
    rst = 1'b0;
    for (int k = 0; k < NDUT; k++) begin
      int depth;
      depth = (k == 0) ? 16 : 2;
      cur = k;
      n_in = 0;
      n_out = 0;
      max_fill = 0;
      // Consumer stopped: exactly depth + 2 words go in.
      in_pct = 100;
      out_pct = 0;
      repeat (40) @(posedge clk);
      if (n_in != depth + 2)
         fail($sformatf("DEPTH %0d took %0d words while blocked, want %0d", depth, n_in, depth + 2));
      // Random stalls, then flat out, then a slow producer.
      out_pct = 50;
      in_pct = 50;
      wait (n_in >= NWORDS / 3);
      in_pct = 100;
      out_pct = 100;
      full_cycles = 0;
      begin
        int t0;
        t0 = n_out;
        repeat (200) @(posedge clk);
        if (n_out - t0 < 195) fail($sformatf("DEPTH %0d: %0d words in 200 cycles flat out", depth, n_out - t0));
      end
      in_pct = 20;
      out_pct = 80;
      wait (n_out == NWORDS);
      repeat (5) @(posedge clk);
      if (n_in != NWORDS || n_out != NWORDS) fail($sformatf("DEPTH %0d: %0d in, %0d out", depth, n_in, n_out));
      if (m_valid[k]) fail("valid with nothing left");
      rst = 1'b1;
      @(posedge clk);
      rst = 1'b0;
    end
    if (errors != 0) $fatal(1, "FAIL ntpu_fifo: %0d errors", errors);
    $display("PASS ntpu_fifo: %0d words through DEPTH 16 and 2 with random stalls, full and flat out", 2 * NWORDS);
    $finish;
  end

endmodule

`default_nettype wire
