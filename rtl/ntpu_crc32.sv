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
    // Wide (simulation): a byte at a time through a 256-entry table, the first `count` bytes;
    // eight times fewer operations per cycle than the unrolled LFSR, which matters to vsim's speed.
    // Under `if (en)`, so that Verilator skips the lookups on the many cycles no byte moves.
    logic [31:0] tbl [256];
    initial begin
      logic [31:0] c;
      for (int v = 0; v < 256; v++) begin
        c = 32'(v);
        for (int i = 0; i < 8; i++) c = c[0] ? ((c >> 1) ^ POLY) : (c >> 1);
        tbl[v] = c;
      end
    end
    always @* begin
      next = state_q;
      if (en) begin
        for (int b = 0; b < BYTES; b++) begin
          if (CW'(b) < count) next = (next >> 8) ^ tbl[next[7:0] ^ data[8*b +: 8]];
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
