// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_crc32: feeds each message of gen.c with random idle cycles between bytes and
// random junk on `data` while `en` is low, and checks the CRC against gen.c's bit-serial C CRC and
// the published check value CRC-32("123456789") = 0xCBF43926. It also checks that `clear` wins over
// a simultaneous `en`.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  logic clk = 1'b0;
  logic rst, clear, en;
  logic [7:0] data;
  logic [31:0] crc;
  int errors = 0;

  always #5 clk = ~clk;

  ntpu_crc32 dut (
    .clk  (clk),
    .rst  (rst),
    .clear(clear),
    .en   (en),
    .count(1'b1),
    .data (data),
    .crc  (crc)
  );

  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_crc32: %s", msg);
  endtask

  initial begin
    string dir;
    int fd, n, nmsg;
    logic [31:0] word, want;
    logic [7:0] msg [0:1023];
    if (!$value$plusargs("dir=%s", dir)) dir = ".";
    fd = $fopen({dir, "/msgs.hex"}, "r");
    if (fd == 0) $fatal(1, "FAIL ntpu_crc32: cannot open %s/msgs.hex", dir);
    rst = 1'b1;
    clear = 1'b0;
    en = 1'b0;
    data = 8'h00;
    repeat (2) @(posedge clk);
    rst <= 1'b0;
    nmsg = 0;
    while ($fscanf(fd, "%h", word) == 1) begin
      n = word;
      for (int i = 0; i < n; i++) begin
        if ($fscanf(fd, "%h", word) != 1) $fatal(1, "FAIL ntpu_crc32: truncated vectors");
        msg[i] = word[7:0];
      end
      if ($fscanf(fd, "%h", want) != 1) $fatal(1, "FAIL ntpu_crc32: truncated vectors");
      // Start: clear, sometimes with en and a junk byte that must not count.
      clear <= 1'b1;
      en <= ($urandom % 2) == 0;
      data <= $urandom;
      @(posedge clk);
      clear <= 1'b0;
      for (int i = 0; i < n; i++) begin
        while ($urandom % 3 == 0) begin
          en <= 1'b0;
          data <= $urandom;
          @(posedge clk);
        end
        en <= 1'b1;
        data <= msg[i];
        @(posedge clk);
      end
      en <= 1'b0;
      data <= $urandom;
      repeat (1 + $urandom % 3) @(posedge clk);
      if (crc !== want) fail($sformatf("message %0d (%0d bytes): crc %08h, want %08h", nmsg, n, crc, want));
      if (nmsg == 0 && crc !== 32'hCBF43926) fail($sformatf("check value %08h", crc));
      nmsg++;
    end
    $fclose(fd);
    if (nmsg < 100) fail($sformatf("only %0d messages read", nmsg));
    if (errors != 0) $fatal(1, "FAIL ntpu_crc32: %0d errors", errors);
    $display("PASS ntpu_crc32: %0d messages", nmsg);
    $finish;
  end
endmodule

`default_nettype wire
