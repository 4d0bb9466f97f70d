// SPDX-License-Identifier: Apache-2.0
// ntpu_array: the N×N weight-stationary systolic array of ntpu_pe (docs/isa.md, MATMUL).
//
// Computes, for each activation row that enters with a_valid, and for every column n,
//   acc = a_acc[n]; for i = 0 .. N-1: acc = mac(acc, a_row[i], W[i][n]); y_row[n] = acc
// with mac = ntpu_mac_bf16 (a_bf16 = 1) or ntpu_mac_int8 (a_bf16 = 0) of sim/ref/numerics.c and W
// the weight buffer a_buf. Rows enter whole and unskewed, one per cycle at most, back to back or with
// gaps, with no backpressure; dtype and buffer may change from one row to the next. The array skews
// them internally (PE row i sees lane i i cycles later, column n's chain starts n cycles later) and
// de-skews the results, so each y_row comes out whole.
//
// Latency: y_valid (with y_row) is high exactly LATENCY = 2*N cycles after the matching a_valid:
// one input register, i cycles of skew for lane i, one cycle per PE along the row and down the
// column, and N-1-n cycles of de-skew for column n. Throughput one row per cycle.
// With PE_STAGES = S > 1 (pipelined PEs for FPGAs, see ntpu_pe) a partial sum spends S cycles in
// each PE and meets its activation one cycle after the activation enters the PE, so lane i is
// skewed by i*S, column n's start value waits one cycle more, and LATENCY = N + 1 + N*S. The
// results are the same bit for bit, and the weight-load limits below hold as written.
// With BF16_SHARED = 1 (small FPGAs) the PEs are int8 only and single-cycle (LATENCY = 2N whatever
// PE_STAGES); bf16 rows go instead to ntpu_bf16_shared, one multiplier and one fp32 adder for the
// whole array (PE_STAGES - 1 registers in the adder), whose y_valid comes BF16_LATENCY cycles after
// a_valid. The driver must then keep the next row (of either dtype) at least BF16_LATENCY cycles
// after a bf16 row (so results leave in order, one at a time); ntpu_seq does it with BF16_GAP.
// Same results bit for bit; the weight-load limits hold with BF16_LATENCY for bf16 rows.
//
// Weight load: each w_valid beat shifts one WB row into buffer w_buf; a tile is N beats carrying WB
// rows wb_addr+N-1, ..., wb_addr+0 (reverse order), with gaps allowed between beats.
//   w_transpose = 0: the beat enters at the top (PE(0,n) takes lane n) and the buffer shifts down a
//                    row, so after N beats PE(i,n) holds WB[wb_addr+i][n].
//   w_transpose = 1: the beat enters at the left (PE(i,0) takes lane i) and the buffer shifts right
//                    a column, so after N beats PE(i,n) holds WB[wb_addr+n][i].
// Only buffer w_buf shifts; rows using the other buffer keep computing meanwhile.
//
// Requirements on the driver (the sequencer), not checked here (vsim's fast form checks the first):
//   - No row using buffer b may be inside the array while b shifts: every beat into b must come at
//     least LATENCY-1 cycles after the last a_valid with a_buf = b (waiting LATENCY is safe).
//   - A row using buffer b may enter (a_valid) in the cycle of the last beat of b's tile or later.
//   - The weights have no reset (datapath registers): a buffer is undefined until a tile is loaded.
//     The golden model starts with zero weights; whoever drives the array must load zeros, or never
//     use an unloaded buffer, to match it.
//
// Only y_valid depends on rst. All datapath registers (skew, PEs, weights) run without reset and
// without enables (except the weight shift), which is what FPGAs and Verilator both like.
`default_nettype none

module ntpu_array #(
  parameter int N = 8,                // rows = columns, 2..64
  parameter int PE_STAGES = 1,        // cycles per PE down a column, 1..5 (see the header)
  parameter int BF16_SHARED = 0,      // 1: one fp32 adder for all bf16 rows (see the header)
  parameter int BF16_GAP = 0          // with BF16_SHARED: what the driver keeps after a bf16 row
) (
  input  logic            clk,
  input  logic            rst,
  // Weight load: each beat shifts one WB row into the shadow buffer w_buf (0/1).
  input  logic            w_valid,
  input  logic            w_buf,
  input  logic            w_transpose,
  input  logic [N*16-1:0] w_row,      // lane j at [16*j +: 16]
  // Activations: one row per cycle when a_valid, no backpressure.
  input  logic            a_valid,
  input  logic            a_buf,      // weight buffer this row multiplies with
  input  logic            a_bf16,     // 1: bf16 operands / fp32 sums, 0: int8 / int32
  input  logic [N*16-1:0] a_row,      // lane i at [16*i +: 16]
  input  logic [N*32-1:0] a_acc,      // chain start value of column n at [32*n +: 32]
  output logic            y_valid,    // exactly LATENCY cycles after the matching a_valid
  output logic [N*32-1:0] y_row       // column n's result at [32*n +: 32]
);
  localparam int PE_S = (BF16_SHARED != 0) ? 1 : PE_STAGES;  // cycles per PE
  localparam int PRE = (PE_S > 1) ? 1 : 0;  // the pipelined PE's product register
  localparam int LATENCY = N + PRE + N * PE_S;  // a_valid to its y_valid (see the header)
  // ntpu_bf16_shared's latency (its header), for bf16 rows when BF16_SHARED = 1
  localparam int SH_P = (N > PE_STAGES) ? N : PE_STAGES;
  localparam int BF16_LATENCY = 2 + (N - 1) * SH_P + N + PE_STAGES - 1;

  if (N < 2 || N > 64) begin : g_bad_cfg
    initial $fatal(1, "ntpu_array: N must be in 2..64");
  end
  if (PE_STAGES < 1 || PE_STAGES > 5) begin : g_bad_stages
    initial $fatal(1, "ntpu_array: PE_STAGES must be in 1..5");
  end
  if (BF16_SHARED != 0 && BF16_GAP < BF16_LATENCY) begin : g_bad_gap
    initial $fatal(1, "ntpu_array: BF16_GAP must be at least BF16_LATENCY = %0d", BF16_LATENCY);
  end
  /* verilator lint_off UNUSEDSIGNAL */
  // Nets between PEs. PE(i,n) reads a_h[i][n] etc. from the left and writes a_h[i][n+1]; reads
  // ps_v[i][n] from above and writes ps_v[i+1][n]. Every one is driven by a register, so no
  // combinational path crosses a PE; split_var lets Verilator order them element by element
  // instead of evaluating the whole array twice.
  logic [15:0]      a_h    [0:N-1][0:N] /*verilator split_var*/;
  logic             buf_h  [0:N-1][0:N] /*verilator split_var*/;
  logic             bf16_h [0:N-1][0:N] /*verilator split_var*/;
  logic [31:0]      ps_v   [0:N][0:N-1] /*verilator split_var*/;
  logic [1:0][15:0] w_q    [0:N-1][0:N-1] /*verilator split_var*/;  /* verilator lint_on UNUSEDSIGNAL */

  // y_valid: a_valid delayed LATENCY cycles (only int8 rows' with BF16_SHARED); the only state
  // with a reset.
  logic [LATENCY-1:0] valid_q;
  logic               pe_valid;
  logic [N*32-1:0]    pe_row;

  always_ff @(posedge clk) begin
    if (rst) begin
      valid_q <= '0;
    end else begin
      valid_q <= {valid_q[LATENCY-2:0], a_valid && (BF16_SHARED == 0 || !a_bf16)};
    end
  end

  assign pe_valid = valid_q[LATENCY-1];

  // With single-cycle PEs the datapath holds while no row is in flight: those cycles then do not
  // happen for it, which changes no result and saves simulation time (Verilator evaluates
  // everything every cycle). Pipelined PEs and the shared bf16 unit keep running.
  logic busy;
  if (PE_STAGES == 1 && BF16_SHARED == 0) begin : g_hold
    assign busy = a_valid || (|valid_q);
  end else begin : g_run
    assign busy = 1'b1;
  end

  // Activations: lane i (with the row's buffer and dtype bits) waits i*PE_STAGES+1 cycles before
  // PE(i,0). The first register also keeps the PEs off the module inputs, so no PE logic is
  // combinational from outside.
  for (genvar i = 0; i < N; i++) begin : g_skew_a  /* verilator lint_off UNUSEDPARAM */
    localparam int DEPTH = i * PE_S;
    logic [17:0] sr_q [0:DEPTH];  // {buf, bf16, lane}
    always_ff @(posedge clk) begin
      if (busy) begin
        sr_q[0] <= {a_buf, a_bf16, a_row[16*i +: 16]};
        for (int k = 1; k <= DEPTH; k++) begin
          sr_q[k] <= sr_q[k-1];
        end
      end
    end
    assign {buf_h[i][0], bf16_h[i][0], a_h[i][0]} = sr_q[DEPTH];  /* verilator lint_on UNUSEDPARAM */
  end

  // Chain start values: column n waits n+1 cycles (one more with pipelined PEs), to meet its row
  // at PE(0,n).
  for (genvar n = 0; n < N; n++) begin : g_skew_acc  /* verilator lint_off UNUSEDPARAM */
    localparam int DEPTH = n + PRE;
    logic [31:0] sr_q [0:DEPTH];
    always_ff @(posedge clk) begin
      if (busy) begin
        sr_q[0] <= a_acc[32*n +: 32];
        for (int k = 1; k <= DEPTH; k++) begin
          sr_q[k] <= sr_q[k-1];
        end
      end
    end
    assign ps_v[0][n] = sr_q[DEPTH];  /* verilator lint_on UNUSEDPARAM */
  end

  for (genvar i = 0; i < N; i++) begin : g_row
    for (genvar n = 0; n < N; n++) begin : g_col
      // Flat vectors (the PE's ports are [1:0][15:0]): Yosys cannot size a packed 2-D signal
      // declared in a generate block and driven from a nested one.
      logic [31:0] w_top, w_left;

      if (i == 0) begin : g_top
        assign w_top = {2{w_row[16*n +: 16]}};
      end else begin : g_inner_top
        assign w_top = w_q[i-1][n];
      end
      if (n == 0) begin : g_left
        assign w_left = {2{w_row[16*i +: 16]}};
      end else begin : g_inner_left
        assign w_left = w_q[i][n-1];
      end

      ntpu_pe #(
        .STAGES(PE_S),
        .BF16_EN(BF16_SHARED == 0)
      ) u_pe (
        .clk        (clk),
        .en         (busy),
        .w_valid    (w_valid),
        .w_buf      (w_buf),
        .w_transpose(w_transpose),
        .w_top      (w_top),
        .w_left     (w_left),
        .w_q        (w_q[i][n]),
        .a_in       (a_h[i][n]),
        .a_buf_in   (buf_h[i][n]),
        .a_bf16_in  (bf16_h[i][n]),
        .a_q        (a_h[i][n+1]),
        .a_buf_q    (buf_h[i][n+1]),
        .a_bf16_q   (bf16_h[i][n+1]),
        .psum_in    (ps_v[i][n]),
        .psum_q     (ps_v[i+1][n])
      );
    end
  end

  // The right edge's activations have nowhere to go.
  logic [N-1:0] unused_right;
  for (genvar i = 0; i < N; i++) begin : g_unused
    assign unused_right[i] = ^{a_h[i][N], buf_h[i][N], bf16_h[i][N]};
  end

  // De-skew: column n's result leaves the bottom PE at cycle n+1+PRE+N*PE_STAGES and waits
  // N-1-n more cycles.
  for (genvar n = 0; n < N; n++) begin : g_deskew
    if (n == N - 1) begin : g_direct
      assign pe_row[32*n +: 32] = ps_v[N][n];
    end else begin : g_delay  /* verilator lint_off UNUSEDPARAM */
      localparam int DEPTH = N - 1 - n;
      logic [31:0] sr_q [0:DEPTH-1];
      always_ff @(posedge clk) begin
        if (busy) begin
          sr_q[0] <= ps_v[N][n];
          for (int k = 1; k < DEPTH; k++) begin
            sr_q[k] <= sr_q[k-1];
          end
        end
      end
      assign pe_row[32*n +: 32] = sr_q[DEPTH-1];  /* verilator lint_on UNUSEDPARAM */
    end
  end

  if (BF16_SHARED != 0) begin : g_shared
    logic [N*N*32-1:0] w_all;
    logic              sh_valid;
    logic [N*32-1:0]   sh_row;

    for (genvar i = 0; i < N; i++) begin : g_w_row
      for (genvar n = 0; n < N; n++) begin : g_w_col
        assign w_all[(i*N + n)*32 +: 32] = w_q[i][n];
      end
    end

    ntpu_bf16_shared #(
      .N     (N),
      .STAGES(PE_STAGES - 1)
    ) u_bf16 (
      .clk    (clk),
      .rst    (rst),
      .w_all  (w_all),
      .a_valid(a_valid && a_bf16),
      .a_buf  (a_buf),
      .a_row  (a_row),
      .a_acc  (a_acc),
      .y_valid(sh_valid),
      .y_row  (sh_row)
    );

    // The driver's spacing keeps the two sources from ever answering in the same cycle.
    assign y_valid = pe_valid || sh_valid;
    assign y_row = sh_valid ? sh_row : pe_row;
  end else begin : g_pe_only
    assign y_valid = pe_valid;
    assign y_row = pe_row;
  end






endmodule

`default_nettype wire
