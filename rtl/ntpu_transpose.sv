// SPDX-License-Identifier: Apache-2.0
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
// The buffers are shift registers, so no lane needs an N-way multiplexer.
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
  localparam int COL_W = N * 16;         // one column: element i at [16*i +: 16]
  localparam int REST_W = (N - 1) * COL_W;

  // Each buffer is kept column by column: head holds the column that goes out next, rest the
  // others, column c+1 at [c*COL_W +: COL_W]. Taking a row shifts every column down one element
  // and puts the row's lane c on top of column c, so after N rows element i of column c is lane c
  // of row i; sending a column moves the next one into head.
  //
  // Simulation speed: the outside reads only head, and each part is one vector updated by one
  // assignment under one enable, so that Verilator does no work for an idle buffer (otherwise it
  // may keep a shadow copy of all 2N^2 elements every cycle).
  logic [COL_W-1:0]      head0_q, head1_q;
  logic [REST_W-1:0]     rest0_q, rest1_q;
  logic [1:0][CNT_W-1:0] cnt_q;           // filling: rows in; full: columns left
  logic [1:0]            full_q;          // 1: complete, draining
  logic                  wsel_q, rsel_q;  // buffer being filled, buffer being drained
  logic                  take, give;
  logic                  fill0, fill1, drain0, drain1;

  assign s_row_ready = !full_q[wsel_q];
  assign m_col_valid = full_q[rsel_q];
  assign m_col_data = rsel_q ? head1_q : head0_q;
  assign take = s_row_valid && s_row_ready;
  assign give = m_col_valid && m_col_ready;
  assign fill0 = take && !wsel_q;
  assign fill1 = take && wsel_q;
  assign drain0 = give && !rsel_q;
  assign drain1 = give && rsel_q;

  always_ff @(posedge clk) begin
    if (rst) begin
      wsel_q <= 1'b0;
      rsel_q <= 1'b0;
      full_q <= '0;
      cnt_q <= '0;
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

  // Taking a row moves every column of rest down one element and puts lane c of the row on top of
  // column c: rest shifted down 16 bits, where each column's top 16 bits (the low element of the
  // column above, or zeros) are replaced by row_tops. Sending a column moves the next one into
  // the place of the one before. Plain vector expressions rather than a function with a loop: a
  // Verilated model zeroes a function's wide locals on every evaluation, which cost ~10 % of the
  // core's simulation time (docs/decisions/0010-fast-vsim.md).
  localparam logic [COL_W-1:0] COL_LOW = {16'h0000, {(COL_W - 16){1'b1}}};  // all but the top
  localparam logic [REST_W-1:0] REST_LOW = {(N - 1){COL_LOW}};

  logic [REST_W-1:0] row_tops;  // lane c of s_row_data at the top of column c, zeros elsewhere
  for (genvar c = 1; c < N; c++) begin : g_tops
    assign row_tops[(c-1)*COL_W +: COL_W] = {s_row_data[16*c +: 16], {(COL_W - 16){1'b0}}};
  end

  always_ff @(posedge clk) begin
    if (fill0 || drain0) begin
      head0_q <= fill0 ? {s_row_data[15:0], head0_q[COL_W-1:16]} : rest0_q[COL_W-1:0];
    end
  end

  always_ff @(posedge clk) begin
    if (fill0 || drain0) rest0_q <= fill0 ? ((rest0_q >> 16) & REST_LOW) | row_tops : rest0_q >> COL_W;
  end

  always_ff @(posedge clk) begin
    if (fill1 || drain1) begin
      head1_q <= fill1 ? {s_row_data[15:0], head1_q[COL_W-1:16]} : rest1_q[COL_W-1:0];
    end
  end

  always_ff @(posedge clk) begin
    if (fill1 || drain1) rest1_q <= fill1 ? ((rest1_q >> 16) & REST_LOW) | row_tops : rest1_q >> COL_W;
  end

endmodule

`default_nettype wire
