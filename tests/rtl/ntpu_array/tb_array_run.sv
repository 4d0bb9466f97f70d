// One ntpu_array instance (N, PE_STAGES = S) driven cycle by cycle from gen.c's files nN_*.hex
// (nN_sS_*.hex for S > 1), for the ntpu_array and ntpu_array_pipe benches. Every cycle it checks
// that y_valid is a_valid delayed by exactly LATENCY (2*N, or N + 1 + N*S when pipelined), and
// every row's y_row bit for bit.
`default_nettype none
`timescale 1ns / 1ps

module tb_array_run #(
  parameter int N = 4,  // array size; the files are nN_*.hex
  parameter int S = 1   // PE_STAGES
) (
  input  logic clk,
  output logic done,   // 1 once all cycles ran
  output int   errors
);
  localparam int LATENCY = (S == 1) ? 2 * N : N + 1 + N * S;  // what ntpu_array.sv documents
  localparam int STIM_W = 8 + N * 64;         // ctrl, w_row, a_row, a_acc
  localparam int MAX_CYCLES = 1 << 16;

  logic [STIM_W-1:0] stim   [0:MAX_CYCLES-1];
  logic [N*32-1:0]   want [0:MAX_CYCLES-1];
  logic [31:0]       count  [0:1];
  logic              a_valid_hist [0:MAX_CYCLES-1];

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
    .PE_STAGES(S)
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
      $display("FAIL ntpu_array N=%0d PE_STAGES=%0d: %s", N, S, msg);
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
    pre = (S == 1) ? $sformatf("%s/n%0d_", dir, N) : $sformatf("%s/n%0d_s%0d_", dir, N, S);
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
    for (int c = 0; c < cycles + LATENCY + 2; c++) begin
      @(negedge clk);
      if (y_valid !== (c >= LATENCY && c - LATENCY < cycles && a_valid_hist[c-LATENCY])) begin
        fail($sformatf("cycle %0d: y_valid = %b, expected a_valid of cycle %0d", c, y_valid,
                       c - LATENCY));
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
      end else begin
        {w_valid, a_valid} = 2'b00;
      end
    end
    if (row != rows) begin
      fail($sformatf("%0d rows out, %0d in", row, rows));
    end
    $display("ntpu_array N=%0d PE_STAGES=%0d: %0d cycles, %0d rows checked, %0d errors", N, S, cycles,
             rows, errors);
    done = 1'b1;
  end
endmodule

`default_nettype wire
