// SPDX-License-Identifier: Apache-2.0
// ntpu_vsim_delay: a delay line for vsim only (Verilator): out is in from D + 1 cycles of en ago,
// starting all zeros. ntpu_array's skew and de-skew lines in their simulation form (decision 0017,
// rounds 3 and 4); synthesis and Icarus see an empty file and the array's own shift registers.
//
// D values wait in a ring written in place (blocking, after its one read: no write queue) and the
// oldest moves into a plain register (last_q), not an array element: a nonblocking write to an
// element goes through Verilator's write queue every cycle. D = 0 is that register alone.
`default_nettype none

module ntpu_vsim_delay #(
  parameter int W = 1,  // bits per value
  parameter int D = 0   // values in the ring: the delay is D + 1
) (
  input  logic         clk,
  input  logic         en,
  input  logic [W-1:0] in,
  output logic [W-1:0] out
);
  logic [W-1:0] last_q = '0;
  assign out = last_q;
  if (D == 0) begin : g_reg
    always_ff @(posedge clk) if (en) last_q <= in;
  end else begin : g_ring
    localparam int P_W = $clog2(D + 1);
    logic [W-1:0] ring [2**P_W];
    logic [P_W-1:0] p_q = '0;
    initial for (int k = 0; k < 2**P_W; k++) ring[k] = '0;
    always_ff @(posedge clk) begin
      if (en) begin
        last_q <= ring[p_q];
        /* verilator lint_off BLKSEQ */
        ring[p_q] = in;
        /* verilator lint_on BLKSEQ */
        p_q <= (p_q == P_W'(D - 1)) ? '0 : p_q + 1'b1;
      end
    end
  end
endmodule

`default_nettype wire
