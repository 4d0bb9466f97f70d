// SPDX-License-Identifier: Apache-2.0
// The nanoTPU behind the pico-ice's SPI link: ntpu_spi_target, a FIFO each way, ntpu_core (or an echo for
// bring-up), and a stretched error pulse. Board tops add only clock, reset and pins.
//
// Contract: the link of ntpu_spi_target (mode 0, sck <= clk / 4, the two-byte header). Flow control is
// exact both ways: the header offers the room left in the receive FIFO and the bytes waiting in the
// transmit FIFO (each at most 64), so no byte is dropped whatever the core is doing. `error` stays high
// for 2^ERR_W cycles after a transaction that broke the protocol.
`default_nettype none

module ntpu_spi_device #(
  parameter int RX_FIFO_DEPTH = 512,     // host -> device bytes buffered
  parameter int TX_FIFO_DEPTH = 512,     // device -> host bytes buffered
  parameter int CORE_EN = 1,             // 0: no core, the link echoes (bring-up)
  parameter int N = 2,                   // ntpu_core parameters, passed through
  parameter int PE_STAGES = 1,
  parameter int VEC_EN = 1,
  parameter int TRANSPOSE_A_EN = 1,
  parameter int COUNTER_W = 64,
  parameter int BF16_SHARED = 0,
  parameter int SEG_DEPTH = 4,
  parameter int UB_ROWS = 1024,
  parameter int WB_ROWS = 1024,
  parameter int ACC_ROWS = 512,
  parameter int MAX_PAYLOAD = 516,
  parameter logic [31:0] CLOCK_HZ = 32'd0,
  parameter int ERR_W = 24               // error pulse stretch: 2^ERR_W cycles
) (
  input  logic clk,
  input  logic rst,
  input  logic sck,
  input  logic sel_n,
  input  logic mosi,
  output logic miso,
  output logic error
);

  if (RX_FIFO_DEPTH < 64 || TX_FIFO_DEPTH < 64) begin : g_bad_cfg
    initial $fatal(1, "ntpu_spi_device: the FIFOs must hold a whole transaction (64 bytes)");
  end

  localparam int RXW = $clog2(RX_FIFO_DEPTH) + 1;
  localparam int TXW = $clog2(TX_FIFO_DEPTH) + 1;

  logic [7:0] spi_rx_data, fifo_data, core_tx_data, tx_fifo_data;
  logic spi_rx_valid, fifo_valid, fifo_ready, core_tx_valid, core_tx_ready, tx_pop, tx_fifo_valid;
  logic rx_fifo_ready, spi_error;
  logic [6:0] rx_room, tx_have;

  // Bytes held each way, counted where they enter and leave (the FIFOs' own pointers lag a cycle or two).
  logic [RXW-1:0] rx_used_q;
  logic [TXW-1:0] tx_used_q;
  logic rx_in, rx_out, tx_in, tx_out;
  assign rx_in = spi_rx_valid;
  assign rx_out = fifo_valid && fifo_ready;
  assign tx_in = core_tx_valid && core_tx_ready;
  assign tx_out = tx_pop;

  always_ff @(posedge clk) begin
    if (rst) begin
      rx_used_q <= '0;
      tx_used_q <= '0;
    end else begin
      rx_used_q <= rx_used_q + RXW'(rx_in) - RXW'(rx_out);
      tx_used_q <= tx_used_q + TXW'(tx_in) - TXW'(tx_out);
    end
  end

  logic [RXW-1:0] rx_free;
  assign rx_free = RXW'(RX_FIFO_DEPTH) - rx_used_q;
  assign rx_room = rx_free >= RXW'(64) ? 7'd64 : rx_free[6:0];
  assign tx_have = tx_used_q >= TXW'(64) ? 7'd64 : tx_used_q[6:0];

  ntpu_spi_target u_target (
    .clk       (clk),
    .rst       (rst),
    .sck       (sck),
    .sel_n     (sel_n),
    .mosi      (mosi),
    .miso      (miso),
    .rx_room   (rx_room),
    .tx_have   (tx_have),
    .m_rx_data (spi_rx_data),
    .m_rx_valid(spi_rx_valid),
    .s_tx_data (tx_fifo_data),
    .s_tx_pop  (tx_pop),
    .error     (spi_error)
  );

  ntpu_fifo #(
    .WIDTH(8),
    .DEPTH(RX_FIFO_DEPTH)
  ) u_rx_fifo (
    .clk        (clk),
    .rst        (rst),
    .s_in_data  (spi_rx_data),
    .s_in_valid (spi_rx_valid),
    .s_in_ready (rx_fifo_ready),  // always, by the header's room
    .m_out_data (fifo_data),
    .m_out_valid(fifo_valid),
    .m_out_ready(fifo_ready)
  );

  if (CORE_EN != 0) begin : g_core
    ntpu_core #(
      .N          (N),
      .UB_ROWS    (UB_ROWS),
      .WB_ROWS    (WB_ROWS),
      .ACC_ROWS   (ACC_ROWS),
      .MAX_PAYLOAD(MAX_PAYLOAD),
      .CLOCK_HZ   (CLOCK_HZ),
      .PE_STAGES  (PE_STAGES),
      .VEC_EN     (VEC_EN),
      .TRANSPOSE_A_EN(TRANSPOSE_A_EN),
      .COUNTER_W  (COUNTER_W),
      .BF16_SHARED(BF16_SHARED),
      .SEG_DEPTH  (SEG_DEPTH)
    ) u_core (
      .clk       (clk),
      .rst       (rst),
      .s_rx_data (fifo_data),
      .s_rx_valid(fifo_valid),
      .s_rx_ready(fifo_ready),
      .m_tx_data (core_tx_data),
      .m_tx_valid(core_tx_valid),
      .m_tx_ready(core_tx_ready)
    );
  end else begin : g_echo
    assign core_tx_data = fifo_data;
    assign core_tx_valid = fifo_valid;
    assign fifo_ready = core_tx_ready;
  end

  ntpu_fifo #(
    .WIDTH(8),
    .DEPTH(TX_FIFO_DEPTH)
  ) u_tx_fifo (
    .clk        (clk),
    .rst        (rst),
    .s_in_data  (core_tx_data),
    .s_in_valid (core_tx_valid),
    .s_in_ready (core_tx_ready),
    .m_out_data (tx_fifo_data),
    .m_out_valid(tx_fifo_valid),
    .m_out_ready(tx_pop)
  );

  // A protocol error, or a byte the FIFOs could not take or give (which the header's counts rule out).
  logic [ERR_W-1:0] err_q;
  always_ff @(posedge clk) begin
    if (rst) err_q <= '0;
    else if (spi_error || (spi_rx_valid && !rx_fifo_ready) || (tx_pop && !tx_fifo_valid)) err_q <= '1;
    else if (err_q != '0) err_q <= err_q - ERR_W'(1);
  end
  assign error = err_q != '0;

endmodule

`default_nettype wire
