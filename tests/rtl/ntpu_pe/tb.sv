// SPDX-License-Identifier: Apache-2.0
// Bench for ntpu_bf16_mul and ntpu_pe, against the golden numerics (vectors from gen.c).
// 1. The multiplier alone: every product bit for bit, and 0 with en low.
// 2. One PE, cycle by cycle: weight shifts from above and from the left into either buffer, and
//    int8 and bf16 MACs with either buffer, special values included. After each clock edge
//    psum_q, w_q, a_q and the passed control bits must be what the golden model says.
`default_nettype none
`timescale 1ns / 1ps

module tb;
  localparam int MAX_MUL = 1 << 18;
  localparam int MAX_PE  = 1 << 18;

  logic [63:0]  mul_vec [0:MAX_MUL-1];
  logic [207:0] pe_vec  [0:MAX_PE-1];
  logic [31:0]  count   [0:1];
  string        dir;
  int           errors;

  // 1. The multiplier
  logic        m_en;
  logic [15:0] m_a, m_b;
  logic [31:0] m_p;

  ntpu_bf16_mul u_mul (
    .en(m_en),
    .a (m_a),
    .b (m_b),
    .p (m_p)
  );

  // 2. The PE
  logic             clk = 1'b0;
  logic             w_valid, w_buf, w_transpose;
  logic [1:0][15:0] w_top, w_left, w_q;
  logic [15:0]      a_in, a_q;
  logic             a_buf_in, a_bf16_in, a_buf_q, a_bf16_q;
  logic [31:0]      psum_in, psum_q;

  ntpu_pe dut (
    .clk        (clk),
    .en         (1'b1),
    .w_valid    (w_valid),
    .w_buf      (w_buf),
    .w_transpose(w_transpose),
    .w_top      (w_top),
    .w_left     (w_left),
    .w_q        (w_q),
    .a_in       (a_in),
    .a_buf_in   (a_buf_in),
    .a_bf16_in  (a_bf16_in),
    .a_q        (a_q),
    .a_buf_q    (a_buf_q),
    .a_bf16_q   (a_bf16_q),
    .psum_in    (psum_in),
    .psum_q     (psum_q)
  );

  always #5 clk = ~clk;

  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) begin
      $display("FAIL ntpu_pe: %s", msg);
    end
  endtask

  initial begin
    logic [7:0]  ctrl;
    logic [31:0] e_psum;
    logic [31:0] e_w;
    logic [15:0] e_a;
    logic [7:0]  e_flags;

    errors = 0;
    if (!$value$plusargs("dir=%s", dir)) begin
      $fatal(1, "FAIL ntpu_pe: no +dir=DIR");
    end
    count[0] = 0;
    count[1] = 0;
    $readmemh({dir, "/count.hex"}, count);
    if (count[0] == 0 || count[0] > MAX_MUL || count[1] == 0 || count[1] > MAX_PE) begin
      $fatal(1, "FAIL ntpu_pe: bad vector counts %0d %0d", count[0], count[1]);
    end
    $readmemh({dir, "/mul.hex"}, mul_vec, 0, count[0] - 1);
    $readmemh({dir, "/pe.hex"}, pe_vec, 0, count[1] - 1);

    m_en = 1'b1;
    for (int k = 0; k < count[0]; k++) begin
      {m_a, m_b} = mul_vec[k][63:32];
      #1;
      if (m_p !== mul_vec[k][31:0]) begin
        fail($sformatf("product %0d: %04h * %04h = %08h, expected %08h", k, m_a, m_b, m_p,
                       mul_vec[k][31:0]));
      end
    end
    m_en = 1'b0;
    #1;
    if (m_p !== 32'd0) begin
      fail($sformatf("multiplier with en = 0 gives %08h, expected 0", m_p));
    end

    for (int k = 0; k < count[1]; k++) begin
      @(negedge clk);
      {ctrl, w_top, w_left, a_in, psum_in, e_psum, e_w, e_a, e_flags} = pe_vec[k];
      {a_bf16_in, a_buf_in, w_transpose, w_buf, w_valid} = ctrl[4:0];
      @(posedge clk);
      #1;
      if (ctrl[5] && psum_q !== e_psum) begin
        fail($sformatf("cycle %0d: %s mac(%08h, %04h, w%0d) = %08h, expected %08h", k,
                       ctrl[4] ? "bf16" : "int8", psum_in, a_in, ctrl[3], psum_q, e_psum));
      end
      if (ctrl[6] && w_q[0] !== e_w[15:0]) begin
        fail($sformatf("cycle %0d: weight buffer 0 is %04h, expected %04h", k, w_q[0], e_w[15:0]));
      end
      if (ctrl[7] && w_q[1] !== e_w[31:16]) begin
        fail($sformatf("cycle %0d: weight buffer 1 is %04h, expected %04h", k, w_q[1], e_w[31:16]));
      end
      if (a_q !== e_a || {a_bf16_q, a_buf_q} !== e_flags[1:0]) begin
        fail($sformatf("cycle %0d: passed on %04h/%b%b, expected %04h/%b", k, a_q, a_bf16_q,
                       a_buf_q, e_a, e_flags[1:0]));
      end
    end

    if (errors != 0) begin
      $fatal(1, "FAIL ntpu_pe: %0d errors", errors);
    end
    $display("PASS ntpu_pe: %0d products and %0d PE cycles bit-exact", count[0], count[1]);
    $finish;
  end
endmodule

`default_nettype wire
