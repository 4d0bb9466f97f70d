// SPDX-License-Identifier: Apache-2.0
// UART receiver: 8 data bits, no parity, 1 stop bit, LSB first, line idle high.
//
// Contract:
// - rxd is the pin, asynchronous to clk: two flip-flops synchronize it here.
// - A byte is sampled at the middle of each bit, CLKS_PER_BIT cycles apart, counted from the
//   falling edge of its start bit; the receiver hunts for the next start bit right after the middle
//   of the stop bit. So back-to-back bytes are fine, and the sender's bit rate may be off
//   clk / CLKS_PER_BIT by up to 2.5 % fast at CLKS_PER_BIT = 4 (3.9 % at 8, 4.4 % at 16) and
//   4.7 % slow (5.5 % at even CLKS_PER_BIT): the middle-of-stop-bit sample must stay in the bit.
// - m_rx is a valid/ready stream: a byte is offered from its stop bit until taken. A UART cannot
//   wait, so a byte that completes while the previous one is still offered is dropped (one
//   `overrun` pulse); the offered byte stays.
// - A start bit that is high again at its middle is a glitch and is ignored. A byte whose stop bit
//   is low is dropped (one `frame_err` pulse), and the receiver then waits for the line to go high
//   (so a break, a line held low, costs one frame_err, not one per 10 bit times).
// - Latency from the middle of the stop bit to m_rx_valid: 3 cycles (2 synchronizer + 1).
`default_nettype none

module ntpu_uart_rx #(
  parameter int CLKS_PER_BIT = 16  // clk cycles per bit (clk frequency / baud rate), >= 4
) (
  input  logic       clk,
  input  logic       rst,
  input  logic       rxd,         // the line, asynchronous
  output logic [7:0] m_rx_data,
  output logic       m_rx_valid,
  input  logic       m_rx_ready,
  output logic       frame_err,   // pulse: a byte with a low stop bit was dropped
  output logic       overrun      // pulse: a byte was dropped because the last one was not taken
);

  if (CLKS_PER_BIT < 4) begin : g_bad_cfg
    initial $fatal(1, "ntpu_uart_rx: CLKS_PER_BIT must be >= 4");
  end

  localparam int CNT_W = $clog2(CLKS_PER_BIT);
  // From the cycle the start bit is seen to its middle; the edge itself is seen 0..1 cycle late.
  localparam logic [CNT_W-1:0] HALF = CNT_W'(CLKS_PER_BIT / 2 - 1);
  localparam logic [CNT_W-1:0] FULL = CNT_W'(CLKS_PER_BIT - 1);

  typedef enum logic [2:0] {
    S_IDLE,   // line high, waiting for a start bit
    S_START,  // to the middle of the start bit
    S_DATA,   // eight data bits
    S_STOP,   // to the middle of the stop bit
    S_BREAK   // after a framing error: wait for the line to go high
  } state_e;

  state_e state_q, state_d;
  logic [CNT_W-1:0] cnt_q, cnt_d;
  logic [2:0] bit_q, bit_d;
  logic [7:0] sh_q;
  logic shift, deliver;

  // The first stage may go metastable; nothing but the second stage reads it. Both start high
  // (idle) so that the reset does not look like a start bit.
  (* async_reg = "true" *) logic sync1_q, sync2_q;

  always_ff @(posedge clk) begin
    if (rst) begin
      sync1_q <= 1'b1;
      sync2_q <= 1'b1;
    end else begin
      sync1_q <= rxd;
      sync2_q <= sync1_q;
    end
  end

  always_comb begin
    state_d = state_q;
    cnt_d = (cnt_q == '0) ? FULL : cnt_q - CNT_W'(1);
    bit_d = bit_q;
    shift = 1'b0;
    deliver = 1'b0;
    frame_err = 1'b0;
    case (state_q)
      S_IDLE: begin
        cnt_d = HALF;
        if (!sync2_q) state_d = S_START;
      end
      S_START: begin
        if (cnt_q == '0) begin
          bit_d = '0;
          if (sync2_q) state_d = S_IDLE;  // a glitch, not a start bit
          else state_d = S_DATA;
        end
      end
      S_DATA: begin
        if (cnt_q == '0) begin
          shift = 1'b1;
          bit_d = bit_q + 3'd1;
          if (bit_q == 3'd7) state_d = S_STOP;
        end
      end
      S_STOP: begin
        if (cnt_q == '0) begin
          if (sync2_q) begin
            deliver = 1'b1;
            state_d = S_IDLE;
          end else begin
            frame_err = 1'b1;
            state_d = S_BREAK;
          end
        end
      end
      S_BREAK: begin
        if (sync2_q) state_d = S_IDLE;
      end
      default: state_d = S_IDLE;
    endcase
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      state_q <= S_IDLE;
    end else begin
      state_q <= state_d;
    end
  end

  always_ff @(posedge clk) begin
    cnt_q <= cnt_d;
    bit_q <= bit_d;
    if (shift) sh_q <= {sync2_q, sh_q[7:1]};
  end

  // Output register: holds the byte until it is taken.
  always_ff @(posedge clk) begin
    if (rst) begin
      m_rx_valid <= 1'b0;
    end else if (deliver && !(m_rx_valid && !m_rx_ready)) begin
      m_rx_valid <= 1'b1;
    end else if (m_rx_ready) begin
      m_rx_valid <= 1'b0;
    end
  end

  always_ff @(posedge clk) begin
    if (deliver && !(m_rx_valid && !m_rx_ready)) m_rx_data <= sh_q;
  end

  assign overrun = deliver && m_rx_valid && !m_rx_ready;

endmodule

`default_nettype wire
