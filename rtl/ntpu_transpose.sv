// ntpu_transpose: turns each block of N rows (N lanes of 16 bits) into its N columns, as rows, for
// MATMUL TRANSPOSE_A (docs/isa.md): out row c of a block has lane i = lane c of in row i.
//
// Contract:
// - s_row and m_col are valid/ready streams. Rows are grouped in blocks of N in arrival order; the
//   columns of a block leave in order c = 0 .. N-1, after its last row is in.
// - Two block buffers: one fills while the other drains, so one row per cycle in and out is
//   sustained. s_row_ready depends only on state (a buffer is free); m_col_valid and m_col_data
//   come straight from registers (m_col_data through a 2:1 buffer select).
// - Latency: a block's column 0 is valid in the cycle after its row N-1 is taken.
// - No reset of the data; rst empties both buffers.
//
// The buffers are shift registers, so no lane needs an N-way multiplexer: a row enters at the
// bottom and the buffer moves up a row; a column leaves from the left edge and the buffer moves
// left a column.
`default_nettype none

module ntpu_transpose #(
  parameter int N = 8  // block size, 2..32
) (
  input  logic            clk,
  input  logic            rst,
  input  logic            s_row_valid,
  output logic            s_row_ready,
  input  logic [N*16-1:0] s_row_data,   // lane i at [16*i +: 16]
  output logic            m_col_valid,
  input  logic            m_col_ready,
  output logic [N*16-1:0] m_col_data    // lane i = element i of the column
);

  if (N < 2 || N > 32) begin : g_bad_n
    initial $fatal(1, "ntpu_transpose: N must be 2..32");
  end

  localparam int CNT_W = $clog2(N + 1);

  // buf_q[b][i] is row i of buffer b as it was taken, shifted left by the columns already sent.
  logic [N*16-1:0] buf_q [2][N];
  logic [CNT_W-1:0] cnt_q [2];  // filling: rows in; full: columns left
  logic full_q [2];             // 1: complete, draining
  logic wsel_q, rsel_q;         // buffer being filled, buffer being drained
  logic take, give;

  assign s_row_ready = !full_q[wsel_q];
  assign m_col_valid = full_q[rsel_q];
  assign take = s_row_valid && s_row_ready;
  assign give = m_col_valid && m_col_ready;

  for (genvar i = 0; i < N; i++) begin : g_out
    assign m_col_data[16*i +: 16] = buf_q[rsel_q][i][15:0];
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      wsel_q <= 1'b0;
      rsel_q <= 1'b0;
      for (int b = 0; b < 2; b++) begin
        full_q[b] <= 1'b0;
        cnt_q[b] <= '0;
      end
    end else begin
      // The two events touch different buffers: a full buffer takes no rows.
      if (take) begin
        if (cnt_q[wsel_q] == CNT_W'(N - 1)) begin
          full_q[wsel_q] <= 1'b1;
          cnt_q[wsel_q] <= CNT_W'(N);
          wsel_q <= !wsel_q;
        end else begin
          cnt_q[wsel_q] <= cnt_q[wsel_q] + CNT_W'(1);
        end
      end
      if (give) begin
        if (cnt_q[rsel_q] == CNT_W'(1)) begin
          full_q[rsel_q] <= 1'b0;
          cnt_q[rsel_q] <= '0;
          rsel_q <= !rsel_q;
        end else begin
          cnt_q[rsel_q] <= cnt_q[rsel_q] - CNT_W'(1);
        end
      end
    end
  end

  for (genvar b = 0; b < 2; b++) begin : g_buf
    logic fill, drain;
    assign fill = take && (wsel_q == 1'(b));
    assign drain = give && (rsel_q == 1'(b));

    always_ff @(posedge clk) begin
      if (fill) begin
        for (int i = 0; i < N - 1; i++) buf_q[b][i] <= buf_q[b][i+1];
        buf_q[b][N-1] <= s_row_data;
      end else if (drain) begin
        for (int i = 0; i < N; i++) buf_q[b][i] <= {16'd0, buf_q[b][i][N*16-1:16]};
      end
    end
  end

endmodule

`default_nettype wire
