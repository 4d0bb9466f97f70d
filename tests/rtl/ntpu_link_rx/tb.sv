// Bench for ntpu_link_rx (MAX_PAYLOAD = 100): drives gen.c's byte stream (good, corrupted, bad-LEN
// and truncated frames, junk, resyncs) with random gaps in s_rx_valid, and plays the command
// processor with random delays: checks every frame's status, SEQ and LEN in order, reads each good
// payload back through the read port (in order, then at random offsets), and holds frames for
// random times so both buffers fill and s_rx_ready must fall. Checks the dropped-byte count too.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int MAXP = 100;
  localparam int MAX_STREAM = 1 << 20;
  localparam int OFF_W = $clog2(MAXP);

  logic clk = 1'b0;
  logic rst = 1'b1;
  logic [7:0] s_rx_data;
  logic s_rx_valid, s_rx_ready;
  logic m_frm_valid, m_frm_ready;
  logic [7:0] m_frm_seq, m_frm_status;
  logic [15:0] m_frm_len;
  logic frm_re;
  logic [OFF_W-1:0] frm_raddr;
  logic [7:0] frm_rdata;
  logic drop;

  always #5 clk = ~clk;

  ntpu_link_rx #(
    .MAX_PAYLOAD(MAXP)
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
  always @(posedge clk) begin
    if (!rst) begin
      if (s_rx_valid && s_rx_ready) sent = sent + 1;
      if (s_rx_valid && !s_rx_ready) stall_seen = stall_seen + 1;
      if (drop) dropped = dropped + 1;
      // A raised valid holds with its byte until it moves.
      if (!(s_rx_valid && !s_rx_ready)) begin
        if (sent < nstream && ($urandom % 100) >= stall_pct) begin
          s_rx_valid <= 1'b1;
          s_rx_data <= stream[sent];
        end else begin
          s_rx_valid <= 1'b0;
          s_rx_data <= $urandom;
        end
      end
    end
  end

  // ---------------------------------------------------------------- consumer side
  task automatic read_byte(input int off, input logic [7:0] want, input int frame_no);
    frm_re <= 1'b1;
    frm_raddr <= OFF_W'(off);
    @(posedge clk);
    frm_re <= 1'b0;
    frm_raddr <= $urandom;
    repeat (1 + (($urandom % 4 == 0) ? $urandom % 3 : 0)) @(posedge clk);
    if (frm_rdata !== want) begin
      fail($sformatf("frame %0d byte %0d: %02h, want %02h", frame_no, off, frm_rdata, want));
    end
  endtask

  initial begin
    string dir;
    int fd, k, st, sq, len, w, cycles;
    logic [7:0] payload [0:MAXP-1];
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

    s_rx_valid = 1'b0;
    s_rx_data = 8'h00;
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
        for (int i = 0; i < len; i++) read_byte(i, payload[i], f);
        for (int i = 0; i < 3; i++) begin
          k = $urandom % len;
          read_byte(k, payload[k], f);
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
    $display("PASS ntpu_link_rx: %0d frames, %0d bytes, %0d dropped, %0d stalled cycles", nframes,
             nstream, dropped, stall_seen);
    $finish;
  end
endmodule

`default_nettype wire
