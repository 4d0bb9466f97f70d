// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_transpose at N = 8, 3 and 2 (instances side by side): random rows go in with
// random gaps, columns come out with random stalls, in phases from none to heavy. Every column is
// checked against the rows the bench sent, and m_col_valid/m_col_data must hold while stalled. In
// the phases without stalls the stream must never wait: one row per cycle in and out.
`default_nettype none
`timescale 1ns / 1ps

module tb_transpose_run #(
  parameter int N = 8,       // block size
  parameter int BLOCKS = 3000
) (
  input  logic clk,
  input  logic rst,
  output logic done,
  output int   errors
);
  localparam int PHASE = 200;  // blocks per phase

  logic            s_row_valid, s_row_ready, m_col_valid, m_col_ready;
  logic [N*16-1:0] s_row_data, m_col_data;

  ntpu_transpose #(
    .N(N)
  ) dut (
    .clk        (clk),
    .rst        (rst),
    .s_row_valid(s_row_valid),
    .s_row_ready(s_row_ready),
    .s_row_data (s_row_data),
    .m_col_valid(m_col_valid),
    .m_col_ready(m_col_ready),
    .m_col_data (m_col_data)
  );

  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) $display("FAIL ntpu_transpose N=%0d: %s", N, msg);
  endtask

  logic [N*16-1:0] rows [0:BLOCKS*N-1];
  int sent, got, stall_cycles_free;
  int gap_pct, ready_pct;  // set by the phase of the block being sent
  logic was_stalled;
  logic [N*16-1:0] stalled_data;

  initial begin
    errors = 0;
    for (int r = 0; r < BLOCKS * N; r++) begin
      for (int i = 0; i < N; i++) begin
        // Mostly random; some rows of a single repeated value so that lane mix-ups show.
        rows[r][16*i +: 16] = (r % 7 == 0) ? 16'(r) : 16'($urandom);
      end
    end
  end

  // Phases by block: 0 no stalls; 1 source gaps; 2 sink stalls; 3 both, heavy.
  function automatic int phase_of(input int row);
    return (row / N / PHASE) % 4;
  endfunction

  always @(posedge clk) begin
    if (rst) begin
      sent <= 0;
      got <= 0;
      s_row_valid <= 1'b0;
      m_col_ready <= 1'b0;
      was_stalled <= 1'b0;
      stall_cycles_free <= 0;
      done <= 1'b0;
    end else begin
      int p, s, g;
      s = sent;
      g = got;
      // Source: the row is taken this edge if valid && ready.
      if (s_row_valid && s_row_ready) s = s + 1;
      if (phase_of(sent) == 0 && phase_of(got) == 0 && got > N && s_row_valid && !s_row_ready) begin
        stall_cycles_free <= stall_cycles_free + 1;
      end
      // Sink: check the column taken this edge.
      if (was_stalled && (!m_col_valid || m_col_data !== stalled_data)) begin
        fail("m_col_valid/m_col_data changed while stalled");
      end
      was_stalled <= m_col_valid && !m_col_ready;
      stalled_data <= m_col_data;
      if (m_col_valid && m_col_ready) begin
        int blk, c;
        logic [N*16-1:0] want;
        blk = g / N;
        c = g % N;
        for (int i = 0; i < N; i++) want[16*i +: 16] = rows[blk * N + i][16*c +: 16];
        if (g >= BLOCKS * N) fail("extra column");
        else if (m_col_data !== want) begin
          fail($sformatf("block %0d column %0d: %h, want %h", blk, c, m_col_data, want));
        end
        g = g + 1;
      end
      sent <= s;
      got <= g;

      p = phase_of(s);
      gap_pct = (p == 1) ? 40 : (p == 3) ? 70 : 0;
      if (s_row_valid && !s_row_ready) begin
        // held: a source never withdraws
      end else if (s < BLOCKS * N && ($urandom % 100) >= gap_pct) begin
        s_row_valid <= 1'b1;
        s_row_data <= rows[s];
      end else begin
        s_row_valid <= 1'b0;
        s_row_data <= 'x;
      end
      p = phase_of(g);
      ready_pct = (p == 2) ? 50 : (p == 3) ? 25 : 100;
      m_col_ready <= ($urandom % 100) < ready_pct;
      if (g == BLOCKS * N) done <= 1'b1;
    end
  end

  // Reported by the top once done.
  function automatic int free_waits();
    return stall_cycles_free;
  endfunction
endmodule

module tb;
  logic clk = 1'b0;
  logic rst = 1'b1;
  logic done8, done3, done2;
  int err8, err3, err2;

  always #5 clk = ~clk;

  tb_transpose_run #(.N(8), .BLOCKS(3000)) u_n8 (.clk(clk), .rst(rst), .done(done8), .errors(err8));
  tb_transpose_run #(.N(3), .BLOCKS(6000)) u_n3 (.clk(clk), .rst(rst), .done(done3), .errors(err3));
  tb_transpose_run #(.N(2), .BLOCKS(8000)) u_n2 (.clk(clk), .rst(rst), .done(done2), .errors(err2));

  initial begin
    int cycles;
    repeat (3) @(posedge clk);
    rst <= 1'b0;
    cycles = 0;
    while (!(done8 && done3 && done2) && cycles < 200000) begin
      @(posedge clk);
      cycles++;
    end
    if (!(done8 && done3 && done2)) $fatal(1, "FAIL ntpu_transpose: timeout (%0d/%0d/%0d columns)",
                                           u_n8.got, u_n3.got, u_n2.got);
    if (u_n8.free_waits() + u_n3.free_waits() + u_n2.free_waits() != 0) begin
      $fatal(1, "FAIL ntpu_transpose: the stream waited without stalls (%0d/%0d/%0d)",
             u_n8.free_waits(), u_n3.free_waits(), u_n2.free_waits());
    end
    if (err8 + err3 + err2 != 0) $fatal(1, "FAIL ntpu_transpose: %0d errors", err8 + err3 + err2);
    $display("PASS ntpu_transpose: N=8, 3, 2: %0d, %0d, %0d blocks with random stalls, %0d cycles",
             3000, 6000, 8000, cycles);
    $finish;
  end
endmodule

`default_nettype wire
