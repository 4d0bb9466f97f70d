// SPDX-License-Identifier: Apache-2.0
// ntpu_bf16_shared: the bf16 rows of ntpu_array with BF16_SHARED = 1, on one bf16 multiplier and one
// pipelined fp32 adder for the whole array instead of one of each per PE (small FPGAs).
//
// For a row that enters with a_valid, for every column n:
//   acc = a_acc[n]; for i = 0 .. N-1: acc = ntpu_mac_bf16(acc, a_row[i], W[i][n]); y_row[n] = acc
// exactly the PE array's chain, additions in the same order, so the results are the same bit for bit.
// The N columns are independent chains: step i of column n issues in cycle 1 + i*P + n after
// a_valid (P = max(N, STAGES+1): the next step of a column waits for its previous sum), the product
// is registered, the add takes STAGES cycles (ntpu_fp32_add_pipe; 0 = the combinational
// ntpu_fp32_add) and the sum is registered back into column n's accumulator.
//
// Latency: y_valid (with y_row) is high exactly LATENCY = 2 + (N-1)*P + N + STAGES cycles after
// a_valid. One row at a time: the next a_valid (of either dtype, see ntpu_array) comes LATENCY
// cycles later or more. The weights (w_all) are read from cycle 1 to LATENCY-2 after a_valid, so a
// buffer may take its tile's last beat in the cycle of a_valid and its next beat LATENCY-1 later.
// Only the control state (run, tags, y_valid) has a reset.
`default_nettype none

module ntpu_bf16_shared #(
  parameter int N = 2,      // array size
  parameter int STAGES = 3  // registers inside the fp32 adder, 0..4
) (
  input  logic              clk,
  input  logic              rst,
  input  logic [N*N*32-1:0] w_all,    // PE(i,n)'s buffer b at [((i*N + n)*2 + b)*16 +: 16]
  input  logic              a_valid,  // a bf16 row
  input  logic              a_buf,
  input  logic [N*16-1:0]   a_row,
  input  logic [N*32-1:0]   a_acc,
  output logic              y_valid,
  output logic [N*32-1:0]   y_row
);
  localparam int P = (N > STAGES + 1) ? N : STAGES + 1;  // cycles between a column's steps
  localparam int K_W = $clog2(P + 1);
  localparam int I_W = $clog2(N + 1);
  localparam int T = (STAGES > 0) ? STAGES : 1;           // tag stages (unused when STAGES = 0)

  if (STAGES < 0 || STAGES > 4) begin : g_bad_cfg
    initial $fatal(1, "ntpu_bf16_shared: STAGES must be 0..4");
  end

  logic            run_q;          // steps left to issue
  logic [K_W-1:0]  k_q;            // slot in the period: column k_q issues when k_q < N
  logic [I_W-1:0]  i_q;            // step (PE row)
  logic            buf_q;
  logic [N*16-1:0] row_q;
  logic [N*32-1:0] acc_q;
  logic            issue, last;

  assign issue = run_q && (k_q < K_W'(N));
  assign last = issue && (i_q == I_W'(N - 1)) && (k_q == K_W'(N - 1));

  always_ff @(posedge clk) begin
    if (rst) begin
      run_q <= 1'b0;
    end else if (a_valid) begin
      run_q <= 1'b1;
    end else if (last) begin
      run_q <= 1'b0;
    end
  end

  always_ff @(posedge clk) begin
    if (a_valid) begin
      k_q <= '0;
      i_q <= '0;
    end else if (k_q == K_W'(P - 1)) begin
      k_q <= '0;
      i_q <= i_q + I_W'(1);
    end else begin
      k_q <= k_q + K_W'(1);
    end
  end

  // ---------------------------------------------------------------- issue: product of step (i, k)
  logic [15:0] a_sel, w_sel;
  logic [31:0] prod, prod_q;
  logic [31:0] x_sel, sum;
  logic        v0_q, last0_q;          // the product register holds a step
  logic [I_W-1:0] n0_q;                // ... of this column
  logic        v_w, last_w;            // the sum being written back this cycle
  logic [I_W-1:0] n_w;

  assign a_sel = row_q[16*i_q +: 16];
  assign w_sel = w_all[((32'(i_q) * N + 32'(k_q)) * 2 + 32'(buf_q)) * 16 +: 16];

  ntpu_bf16_mul u_mul (
    .en(1'b1),
    .a (a_sel),
    .b (w_sel),
    .p (prod)
  );

  always_ff @(posedge clk) begin
    prod_q <= prod;
    n0_q <= I_W'(k_q);
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      v0_q <= 1'b0;
      last0_q <= 1'b0;
    end else begin
      v0_q <= issue;
      last0_q <= last;
    end
  end

  // ---------------------------------------------------------------- the add and its tags
  assign x_sel = acc_q[32*n0_q +: 32];

  if (STAGES == 0) begin : g_comb
    ntpu_fp32_add u_add (
      .en(1'b1),
      .x (x_sel),
      .y (prod_q),
      .s (sum)
    );
    assign {v_w, last_w, n_w} = {v0_q, last0_q, n0_q};
  end else begin : g_pipe
    logic           v_q [T];
    logic           last_q [T];
    logic [I_W-1:0] n_q [T];

    ntpu_fp32_add_pipe #(
      .STAGES(STAGES)
    ) u_add (
      .clk(clk),
      .x  (x_sel),
      .y  (prod_q),
      .s  (sum)
    );

    always_ff @(posedge clk) begin
      if (rst) begin
        for (int k = 0; k < T; k++) begin
          v_q[k] <= 1'b0;
          last_q[k] <= 1'b0;
        end
      end else begin
        v_q[0] <= v0_q;
        last_q[0] <= last0_q;
        for (int k = 1; k < T; k++) begin
          v_q[k] <= v_q[k-1];
          last_q[k] <= last_q[k-1];
        end
      end
    end

    always_ff @(posedge clk) begin
      n_q[0] <= n0_q;
      for (int k = 1; k < T; k++) begin
        n_q[k] <= n_q[k-1];
      end
    end

    assign {v_w, last_w, n_w} = {v_q[T-1], last_q[T-1], n_q[T-1]};
  end

  // ---------------------------------------------------------------- accumulators
  always_ff @(posedge clk) begin
    if (a_valid) begin
      buf_q <= a_buf;
      row_q <= a_row;
      acc_q <= a_acc;
    end else if (v_w) begin
      acc_q[32*n_w +: 32] <= sum;
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      y_valid <= 1'b0;
    end else begin
      y_valid <= v_w && last_w;
    end
  end

  assign y_row = acc_q;
endmodule

`default_nettype wire
