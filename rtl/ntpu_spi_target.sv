// SPDX-License-Identifier: Apache-2.0
// SPI target for the pico-ice's link to its RP2040 (docs/firmware.md "The link to the FPGA"): mode 0, MSB
// first, oversampled in the clk domain, with the two-byte header that gives flow control both ways.
//
// Contract:
// - sck, sel_n and mosi are asynchronous pins; each passes two synchronizing flops (the same for all three,
//   so mosi is seen as it was when the rising edge of sck was). sck must run at clk / 4 or slower, and
//   sel_n must be low for >= 4 clk cycles before the first rising edge of sck: the header is fixed then.
// - A transaction is the bytes between sel_n falling and rising. Byte 0 each way: the controller's count
//   to send / our room (rx_room, frozen when sel_n falls); byte 1: the controller's room / what we have
//   (tx_have, frozen too). Both are at most 64. Then max(send, recv) bytes are clocked, send =
//   min(its count, our room) into m_rx, recv = min(our have, its room) out of s_tx, padding with zeros.
// - m_rx_valid pulses once a received payload byte; the caller guarantees room (it reported rx_room).
// - s_tx_pop pulses when s_tx_data is taken; the caller guarantees it is valid (it reported tx_have).
// - MISO changes 2-3 clk cycles after a rising edge of sck reaches the pin, so the next rising edge,
//   4 or more cycles later, finds it settled.
// - error pulses when a transaction ends off a byte boundary or with a count other than the header's
//   plan, or when a header asks for more than 64 bytes (those bytes are then not taken or given).
//   A transaction already under way when reset ends is ignored whole, as is one cut by a reset.
`default_nettype none

module ntpu_spi_target (
  input  logic       clk,
  input  logic       rst,
  input  logic       sck,
  input  logic       sel_n,
  input  logic       mosi,
  output logic       miso,
  input  logic [6:0] rx_room,    // bytes m_rx can take now, <= 64
  input  logic [6:0] tx_have,    // bytes s_tx holds now, <= 64
  output logic [7:0] m_rx_data,
  output logic       m_rx_valid,
  input  logic [7:0] s_tx_data,
  output logic       s_tx_pop,
  output logic       error
);

  logic [2:0] sck_q, sel_q;  // [0], [1]: synchronizers; [2]: the previous value, for the edges
  logic [1:0] mosi_q;
  always_ff @(posedge clk) begin
    sck_q <= {sck_q[1:0], sck};
    sel_q <= {sel_q[1:0], sel_n};
    mosi_q <= {mosi_q[0], mosi};
  end

  logic selected, starts, ends, rise;
  assign selected = !sel_q[1];
  assign starts = !sel_q[1] && sel_q[2];
  assign ends = sel_q[1] && !sel_q[2];
  assign rise = selected && sck_q[1] && !sck_q[2];

  logic [2:0] bit_q;        // bits of the current byte already in
  logic [6:0] pos_q;        // bytes completed this transaction, saturating at 127
  logic [6:0] room_q, have_q, send_q, recv_q, total_q;
  logic [7:0] ctl_have_q;   // header byte 0 from the controller
  logic [6:0] in_q;         // the bits of the current byte so far
  logic [7:0] out_q;
  logic bad_q;              // the header asked for more than 64
  logic armed_q;            // in a transaction that started after reset: one already under way is ignored

  logic [7:0] in_byte;
  assign in_byte = {in_q[6:0], mosi_q[1]};

  // The plan, from the header's second byte as it completes (byte 1: the controller's room).
  logic [6:0] plan_send, plan_recv, plan_total;
  logic header_bad;
  assign header_bad = ctl_have_q > 8'd64 || in_byte > 8'd64;
  assign plan_send = ctl_have_q[6:0] < room_q ? ctl_have_q[6:0] : room_q;
  assign plan_recv = have_q < in_byte[6:0] ? have_q : in_byte[6:0];
  assign plan_total = plan_send > plan_recv ? plan_send : plan_recv;

  // Payload byte index i = pos - 2 of the byte that completes now, and of the one that starts after it.
  logic [6:0] idx, next_idx;
  assign idx = pos_q - 7'd2;
  assign next_idx = pos_q - 7'd1;

  always_ff @(posedge clk) begin
    m_rx_valid <= 1'b0;
    s_tx_pop <= 1'b0;
    error <= 1'b0;
    if (rst) begin
      bit_q <= '0;
      pos_q <= '0;
      out_q <= '0;
      bad_q <= 1'b0;
      armed_q <= 1'b0;
      send_q <= '0;
      recv_q <= '0;
      total_q <= '0;
    end else if (starts) begin
      armed_q <= 1'b1;
      bit_q <= '0;
      pos_q <= '0;
      room_q <= rx_room;
      have_q <= tx_have;
      out_q <= {1'b0, rx_room};
      bad_q <= 1'b0;
      send_q <= '0;
      recv_q <= '0;
      total_q <= '0;
    end else if (ends) begin
      armed_q <= 1'b0;
      if (armed_q && (pos_q != 7'd0 || bit_q != 3'd0) && (bit_q != 3'd0 || bad_q || pos_q != total_q + 7'd2))
        error <= 1'b1;
      pos_q <= '0;
      bit_q <= '0;
    end else if (rise && armed_q) begin
      bit_q <= bit_q + 3'd1;
      in_q <= in_byte[6:0];
      out_q <= {out_q[6:0], 1'b0};
      if (bit_q == 3'd7) begin
        if (pos_q != 7'd127) pos_q <= pos_q + 7'd1;
        // The byte that completes.
        if (pos_q == 7'd0) begin
          ctl_have_q <= in_byte;
        end else if (pos_q == 7'd1) begin
          bad_q <= header_bad;
          send_q <= header_bad ? 7'd0 : plan_send;
          recv_q <= header_bad ? 7'd0 : plan_recv;
          total_q <= header_bad ? 7'd0 : plan_total;
        end else if (idx < send_q) begin
          m_rx_data <= in_byte;
          m_rx_valid <= 1'b1;
        end
        // The byte that starts: its MSB is on miso from now.
        if (pos_q == 7'd0) begin
          out_q <= {1'b0, have_q};
        end else if (pos_q == 7'd1 ? (!header_bad && plan_recv != 7'd0)
                                   : (next_idx < recv_q)) begin
          out_q <= s_tx_data;
          s_tx_pop <= 1'b1;
        end else begin
          out_q <= '0;
        end
      end
    end
  end

  assign miso = out_q[7];

endmodule

`default_nettype wire
