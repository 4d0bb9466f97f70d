// SPDX-License-Identifier: Apache-2.0
// One ntpu_array instance (N, PE_STAGES = S, BF16_SHARED = SH) driven cycle by cycle from gen.c's
// files nN_*.hex (nN_sS_*.hex for S > 1, nN_shS_*.hex for SH = 1), for the ntpu_array,
// ntpu_array_pipe and ntpu_array_shared benches. Every cycle it checks that y_valid is a_valid
// delayed by exactly LATENCY (2*N, or N + 1 + N*S when pipelined; with SH, 2*N for int8 rows and
// BF16_LATENCY = 2 + (N-1)*max(N,S) + N + S-1 for bf16 rows), and every row's y_row bit for bit.
`default_nettype none
`timescale 1ns / 1ps

module tb_array_run #(
  parameter int N = 4,  // array size; the files are nN_*.hex
  parameter int S = 1,  // PE_STAGES
  parameter int SH = 0  // BF16_SHARED
) (
  input  logic clk,
  output logic done,   // 1 once all cycles ran
  output int   errors
);
  localparam int LATENCY = (S == 1 || SH != 0) ? 2 * N : N + 1 + N * S;  // what ntpu_array.sv documents
  localparam int P = (N > S) ? N : S;
  localparam int LAT_BF16 = (SH != 0) ? 2 + (N - 1) * P + N + S - 1 : LATENCY;
  localparam int STIM_W = 8 + N * 64;         // ctrl, w_row, a_row, a_acc
  localparam int MAX_CYCLES = 1 << 16;

  logic [STIM_W-1:0] stim   [0:MAX_CYCLES-1];
  logic [N*32-1:0]   want [0:MAX_CYCLES-1];
  logic [31:0]       count  [0:1];
  logic              a_valid_hist [0:MAX_CYCLES-1];
  logic              a_bf16_hist [0:MAX_CYCLES-1];

  logic            rst;
  logic            w_valid, w_buf, w_transpose;
  logic [N*16-1:0] w_row;
  logic            a_valid, a_buf, a_bf16;
  logic [N*16-1:0] a_row;
  logic [N*32-1:0] a_acc;
  logic            y_valid;
  logic [N*32-1:0] y_row;

  ntpu_array #(
    .N(N),
    .PE_STAGES(S),
    .BF16_SHARED(SH),
    .BF16_GAP(SH != 0 ? LAT_BF16 : 0)
  ) dut (
    .clk        (clk),
    .rst        (rst),
    .w_valid    (w_valid),
    .w_buf      (w_buf),
    .w_transpose(w_transpose),
    .w_row      (w_row),
    .a_valid    (a_valid),
    .a_buf      (a_buf),
    .a_bf16     (a_bf16),
    .a_row      (a_row),
    .a_acc      (a_acc),
    .y_valid    (y_valid),
    .y_row      (y_row)
  );

  task automatic fail(input string msg);
    errors++;
    if (errors <= 20) begin
      $display("FAIL ntpu_array N=%0d PE_STAGES=%0d BF16_SHARED=%0d: %s", N, S, SH, msg);
    end
  endtask

  initial begin
    string dir;
    string pre;
    int    cycles, rows, row;
    logic [7:0] ctrl;

    done   = 1'b0;
    errors = 0;
    if (!$value$plusargs("dir=%s", dir)) begin
      $fatal(1, "FAIL ntpu_array: no +dir=DIR");
    end
    pre = (SH != 0) ? $sformatf("%s/n%0d_sh%0d_", dir, N, S) :
          (S == 1) ? $sformatf("%s/n%0d_", dir, N) : $sformatf("%s/n%0d_s%0d_", dir, N, S);
    count[0] = 0;
    count[1] = 0;
    $readmemh({pre, "count.hex"}, count);
    cycles = count[0];
    rows   = count[1];
    if (cycles == 0 || cycles > MAX_CYCLES || rows == 0 || rows > MAX_CYCLES) begin
      $fatal(1, "FAIL ntpu_array N=%0d: bad counts %0d %0d", N, cycles, rows);
    end
    $readmemh({pre, "stim.hex"}, stim, 0, cycles - 1);
    $readmemh({pre, "exp.hex"}, want, 0, rows - 1);
    if (dut.LATENCY != LATENCY) begin
      $fatal(1, "FAIL ntpu_array N=%0d PE_STAGES=%0d: LATENCY is %0d, documented %0d", N, S,
             dut.LATENCY, LATENCY);
    end
    if (SH != 0 && dut.BF16_LATENCY != LAT_BF16) begin
      $fatal(1, "FAIL ntpu_array N=%0d PE_STAGES=%0d: BF16_LATENCY is %0d, documented %0d", N, S,
             dut.BF16_LATENCY, LAT_BF16);
    end

    // Reset with garbage on the buses; y_valid must stay low until LATENCY after the first row.
    rst = 1'b1;
    {w_valid, a_valid} = 2'b00;
    {w_buf, w_transpose, a_buf, a_bf16} = 4'b1010;
    w_row = '1;
    a_row = '1;
    a_acc = '1;
    repeat (3) @(negedge clk);
    rst = 1'b0;

    // Cycle c: at its negedge, check the outputs of cycle c, then drive cycle c's inputs.
    row = 0;
    for (int c = 0; c < cycles + LAT_BF16 + LATENCY + 2; c++) begin
      logic want_v;
      @(negedge clk);
      want_v = c >= LATENCY && c - LATENCY < cycles && a_valid_hist[c-LATENCY] &&
               (SH == 0 || !a_bf16_hist[c-LATENCY]);
      if (SH != 0 && c >= LAT_BF16 && c - LAT_BF16 < cycles && a_valid_hist[c-LAT_BF16] &&
          a_bf16_hist[c-LAT_BF16]) begin
        want_v = 1'b1;
      end
      if (y_valid !== want_v) begin
        fail($sformatf("cycle %0d: y_valid = %b, expected %b", c, y_valid, want_v));
      end
      if (y_valid === 1'b1) begin
        if (row >= rows) begin
          fail($sformatf("cycle %0d: more rows out than in", c));
        end else begin
          for (int n = 0; n < N; n++) begin
            if (y_row[32*n +: 32] !== want[row][32*n +: 32]) begin
              fail($sformatf("cycle %0d, row %0d, column %0d: %08h, expected %08h", c, row, n,
                             y_row[32*n +: 32], want[row][32*n +: 32]));
            end
          end
        end
        row++;
      end
      if (c < cycles) begin
        {ctrl, w_row, a_row, a_acc} = stim[c];
        {a_bf16, a_buf, a_valid, w_transpose, w_buf, w_valid} = ctrl[5:0];
        a_valid_hist[c] = a_valid;
        a_bf16_hist[c] = a_bf16;
      end else begin
        {w_valid, a_valid} = 2'b00;
      end
    end
    if (row != rows) begin
      fail($sformatf("%0d rows out, %0d in", row, rows));
    end
    $display("ntpu_array N=%0d PE_STAGES=%0d BF16_SHARED=%0d: %0d cycles, %0d rows checked, %0d errors",
             N, S, SH, cycles, rows, errors);
    done = 1'b1;
  end
endmodule

`default_nettype wire
