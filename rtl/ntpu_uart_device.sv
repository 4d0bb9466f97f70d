// SPDX-License-Identifier: Apache-2.0
// The nanoTPU behind a UART: receiver, receive FIFO, ntpu_core (or an echo for bring-up), transmitter,
// and stretched activity / error pulses for LEDs. Board tops add only clock, reset and pins.
//
// Contract: rxd / txd are 8N1 at CLK_HZ / CLKS_PER_BIT baud. The link has no flow control: the host keeps
// at most RX_FIFO_DEPTH bytes unanswered (docs/protocol.md). `activity` stays high for 2^ACT_W cycles after
// a byte moves either way, `error` for 2^ERR_W cycles after a framing error or an overrun.
`default_nettype none

module ntpu_uart_device #(
  parameter int CLKS_PER_BIT = 8,        // clock cycles per UART bit, >= 4
  parameter int RX_FIFO_DEPTH = 2048,    // host -> device bytes buffered
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
  parameter int ACT_W = 20,              // activity pulse stretch: 2^ACT_W cycles
  parameter int ERR_W = 24               // error pulse stretch: 2^ERR_W cycles
) (
  input  logic clk,
  input  logic rst,
  input  logic rxd,
  output logic txd,
  output logic activity,
  output logic error
);

  logic [7:0] urx_data, fifo_data, core_tx_data;
  logic urx_valid, urx_ready, fifo_valid, fifo_ready, core_tx_valid, core_tx_ready;
  logic frame_err, overrun;

  ntpu_uart_rx #(
    .CLKS_PER_BIT(CLKS_PER_BIT)
  ) u_uart_rx (
    .clk       (clk),
    .rst       (rst),
    .rxd       (rxd),
    .m_rx_data (urx_data),
    .m_rx_valid(urx_valid),
    .m_rx_ready(urx_ready),
    .frame_err (frame_err),
    .overrun   (overrun)
  );

  ntpu_fifo #(
    .WIDTH(8),
    .DEPTH(RX_FIFO_DEPTH)
  ) u_rx_fifo (
    .clk        (clk),
    .rst        (rst),
    .s_in_data  (urx_data),
    .s_in_valid (urx_valid),
    .s_in_ready (urx_ready),
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

  ntpu_uart_tx #(
    .CLKS_PER_BIT(CLKS_PER_BIT)
  ) u_uart_tx (
    .clk       (clk),
    .rst       (rst),
    .s_tx_data (core_tx_data),
    .s_tx_valid(core_tx_valid),
    .s_tx_ready(core_tx_ready),
    .txd       (txd)
  );

  // Pulse stretchers, so a human sees single bytes and single errors.
  logic [ACT_W-1:0] act_q;
  logic [ERR_W-1:0] err_q;

  always_ff @(posedge clk) begin
    if (rst) begin
      act_q <= '0;
      err_q <= '0;
    end else begin
      if ((urx_valid && urx_ready) || (core_tx_valid && core_tx_ready)) act_q <= '1;
      else if (act_q != '0) act_q <= act_q - ACT_W'(1);
      if (frame_err || overrun) err_q <= '1;
      else if (err_q != '0) err_q <= err_q - ERR_W'(1);
    end
  end

  assign activity = act_q[ACT_W-1];
  assign error = err_q != '0;

endmodule

`default_nettype wire
