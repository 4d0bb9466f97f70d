// SPDX-License-Identifier: Apache-2.0
// Synchronous FIFO of WIDTH-bit words on a ntpu_ram (block RAM on FPGAs).
//
// Contract:
// - s_in and m_out are valid/ready streams; words leave in order. One word per cycle each way.
// - Capacity DEPTH + 2 words: the RAM plus two output registers (the RAM's read register and
//   m_out's). s_in_ready depends only on state (the RAM is not full); m_out_valid and m_out_data
//   come straight from registers.
// - Latency: a word written into an empty FIFO is offered 3 cycles later.
// - rst empties it; the storage has no reset.
`default_nettype none

module ntpu_fifo #(
  parameter int WIDTH = 8,     // bits per word
  parameter int DEPTH = 2048   // words in the RAM, a power of 2, >= 2
) (
  input  logic             clk,
  input  logic             rst,
  input  logic [WIDTH-1:0] s_in_data,
  input  logic             s_in_valid,
  output logic             s_in_ready,
  output logic [WIDTH-1:0] m_out_data,
  output logic             m_out_valid,
  input  logic             m_out_ready
);

  if (DEPTH < 2 || (DEPTH & (DEPTH - 1)) != 0) begin : g_bad_cfg
    initial $fatal(1, "ntpu_fifo: DEPTH must be a power of 2, >= 2");
  end

  localparam int AW = $clog2(DEPTH);

  logic [AW:0] wr_q, rd_q;     // one bit more than the address: full and empty differ
  logic pend_q;                // the RAM's read register holds the next word
  logic ram_empty, push, fetch, load;
  logic [WIDTH-1:0] rdata;

  assign ram_empty = (wr_q == rd_q);
  assign s_in_ready = (wr_q - rd_q) != (AW + 1)'(DEPTH);
  assign push = s_in_valid && s_in_ready;
  // The read register moves on to m_out when that is free or being emptied, and is refilled in
  // the same cycle: ntpu_ram keeps rdata until the next read, so nothing is lost while m_out waits.
  assign load = pend_q && (!m_out_valid || m_out_ready);
  assign fetch = !ram_empty && (!pend_q || load);

  always_ff @(posedge clk) begin
    if (rst) begin
      wr_q <= '0;
      rd_q <= '0;
      pend_q <= 1'b0;
      m_out_valid <= 1'b0;
    end else begin
      if (push) wr_q <= wr_q + (AW + 1)'(1);
      if (fetch) rd_q <= rd_q + (AW + 1)'(1);
      if (fetch) pend_q <= 1'b1;
      else if (load) pend_q <= 1'b0;
      if (load) m_out_valid <= 1'b1;
      else if (m_out_ready) m_out_valid <= 1'b0;
    end
  end

  always_ff @(posedge clk) begin
    if (load) m_out_data <= rdata;
  end

  ntpu_ram #(
    .WIDTH(WIDTH),
    .DEPTH(DEPTH)
  ) u_mem (
    .clk  (clk),
    .we   (push),
    .waddr(wr_q[AW-1:0]),
    .wdata(s_in_data),
    .re   (fetch),
    .raddr(rd_q[AW-1:0]),
    .rdata(rdata)
  );

endmodule

`default_nettype wire
