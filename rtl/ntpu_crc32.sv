// SPDX-License-Identifier: Apache-2.0
// CRC-32 as zlib's crc32() computes it (reflected polynomial 0xEDB88320, init and final XOR all ones),
// up to BYTES bytes per clock.
//
// Contract: `clear` starts a new CRC (the empty message); a cycle with `en` (and no `clear`) appends
// bytes 0 .. count-1 of `data` (byte 0 first, in data[7:0]; count 1 .. BYTES, read only with `en`).
// `crc` is the zlib value of the bytes appended since the last clear, valid the cycle after the
// last `en` (registered; no combinational path from the inputs). Any number of idle cycles may
// separate bytes. With BYTES = 1 `count` is a single bit that must be 1 with `en`.
`default_nettype none

module ntpu_crc32 #(
  parameter int BYTES = 1,                   // most bytes appended per cycle, 1..64
  parameter int CW = $clog2(BYTES + 1)       // count bits; leave at the default
) (
  input  logic               clk,
  input  logic               rst,
  input  logic               clear,  // restart: the CRC of no bytes
  input  logic               en,     // append `count` bytes of `data`
  input  logic [CW-1:0]      count,
  input  logic [8*BYTES-1:0] data,
  output logic [31:0]        crc     // zlib crc32 of the bytes since the last clear
);

  localparam logic [31:0] POLY = 32'hEDB88320;

  if (BYTES < 1 || BYTES > 64) begin : g_bad_cfg
    initial $fatal(1, "ntpu_crc32: BYTES must be 1..64");
  end

  logic [31:0] state_q;
  logic [31:0] next;

  if (BYTES == 1) begin : g_serial
    // Eight shift-and-conditionally-xor steps: the bit-serial LFSR unrolled over the byte. A plain
    // always block, not a function: Icarus 11 stops updating continuous assignments that read
    // unpacked-array words anywhere in a design that has an automatic function with a for loop.
    logic unused_count;
    assign unused_count = ^count;
    always @* begin
      next = state_q ^ {24'd0, data[7:0]};
      for (int i = 0; i < 8; i++) begin
        next = next[0] ? ((next >> 1) ^ POLY) : (next >> 1);
      end
    end
  end else begin : g_table
    // Wide (simulation): through 256-entry tables, the first `count` bytes: four bytes at a time
    // while four are left ("slicing by four": tbl[k][v] is the CRC register after byte v and k zero
    // bytes), then a byte at a time; many times fewer operations per cycle than the unrolled LFSR,
    // which matters to vsim's speed. Under `if (en)`, so that Verilator skips the lookups on the
    // many cycles no byte moves.
    logic [31:0] tbl [4][256];
    initial begin
      logic [31:0] c;
      for (int v = 0; v < 256; v++) begin
        c = 32'(v);
        for (int i = 0; i < 8; i++) c = c[0] ? ((c >> 1) ^ POLY) : (c >> 1);
        tbl[0][v] = c;
      end
      for (int k = 1; k < 4; k++) begin
        for (int v = 0; v < 256; v++) tbl[k][v] = (tbl[k-1][v] >> 8) ^ tbl[0][tbl[k-1][v][7:0]];
      end
    end
    // (data padded to whole words, so that the word selects below stay inside it)
    localparam int WORDS = (BYTES + 3) / 4;
    logic [32*WORDS-1:0] data_w;
    assign data_w = (32*WORDS)'(data);
    always @* begin
      logic [31:0] x;
      x = '0;
      next = state_q;
      if (en) begin
        for (int b = 0; b < BYTES; b += 4) begin
          if (CW'(b + 4) <= count && b + 4 <= BYTES) begin
            x = next ^ data_w[8*b +: 32];
            next = tbl[3][x[7:0]] ^ tbl[2][x[15:8]] ^ tbl[1][x[23:16]] ^ tbl[0][x[31:24]];
          end else begin
            for (int j = b; j < b + 4 && j < BYTES; j++) begin
              if (CW'(j) < count) next = (next >> 8) ^ tbl[0][next[7:0] ^ data_w[8*j +: 8]];
            end
          end
        end
      end
    end
  end

  always_ff @(posedge clk) begin
    if (rst || clear) begin
      state_q <= '1;
    end else if (en) begin
      state_q <= next;
    end
  end

  assign crc = ~state_q;

endmodule

`default_nettype wire
