// SPDX-License-Identifier: Apache-2.0
// vsim's simulation form of rtl/ntpu_array.sv (docs/decisions/0025-one-rtl.md): the same module, written to
// simulate fast in Verilator, and held to its twin by the lockstep check (sim/vsim/README.md).
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
// Requirements on the driver (the sequencer), not checked here (vsim's form checks the first):
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
  /* verilator lint_off UNUSEDSIGNAL */  // the nets below are unused by vsim's g_fast form
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
  logic               pe_valid;   localparam bit VFAST = PE_STAGES == 1 && BF16_SHARED == 0;
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
  /* verilator lint_on UNUSEDPARAM */
  end

  // Chain start values: column n waits n+1 cycles (one more with pipelined PEs), to meet its row
  // at PE(0,n).
  for (genvar n = 0; n < N; n++) begin : g_skew_acc  /* verilator lint_off UNUSEDPARAM */
    localparam int DEPTH = n + PRE;
  /* verilator lint_on UNUSEDPARAM */
  end

  for (genvar i = 0; i < N; i++) begin : g_row   if (!VFAST) begin : g_pes
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
    end   end
  end

  // The right edge's activations have nowhere to go.
  logic [N-1:0] unused_right;
  for (genvar i = 0; i < N; i++) begin : g_unused   if (!VFAST) begin : g_pes
    assign unused_right[i] = ^{a_h[i][N], buf_h[i][N], bf16_h[i][N]};   end
  end

  // De-skew: column n's result leaves the bottom PE at cycle n+1+PRE+N*PE_STAGES and waits
  // N-1-n more cycles.
  for (genvar n = 0; n < N; n++) begin : g_deskew   if (!VFAST) begin : g_pes
    if (n == N - 1) begin : g_direct
      assign pe_row[32*n +: 32] = ps_v[N][n];
    end else begin : g_delay  /* verilator lint_off UNUSEDPARAM */
      localparam int DEPTH = N - 1 - n;
  /* verilator lint_on UNUSEDPARAM */
    end   end
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

  // Simulation only (vsim speed), two forms. Both give every y_row bit for bit and y_valid as the
  // header says; the Verilator benches (ntpu_array for g_fast, ntpu_array_pipe and _shared for
  // g_lines) check them vector for vector.
  if (!VFAST) begin : g_lines
    // Pipelined PEs or the shared bf16 unit (the boards' arrays): the PEs as synthesised, each skew
    // line as ntpu_vsim_delay (a ring of its inputs and a pointer, then a plain register) rather
    // than a shift register whose every element Verilator moves through a queued copy each cycle.
    // Exact: the line's last element (the only one read) is the input taken D + 1 busy cycles
    // earlier, as the shift gives; both start all zeros (the shift register has no reset either).
    for (genvar i = 0; i < N; i++) begin : g_skew_a_v
      ntpu_vsim_delay #(.W(18), .D(i * PE_S)) u_line (
        .clk(clk), .en(busy), .in({a_buf, a_bf16, a_row[16*i +: 16]}),
        .out({buf_h[i][0], bf16_h[i][0], a_h[i][0]}));
    end
    for (genvar n = 0; n < N; n++) begin : g_skew_acc_v
      ntpu_vsim_delay #(.W(32), .D(n + PRE)) u_line (.clk(clk), .en(busy), .in(a_acc[32*n +: 32]), .out(ps_v[0][n]));
    end
    for (genvar n = 0; n < N - 1; n++) begin : g_deskew_v
      ntpu_vsim_delay #(.W(32), .D(N - 2 - n)) u_line (.clk(clk), .en(busy), .in(ps_v[N][n]), .out(pe_row[32*n +: 32]));
    end
  end else begin : g_fast
    // Single-cycle PEs (vsim's array): no PEs, skew or de-skew lines. A row's N column chains are computed whole in
    // the cycle it enters, with the weights it would meet in the PEs, and its result waits in a
    // ring (below) until LATENCY. Exact because the weights a row uses cannot change while it is
    // inside the array (the driver's requirements in the header) and a row may enter in the cycle
    // of its tile's last beat, which lands before the row is computed below.
    //
    // The weights are kept in the forms the rows use: int8 sign-extended, bf16 as a double (both
    // exact). A bf16 MAC is ntpu_mac_bf16 by the host's double arithmetic: the product of two bf16
    // values is exact in a double, the sum of two fp32 values rounded to 53 bits and then to 24
    // (add 2^28 - 1 and the lowest kept bit, drop 29 bits) is the sum rounded once to 24 bits,
    // because 53 >= 2 * 24 + 2 (Figueroa, 1995; decision 0019). The chain keeps its sum as a
    // double, so only the device's range rules need code: a product or sum outside fp32's normal
    // range is flushed to zero of its sign or becomes Inf, and a NaN leaves as 0x7FC00000.
    localparam int NP = (N + 1) / 2;  // int8 weights packed two columns to a word (below)
    int  wi [2][N][N];  // PE(i,n)'s buffer b: the low byte sign-extended
    logic [63:0] wp [2][N][NP];  // wi[b][i][2q] + 2^32 * wi[b][i][2q+1] (0 past column N - 1)
    real wd [2][N][N];  // the same weight as bf16, as a double (a subnormal is zero of its sign)
    // Rows in flight: a row is computed into the ring in the cycle it enters, waits there
    // LATENCY - 1 busy cycles and then moves into line_q, which y_row shows from the next cycle:
    // LATENCY in all, as the PEs take. A busy cycle without a row leaves its slot as it was; that
    // slot comes out where y_valid is low. (Computed in place, with no register and delay line
    // between: two fewer copies of the row a cycle.)
    localparam int RING = LATENCY - 1;
    localparam int RP_W = $clog2(RING);
    logic [N*32-1:0] ring [RING];
    logic [RP_W-1:0] rp_q = '0;
    logic [N*32-1:0] line_q = '0;
    initial for (int k = 0; k < RING; k++) ring[k] = '0;

    // fp32 bits (a bf16 as their high half) as the same double, reading a subnormal as zero.
    function automatic real to_real(logic [31:0] x);
      if (x[30:23] == 8'h00) return $bitstoreal({x[31], 63'd0});
      if (x[30:23] == 8'hFF) return $bitstoreal({x[31], 11'h7FF, x[22:0], 29'd0});
      return $bitstoreal({x[31], 11'({3'd0, x[30:23]} + 11'd896), x[22:0], 29'd0});
    endfunction

    // A double that is an fp32 value, zero, Inf or NaN, as fp32 bits (any NaN as 0x7FC00000).
    function automatic logic [31:0] to_fp32(real r);
      logic [63:0] b = $realtobits(r);
      if (b[62:52] == 11'h7FF) return (b[51:0] != 52'd0) ? 32'h7FC0_0000 : {b[63], 8'hFF, 23'd0};
      if (b[62:52] == 11'h000) return {b[63], 31'd0};
      return {b[63], 8'(b[62:52] - 11'd896), b[51:29]};
    endfunction

    /* verilator lint_off BLKSEQ */
    always_ff @(posedge clk) begin
      // The MACs' scalar temporaries, assigned here before any branch: Verilator then makes them
      // C++ locals, which the compiler keeps in registers (it localizes only a variable whose first
      // write is outside every branch; a member would be stored and loaded again at every MAC).
      logic [63:0] s8;  // int8: a column pair's sum of products (below)
      real acc, p, s;  // bf16: a column's sum, a product, their sum
      logic [62:0] pb;  // the product's magnitude bits
      logic [63:0] sb, rb, qb;
      s8 = 64'd0;
      acc = 0.0;
      p = 0.0;
      s = 0.0;
      pb = 63'd0;
      {sb, rb, qb} = '0;
      // The oldest row out first (its slot is the one a row entering now takes).
      if (busy) begin
        line_q <= ring[rp_q];
        rp_q <= (rp_q == RP_W'(RING - 1)) ? '0 : rp_q + 1'b1;
      end
      // Weight beat first (blocking, each element read before it is overwritten): a row may use
      // its tile's last beat in the same cycle.
      if (w_valid) begin
        if (w_transpose) begin
          for (int i = 0; i < N; i++) begin
            for (int n = N - 1; n > 0; n--) begin
              wi[w_buf][i][n] = wi[w_buf][i][n-1];
              wd[w_buf][i][n] = wd[w_buf][i][n-1];
            end
            wi[w_buf][i][0] = 32'(signed'(w_row[16*i +: 8]));
            wd[w_buf][i][0] = to_real({w_row[16*i +: 16], 16'd0});
          end
        end else begin
          for (int i = N - 1; i > 0; i--) begin
            for (int n = 0; n < N; n++) begin
              wi[w_buf][i][n] = wi[w_buf][i-1][n];
              wd[w_buf][i][n] = wd[w_buf][i-1][n];
            end
            for (int q = 0; q < NP; q++) wp[w_buf][i][q] = wp[w_buf][i-1][q];
          end
          for (int n = 0; n < N; n++) begin
            wi[w_buf][0][n] = 32'(signed'(w_row[16*n +: 8]));
            wd[w_buf][0][n] = to_real({w_row[16*n +: 16], 16'd0});
          end
        end
        // The pairs packed again where they changed: every row after a transposed beat (each pair
        // of columns moved), only the new row 0 after a normal one (the rows moved down whole).
        for (int i = 0; i < N; i++) begin
          if (i == 0 || w_transpose) begin
            for (int q = 0; q < NP; q++) begin
              wp[w_buf][i][q] = 64'(wi[w_buf][i][2*q]);
              if (2*q + 1 < N) wp[w_buf][i][q] += {wi[w_buf][i][2*q+1], 32'd0};
            end
          end
        end
      end
      if (a_valid) begin
        if (a_bf16) begin
          real ad [N];
          for (int i = 0; i < N; i++) ad[i] = to_real({a_row[16*i +: 16], 16'd0});
          for (int n = 0; n < N; n++) begin
            acc = to_real(a_acc[32*n +: 32]);
            for (int i = 0; i < N; i++) begin
              p = ad[i] * wd[a_buf][i][n];
              s = acc + p;
              pb = 63'($realtobits(p));
              sb = $realtobits(s);
              rb = (sb + 64'h0FFF_FFFF + {63'd0, sb[29]}) & ~64'h1FFF_FFFF;
              // The common case: a product and a rounded sum in fp32's normal range, or zero. (A NaN
              // never passes as zero: its payload came from to_real, whose low 29 bits are zero, so
              // the rounding add cannot carry into the sign.)
              if ((11'(pb[62:52] - 11'd897) < 11'd254 || pb == 63'd0) &&
                  (11'(rb[62:52] - 11'd897) < 11'd254 || rb[62:0] == 63'd0)) begin
                acc = $bitstoreal(rb);
              end else begin
                // The rest, by the device's range rules: a finite product below 2^-126 is zero of
                // its sign, from 2^128 Inf (ntpu_bf16_mul); a sum whose rounding leaves the normal
                // range likewise (ntpu_fp32_add); Inf, NaN and zero sums as IEEE gives them. Inline,
                // not a function: Verilator would evaluate a function call on every MAC. (The Infs
                // keep a variable sign: Verilator 5.006 writes a constant Inf as `inf`, which g++
                // does not know.)
                qb = $realtobits(p);
                if (qb[62:52] != 11'h7FF && qb[62:0] != 63'd0) begin
                  if (qb[62:52] < 11'd897) qb = {qb[63], 63'd0};
                  else if (qb[62:52] > 11'd1150) qb = {qb[63], 11'h7FF, 52'd0};
                end
                sb = $realtobits(acc + $bitstoreal(qb));
                rb = (sb + 64'h0FFF_FFFF + {63'd0, sb[29]}) & ~64'h1FFF_FFFF;
                if (sb[62:52] == 11'h7FF || sb[62:0] == 63'd0) acc = $bitstoreal(sb);
                else if (rb[62:52] < 11'd897) acc = $bitstoreal({sb[63], 63'd0});
                else if (rb[62:52] > 11'd1150) acc = $bitstoreal({sb[63], 11'h7FF, 52'd0});
                else acc = $bitstoreal(rb);
              end
            end
            ring[rp_q][32*n +: 32] = to_fp32(acc);
          end
        end else begin
          // Two columns in one 64-bit multiply-add: the sum over i of a_i * wp[i][q] (mod 2^64, so
          // unsigned arithmetic gives it) is S0 + 2^32 * S1, where S0 and S1 are the columns' sums
          // of products. |S0| <= N * 2^14 < 2^31, so S0 is the low half read as signed, and S1 the
          // high half plus one where S0 is negative (its borrow). Each is then added to its
          // column's a_acc, wrapping as the PEs' int32 sums do. (The activations are sign-extended
          // by an XOR and a subtraction: three instructions, where the generated sign extension
          // takes five.)
          logic [63:0] ai [N];
          for (int i = 0; i < N; i++) ai[i] = ({56'd0, a_row[16*i +: 8]} ^ 64'h80) - 64'h80;
          for (int q = 0; q < NP; q++) begin
            s8 = 64'd0;
            for (int i = 0; i < N; i++) s8 += ai[i] * wp[a_buf][i][q];
            ring[rp_q][64*q +: 32] = a_acc[64*q +: 32] + s8[31:0];
            if (2*q + 1 < N) ring[rp_q][64*q + 32 +: 32] = a_acc[64*q + 32 +: 32] + s8[63:32] + 32'(s8[31]);
          end
        end
      end
    end
    /* verilator lint_on BLKSEQ */

    // The driver's rule that makes this form exact (the header): no beat into a buffer until
    // LATENCY - 1 cycles after the last row that uses it. The PEs would give other results then and
    // this form would not, so it checks the rule, and once it is broken every row leaves as all
    // ones, which no differential test takes for a right answer: a sequencer's mistake cannot hide
    // here. (Not $fatal: a display task gives the model VerilatedScope objects, and deleting such a
    // model hung vsim's harness in Verilator 5.006.)
    // Cycles since the last row that used buffer 0 / 1 (at most LATENCY), as two registers: an
    // array's elements written nonblocking would go through Verilator's write queue every cycle.
    int   since0_q = LATENCY, since1_q = LATENCY;
    logic broken_q = 1'b0;
    always_ff @(posedge clk) begin
      if (!rst && w_valid && (w_buf ? since1_q : since0_q) < LATENCY - 1) broken_q <= 1'b1;
      if (rst) since0_q <= LATENCY;
      else if (a_valid && !a_buf) since0_q <= 1;
      else if (since0_q < LATENCY) since0_q <= since0_q + 1;
      if (rst) since1_q <= LATENCY;
      else if (a_valid && a_buf) since1_q <= 1;
      else if (since1_q < LATENCY) since1_q <= since1_q + 1;
    end

    assign pe_row = broken_q ? '1 : line_q;
  end
endmodule

`default_nettype wire
