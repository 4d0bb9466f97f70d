// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_uart_tx at CLKS_PER_BIT = 4 and 13: random bytes offered with random gaps (often
// none, so bytes must leave back to back). A cycle-exact line monitor checks the idle level, every
// bit's value and length (start 0, 8 data bits LSB first, stop 1), that the start bit follows the
// taken byte by one cycle, and that held-back bytes leave with no idle time between them. The line
// also feeds ntpu_uart_rx, which must read the same bytes (loopback with random consumer stalls).
// Checks valid/ready: a byte moves only with ready, once.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int NDUT = 2;
  localparam int QN = 4096;
  localparam int NBYTES = 600;

  logic clk = 1'b0;
  logic rst = 1'b1;
  always #5 clk = ~clk;

  logic [7:0] s_data;
  logic s_valid = 1'b0;
  logic [NDUT-1:0] t_ready, t_txd;
  logic [NDUT*8-1:0] r_data;
  logic [NDUT-1:0] r_valid, r_ready, r_ferr, r_ovr;
  int cur = 0;

  for (genvar k = 0; k < NDUT; k++) begin : g_dut
    localparam int C = (k == 0) ? 4 : 13;
    ntpu_uart_tx #(
      .CLKS_PER_BIT(C)
    ) dut (
      .clk       (clk),
      .rst       (rst),
      .s_tx_data (s_data),
      .s_tx_valid(s_valid && cur == k),
      .s_tx_ready(t_ready[k]),
      .txd       (t_txd[k])
    );
    ntpu_uart_rx #(
      .CLKS_PER_BIT(C)
    ) rx (
      .clk       (clk),
      .rst       (rst),
      .rxd       (t_txd[k]),
      .m_rx_data (r_data[8*k +: 8]),
      .m_rx_valid(r_valid[k]),
      .m_rx_ready(r_ready[k]),
      .frame_err (r_ferr[k]),
      .overrun   (r_ovr[k])
    );
  end

  function automatic int clks(input int k);
    return (k == 0) ? 4 : 13;
  endfunction

  int errors = 0;
  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_uart_tx: %s", msg);
    if (errors > 50) $fatal(1, "FAIL ntpu_uart_tx: too many errors");
  endtask

  // Bytes taken by the transmitter: the monitor and the loopback receiver each consume them.
  logic [7:0] sent_q [QN];
  int n_sent = 0, mon_idx = 0, rx_idx = 0;
  int stall_pct = 97;  // chance of not offering a byte in a cycle
  int gapless = 0;  // bytes that followed their predecessor with no idle cycle

  // ---------------------------------------------------------------- source
  always @(posedge clk) begin
    if (!rst) begin
      if (s_valid && t_ready[cur]) begin
        sent_q[n_sent % QN] = s_data;
        n_sent++;
      end
      if (!(s_valid && !t_ready[cur])) begin
        if (n_sent + (s_valid && t_ready[cur]) < NBYTES * (cur + 1) && ($urandom % 100) >= stall_pct) begin
          s_valid <= 1'b1;
          s_data <= $urandom;
        end else begin
          s_valid <= 1'b0;
          s_data <= 8'hxx;
        end
      end
    end
  end

  // ---------------------------------------------------------------- line monitor (cycle-exact)
  int pos = -1;      // -1 idle, else cycles since the start bit began
  int idle_run = 0;  // idle cycles before the current start bit
  logic took_q = 1'b0;

  always @(posedge clk) begin
    if (!rst) begin
      logic l;
      int c, b;
      c = clks(cur);
      l = t_txd[cur];
      if (pos < 0) begin
        if (l === 1'b0) begin
          if (!took_q) fail("start bit without a byte taken the cycle before");
          if (idle_run == 0 && mon_idx > 0) gapless++;
          pos = 0;
        end else if (l !== 1'b1) begin
          fail("line not 1 while idle");
        end else begin
          if (took_q) fail("byte taken but no start bit in the next cycle");
          idle_run++;
        end
      end
      if (pos >= 0) begin
        logic want;
        b = pos / c;
        if (b == 0) want = 1'b0;
        else if (b <= 8) want = sent_q[mon_idx % QN][b-1];
        else want = 1'b1;
        if (l !== want) fail($sformatf("C=%0d byte %0d: bit %0d is %b, want %b", c, mon_idx, b, l, want));
        pos++;
        if (pos == 10 * c) begin
          pos = -1;
          idle_run = 0;
          mon_idx++;
        end
      end
      took_q = s_valid && t_ready[cur];
      if (took_q && pos >= 0 && pos != 10 * c - 1) fail("byte taken in the middle of a byte");
    end
  end

  // ---------------------------------------------------------------- loopback receiver
  always @(posedge clk) begin
    if (!rst) begin
      if (r_ferr[cur]) fail("loopback: framing error");
      if (r_ovr[cur]) fail("loopback: overrun");
      if (r_valid[cur] && r_ready[cur]) begin
        if (r_data[8*cur +: 8] !== sent_q[rx_idx % QN])
          fail($sformatf("loopback byte %0d is %02x, want %02x", rx_idx, r_data[8*cur +: 8], sent_q[rx_idx % QN]));
        rx_idx++;
      end
    end
    for (int k = 0; k < NDUT; k++) r_ready[k] <= ($urandom % 100) < 70;
  end

  initial begin
    repeat (4) @(posedge clk);
    rst = 1'b0;
    for (int k = 0; k < NDUT; k++) begin
      cur = k;
      stall_pct = 97;  // first half: mostly idle time between bytes
      wait (n_sent >= NBYTES * k + NBYTES / 2);
      stall_pct = 0;  // the rest offered back to back
      wait (n_sent == NBYTES * (k + 1));
      repeat (12 * clks(k) + 10) @(posedge clk);
      if (mon_idx != n_sent) fail($sformatf("C=%0d: %0d bytes on the line, %0d taken", clks(k), mon_idx, n_sent));
      if (rx_idx != n_sent) fail($sformatf("C=%0d: loopback read %0d of %0d", clks(k), rx_idx, n_sent));
    end
    if (gapless < NBYTES / 2 || 2 * NBYTES - gapless < 50)
       fail($sformatf("%0d bytes left back to back: the stalls do not mix", gapless));
    if (errors != 0) $fatal(1, "FAIL ntpu_uart_tx: %0d errors", errors);
    $display("PASS ntpu_uart_tx: %0d bytes at CLKS_PER_BIT 4 and 13, %0d back to back, %s", n_sent, gapless,
              "loopback through ntpu_uart_rx");
    $finish;
  end

endmodule

`default_nettype wire
