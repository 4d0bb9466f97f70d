// CRC-32 as zlib's crc32() computes it (reflected polynomial 0xEDB88320, init and final XOR all ones),
// one byte per clock.
//
// Contract: `clear` starts a new CRC (the empty message); a cycle with `en` (and no `clear`) appends
// `data`. `crc` is the zlib value of the bytes appended since the last clear, valid the cycle after
// the last `en` (registered; no combinational path from the inputs). Any number of idle cycles may
// separate bytes.
`default_nettype none

module ntpu_crc32 (
  input  logic        clk,
  input  logic        rst,
  input  logic        clear,  // restart: the CRC of no bytes
  input  logic        en,     // append `data`
  input  logic [7:0]  data,
  output logic [31:0] crc     // zlib crc32 of the bytes since the last clear
);

  localparam logic [31:0] POLY = 32'hEDB88320;

  logic [31:0] state_q;

  // Eight shift-and-conditionally-xor steps: the bit-serial LFSR unrolled over a byte.
  // Static, not automatic: Icarus 11 stops updating continuous assignments that read unpacked-array
  // words (the array's skew registers, for one) anywhere in a design that has an automatic function
  // with a for loop. It is called from one process only, so static is safe.
  function logic [31:0] crc_byte(input logic [31:0] c_in, input logic [7:0] d);
    logic [31:0] c;
    c = c_in ^ {24'd0, d};
    for (int i = 0; i < 8; i++) begin
      c = c[0] ? ((c >> 1) ^ POLY) : (c >> 1);
    end
    return c;
  endfunction

  always_ff @(posedge clk) begin
    if (rst || clear) begin
      state_q <= '1;
    end else if (en) begin
      state_q <= crc_byte(state_q, data);
    end
  end

  assign crc = ~state_q;

endmodule

`default_nettype wire
