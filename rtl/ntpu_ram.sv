// SPDX-License-Identifier: Apache-2.0
// Generic simple dual-port synchronous RAM: one write port, one read port, one clock.
//
// Contract: a write with `we` lands at the clock edge. A read with `re` in cycle t presents
// mem[raddr] on `rdata` in cycle t+1, and `rdata` holds until the next read. Reading the address
// being written in the same cycle returns the old word. No reset. Written in the shape Yosys maps
// to block RAM; vendor versions live under fpga/prim/<vendor>/ behind this module name.
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

  if (WIDTH < 1 || DEPTH < 1) begin : g_bad_cfg
    initial $fatal(1, "ntpu_ram: WIDTH and DEPTH must be >= 1");
  end
  if (ADDR_W < $clog2(DEPTH)) begin : g_bad_addr_w
    initial $fatal(1, "ntpu_ram: ADDR_W too small for DEPTH");
  end

  logic [WIDTH-1:0] mem [DEPTH];

  // Zero contents at configuration time: the golden model starts with zeroed memories, and FPGA
  // block RAM initializes from the bitstream, so simulation and boards agree with it.
  initial begin
    for (int i = 0; i < DEPTH; i++) mem[i] = '0;
  end
  always_ff @(posedge clk) begin
    if (we) mem[waddr] <= wdata;
    if (re) rdata <= mem[raddr];
  end

endmodule

`default_nettype wire
