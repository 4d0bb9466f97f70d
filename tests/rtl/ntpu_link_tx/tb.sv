// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_link_tx: offers gen.c's replies (headers and body bytes, each with random delays,
// the next header often while the previous reply is still going out) and takes the output with
// random m_tx_ready, in phases from no stalls to heavy ones. Checks the byte stream against gen.c,
// that m_tx_valid and m_tx_data hold while stalled, and that s_body_ready only takes the bytes a
// reply has.
// LINK_W (a define, 1 by default; ntpu_link_tx_wide sets 4) is LINK_BYTES: the producer then offers
// 1..LINK_W body bytes per transfer and every output byte of a beat is checked.
`default_nettype none
`timescale 1ns / 1ps

`ifndef LINK_W
`define LINK_W 1
`endif

module tb;
  localparam int W = `LINK_W;
  localparam int MAX_OUT = 1 << 20;

  logic clk = 1'b0;
  logic rst = 1'b1;
  logic s_hdr_valid, s_hdr_ready;
  logic [7:0] s_hdr_seq, s_hdr_status;
  logic [15:0] s_hdr_len;
  logic [8*W-1:0] s_body_data;
  logic [W-1:0] s_body_valid;
  logic s_body_ready;
  logic [8*W-1:0] m_tx_data;
  logic [W-1:0] m_tx_valid;
  logic m_tx_ready;

  always #5 clk = ~clk;

  ntpu_link_tx #(
    .LINK_BYTES(W)
  ) dut (
    .clk         (clk),
    .rst         (rst),
    .s_hdr_valid (s_hdr_valid),
    .s_hdr_ready (s_hdr_ready),
    .s_hdr_seq   (s_hdr_seq),
    .s_hdr_len   (s_hdr_len),
    .s_hdr_status(s_hdr_status),
    .s_body_data (s_body_data),
    .s_body_valid(s_body_valid),
    .s_body_ready(s_body_ready),
    .m_tx_data   (m_tx_data),
    .m_tx_valid  (m_tx_valid),
    .m_tx_ready  (m_tx_ready)
  );

  int errors = 0;
  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_link_tx: %s", msg);
    if (errors > 50) $fatal(1, "FAIL ntpu_link_tx: too many errors");
  endtask

  logic [7:0] want [0:MAX_OUT-1];
  int nrep, nout, got = 0;
  int ready_pct = 100;   // chance that the host takes a byte, varied by the producer
  int src_gap_pct = 0;   // chance of a gap before each header and body byte
  logic was_stalled = 1'b0;
  logic [8*W-1:0] stalled_data;
  logic [W-1:0] stalled_valid;

  // ---------------------------------------------------------------- host side
  always @(posedge clk) begin
    if (!rst) begin
      if (was_stalled && (m_tx_valid !== stalled_valid || m_tx_data !== stalled_data)) begin
        fail("m_tx_valid/m_tx_data changed while stalled");
      end
      was_stalled <= m_tx_valid[0] && !m_tx_ready;
      stalled_data <= m_tx_data;
      stalled_valid <= m_tx_valid;
      for (int i = 1; i < W; i++) begin
        if (m_tx_valid[i] && !m_tx_valid[i-1]) fail("m_tx_valid is not a thermometer code");
      end
      for (int i = 0; i < W; i++) begin
        if (m_tx_valid[i] && m_tx_ready) begin
          if (got >= nout) fail("extra byte");
          else if (m_tx_data[8*i +: 8] !== want[got]) begin
            fail($sformatf("byte %0d: %02h, want %02h", got, m_tx_data[8*i +: 8], want[got]));
          end
          got = got + 1;
        end
      end
      m_tx_ready <= ($urandom % 100) < ready_pct;
    end
  end

  // ---------------------------------------------------------------- replies in
  initial begin
    string dir;
    int fd, fr, w, sq, len, st, k;
    logic taken;
    logic [7:0] body [0:65535];
    if (!$value$plusargs("dir=%s", dir)) dir = ".";
    fd = $fopen({dir, "/counts.hex"}, "r");
    if (fd == 0 || $fscanf(fd, "%h %h", nrep, nout) != 2) $fatal(1, "FAIL ntpu_link_tx: counts.hex");
    $fclose(fd);
    fd = $fopen({dir, "/out.hex"}, "r");
    for (int i = 0; i < nout; i++) begin
      if ($fscanf(fd, "%h", w) != 1) $fatal(1, "FAIL ntpu_link_tx: out.hex");
      want[i] = w[7:0];
    end
    $fclose(fd);
    fr = $fopen({dir, "/replies.hex"}, "r");

    // The producer changes its inputs at falling edges and reads s_hdr_ready / s_body_ready there:
    // neither depends on this side's inputs, so the value read holds through the next rising edge,
    // which is the edge that takes the transfer. Sampling after a rising edge instead would race
    // the design's registers (Verilator's --timing resumes such waits after they have updated).
    s_hdr_valid = 1'b0;
    s_body_valid = '0;
    m_tx_ready = 1'b1;
    repeat (3) @(negedge clk);
    rst = 1'b0;
    @(negedge clk);
    for (int r = 0; r < nrep; r++) begin
      if ($fscanf(fr, "%h %h %h", sq, len, st) != 3) $fatal(1, "FAIL ntpu_link_tx: replies.hex");
      // Phases: full speed, host stalls, source gaps, both.
      if (r % 50 == 0) begin
        ready_pct = ((r / 50) % 2 == 0) ? 100 : 40;
        src_gap_pct = ((r / 100) % 2 == 0) ? 0 : 40;
      end
      while (($urandom % 100) < src_gap_pct) @(negedge clk);
      s_hdr_valid = 1'b1;
      s_hdr_seq = 8'(sq);
      s_hdr_len = 16'(len);
      s_hdr_status = 8'(st);
      do begin taken = s_hdr_ready; @(negedge clk); end while (!taken);
      s_hdr_valid = 1'b0;
      s_hdr_seq = $urandom;
      for (int i = 1; i < len; i++) begin
        if ($fscanf(fr, "%h", w) != 1) $fatal(1, "FAIL ntpu_link_tx: replies.hex");
        body[i] = w[7:0];
      end
      for (int i = 1; i < len; i += k) begin
        while (($urandom % 100) < src_gap_pct) begin
          s_body_valid = '0;
          @(negedge clk);
        end
        k = 1 + $urandom % W;
        if (k > len - i) k = len - i;
        for (int j = 0; j < W; j++) begin
          s_body_valid[j] = (j < k);
          s_body_data[8*j +: 8] = (j < k) ? body[i + j] : 8'($urandom);
        end
        do begin taken = s_body_ready; @(negedge clk); end while (!taken);
      end
      s_body_valid = '0;
    end
    // A stray body byte must not be taken once every reply is complete.
    s_body_valid = '1;
    s_body_data = '1;
    ready_pct = 100;
    for (int c = 0; c < 3 * nout / nrep + 200 && got != nout; c++) begin
      if (s_body_ready) fail("s_body_ready outside a body");
      @(negedge clk);
    end
    repeat (20) @(posedge clk);
    if (got != nout) fail($sformatf("%0d of %0d bytes came out", got, nout));
    if (errors != 0) $fatal(1, "FAIL ntpu_link_tx: %0d errors", errors);
    $display("PASS ntpu_link_tx: LINK_BYTES=%0d, %0d replies, %0d bytes", W, nrep, nout);
    $finish;
  end
endmodule

`default_nettype wire
