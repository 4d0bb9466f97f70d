// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_link_rx (MAX_PAYLOAD = 100): drives gen.c's byte stream (good, corrupted, bad-LEN
// and truncated frames, junk, resyncs) with random gaps in s_rx_valid, and plays the command
// processor with random delays: checks every frame's status, SEQ and LEN in order, reads each good
// payload back through the read port (in order, then at random offsets), and holds frames for
// random times so both buffers fill and s_rx_ready must fall. Checks the dropped-byte count too.
// LINK_W (a define, 1 by default; ntpu_link_rx_wide sets 4) is LINK_BYTES: the host side then offers
// 1..LINK_W bytes a cycle and every read returns LINK_W bytes, all checked.
`default_nettype none
`timescale 1ns / 1ps

`ifndef LINK_W
`define LINK_W 1
`endif

module tb;
  localparam int W = `LINK_W;
  localparam int MAXP = 100;
  localparam int MAX_STREAM = 1 << 20;
  localparam int OFF_W = $clog2(MAXP);

  logic clk = 1'b0;
  logic rst = 1'b1;
  logic [8*W-1:0] s_rx_data;
  logic [W-1:0] s_rx_valid, s_rx_ready;
  logic m_frm_valid, m_frm_ready;
  logic [7:0] m_frm_seq, m_frm_status;
  logic [15:0] m_frm_len;
  logic frm_re;
  logic [OFF_W-1:0] frm_raddr;
  logic [8*W-1:0] frm_rdata;
  logic drop;

  always #5 clk = ~clk;

  ntpu_link_rx #(
    .MAX_PAYLOAD(MAXP),
    .LINK_BYTES (W)
  ) dut (
    .clk         (clk),
    .rst         (rst),
    .s_rx_data   (s_rx_data),
    .s_rx_valid  (s_rx_valid),
    .s_rx_ready  (s_rx_ready),
    .m_frm_valid (m_frm_valid),
    .m_frm_ready (m_frm_ready),
    .m_frm_seq   (m_frm_seq),
    .m_frm_len   (m_frm_len),
    .m_frm_status(m_frm_status),
    .frm_re      (frm_re),
    .frm_raddr   (frm_raddr),
    .frm_rdata   (frm_rdata),
    .drop        (drop)
  );

  int errors = 0;
  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_link_rx: %s", msg);
    if (errors > 50) $fatal(1, "FAIL ntpu_link_rx: too many errors");
  endtask

  logic [7:0] stream [0:MAX_STREAM-1];
  int nstream, nframes, want_drops;
  int fd_fr;
  int sent = 0, dropped = 0, stall_seen = 0;
  int stall_pct = 30;  // chance of a gap before each byte, varied over the run

  // ---------------------------------------------------------------- host side
  int taken, offer;
  always @(posedge clk) begin
    if (!rst) begin
      taken = 0;
      for (int i = 0; i < W; i++) begin
        if (s_rx_valid[i] && s_rx_ready[i]) taken = i + 1;
        if (i > 0 && s_rx_ready[i] && !s_rx_ready[i-1]) fail("s_rx_ready is not a thermometer code");
      end
      sent = sent + taken;
      if (s_rx_valid[0] && !s_rx_ready[0]) stall_seen = stall_seen + 1;
      if (drop) dropped = dropped + 1;
      // A raised valid holds with its bytes until some move (then the rest is offered again).
      if (!(s_rx_valid[0] && taken == 0)) begin
        offer = 0;
        if (sent < nstream && ($urandom % 100) >= stall_pct) offer = 1 + $urandom % W;
        if (offer > nstream - sent) offer = nstream - sent;
        for (int i = 0; i < W; i++) begin
          s_rx_valid[i] <= (i < offer);
          s_rx_data[8*i +: 8] <= (i < offer) ? stream[sent + i] : 8'($urandom);
        end
      end
    end
  end

  // ---------------------------------------------------------------- consumer side
  logic [7:0] payload [0:MAXP-1];

  // Reads at offset off: W bytes, those inside the payload (len bytes) checked.
  task automatic read_at(input int off, input int len, input int frame_no);
    frm_re <= 1'b1;
    frm_raddr <= OFF_W'(off);
    @(posedge clk);
    frm_re <= 1'b0;
    frm_raddr <= $urandom;
    repeat (1 + (($urandom % 4 == 0) ? $urandom % 3 : 0)) @(posedge clk);
    for (int i = 0; i < W; i++) begin
      if (off + i < len && frm_rdata[8*i +: 8] !== payload[off + i]) begin
        fail($sformatf("frame %0d byte %0d: %02h, want %02h", frame_no, off + i, frm_rdata[8*i +: 8],
                       payload[off + i]));
      end
    end
  endtask

  initial begin
    string dir;
    int fd, k, st, sq, len, w, cycles;
    if (!$value$plusargs("dir=%s", dir)) dir = ".";
    fd = $fopen({dir, "/in.hex"}, "r");
    if (fd == 0) $fatal(1, "FAIL ntpu_link_rx: no %s/in.hex", dir);
    nstream = 0;
    while ($fscanf(fd, "%h", w) == 1) begin
      stream[nstream] = w[7:0];
      nstream++;
    end
    $fclose(fd);
    fd = $fopen({dir, "/drops.hex"}, "r");
    if ($fscanf(fd, "%h %h", want_drops, nframes) != 2) $fatal(1, "FAIL ntpu_link_rx: drops.hex");
    $fclose(fd);
    fd_fr = $fopen({dir, "/frames.hex"}, "r");

    s_rx_valid = '0;
    s_rx_data = '0;
    m_frm_ready = 1'b0;
    frm_re = 1'b0;
    frm_raddr = '0;
    repeat (3) @(posedge clk);
    rst <= 1'b0;

    for (int f = 0; f < nframes; f++) begin
      if ($fscanf(fd_fr, "%h %h %h", st, sq, len) != 3) $fatal(1, "FAIL ntpu_link_rx: frames.hex");
      if (st == 0) begin
        for (int i = 0; i < len; i++) begin
          if ($fscanf(fd_fr, "%h", w) != 1) $fatal(1, "FAIL ntpu_link_rx: frames.hex");
          payload[i] = w[7:0];
        end
      end
      // Vary the link's gaps: bursts with none at all, then choppy stretches.
      if (f % 40 == 0) stall_pct = (f / 40) % 2 == 0 ? 0 : 50;
      cycles = 0;
      do begin
        @(posedge clk);
        cycles++;
        if (cycles > 100000) $fatal(1, "FAIL ntpu_link_rx: frame %0d never came", f);
      end while (!m_frm_valid);
      if (m_frm_status !== 8'(st) || m_frm_seq !== 8'(sq) || m_frm_len !== 16'(len)) begin
        fail($sformatf("frame %0d: status %0d seq %0d len %0d, want %0d %0d %0d", f, m_frm_status,
                       m_frm_seq, m_frm_len, st, sq, len));
      end
      if (st == 0) begin
        for (int i = 0; i < len; i += W) read_at(i, len, f);
        for (int i = 0; i < 3; i++) begin
          k = $urandom % len;
          read_at(k, len, f);
        end
      end
      // Hold some frames long enough for the other buffer to fill behind them.
      if ($urandom % 5 == 0) repeat ($urandom % 300) @(posedge clk);
      if (!m_frm_valid) fail($sformatf("frame %0d: valid fell before release", f));
      m_frm_ready <= 1'b1;
      @(posedge clk);
      m_frm_ready <= 1'b0;
    end
    // Everything sent; no frame may be left over.
    repeat (300) @(posedge clk);
    if (sent != nstream) fail($sformatf("only %0d of %0d bytes taken", sent, nstream));
    if (m_frm_valid) fail("an extra frame came out");
    if (dropped != want_drops) fail($sformatf("dropped %0d bytes, want %0d", dropped, want_drops));
    if (stall_seen == 0) fail("s_rx_ready never fell: backpressure untested");
    if (errors != 0) $fatal(1, "FAIL ntpu_link_rx: %0d errors", errors);
    $display("PASS ntpu_link_rx: LINK_BYTES=%0d, %0d frames, %0d bytes, %0d dropped, %0d stalled cycles", W,
             nframes, nstream, dropped, stall_seen);
    $finish;
  end
endmodule

`default_nettype wire
