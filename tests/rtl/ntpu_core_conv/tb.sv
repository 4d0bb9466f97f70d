// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_core with CONV_EN = POOL_EN = 1 (protocol 1.5) and program memory on a byte-wide link
// (LINK_BYTES = 1, PM_ROWS = 24, N = 4): gen.c's frames (MATMUL CONV, CONV_T, CONV with TRANSPOSE_A,
// POOL, their errors, the same commands inside programs, memories read back) go into s_rx with random gaps while
// m_tx_ready stalls at random; every reply byte must be the golden model's.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int MAX_BYTES = 1 << 20;
  localparam int QUIET_LIMIT = 20000;  // cycles without a byte moving before calling it a hang

  logic clk = 1'b0;
  always #5 clk = ~clk;
  logic rst = 1'b1;
  logic [7:0] s_rx_data;
  logic s_rx_valid, s_rx_ready;
  logic [7:0] m_tx_data;
  logic m_tx_valid, m_tx_ready;

  ntpu_core #(
    .N          (4),
    .UB_ROWS    (96),
    .WB_ROWS    (20),
    .ACC_ROWS   (64),
    .MAX_PAYLOAD(201),
    .LINK_BYTES (1),
    .PM_ROWS    (24),
    .CONV_EN    (1),
    .POOL_EN    (1)
  ) dut (
    .clk       (clk),
    .rst       (rst),
    .s_rx_data (s_rx_data),
    .s_rx_valid(s_rx_valid),
    .s_rx_ready(s_rx_ready),
    .m_tx_data (m_tx_data),
    .m_tx_valid(m_tx_valid),
    .m_tx_ready(m_tx_ready)
  );

  logic [7:0] in_bytes [0:MAX_BYTES-1];
  logic [8:0] want [0:MAX_BYTES-1];  // {care, byte}
  int nin = 0, nout = 0, nrep = 0, errors = 0;
  int sent = 0, got = 0, quiet = 0, cycles = 0, runs = 0, inner = 0;
  int rx_gap_pct = 0, tx_stall_pct = 0;
  int conv_rows = 0, conv_blocks = 0, pools = 0;

  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_core_conv: %s", msg);
    if (errors > 50) $fatal(1, "FAIL ntpu_core_conv: too many errors");
  endtask

  always @(posedge clk) begin
    if (!rst) begin
      cycles = cycles + 1;
      quiet = quiet + 1;
      // coverage: commands taken from PM (S_PLEN with a LEN complete)
      if (dut.u_cmd.g_pm.u_fetch.pl_got) inner++;
      if (dut.u_seq.mm_issue && dut.u_seq.mm_cv_q) conv_rows++;
      if (dut.u_seq.fd_blk_end && dut.u_seq.fd_cv_q) conv_blocks++;
      if (dut.g_vec.g_pool.u_vpool.start) pools++;
      if (s_rx_valid && s_rx_ready) begin
        sent = sent + 1;
        quiet = 0;
      end
      if (!(s_rx_valid && !s_rx_ready)) begin
        if (sent < nin && ($urandom % 100) >= rx_gap_pct) begin
          s_rx_valid <= 1'b1;
          s_rx_data <= in_bytes[sent];
        end else begin
          s_rx_valid <= 1'b0;
          s_rx_data <= $urandom;
        end
      end
      if (m_tx_valid && m_tx_ready) begin
        quiet = 0;
        if (got >= nout) fail($sformatf("extra reply byte %02h", m_tx_data));
        else if (m_tx_data !== want[got][7:0]) begin
          fail($sformatf("reply byte %0d: %02h, want %02h", got, m_tx_data, want[got][7:0]));
        end
        got = got + 1;
      end
      m_tx_ready <= ($urandom % 100) >= tx_stall_pct;
      if (cycles % 3000 == 0) begin
        case ((cycles / 3000) % 4)
          0: begin rx_gap_pct = 0;  tx_stall_pct = 0;  end
          1: begin rx_gap_pct = 50; tx_stall_pct = 20; end
          2: begin rx_gap_pct = 0;  tx_stall_pct = 90; end
          default: begin rx_gap_pct = 80; tx_stall_pct = 0; end
        endcase
      end
    end
  end

  initial begin
    string dir;
    int fd, w;
    if (!$value$plusargs("dir=%s", dir)) dir = ".";
    fd = $fopen({dir, "/counts.hex"}, "r");
    if (fd == 0 || $fscanf(fd, "%h %h %h", nin, nout, nrep) != 3) $fatal(1, "FAIL ntpu_core_conv: counts.hex");
    $fclose(fd);
    fd = $fopen({dir, "/in.hex"}, "r");
    for (int i = 0; i < nin; i++) begin
      if ($fscanf(fd, "%h", w) != 1) $fatal(1, "FAIL ntpu_core_conv: in.hex");
      in_bytes[i] = w[7:0];
    end
    $fclose(fd);
    fd = $fopen({dir, "/exp.hex"}, "r");
    for (int i = 0; i < nout; i++) begin
      if ($fscanf(fd, "%h", w) != 1) $fatal(1, "FAIL ntpu_core_conv: exp.hex");
      want[i] = w[8:0];
    end
    $fclose(fd);
    s_rx_valid = 1'b0;
    s_rx_data = 8'h00;
    m_tx_ready = 1'b0;
    repeat (3) @(posedge clk);
    rst <= 1'b0;
    while (got < nout && quiet < QUIET_LIMIT) @(posedge clk);
    repeat (200) @(posedge clk);
    if (got != nout || sent != nin) fail($sformatf("hang: %0d of %0d bytes in, %0d of %0d out", sent, nin, got, nout));
    if (conv_rows < 500 || conv_blocks < 50 || pools < 20)
      fail($sformatf("only %0d CONV rows, %0d CONV blocks, %0d POOLs", conv_rows, conv_blocks, pools));
    if (inner < 100) fail($sformatf("only %0d commands came from PM", inner));
    $display("ntpu_core_conv: %0d bytes in, %0d replies (%0d bytes), %0d cycles, %0d commands from PM; %0d errors",
             sent, nrep, got, cycles, inner, errors);
    if (errors == 0) $display("PASS ntpu_core_conv: CONV_EN = POOL_EN = 1, every reply byte the golden model's");
    $finish;
  end
endmodule

`default_nettype wire
