// SPDX-License-Identifier: Apache-2.0
// Link transmitter: sends reply frames to the host (docs/protocol.md).
//
// Contract:
// - s_hdr: one transfer per reply: SEQ, LEN (payload bytes, status byte included, >= 1) and the
//   status byte. One header is held while the previous reply is still going out, so s_hdr_ready
//   is high unless a header is already waiting.
// - s_body: exactly LEN-1 bytes per reply, in order, after its header, up to LINK_BYTES per
//   transfer: s_body_valid is a thermometer code (bits 0..k-1: bytes 0..k-1 of s_body_data, byte 0
//   first) and a transfer moves all k bytes; s_body_ready is high only while the reply's body is
//   being sent. A transfer never offers more bytes than the body has left.
// - m_tx: SOF 0x5A, SEQ, LEN (little-endian), status, body, CRC-32 over SEQ..body (little-endian).
//   m_tx_data/m_tx_valid come from registers; m_tx_ready reaches s_body_ready combinationally.
//   m_tx_valid is a thermometer code like s_body_valid: SOF leaves alone, then (LINK_BYTES >= 4)
//   SEQ, LEN and status in one beat and the CRC in one beat, or else one byte per cycle; body
//   bytes as many per cycle as they came (LINK_BYTES = 1: one byte per cycle, the boards'
//   byte-wide link). Back-to-back replies leave no gap.
`default_nettype none

module ntpu_link_tx
  import ntpu_pkg::*;
#(
  parameter int LINK_BYTES = 1  // bytes per cycle on s_body and m_tx, 1..64
) (
  input  logic        clk,
  input  logic        rst,
  input  logic        s_hdr_valid,
  output logic        s_hdr_ready,
  input  logic [7:0]  s_hdr_seq,
  input  logic [15:0] s_hdr_len,
  input  logic [7:0]  s_hdr_status,
  input  logic [8*LINK_BYTES-1:0] s_body_data,
  input  logic [LINK_BYTES-1:0]   s_body_valid,
  output logic        s_body_ready,
  output logic [8*LINK_BYTES-1:0] m_tx_data,
  output logic [LINK_BYTES-1:0]   m_tx_valid,
  input  logic        m_tx_ready
);

  if (LINK_BYTES < 1 || LINK_BYTES > 64) begin : g_bad_cfg
    initial $fatal(1, "ntpu_link_tx: LINK_BYTES must be 1..64");
  end
  localparam int W = LINK_BYTES;
  localparam int KW = $clog2(W + 1);  // a byte count 0..W

  typedef enum logic [3:0] {
    S_IDLE, S_SEQ, S_LEN0, S_LEN1, S_STATUS, S_BODY, S_CRC0, S_CRC1, S_CRC2, S_CRC3
  } state_e;

  state_e state_q, state_d;

  // The waiting header.
  logic hdr_full_q;
  logic [7:0] hdr_seq_q, hdr_status_q;
  logic [15:0] hdr_len_q;
  // The reply being sent.
  logic [7:0] cur_seq_q, cur_status_q;
  logic [15:0] cur_len_q;
  logic [15:0] body_left_q, body_left_d;

  logic out_free;     // the output register can take a byte this cycle
  logic load;         // it takes load_n bytes
  logic [8*W-1:0] load_data;
  logic [KW-1:0] load_n, body_n;
  logic start;        // the waiting header becomes the current reply (its SOF is loaded)
  logic crc_en;
  logic [31:0] crc;
  logic [W-1:0] m_tx_valid_q;
  logic [8*W-1:0] m_tx_data_q;
  // Byte views of the multi-byte fields (kept out of the always_comb, which Icarus prefers).
  logic [7:0] len_b0, len_b1, crc_b0, crc_b1, crc_b2, crc_b3;
  assign {len_b1, len_b0} = cur_len_q;
  assign {crc_b3, crc_b2, crc_b1, crc_b0} = crc;

  assign out_free = !m_tx_valid_q[0] || m_tx_ready;
  // The thermometer code of load_n, by a shift rather than a loop over the bits (vsim's speed);
  // shifting by W leaves all ones. The body's byte count: its set bits.
  logic [W-1:0] load_mask;
  assign load_mask = ~({W{1'b1}} << load_n);
  assign body_n = KW'($countones(s_body_valid));
  assign s_hdr_ready = !hdr_full_q;
  // Handshakes between modules are plain assigns: a default-then-override in always_comb would
  // glitch, and two such blocks reading each other's glitches never settle in an event simulator.
  assign s_body_ready = (state_q == S_BODY) && out_free;
  /* verilator lint_off LATCH */  // vsim's gated build: see the end
  always_comb begin
    state_d = state_q;
    body_left_d = body_left_q;
    load = 1'b0;
    load_data = '0;
    load_n = KW'(1);
    start = 1'b0;
    crc_en = 1'b0;
    case (state_q)
      S_IDLE: begin
        if (hdr_full_q && out_free) begin
          start = 1'b1;
          load = 1'b1;
          load_data = (8*W)'(SOF_REPLY);
          state_d = S_SEQ;
        end
      end
      S_SEQ: begin
        load = out_free;
        if (W >= 4) begin
          // SEQ, LEN and the status byte in one beat.
          load_data = (8*W)'({cur_status_q, len_b1, len_b0, cur_seq_q});
          load_n = KW'(4);
          body_left_d = cur_len_q - 16'd1;
          if (out_free && cur_len_q == 16'd1) state_d = S_CRC0;
          else if (out_free) state_d = S_BODY;
        end else begin
          load_data = (8*W)'(cur_seq_q);
          if (out_free) state_d = S_LEN0;
        end
      end
      S_LEN0: begin
        load = out_free;
        load_data = (8*W)'(len_b0);
        if (out_free) state_d = S_LEN1;
      end
      S_LEN1: begin
        load = out_free;
        load_data = (8*W)'(len_b1);
        if (out_free) state_d = S_STATUS;
      end
      S_STATUS: begin
        load = out_free;
        load_data = (8*W)'(cur_status_q);
        body_left_d = cur_len_q - 16'd1;
        if (out_free) begin
          if (cur_len_q == 16'd1) state_d = S_CRC0;
          else state_d = S_BODY;
        end
      end
      S_BODY: begin
        load = out_free && s_body_valid[0];
        load_data = s_body_data;
        load_n = body_n;
        if (load) begin
          body_left_d = body_left_q - 16'(body_n);
          if (body_left_q == 16'(body_n)) state_d = S_CRC0;
        end
      end
      S_CRC0: begin
        load = out_free;
        if (W >= 4) begin
          load_data = (8*W)'(crc);  // little-endian: crc_b0 first
          load_n = KW'(4);
          if (out_free) state_d = S_IDLE;
        end else begin
          load_data = (8*W)'(crc_b0);
          if (out_free) state_d = S_CRC1;
        end
      end
      S_CRC1: begin
        load = out_free;
        load_data = (8*W)'(crc_b1);
        if (out_free) state_d = S_CRC2;
      end
      S_CRC2: begin
        load = out_free;
        load_data = (8*W)'(crc_b2);
        if (out_free) state_d = S_CRC3;
      end
      S_CRC3: begin
        load = out_free;
        load_data = (8*W)'(crc_b3);
        if (out_free) state_d = S_IDLE;
      end
      default: state_d = S_IDLE;
    endcase
    // SEQ through the last body byte are covered by the CRC.
    crc_en = load && (state_q == S_SEQ || state_q == S_LEN0 || state_q == S_LEN1 ||
                      state_q == S_STATUS || state_q == S_BODY);
  end  /* verilator lint_on LATCH */

  always_ff @(posedge clk) begin
    if (rst) begin
      state_q <= S_IDLE;
      hdr_full_q <= 1'b0;
      m_tx_valid_q <= '0;
    end else begin
      state_q <= state_d;
      if (s_hdr_valid && s_hdr_ready) hdr_full_q <= 1'b1;
      else if (start) hdr_full_q <= 1'b0;
      if (out_free) m_tx_valid_q <= load ? load_mask : '0;
    end
  end

  always_ff @(posedge clk) begin
    if (s_hdr_valid && s_hdr_ready) begin
      hdr_seq_q <= s_hdr_seq;
      hdr_len_q <= s_hdr_len;
      hdr_status_q <= s_hdr_status;
    end
    if (start) begin
      cur_seq_q <= hdr_seq_q;
      cur_len_q <= hdr_len_q;
      cur_status_q <= hdr_status_q;
    end
    body_left_q <= body_left_d;
    if (load) m_tx_data_q <= load_data;
  end

  ntpu_crc32 #(
    .BYTES(W)
  ) u_crc (
    .clk  (clk),
    .rst  (rst),
    .clear(start),
    .en   (crc_en),
    .count(load_n),
    .data (load_data),
    .crc  (crc)
  );

  assign m_tx_valid = m_tx_valid_q;
  assign m_tx_data = m_tx_data_q;


endmodule

`default_nettype wire
