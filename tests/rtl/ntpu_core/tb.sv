// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_core with the real array and the 1.1 units (transposer, vector unit), in two
// configurations side by side (gen.c's configs[]):
// N = 4 with UB 48 / WB 20 / ACC 40 / OS 24 rows (OS: 1.4's OPTIM ADAM) and max_payload 201, and
// N = 3 with UB 40 / WB 14 / ACC 33 and max_payload 127 (odd lanes, memories not powers of two).
// Each run streams gen.c's command frames into s_rx with random gaps and takes the replies with
// random m_tx_ready, in phases from none to heavy stalls on either side. Every reply byte is
// checked against gen.c's device model (bytes the ISA leaves open are masked there), every reply
// frame's SOF and CRC are checked here, m_tx must hold while stalled, and the core must never go
// quiet while replies are still owed.
`default_nettype none
`timescale 1ns / 1ps

module tb_core_run #(
  parameter int N = 4,             // the core's parameters; the files are n<N>_*.hex
  parameter int UB_ROWS = 48,
  parameter int WB_ROWS = 20,
  parameter int ACC_ROWS = 40,
  parameter int MAX_PAYLOAD = 201,
  parameter int VEC_EN = 1,
  parameter int TRANSPOSE_A_EN = 1,
  parameter int COUNTER_W = 64,
  parameter int PE_STAGES = 1,
  parameter int BF16_SHARED = 0,
  parameter int SEG_DEPTH = 4,
  parameter int OS_ROWS = 0
) (
  input  logic clk,
  output logic done,    // 1 once every reply came or the core went quiet
  output int   errors,
  output int   cov_hazard,
  output int   cov_overlap,
  output int   cov_b2b,
  output int   cov_rx_full,
  output int   cov_tr_rows,  // MATMUL TRANSPOSE_A rows into the array
  output int   cov_vhazard   // cycles a vector row waits for an earlier row's write
);
  localparam int MAX_BYTES = 1 << 20;
  localparam int QUIET_LIMIT = 20000;  // cycles without a byte moving before calling it a hang

  logic rst = 1'b1;
  logic [7:0] s_rx_data;
  logic s_rx_valid, s_rx_ready;
  logic [7:0] m_tx_data;
  logic m_tx_valid, m_tx_ready;

  ntpu_core #(
    .N          (N),
    .UB_ROWS    (UB_ROWS),
    .WB_ROWS    (WB_ROWS),
    .ACC_ROWS   (ACC_ROWS),
    .MAX_PAYLOAD(MAX_PAYLOAD),
    .VEC_EN     (VEC_EN),
    .TRANSPOSE_A_EN(TRANSPOSE_A_EN),
    .COUNTER_W  (COUNTER_W),
    .PE_STAGES  (PE_STAGES),
    .BF16_SHARED(BF16_SHARED),
    .SEG_DEPTH  (SEG_DEPTH),
    .OS_ROWS    (OS_ROWS)
  ) dut (
    .clk       (clk),
    .rst       (rst),
    .s_rx_data (s_rx_data),
    .s_rx_valid(s_rx_valid),
    .s_rx_ready(s_rx_ready),
    .m_tx_data (m_tx_data),
    .m_tx_valid(m_tx_valid),
    .m_tx_ready(m_tx_ready)
  );

  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_core N=%0d: %s", N, msg);
    if (errors > 50) $fatal(1, "FAIL ntpu_core N=%0d: too many errors", N);
  endtask

  // Static: an automatic function with a loop breaks Icarus 11 (see rtl/ntpu_crc32.sv).
  function logic [31:0] crc_byte(input logic [31:0] c_in, input logic [7:0] d);
    logic [31:0] c;
    c = c_in ^ {24'd0, d};
    for (int i = 0; i < 8; i++) c = c[0] ? ((c >> 1) ^ 32'hEDB88320) : (c >> 1);
    return c;
  endfunction

  logic [7:0] in_bytes [0:MAX_BYTES-1];
  logic [8:0] want [0:MAX_BYTES-1];  // {care, byte}
  int nin = 0, nout = 0, nrep = 0;
  int sent = 0, got = 0, replies = 0, quiet = 0, cycles = 0;
  int rx_gap_pct = 0, tx_stall_pct = 0;
  logic was_stalled = 1'b0;
  logic [7:0] stalled_data;

  // Reply framing, to check SOF and CRC independently of the expected bytes.
  int fr_pos = 0, fr_len = 0;
  logic [31:0] fr_crc, fr_got_crc;

  task automatic frame_byte(input logic [7:0] b);
    if (fr_pos == 0) begin
      if (b !== 8'h5A) fail($sformatf("reply %0d: SOF %02h", replies, b));
      fr_crc = 32'hFFFFFFFF;
    end else if (fr_pos < 4 + fr_len) begin
      fr_crc = crc_byte(fr_crc, b);
      if (fr_pos == 2) fr_len = b;
      if (fr_pos == 3) fr_len = fr_len | (int'(b) << 8);
    end else begin
      fr_got_crc[8*(fr_pos-4-fr_len) +: 8] = b;
    end
    fr_pos++;
    if (fr_pos > 3 && fr_pos == 8 + fr_len) begin
      if (fr_got_crc !== ~fr_crc) fail($sformatf("reply %0d: bad CRC", replies));
      replies++;
      fr_pos = 0;
      fr_len = 0;
    end
  endtask

  // Coverage of the overlap and hazard paths the link can reach; tests/rtl/ntpu_seq covers weight
  // stalls and full hazard slots, which need commands faster than a byte-wide link brings them.
  logic a_valid_q = 1'b0;
  always @(posedge clk) begin
    if (!rst) begin
      if (dut.u_seq.stall_hazard) cov_hazard++;
      if (dut.w_valid && dut.u_seq.mm_busy_q && !dut.u_seq.ld_zero_q) cov_overlap++;
      // A row of a new MATMUL right behind the previous one's last row.
      if (dut.a_valid && a_valid_q && dut.u_seq.mm_busy_q && dut.u_seq.mm_left_q == 16'd1) cov_b2b++;
      if (s_rx_valid && !s_rx_ready && dut.u_rx.state_q == 4'd3) cov_rx_full++;
      if (dut.u_seq.mm_issue && dut.u_seq.mm_tr_q) cov_tr_rows++;
      if (dut.vs_stall_hazard) cov_vhazard++;
      a_valid_q <= dut.a_valid;
    end
  end

  always @(posedge clk) begin
    if (!rst) begin
      cycles = cycles + 1;
      quiet = quiet + 1;
      // Host -> device: a raised valid holds with its byte until it moves.
      if (s_rx_valid && s_rx_ready) begin
        sent = sent + 1;
        quiet = 0;
      end
      if (!(s_rx_valid && !s_rx_ready)) begin
        if (sent < nin && ($urandom % 100) >= rx_gap_pct) begin
          s_rx_valid <= 1'b1;
          s_rx_data <= in_bytes[sent];
        end else begin
          s_rx_valid <= 1'b0;
          s_rx_data <= $urandom;
        end
      end
      // Device -> host.
      if (was_stalled && (!m_tx_valid || m_tx_data !== stalled_data)) begin
        fail("m_tx_valid/m_tx_data changed while stalled");
      end
      was_stalled <= m_tx_valid && !m_tx_ready;
      stalled_data <= m_tx_data;
      if (m_tx_valid && m_tx_ready) begin
        quiet = 0;
        if (got >= nout) begin
          fail($sformatf("extra reply byte %02h", m_tx_data));
        end else if (want[got][8] && m_tx_data !== want[got][7:0]) begin
          fail($sformatf("reply byte %0d (reply %0d, byte %0d of it): %02h, want %02h", got, replies,
                         fr_pos, m_tx_data, want[got][7:0]));
        end
        frame_byte(m_tx_data);
        got = got + 1;
      end
      m_tx_ready <= ($urandom % 100) >= tx_stall_pct;
      // Phases of link behaviour.
      if (cycles % 4000 == 0) begin
        case ((cycles / 4000) % 6)
          0: begin rx_gap_pct = 0;  tx_stall_pct = 0;  end
          1: begin rx_gap_pct = 50; tx_stall_pct = 0;  end
          2: begin rx_gap_pct = 0;  tx_stall_pct = 60; end
          3: begin rx_gap_pct = 30; tx_stall_pct = 30; end
          4: begin rx_gap_pct = 0;  tx_stall_pct = 95; end
          default: begin rx_gap_pct = 90; tx_stall_pct = 10; end
        endcase
      end
    end
  end

  initial begin
    string dir, pre;
    int fd, w;
    done = 1'b0;
    errors = 0;
    cov_hazard = 0;
    cov_overlap = 0;
    cov_b2b = 0;
    cov_rx_full = 0;
    cov_tr_rows = 0;
    cov_vhazard = 0;
    if (!$value$plusargs("dir=%s", dir)) dir = ".";
    pre = $sformatf("%s/n%0d_", dir, N);
    fd = $fopen({pre, "counts.hex"}, "r");
    if (fd == 0 || $fscanf(fd, "%h %h %h", nin, nout, nrep) != 3) begin
      $fatal(1, "FAIL ntpu_core: %scounts.hex", pre);
    end
    $fclose(fd);
    fd = $fopen({pre, "in.hex"}, "r");
    for (int i = 0; i < nin; i++) begin
      if ($fscanf(fd, "%h", w) != 1) $fatal(1, "FAIL ntpu_core: %sin.hex", pre);
      in_bytes[i] = w[7:0];
    end
    $fclose(fd);
    fd = $fopen({pre, "exp.hex"}, "r");
    for (int i = 0; i < nout; i++) begin
      if ($fscanf(fd, "%h", w) != 1) $fatal(1, "FAIL ntpu_core: %sexp.hex", pre);
      want[i] = w[8:0];
    end
    $fclose(fd);

    s_rx_valid = 1'b0;
    s_rx_data = 8'h00;
    m_tx_ready = 1'b0;
    repeat (3) @(posedge clk);
    rst <= 1'b0;
    while (got < nout && quiet < QUIET_LIMIT) @(posedge clk);
    repeat (200) @(posedge clk);
    if (got != nout || sent != nin) begin
      fail($sformatf("hang: %0d of %0d bytes in, %0d of %0d out", sent, nin, got, nout));
    end
    if (replies != nrep) fail($sformatf("%0d replies, want %0d", replies, nrep));
    $display("ntpu_core N=%0d: %0d bytes in, %0d replies (%0d bytes), %0d cycles; coverage: %0d ACC-hazard",
             N, sent, replies, got, cycles, cov_hazard);
    $display("  stall cycles, %0d weight beats during a MATMUL, %0d back-to-back MATMUL rows, %0d cycles",
             cov_overlap, cov_b2b, cov_rx_full);
    $display("  with both frame buffers full, %0d transposed rows, %0d vector hazard stall cycles;",
             cov_tr_rows, cov_vhazard);
    $display("  %0d errors", errors);
    done = 1'b1;
  end
endmodule

module tb;
  logic clk = 1'b0;
  always #5 clk = ~clk;

  logic done4, done3, done2;
  int err4, err3, hz4, hz3, ov4, ov3, bb4, bb3, rf4, rf3, tr4, tr3, vh4, vh3;
  int err2, hz2, ov2, bb2, rf2, tr2, vh2;

  tb_core_run #(
    .N(4), .UB_ROWS(48), .WB_ROWS(20), .ACC_ROWS(40), .MAX_PAYLOAD(201), .OS_ROWS(24)
  ) u_n4 (
    .clk(clk), .done(done4), .errors(err4), .cov_hazard(hz4), .cov_overlap(ov4), .cov_b2b(bb4),
    .cov_rx_full(rf4), .cov_tr_rows(tr4), .cov_vhazard(vh4)
  );

  tb_core_run #(
    .N(3), .UB_ROWS(40), .WB_ROWS(14), .ACC_ROWS(33), .MAX_PAYLOAD(127)
  ) u_n3 (
    .clk(clk), .done(done3), .errors(err3), .cov_hazard(hz3), .cov_overlap(ov3), .cov_b2b(bb3),
    .cov_rx_full(rf3), .cov_tr_rows(tr3), .cov_vhazard(vh3)
  );

  // The board configuration's options: no vector unit (its opcodes are unknown), no TRANSPOSE_A (the
  // flag is reserved), 24-bit counters, one shared fp32 adder in 4 stages, 2 MATMULs in flight.
  tb_core_run #(
    .N(2), .UB_ROWS(24), .WB_ROWS(12), .ACC_ROWS(20), .MAX_PAYLOAD(97), .VEC_EN(0), .TRANSPOSE_A_EN(0),
    .COUNTER_W(24),
    .PE_STAGES(5), .BF16_SHARED(1), .SEG_DEPTH(2)
  ) u_n2 (
    .clk(clk), .done(done2), .errors(err2), .cov_hazard(hz2), .cov_overlap(ov2), .cov_b2b(bb2),
    .cov_rx_full(rf2), .cov_tr_rows(tr2), .cov_vhazard(vh2)
  );

  initial begin
    #1;
    wait (done4 === 1'b1 && done3 === 1'b1 && done2 === 1'b1);
    if (hz4 + hz3 == 0 || ov4 + ov3 == 0 || bb4 + bb3 == 0 || rf4 + rf3 == 0 ||
        tr4 == 0 || tr3 == 0 || tr2 != 0 || vh4 == 0 || vh3 == 0 || vh2 != 0) begin
      $display("FAIL ntpu_core: the streams no longer reach every sequencer and receiver path");
      $fatal(1, "FAIL ntpu_core: coverage");
    end
    if (err4 != 0 || err3 != 0 || err2 != 0) $fatal(1, "FAIL ntpu_core: %0d errors", err4 + err3 + err2);
    $display({"PASS ntpu_core: N=4, N=3 and N=2 without the vector unit and TRANSPOSE_A, ",
              "every reply byte as the model says"});
    $finish;
  end
endmodule

`default_nettype wire
