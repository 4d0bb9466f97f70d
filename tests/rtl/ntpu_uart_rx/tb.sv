// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_uart_rx at CLKS_PER_BIT = 4, 7 and 16: a bit-level line driver with its own
// (real-valued) bit period sends random bytes with random idle gaps (none, so bytes run back to
// back, up to 3 bit times), at the nominal rate and mismatched by +2 % and -4 %, while the
// consumer stalls at random. Checks every byte in order, that no overrun is reported, that framing
// errors (stop bit 0) drop exactly their byte with one frame_err each, that a break costs one
// frame_err, that glitches shorter than half a bit produce nothing, and that an overrun drops the
// new byte and keeps the offered one. A last run at +9 % must go wrong, to show the checks bite.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int NDUT = 3;
  localparam real CLK_NS = 10.0;
  localparam int QN = 4096;

  logic clk = 1'b0;
  logic rst = 1'b1;
  logic line = 1'b1;

  always #(CLK_NS / 2) clk = ~clk;

  logic [NDUT*8-1:0] d_data;
  logic [NDUT-1:0] d_valid, d_ready, d_ferr, d_ovr;

  for (genvar k = 0; k < NDUT; k++) begin : g_dut
    localparam int C = (k == 0) ? 4 : (k == 1) ? 7 : 16;
    ntpu_uart_rx #(
      .CLKS_PER_BIT(C)
    ) dut (
      .clk       (clk),
      .rst       (rst),
      .rxd       (line),
      .m_rx_data (d_data[8*k +: 8]),
      .m_rx_valid(d_valid[k]),
      .m_rx_ready(d_ready[k]),
      .frame_err (d_ferr[k]),
      .overrun   (d_ovr[k])
    );
  end

  function automatic int clks(input int k);
    return (k == 0) ? 4 : (k == 1) ? 7 : 16;
  endfunction

  int errors = 0;
  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_uart_rx: %s", msg);
    if (errors > 50) $fatal(1, "FAIL ntpu_uart_rx: too many errors");
  endtask

  // ---------------------------------------------------------------- consumer and checks
  int cur = 0;               // the DUT under test; the others see the same line, unchecked
  int ready_pct = 60;        // chance that the consumer takes a byte in a given cycle
  logic [7:0] exp_q [QN];
  int exp_head = 0, exp_tail = 0;
  int got = 0, bad = 0, ferrs = 0, ovrs = 0;
  logic quiet = 1'b0;        // count mismatches without reporting them (the +9 % run)

  always @(posedge clk) begin
    if (!rst) begin
      for (int k = 0; k < NDUT; k++) begin
        if (k == cur) begin
          if (d_ferr[k]) ferrs++;
          if (d_ovr[k]) ovrs++;
          if (d_valid[k] && d_ready[k]) begin
            got++;
            if (exp_head == exp_tail) begin
              bad++;
              if (!quiet) fail($sformatf("C=%0d: unexpected byte %02x", clks(k), d_data[8*k +: 8]));
            end else begin
              if (d_data[8*k +: 8] !== exp_q[exp_head % QN]) begin
                bad++;
                if (!quiet) fail($sformatf("C=%0d: byte %0d is %02x, want %02x", clks(k), got,
                                           d_data[8*k +: 8], exp_q[exp_head % QN]));
              end
              exp_head++;
            end
          end
        end
      end
    end
  end

  // Ready changes only after the edge; a held-back valid must keep its byte.
  logic [7:0] held_data;
  logic held = 1'b0;
  always @(posedge clk) begin
    if (!rst) begin
      if (held && !d_valid[cur]) fail("valid fell before the byte was taken");
      if (held && d_valid[cur] && d_data[8*cur +: 8] !== held_data) fail("data changed while held");
      held = d_valid[cur] && !d_ready[cur];
      held_data = d_data[8*cur +: 8];
    end
    for (int k = 0; k < NDUT; k++) begin
      d_ready[k] <= (k != cur) || (($urandom % 100) < ready_pct);
    end
  end

  // ---------------------------------------------------------------- line driver
  real bit_ns;

  task automatic send(input logic [7:0] b, input logic stop, input real gap_bits);
    line = 1'b0;
    #(bit_ns);
    for (int i = 0; i < 8; i++) begin
      line = b[i];
      #(bit_ns);
    end
    line = stop;
    #(bit_ns);
    line = 1'b1;
    if (gap_bits > 0.0) #(gap_bits * bit_ns);
  endtask

  task automatic expect_byte(input logic [7:0] b);
    exp_q[exp_tail % QN] = b;
    exp_tail++;
  endtask

  task automatic settle(input int k);
    // Long enough for the last byte to be taken at the slowest consumer.
    #(40 * clks(k) * CLK_NS);
  endtask

  // Random bytes, gaps of 0..3 bit times in quarter bits (a third back to back).
  task automatic run_bytes(input int k, input int n, input real rate);
    bit_ns = clks(k) * CLK_NS / rate;
    for (int i = 0; i < n; i++) begin
      logic [7:0] b;
      int g;
      b = $urandom;
      g = $urandom % 3 == 0 ? 0 : $urandom % 13;
      expect_byte(b);
      send(b, 1'b1, g / 4.0);
    end
    settle(k);
  endtask

  task automatic check_counts(input int k, input string what, input int want_ferr, input int want_ovr);
    if (exp_head != exp_tail) fail($sformatf("C=%0d %s: %0d bytes missing", clks(k), what, exp_tail - exp_head));
    if (ferrs != want_ferr) fail($sformatf("C=%0d %s: %0d frame errors, want %0d", clks(k), what, ferrs, want_ferr));
    if (ovrs != want_ovr) fail($sformatf("C=%0d %s: %0d overruns, want %0d", clks(k), what, ovrs, want_ovr));
    exp_head = exp_tail;
    ferrs = 0;
    ovrs = 0;
  endtask

  int total = 0;

  initial begin
    repeat (5) @(posedge clk);
    rst = 1'b0;
    for (int k = 0; k < NDUT; k++) begin
      cur = k;
      ready_pct = 60;
      #(20 * clks(k) * CLK_NS);
      ferrs = 0;
      ovrs = 0;

      run_bytes(k, 300, 1.0);
      check_counts(k, "nominal rate", 0, 0);
      run_bytes(k, 200, 1.02);
      check_counts(k, "sender 2 % fast", 0, 0);
      run_bytes(k, 200, 0.96);
      check_counts(k, "sender 4 % slow", 0, 0);

      // Framing errors: a low stop bit drops its byte; a good byte after a bit of idle is fine.
      bit_ns = clks(k) * CLK_NS;
      for (int i = 0; i < 40; i++) begin
        logic [7:0] b;
        b = $urandom;
        if (i % 3 == 1) begin
          send(b, 1'b0, 1.0);
        end else begin
          expect_byte(b);
          send(b, 1'b1, 0.0);
        end
      end
      settle(k);
      check_counts(k, "framing errors", 13, 0);

      // A break: the line low for 30 bit times costs one frame error and no byte.
      line = 1'b0;
      #(30 * bit_ns);
      line = 1'b1;
      #(2 * bit_ns);
      expect_byte(8'h5A);
      send(8'h5A, 1'b1, 1.0);
      settle(k);
      check_counts(k, "break", 1, 0);

      // Glitches: low pulses shorter than a clock cycle, and one lasting a quarter bit.
      for (int i = 0; i < 20; i++) begin
        line = 1'b0;
        #(CLK_NS * 0.8);
        line = 1'b1;
        #(bit_ns * 2);
      end
      line = 1'b0;
      #((clks(k) / 4) * CLK_NS - 1.0);
      line = 1'b1;
      #(bit_ns * 2);
      expect_byte(8'hC3);
      send(8'hC3, 1'b1, 1.0);
      settle(k);
      check_counts(k, "glitches", 0, 0);

      // Overrun: nobody takes the first byte, so the second is dropped and the first stays.
      ready_pct = 0;
      expect_byte(8'h11);
      send(8'h11, 1'b1, 0.0);
      send(8'h22, 1'b1, 0.0);
      #(bit_ns * 2);
      ready_pct = 60;
      settle(k);
      check_counts(k, "overrun", 0, 1);
      run_bytes(k, 30, 1.0);
      check_counts(k, "after the overrun", 0, 0);

      // Far outside the tolerance the bytes must come out wrong (the checks can fail).
      quiet = 1'b1;
      bad = 0;
      run_bytes(k, 50, 1.09);
      if (bad == 0 && ferrs == 0) fail($sformatf("C=%0d: a sender 9 %% fast went unnoticed", clks(k)));
      quiet = 1'b0;
      line = 1'b1;
      #(20 * bit_ns);
      exp_head = exp_tail;
      ferrs = 0;
      ovrs = 0;
      total += got;
      got = 0;
    end
    if (errors != 0) $fatal(1, "FAIL ntpu_uart_rx: %0d errors", errors);
    $display("PASS ntpu_uart_rx: %0d bytes at CLKS_PER_BIT 4, 7, 16, rates -4 %% .. +2 %%, %s", total,
              "framing errors, break, glitches, overrun");
    $finish;
  end

endmodule

`default_nettype wire
