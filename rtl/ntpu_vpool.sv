// SPDX-License-Identifier: Apache-2.0
// POOL (protocol 1.5, opcode 0x0F) for the vector sequencer: one channel tile of one micro-batch,
// k x k windows, floor mode (docs/isa.md). MODE 0 MAX and 1 AVG read the UB map and write the
// pooled rows (and MAX's argmax rows) to UB; 2 MAX_GRAD and 3 AVG_GRAD read pooled ACC rows and
// write the whole ACC map.
//
// Contract:
// - start: a checked POOL (src, dst and aux ranges in range and apart, k <= in_h, k <= in_w); busy
//   from the next cycle until every write has been issued. The memory ports are this unit's while
//   busy (ntpu_vseq hands them over), read data one cycle after the read, held until the next.
// - Order: pooled rows r = (py*OW + px)*mb + b in turn. MAX / AVG: the k*k window rows in
//   row-major order, one read a cycle, folded per lane as they arrive (MAX: the first, then each
//   later one that is NaN or greater as bf16 operands, subnormals being zero; AVG: fadd from +0),
//   then the pooled row (AVG: bf16(fmul(s, r)) with r from ACC[aux], read first) and, for MAX, the
//   argmax row (wy*k + wx per lane as u16). k*k + 2 cycles a pooled row (MAX k*k + 3).
//   MAX_GRAD / AVG_GRAD: first +0 to every map row (one a cycle), then per pooled row g (and the
//   argmax row) read, and the k*k window rows written: MAX_GRAD g where the lane's argmax is the
//   row's window position, else +0; AVG_GRAD fmul(g, r). map + OH*OW*mb*(k*k + 2) cycles.
//   The ranges never overlap, so this order gives the ISA's all-reads-before-writes result.
// - Windows and pooled rows come from counters, no dividers: a window position advances while
//   the next window still ends inside the map (floor mode).
`default_nettype none

module ntpu_vpool #(
  parameter int N = 8,        // lanes
  parameter int UB_AW = 14,   // UB address bits
  parameter int ACC_AW = 15   // ACC address bits
) (
  input  logic              clk,
  input  logic              rst,
  input  logic              start,
  input  logic [1:0]        mode,    // 0 MAX, 1 AVG, 2 MAX_GRAD, 3 AVG_GRAD
  input  logic [15:0]       src,
  input  logic [15:0]       dst,
  input  logic [15:0]       aux,
  input  logic [7:0]        in_h,
  input  logic [7:0]        in_w,
  input  logic [7:0]        mb,
  input  logic [7:0]        k,
  output logic              busy,
  output logic              acc_re,
  output logic [ACC_AW-1:0] acc_raddr,
  input  logic [N*32-1:0]   acc_rdata,
  output logic              ub_re,
  output logic [UB_AW-1:0]  ub_raddr,
  input  logic [N*16-1:0]   ub_rdata,
  output logic              wr_we,
  output logic              wr_acc,  // 1: ACC, 0: UB (the low N*16 bits of wr_data)
  output logic [15:0]       wr_addr,
  output logic [N*32-1:0]   wr_data
);

  typedef enum logic [3:0] {
    P_IDLE,
    P_AUX,   // read ACC[aux] (AVG, AVG_GRAD)
    P_AUXT,  // take it
    P_ZERO,  // grads: +0 to every map row
    P_RD,    // forward: the window's reads; grads: g (and argmax)
    P_TAKE,  // the last read's data
    P_W0,    // forward: the pooled row
    P_W1,    // MAX: the argmax row
    P_GW     // grads: the window's rows
  } state_e;

  state_e state_q, state_d;
  logic [1:0]  mode_q;
  logic [15:0] src_q, dst_q, aux_q;
  logic [7:0]  k_q;
  logic [16:0] in_h_q, in_w_q;
  logic [15:0] mb_q, kmb_q, wmb_q, kwmb_q;  // mb, k*mb, in_w*mb, k*in_w*mb (mod 2^16: addresses)
  logic [16:0] zleft_q;                     // grads: map rows still to zero
  logic [16:0] xk_q, yk_q;                  // px*k, py*k
  logic [7:0]  b_q, wx_q, wy_q;
  logic [15:0] widx_q, ridx_q;              // window position (wy*k + wx); of the read in flight
  logic [15:0] r_q;                         // pooled row
  logic [15:0] org_q, orgx_q, orgy_q;       // window origin; at b = 0; at px = 0, b = 0
  logic [15:0] wp_q, wrow_q;                // window row; at wx = 0
  logic        rd_v_q;                      // a window read was issued last cycle
  logic [N*32-1:0] aux_r_q;                 // r per lane
  logic [N*16-1:0] best_q, idx_q;           // MAX: best bf16, argmax; MAX_GRAD: argmax
  logic [N*32-1:0] sum_q, g_q;              // AVG: the sum; grads: g
  logic        fwd, is_max, is_avg;
  logic        elem, elem_last, row_last, x_more, y_more, row_done;

  assign fwd = !mode_q[1];
  assign is_max = (mode_q == 2'd0);
  assign is_avg = mode_q[0];

  // A window step: a read (forward) or a write (grads); the last one of the window.
  assign elem = fwd ? (state_q == P_RD) : (state_q == P_GW);
  assign elem_last = (wx_q == k_q - 8'd1) && (wy_q == k_q - 8'd1);
  assign x_more = xk_q + 17'(k_q) + 17'(k_q) <= in_w_q;
  assign y_more = yk_q + 17'(k_q) + 17'(k_q) <= in_h_q;
  assign row_last = (b_q == mb_q[7:0] - 8'd1) && !x_more && !y_more;
  assign row_done = fwd ? ((state_q == P_W0 && !is_max) || state_q == P_W1) : (state_q == P_GW && elem_last);

  always_comb begin
    state_d = state_q;
    case (state_q)
      // if/else, not ?: : Icarus 11 wants a cast for an enum out of a conditional.
      P_IDLE: begin
        if (start && mode[0]) state_d = P_AUX;
        else if (start && mode[1]) state_d = P_ZERO;
        else if (start) state_d = P_RD;
      end
      P_AUX: state_d = P_AUXT;
      P_AUXT: if (mode_q[1]) state_d = P_ZERO; else state_d = P_RD;
      P_ZERO: if (zleft_q == 17'd1) state_d = P_RD;
      P_RD: if (!fwd || elem_last) state_d = P_TAKE;
      P_TAKE: if (fwd) state_d = P_W0; else state_d = P_GW;
      P_W0: if (is_max) state_d = P_W1; else if (row_last) state_d = P_IDLE; else state_d = P_RD;
      P_W1: if (row_last) state_d = P_IDLE; else state_d = P_RD;
      P_GW: if (elem_last && row_last) state_d = P_IDLE; else if (elem_last) state_d = P_RD;
      default: state_d = P_IDLE;
    endcase
  end

  always_ff @(posedge clk) begin
    if (rst) state_q <= P_IDLE;
    else state_q <= state_d;
  end
  assign busy = (state_q != P_IDLE);

  // ---------------------------------------------------------------- counters and pointers
  logic [15:0] base;  // the map's first row: src (forward) or dst (grads)
  assign base = mode[1] ? dst : src;
  always_ff @(posedge clk) begin
    rd_v_q <= (state_q == P_RD) && fwd;
    ridx_q <= widx_q;
    if (state_q == P_IDLE && start) begin
      mode_q <= mode;
      src_q <= src;
      dst_q <= dst;
      aux_q <= aux;
      k_q <= k;
      in_h_q <= 17'(in_h);
      in_w_q <= 17'(in_w);
      mb_q <= 16'(mb);
      kmb_q <= 16'(k) * 16'(mb);
      wmb_q <= 16'(in_w) * 16'(mb);
      kwmb_q <= 16'(24'(k) * 24'(in_w) * 24'(mb));
      zleft_q <= 17'(24'(in_h) * 24'(in_w) * 24'(mb));
      xk_q <= '0;
      yk_q <= '0;
      b_q <= '0;
      wx_q <= '0;
      wy_q <= '0;
      widx_q <= '0;
      r_q <= '0;
      org_q <= base;
      orgx_q <= base;
      orgy_q <= base;
      wp_q <= base;
      wrow_q <= base;
    end else begin
      if (state_q == P_ZERO) begin
        zleft_q <= zleft_q - 17'd1;
      end
      if (elem) begin
        if (elem_last) begin
          wx_q <= '0;
          wy_q <= '0;
          widx_q <= '0;
        end else if (wx_q == k_q - 8'd1) begin
          wx_q <= '0;
          wy_q <= wy_q + 8'd1;
          widx_q <= widx_q + 16'd1;
          wrow_q <= wrow_q + wmb_q;
          wp_q <= wrow_q + wmb_q;
        end else begin
          wx_q <= wx_q + 8'd1;
          widx_q <= widx_q + 16'd1;
          wp_q <= wp_q + mb_q;
        end
      end
      if (row_done) begin
        r_q <= r_q + 16'd1;
        if (b_q != mb_q[7:0] - 8'd1) begin
          b_q <= b_q + 8'd1;
          org_q <= org_q + 16'd1;
          wp_q <= org_q + 16'd1;
          wrow_q <= org_q + 16'd1;
        end else if (x_more) begin
          b_q <= '0;
          xk_q <= xk_q + 17'(k_q);
          orgx_q <= orgx_q + kmb_q;
          org_q <= orgx_q + kmb_q;
          wp_q <= orgx_q + kmb_q;
          wrow_q <= orgx_q + kmb_q;
        end else begin
          b_q <= '0;
          xk_q <= '0;
          yk_q <= yk_q + 17'(k_q);
          orgy_q <= orgy_q + kwmb_q;
          orgx_q <= orgy_q + kwmb_q;
          org_q <= orgy_q + kwmb_q;
          wp_q <= orgy_q + kwmb_q;
          wrow_q <= orgy_q + kwmb_q;
        end
      end
    end
  end

  // ---------------------------------------------------------------- lanes
  logic [N*32-1:0] add_s, mul_p, mul_x;
  logic [N*16-1:0] best_d, idx_d, avg_bf16;
  logic [N*32-1:0] sum_d;
  logic fold;  // window data on ub_rdata now
  assign fold = rd_v_q;

  // bf16 "v > best" with subnormals as zero of their sign, +0 = -0; NaN best is never beaten by a
  // number. As keys: a signed magnitude made two's complement (zero for exponent 0).
  function automatic logic signed [16:0] key(input logic [15:0] v);
    if (v[14:7] == 8'd0) return 17'sd0;
    return v[15] ? -$signed({2'b00, v[14:0]}) : $signed({2'b00, v[14:0]});
  endfunction
  function automatic logic is_nan(input logic [14:0] v);  // the sign does not matter
    return v[14:7] == 8'hFF && v[6:0] != 7'd0;
  endfunction
  function automatic logic [15:0] bf16_of(input logic [31:0] c);
    logic [31:0] f;
    if (c[30:23] == 8'hFF && c[22:0] != 23'd0) return c[31:16] | 16'h0040;
    f = (c[30:23] == 8'h00) ? {c[31], 31'd0} : c;
    return 16'((f + 32'h0000_7FFF + {31'd0, f[16]}) >> 16);
  endfunction

  for (genvar n = 0; n < N; n++) begin : g_lane
    logic [15:0] v, bst;
    logic take;
    assign v = ub_rdata[16*n +: 16];
    assign bst = best_q[16*n +: 16];
    assign take = (ridx_q == 16'd0) || is_nan(v[14:0]) || (!is_nan(bst[14:0]) && key(v) > key(bst));
    assign best_d[16*n +: 16] = take ? v : bst;
    assign idx_d[16*n +: 16] = take ? ridx_q : idx_q[16*n +: 16];
    ntpu_fp32_add u_add (
      .en(fold && is_avg),
      .x ((ridx_q == 16'd0) ? 32'd0 : sum_q[32*n +: 32]),
      .y ({v, 16'd0}),
      .s (add_s[32*n +: 32])
    );
    assign sum_d[32*n +: 32] = add_s[32*n +: 32];
    assign mul_x[32*n +: 32] = fwd ? sum_q[32*n +: 32] : g_q[32*n +: 32];
    ntpu_fp32_mul u_mul (
      .en(is_avg),
      .x (mul_x[32*n +: 32]),
      .y (aux_r_q[32*n +: 32]),
      .p (mul_p[32*n +: 32])
    );
    assign avg_bf16[16*n +: 16] = bf16_of(mul_p[32*n +: 32]);
  end

  always_ff @(posedge clk) begin
    if (state_q == P_AUXT) aux_r_q <= acc_rdata;
    if (fold) begin
      best_q <= best_d;
      idx_q <= idx_d;
      sum_q <= sum_d;
    end
    if (state_q == P_TAKE && !fwd) begin
      g_q <= acc_rdata;
      idx_q <= ub_rdata;
    end
  end

  // ---------------------------------------------------------------- ports
  logic [N*32-1:0] grad_row;
  for (genvar n = 0; n < N; n++) begin : g_grad
    assign grad_row[32*n +: 32] = is_avg ? mul_p[32*n +: 32]
                                : (idx_q[16*n +: 16] == widx_q) ? g_q[32*n +: 32] : 32'd0;
  end

  assign acc_re = (state_q == P_AUX) || (state_q == P_RD && !fwd);
  assign acc_raddr = ACC_AW'((state_q == P_AUX) ? aux_q : src_q + r_q);
  assign ub_re = (state_q == P_RD) && (fwd || !is_avg);
  assign ub_raddr = UB_AW'(fwd ? wp_q : aux_q + r_q);
  assign wr_we = (state_q == P_ZERO) || (state_q == P_W0) || (state_q == P_W1) || (state_q == P_GW);
  assign wr_acc = !fwd;
  assign wr_addr = (state_q == P_ZERO) ? dst_q + 16'(zleft_q) - 16'd1
                 : (state_q == P_W0) ? dst_q + r_q
                 : (state_q == P_W1) ? aux_q + r_q : wp_q;
  assign wr_data = (state_q == P_ZERO) ? '0
                 : (state_q == P_W0) ? {{(16 * N){1'b0}}, is_max ? best_q : avg_bf16}
                 : (state_q == P_W1) ? {{(16 * N){1'b0}}, idx_q} : grad_row;

endmodule

`default_nettype wire
