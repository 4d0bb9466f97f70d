// SPDX-License-Identifier: Apache-2.0
// iCE40UP5K version of rtl/ntpu_ram.sv: same ports, same contract, mapped by size.
//
// - DEPTH >= 8192 and WIDTH >= 16: single-port SPRAM (SB_SPRAM256KA, 16384 x 16 each; WIDTH/16
//   side by side, DEPTH/16384 banks deep, at most the part's four). SPRAM has one address, so a
//   cycle may read or write, not both: an instance here must never see `we` and `re` together
//   (the core's weight buffer does not: only the sequencer reads it and it is written only while
//   the sequencer is idle). Simulation stops on a violation.
//   SPRAM cannot be initialized by the bitstream, so the wrapper writes zeros to every word in
//   its first 16384 cycles after configuration, as the generic model's zero contents require;
//   the board top holds the core in reset for longer than that.
// - Otherwise: the generic model's code, which Yosys maps to EBR (SB_RAM40_4K, 1R1W, zeroed by
//   the bitstream).
`default_nettype none

module ntpu_ram #(
  parameter int WIDTH = 8,    // bits per word
  parameter int DEPTH = 256,  // words
  parameter int ADDR_W = (DEPTH > 1) ? $clog2(DEPTH) : 1  // address bits; leave at the default
) (
  input  logic              clk,
  input  logic              we,
  input  logic [ADDR_W-1:0] waddr,
  input  logic [WIDTH-1:0]  wdata,
  input  logic              re,
  input  logic [ADDR_W-1:0] raddr,
  output logic [WIDTH-1:0]  rdata
);

  localparam bit USE_SPRAM = (DEPTH >= 8192) && (WIDTH >= 16);
  localparam int SLICES = (WIDTH + 15) / 16;       // SPRAM blocks side by side
  localparam int BANKS = (DEPTH + 16383) / 16384;  // ... and deep

  if (USE_SPRAM && SLICES * BANKS > 4) begin : g_too_big
    initial $fatal(1, "ntpu_ram (iCE40): needs more than the UP5K's four SPRAM blocks");
  end

  if (!USE_SPRAM) begin : g_ebr
    logic [WIDTH-1:0] mem [DEPTH];

    initial begin
      for (int i = 0; i < DEPTH; i++) mem[i] = '0;
    end

    always_ff @(posedge clk) begin
      if (we) mem[waddr] <= wdata;
      if (re) rdata <= mem[raddr];
    end
  end else begin : g_spram
    localparam int BANK_W = (BANKS > 1) ? $clog2(BANKS) : 1;

    // Power-on clear: counts 0 .. 16384 once after configuration (flip-flops start at 0).
    logic [14:0] clr_q = 15'd0;
    logic clearing;
    assign clearing = !clr_q[14];
    always_ff @(posedge clk) begin
      if (clearing) clr_q <= clr_q + 15'd1;
    end

    logic [13:0] addr;
    logic [BANK_W-1:0] wbank, rbank, rbank_q;
    logic [SLICES*16-1:0] din;
    logic [SLICES*16-1:0] dout [BANKS];
    logic rd_q;
    logic [WIDTH-1:0] hold_q, rd_word;

    // Addresses wider than a bank pick the bank with their high bits.
    if (ADDR_W > 14) begin : g_bank_bits
      assign wbank = BANK_W'(waddr[ADDR_W-1:14]);
      assign rbank = BANK_W'(raddr[ADDR_W-1:14]);
    end else begin : g_one_bank
      assign wbank = '0;
      assign rbank = '0;
    end
    assign addr = clearing ? clr_q[13:0] : we ? 14'(waddr) : 14'(raddr);
    assign din = clearing ? '0 : (SLICES * 16)'(wdata);

    for (genvar b = 0; b < BANKS; b++) begin : g_bank
      logic wr_b, cs_b;
      assign wr_b = clearing || (we && wbank == BANK_W'(b));
      assign cs_b = wr_b || (re && rbank == BANK_W'(b));
      for (genvar s = 0; s < SLICES; s++) begin : g_slice
        SB_SPRAM256KA u_spram (
          .ADDRESS   (addr),
          .DATAIN    (din[16*s +: 16]),
          .MASKWREN  (4'hF),
          .WREN      (wr_b),
          .CHIPSELECT(cs_b),
          .CLOCK     (clk),
          .STANDBY   (1'b0),
          .SLEEP     (1'b0),
          .POWEROFF  (1'b1),
          .DATAOUT   (dout[b][16*s +: 16])
        );
      end
    end

    // SPRAM's output is only promised for the cycle after a read: keep the word ourselves.
    always_ff @(posedge clk) begin
      rd_q <= re && !clearing;
      if (re) rbank_q <= rbank;
      hold_q <= rdata;
    end
    assign rd_word = WIDTH'(dout[rbank_q]);
    assign rdata = rd_q ? rd_word : hold_q;

`ifndef SYNTHESIS
    always @(posedge clk) begin
      if (we && re) $fatal(1, "ntpu_ram (iCE40 SPRAM): read and write in one cycle");
    end
`endif
  end

endmodule

`default_nettype wire
