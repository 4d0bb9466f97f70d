// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_spi_device in its echo configuration (CORE_EN = 0, 64-byte FIFOs): a controller that does
// what the pico-ice firmware does (select, >= 4 clk cycles, the two header bytes, max(send, recv) bytes,
// mode 0, MSB first) at SCK periods of 4, 4.37 and 6.9 clk cycles with a random phase, sends 6,000 random
// bytes and reads them back. It offers random counts and room, often none and at times none six
// transactions in a row, so both FIFOs fill and the header's flow control is what keeps bytes from being
// lost. Checks every byte in order, that the FPGA never offers more than 64, that the room it offers
// reaches 64, that `error` stays low; then that a transaction cut off
// mid-byte, one with the wrong byte count, and a header over 64 each raise `error`, and that the link
// works again after them.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam real CLK_NS = 10.0;
  localparam int TOTAL = 6000;

  logic clk = 1'b0, rst = 1'b1;
  logic sck = 1'b0, sel_n = 1'b1, mosi = 1'b0;
  logic miso, error;
  always #(CLK_NS / 2) clk = ~clk;

  ntpu_spi_device #(
    .RX_FIFO_DEPTH(64),
    .TX_FIFO_DEPTH(64),
    .CORE_EN      (0),
    .ERR_W        (4)
  ) dut (
    .clk  (clk),
    .rst  (rst),
    .sck  (sck),
    .sel_n(sel_n),
    .mosi (mosi),
    .miso (miso),
    .error(error)
  );

  int errors = 0;
  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_spi_device: %s", msg);
    if (errors > 50) $fatal(1, "FAIL ntpu_spi_device: too many errors");
  endtask

  real half_ns = 2.0 * CLK_NS;  // half an SCK period
  int errs_seen = 0;
  always @(posedge clk) if (error && !rst) errs_seen <= errs_seen + 1;

  // One byte each way, mode 0: MOSI set while SCK is low, MISO sampled at the rising edge.
  task automatic xfer(input logic [7:0] tx, output logic [7:0] rx, input int nbits);
    for (int i = 7; i >= 8 - nbits; i--) begin
      mosi = tx[i];
      #(half_ns);
      sck = 1'b1;
      rx[i] = miso;
      #(half_ns);
      sck = 1'b0;
    end
  endtask

  logic [7:0] sent[TOTAL], got[TOTAL];
  int nsent = 0, ngot = 0, txns = 0, max_room = 0, max_have = 0;

  // What the firmware does; cut >= 0 stops after that many bits of the transaction, extra adds bytes.
  task automatic transaction(input int have, input int room, input int cut, input int extra);
    logic [7:0] fr, fh, r;
    int send, recv, total, bits;
    bits = 0;
    sel_n = 1'b0;
    #($urandom_range(40, 90) * 1.0);
    xfer(8'(have), fr, 8);
    xfer(8'(room), fh, 8);
    if (fr > 64 || fh > 64) fail($sformatf("header {%0d, %0d}: over 64", fr, fh));
    send = have < fr ? have : fr;
    recv = fh < room ? fh : room;
    total = (send > recv ? send : recv) + extra;
    if (have > 64 || room > 64) total = 0;
    bits = 16;
    for (int i = 0; i < total && bits != cut; i++) begin
      if (cut >= 0 && bits + 8 > cut) begin
        xfer(i < send ? sent[nsent + i] : 8'h00, r, cut - bits);
        bits = cut;
      end else begin
        xfer(i < send ? sent[nsent + i] : 8'h00, r, 8);
        bits += 8;
        if (i < recv && cut < 0 && extra == 0) begin
          got[ngot] = r;
          ngot++;
        end
      end
    end
    if (cut < 0 && extra == 0) nsent += send;
    #(half_ns);
    sel_n = 1'b1;
    #($urandom_range(30, 200) * 1.0);
    txns++;
    if (fr > max_room) max_room = fr;
    if (fh > max_have) max_have = fh;
  endtask

  task automatic run(input real period_clks);
    half_ns = period_clks * CLK_NS / 2.0;
    while (ngot < TOTAL) begin
      int have, room;
      have = TOTAL - nsent < 64 ? TOTAL - nsent : 64;
      if ($urandom_range(0, 3) == 0) have = $urandom_range(0, have);
      room = $urandom_range(0, 2) == 0 ? 0 : $urandom_range(1, 64);
      if (txns % 40 >= 34) room = 0;  // six in a row that take nothing: both FIFOs fill up
      transaction(have, room, -1, 0);
      if (txns > 20 * TOTAL) $fatal(1, "FAIL ntpu_spi_device: %0d of %0d bytes back after %0d transactions", ngot,
                                    TOTAL, txns);
    end
    for (int i = 0; i < TOTAL; i++)
      if (got[i] !== sent[i]) fail($sformatf("SCK %0.2f clk: byte %0d: got %02x, sent %02x", period_clks, i,
                                             got[i], sent[i]));
    if (errs_seen != 0) fail($sformatf("SCK %0.2f clk: error raised %0d times", period_clks, errs_seen));
    $display("ok   SCK every %0.2f clk: %0d bytes each way in %0d transactions, in order", period_clks, TOTAL, txns);
  endtask

  real run_periods[3];
  initial begin
    run_periods[0] = 4.0;
    run_periods[1] = 4.37;
    run_periods[2] = 6.9;
    repeat (5) @(posedge clk);
    rst = 1'b0;
    repeat (5) @(posedge clk);
    for (int k = 0; k < 3; k++) begin
      for (int i = 0; i < TOTAL; i++) sent[i] = 8'($urandom);
      nsent = 0;
      ngot = 0;
      txns = 0;
      #($urandom_range(0, 9) * 1.0);
      run(run_periods[k]);
    end
    if (max_room != 64 || max_have == 0) fail($sformatf("the header offered at most room %0d, bytes %0d", max_room,
                                                        max_have));
    // Broken transactions: each must raise error, and the link must still work.
    half_ns = 2.0 * CLK_NS;
    check_error("cut off mid-byte", 16 + 8 * 3 + 5, 0, 0);
    check_error("a byte more than planned", -1, 1, 0);
    check_error("a header count over 64", -1, 0, 1);
    if (errors == 0) $display("PASS ntpu_spi_device");
    $finish;
  end

  task automatic check_error(input string what, input int cut, input int extra, input int big);
    int seen0;
    logic [7:0] b;
    repeat (40) @(posedge clk);
    seen0 = errs_seen;
    for (int i = 0; i < 8; i++) sent[i] = 8'($urandom);
    nsent = 0;
    ngot = 0;
    transaction(big ? 65 : 8, 0, cut, extra);
    repeat (8) @(posedge clk);
    if (errs_seen == seen0) fail({what, ": no error"});
    // Drain whatever the broken transaction left, then a clean round trip.
    repeat (20) @(posedge clk);
    for (int k = 0; k < 4; k++) transaction(0, 64, -1, 0);
    nsent = 0;
    ngot = 0;
    for (int i = 0; i < 8; i++) sent[i] = 8'($urandom);
    b = sent[0];
    transaction(8, 0, -1, 0);
    repeat (20) @(posedge clk);
    while (ngot < 8) transaction(0, 64, -1, 0);
    for (int i = 0; i < 8; i++) if (got[i] !== sent[i]) fail({what, ": the link does not work after it"});
    if (b !== got[0]) fail({what, ": first byte after it"});
    $display("ok   %s: error raised, the link works after it", what);
  endtask
endmodule

`default_nettype wire
