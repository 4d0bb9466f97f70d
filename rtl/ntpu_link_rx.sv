// SPDX-License-Identifier: Apache-2.0
// Link receiver: turns the host's byte stream into checked command frames (docs/protocol.md).
//
// Contract:
// - s_rx: up to LINK_BYTES bytes per cycle, byte 0 first. s_rx_valid and s_rx_ready are thermometer
//   codes (bit i: byte i is offered / would be taken; bits 0..k-1 set); the bytes that move are
//   those with both bits set. s_rx_ready depends on the state only. SOF moves alone (hunting drops
//   bytes one at a time); with LINK_BYTES >= 3 SEQ and LEN move together, and payload bytes, CRC
//   bytes up to LINK_BYTES per cycle (LINK_BYTES = 1: the byte-wide link of the boards, one byte
//   per cycle, exactly as before).
// - Bytes: Outside a frame, bytes other than SOF 0xA5 are dropped (one `drop`
//   pulse each). After SOF come SEQ and LEN; a LEN of 0 or over MAX_PAYLOAD yields an ERR_LENGTH
//   frame at once (no payload) and hunting resumes with the next byte. Otherwise LEN payload bytes
//   and 4 CRC bytes follow and the frame is offered with status OK, or ERR_CRC if the CRC is wrong.
// - m_frm: frames in arrival order. The consumer reads payload bytes through frm_re/frm_raddr
//   (byte offset in the payload; frm_rdata, the LINK_BYTES bytes from that offset on, one cycle
//   later; bytes past the payload read as don't-care) while m_frm_valid is high, then raises
//   m_frm_ready for one cycle to release the frame; its buffer is reused after that.
// - Two frame buffers (ping-pong): one frame is received while the previous one is consumed.
//   s_rx_ready falls only on the LEN high byte while both buffers are held, and for the one cycle
//   after a frame's last CRC byte (the CRC check).
`default_nettype none

module ntpu_link_rx
  import ntpu_pkg::*;
#(
  parameter int MAX_PAYLOAD = 4112,  // largest payload accepted, bytes
  parameter int LINK_BYTES = 1,      // bytes per cycle on s_rx and frm_rdata, 1..64
  parameter int OFF_W = $clog2(MAX_PAYLOAD)  // payload offset bits; leave at the default
) (
  input  logic             clk,
  input  logic             rst,
  input  logic [8*LINK_BYTES-1:0] s_rx_data,
  input  logic [LINK_BYTES-1:0]   s_rx_valid,
  output logic [LINK_BYTES-1:0]   s_rx_ready,
  output logic             m_frm_valid,
  input  logic             m_frm_ready,
  output logic [7:0]       m_frm_seq,
  output logic [15:0]      m_frm_len,
  output logic [7:0]       m_frm_status,  // DEV_OK, DEV_ERR_CRC or DEV_ERR_LENGTH
  input  logic             frm_re,
  input  logic [OFF_W-1:0] frm_raddr,
  output logic [8*LINK_BYTES-1:0] frm_rdata,
  output logic             drop  // a byte was dropped while hunting for SOF
);

  if (MAX_PAYLOAD < 2 || MAX_PAYLOAD > 65535) begin : g_bad_cfg
    initial $fatal(1, "ntpu_link_rx: MAX_PAYLOAD must be 2..65535");
  end
  if (LINK_BYTES < 1 || LINK_BYTES > 64) begin : g_bad_width
    initial $fatal(1, "ntpu_link_rx: LINK_BYTES must be 1..64");
  end
  localparam int W = LINK_BYTES;
  localparam int KW = $clog2(W + 1);  // a byte count 0..W

  localparam int BUF_DEPTH = 2 * MAX_PAYLOAD;
  localparam int BUF_AW = $clog2(BUF_DEPTH);

  typedef enum logic [3:0] {
    S_HUNT, S_SEQ, S_LEN0, S_LEN1, S_PAYLOAD, S_CRC, S_CHECK
  } state_e;

  state_e state_q, state_d;
  logic [7:0] seq_q;
  logic [7:0] len_lo_q;
  logic [15:0] len_q;
  logic [15:0] cnt_q, cnt_d;  // payload or CRC bytes received so far

  // Frame slots: the metadata of each buffer. wr_q is the slot being filled, rd_q the oldest held.
  logic [1:0] nheld_q;
  logic wr_q, rd_q;
  logic [7:0] slot_seq_q [2];
  logic [15:0] slot_len_q [2];
  logic [7:0] slot_status_q [2];

  logic take;          // at least one byte moves on s_rx (byte 0 is s_rx_data[7:0])
  logic [7:0] rx_b0;
  logic [23:0] rx_b012;                 // bytes 0..2 (zero past W)
  logic hdr3;                           // SEQ and both LEN bytes move at once (W >= 3)
  logic [15:0] len_hdr3;                // ... and this is LEN
  logic [KW-1:0] rdy_n, vld_n, take_n;  // bytes the receiver would take, offered, taken
  logic [15:0] pay_left;                // payload bytes still to come
  logic commit;        // the frame in slot wr_q is complete
  logic [7:0] commit_status;
  logic release_frm;
  logic [15:0] len_rx; // LEN as it completes in S_LEN1
  logic crc_clear, crc_en;
  logic [31:0] crc;
  logic buf_we;

  assign rx_b012 = 24'(s_rx_data);
  assign rx_b0 = rx_b012[7:0];
  assign len_hdr3 = rx_b012[23:8];
  assign len_rx = {rx_b0, len_lo_q};
  assign release_frm = m_frm_valid && m_frm_ready;
  // Plain assigns, not part of the FSM's always_comb: handshakes must not glitch (see ntpu_link_tx).
  assign pay_left = len_q - cnt_q;
  // SEQ with both LEN bytes claims a slot like LEN's high byte, so it waits for a free one. The
  // W > 1 terms are constants on the boards (W = 1), so the wide counts fold away there.
  assign rdy_n = (state_q == S_CHECK || (state_q == S_LEN1 && nheld_q == 2'd2)) ? KW'(0)
               : (W > 1 && state_q == S_PAYLOAD) ? ((pay_left < 16'(W)) ? KW'(pay_left) : KW'(W))
               : (W > 1 && state_q == S_CRC) ? ((16'd4 - cnt_q < 16'(W)) ? KW'(16'd4 - cnt_q) : KW'(W))
               : (W >= 3 && state_q == S_SEQ && nheld_q != 2'd2) ? KW'(3) : KW'(1);
  // Thermometer codes: a shift (by W leaves all ones); the count: its set bits.
  assign s_rx_ready = ~({W{1'b1}} << rdy_n);
  assign vld_n = KW'($countones(s_rx_valid));
  assign take_n = (vld_n < rdy_n) ? vld_n : rdy_n;
  assign take = (take_n != '0);
  // Bytes taken, read only with `take`: 1 at W = 1.
  logic [KW-1:0] step;
  assign step = (W == 1) ? KW'(1) : take_n;
  assign hdr3 = (W >= 3) && take_n == KW'(3);

  always_comb begin
    state_d = state_q;
    cnt_d = cnt_q;
    commit = 1'b0;
    commit_status = DEV_OK;
    crc_clear = 1'b0;
    crc_en = 1'b0;
    buf_we = 1'b0;
    drop = 1'b0;
    case (state_q)
      S_HUNT: begin
        if (take) begin
          if (rx_b0 == SOF_CMD) begin
            state_d = S_SEQ;
            crc_clear = 1'b1;
          end else begin
            drop = 1'b1;
          end
        end
      end
      S_SEQ: begin
        crc_en = take;
        if (W >= 3) cnt_d = '0;  // straight on to the payload (S_LEN1 clears it otherwise)
        if (hdr3) begin
          if (len_hdr3 == 16'd0 || len_hdr3 > 16'(MAX_PAYLOAD)) begin
            commit = 1'b1;
            commit_status = DEV_ERR_LENGTH;
            state_d = S_HUNT;
          end else begin
            state_d = S_PAYLOAD;
          end
        end else if (take && take_n == KW'(1)) begin
          state_d = S_LEN0;
        end else if (take) begin
          state_d = S_LEN1;
        end
      end
      S_LEN0: begin
        crc_en = take;
        if (take) state_d = S_LEN1;
      end
      S_LEN1: begin
        // The frame claims a slot here (s_rx_ready waits for one), so a bad LEN can be answered
        // without waiting for a buffer.
        crc_en = take;
        cnt_d = '0;
        if (take) begin
          if (len_rx == 16'd0 || len_rx > 16'(MAX_PAYLOAD)) begin
            commit = 1'b1;
            commit_status = DEV_ERR_LENGTH;
            state_d = S_HUNT;
          end else begin
            state_d = S_PAYLOAD;
          end
        end
      end
      S_PAYLOAD: begin
        crc_en = take;
        buf_we = take;
        if (take) begin
          cnt_d = cnt_q + 16'(step);
          if (cnt_q + 16'(step) == len_q) begin
            cnt_d = '0;
            state_d = S_CRC;
          end
        end
      end
      S_CRC: begin
        crc_en = take;
        if (take) begin
          cnt_d = cnt_q + 16'(step);
          if (cnt_q + 16'(step) == 16'd4) state_d = S_CHECK;
        end
      end
      S_CHECK: begin
        // The CRC register has taken the last byte; a wrong frame is kept out of execution here.
        commit = 1'b1;
        commit_status = (crc == CRC_RESIDUE) ? DEV_OK : DEV_ERR_CRC;
        state_d = S_HUNT;
      end
      default: state_d = S_HUNT;
    endcase
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      state_q <= S_HUNT;
    end else begin
      state_q <= state_d;
    end
  end

  always_ff @(posedge clk) begin
    cnt_q <= cnt_d;
    if (take && state_q == S_SEQ) seq_q <= rx_b0;
    if (take && state_q == S_LEN0) len_lo_q <= rx_b0;
    if (W > 1 && take && state_q == S_SEQ) len_lo_q <= rx_b012[15:8];  // used only if it was LEN's low byte
    if (hdr3 && state_q == S_SEQ) len_q <= len_hdr3;
    if (take && state_q == S_LEN1) len_q <= len_rx;
  end

  // Slot bookkeeping. A commit and a release may happen in the same cycle.
  always_ff @(posedge clk) begin
    if (rst) begin
      nheld_q <= '0;
      wr_q <= 1'b0;
      rd_q <= 1'b0;
    end else begin
      if (commit) wr_q <= ~wr_q;
      if (release_frm) rd_q <= ~rd_q;
      nheld_q <= nheld_q + {1'b0, commit} - {1'b0, release_frm};
    end
  end

  always_ff @(posedge clk) begin
    if (commit) begin
      slot_seq_q[wr_q] <= (W >= 3 && state_q == S_SEQ) ? rx_b0 : seq_q;  // S_SEQ: SEQ and LEN at once
      slot_status_q[wr_q] <= commit_status;
      // An ERR_LENGTH frame commits in S_LEN1 (or S_SEQ, with SEQ and LEN at once), before len_q
      // has taken the bytes.
      slot_len_q[wr_q] <= (state_q == S_LEN1) ? len_rx : (W >= 3 && state_q == S_SEQ) ? len_hdr3 : len_q;
    end
  end

  assign m_frm_valid = (nheld_q != 2'd0);
  assign m_frm_seq = slot_seq_q[rd_q];
  assign m_frm_len = slot_len_q[rd_q];
  assign m_frm_status = slot_status_q[rd_q];

  ntpu_crc32 #(
    .BYTES(W)
  ) u_crc (
    .clk  (clk),
    .rst  (rst),
    .clear(crc_clear),
    .en   (crc_en),
    .count(take_n),
    .data (s_rx_data),
    .crc  (crc)
  );

  // Slot s occupies bytes [s * MAX_PAYLOAD, (s + 1) * MAX_PAYLOAD) of the buffer.
  logic [BUF_AW-1:0] buf_waddr, buf_raddr;
  assign buf_waddr = (wr_q ? BUF_AW'(MAX_PAYLOAD) : '0) + BUF_AW'(cnt_q);
  assign buf_raddr = (rd_q ? BUF_AW'(MAX_PAYLOAD) : '0) + BUF_AW'(frm_raddr);

  if (W == 1) begin : g_byte
    ntpu_ram #(
      .WIDTH(8),
      .DEPTH(BUF_DEPTH)
    ) u_buf (
      .clk  (clk),
      .we   (buf_we),
      .waddr(buf_waddr),
      .wdata(s_rx_data),
      .re   (frm_re),
      .raddr(buf_raddr),
      .rdata(frm_rdata)
    );
  end else begin : g_wide
    // The wide link (W > 1; every board's link is byte-wide): a byte array written and read W bytes
    // at a time from any offset. W spare bytes at the end keep every access inside the array.
    logic [7:0] mem [BUF_DEPTH + W];
    initial begin
      for (int i = 0; i < BUF_DEPTH + W; i++) mem[i] = '0;
    end
    // The enables outside the loops: Verilator then skips them on idle cycles. The write is a
    // blocking one after the read (only this block reads mem, so it is the same as a nonblocking
    // one): Verilator then queues no W delayed byte writes and checks no W flags every cycle.
    always_ff @(posedge clk) begin
      if (frm_re) begin
        for (int i = 0; i < W; i++) begin
          frm_rdata[8*i +: 8] <= mem[32'(buf_raddr) + i];
        end
      end
      if (buf_we) begin
        for (int i = 0; i < W; i++) begin
          /* verilator lint_off BLKSEQ */
          if (KW'(i) < take_n) mem[32'(buf_waddr) + i] = s_rx_data[8*i +: 8];
          /* verilator lint_on BLKSEQ */
        end
      end
    end
  end


endmodule

`default_nettype wire
