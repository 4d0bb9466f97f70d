// SPDX-License-Identifier: Apache-2.0
// iCEBreaker board top: the 12 MHz oscillator (through the PLL when PLL_EN), a power-on reset, the UART link on
// the FT2232H's channel B (8N1 at BAUD), ntpu_core, and two LEDs.
//
// Contract:
// - Host -> device: uart_rx -> ntpu_uart_rx -> RX FIFO (RX_FIFO_DEPTH bytes) -> ntpu_core.s_rx.
//   The board has no flow-control wires, so the host keeps at most RX_FIFO_DEPTH bytes of frames
//   whose replies it has not completely received in flight (docs/boards.md): then the FIFO cannot
//   overflow, whatever the core is doing. A byte that does not fit is dropped and lights the red
//   LED (as does a framing error); the link protocol's CRC and resync recover from either.
// - Device -> host: ntpu_core.m_tx -> ntpu_uart_tx -> uart_tx, back to back at the line rate.
// - Reset: the core is held in reset for 2^RESET_W cycles after configuration and after the PLL
//   locks (longer than the SPRAM clear of the iCE40 ntpu_ram), and while the button is pressed.
// - LEDs (active low): green blinks with link traffic, red lights for about half a second after a
//   UART framing error or a dropped byte, and stays on while the core is in reset.
// - PLL_EN = 0 leaves the PLL out: everything runs on the clk_12m pin, which must then run at
//   CLOCK_HZ. On the board that means CLOCK_HZ = 12 MHz; the Verilator board simulation
//   (sim/vsim/vsim_board.cpp, device vsim:board=icebreaker) drives the pin at the board's CLOCK_HZ
//   instead, so the core and the UART see exactly the clocks per bit of the bitstream.
// - CORE_EN = 0 leaves the core out and sends every received byte back (through the FIFO): a
//   bring-up bitstream that tests the USB-UART link, the clock and the pins on their own.
`default_nettype none

module ntpu_icebreaker_top #(
  parameter int PLL_EN = 0,                // 0: no PLL, the core runs on the clk_12m pin at CLOCK_HZ
  parameter int CORE_EN = 1,               // 0: no core, the link echoes (bring-up)
  parameter int CLOCK_HZ = 12_000_000,     // core clock (reported by INFO)
  parameter int BAUD = 3_000_000,          // UART bit rate; CLOCK_HZ / BAUD must be an integer >= 4
  parameter int N = 2,                     // array size
  parameter int PE_STAGES = 2,             // the shared fp32 add in 2 parts, 1 register (ntpu_array)
  parameter int VEC_EN = 0,                // no vector unit: the host does ACT, RELU_GRAD, COLSUM
  parameter int TRANSPOSE_A_EN = 0,        // no MATMUL TRANSPOSE_A: the host transposes (libntpu)
  parameter int COUNTER_W = 32,            // performance counters wrap after 358 s at 12 MHz
  parameter int BF16_SHARED = 1,           // one fp32 adder for the array's bf16 rows
  parameter int SEG_DEPTH = 2,             // MATMULs with rows in flight at once
  parameter int UB_ROWS = 1024,            // unified buffer rows (EBR)
  parameter int WB_ROWS = 16384,           // weight buffer rows (SPRAM)
  parameter int ACC_ROWS = 512,            // accumulator rows (EBR)
  parameter int MAX_PAYLOAD = 516,         // largest frame payload; the frame buffers are EBR
  parameter int RX_FIFO_DEPTH = 2048,      // host -> device bytes buffered (EBR)
  parameter int RESET_W = 16               // power-on reset lasts 2^RESET_W cycles
) (
  input  logic clk_12m,  // pin 35: 12 MHz oscillator (the PLL's pad)
  input  logic uart_rx,  // pin 6: FT2232H channel B TXD
  output logic uart_tx,  // pin 9: FT2232H channel B RXD
  input  logic btn_n,    // pin 10: user button, low when pressed (pulled up)
  output logic led_r_n,  // pin 11: red LED, active low
  output logic led_g_n   // pin 37: green LED, active low
);

  localparam int OSC_HZ = 12_000_000;
  localparam int CLKS_PER_BIT = CLOCK_HZ / BAUD;

  if (CLOCK_HZ % BAUD != 0 || CLKS_PER_BIT < 4) begin : g_bad_baud
    initial $fatal(1, "ntpu_icebreaker_top: CLOCK_HZ / BAUD must be an integer >= 4");
  end
  if (RESET_W < 15) begin : g_bad_reset
    initial $fatal(1, "ntpu_icebreaker_top: RESET_W must be >= 15 (the SPRAM clear takes 2^14 cycles)");
  end

  // ---------------------------------------------------------------- clock and reset
  logic clk, locked;

  if (PLL_EN != 0) begin : g_pll
    ntpu_pll #(
      .CLKIN_HZ (OSC_HZ),
      .CLKOUT_HZ(CLOCK_HZ)
    ) u_pll (
      .clk_in (clk_12m),
      .clk_out(clk),
      .locked (locked)
    );
  end else begin : g_no_pll
    assign clk = clk_12m;
    assign locked = 1'b1;
  end

  // `locked` and the button are asynchronous to clk; the counter starts at 0 with the bitstream.
  logic [1:0] lock_sync_q = 2'b00;
  logic [1:0] btn_sync_q = 2'b00;
  logic [RESET_W:0] por_q = '0;
  logic rst;

  always_ff @(posedge clk) begin
    lock_sync_q <= {lock_sync_q[0], locked};
    btn_sync_q <= {btn_sync_q[0], btn_n};
    if (!lock_sync_q[1] || !btn_sync_q[1]) begin
      por_q <= '0;
    end else if (!por_q[RESET_W]) begin
      por_q <= por_q + (RESET_W + 1)'(1);
    end
  end

  assign rst = !por_q[RESET_W];

  // ---------------------------------------------------------------- link
  logic link_activity, link_error;

  // About 90 ms of activity and 1.4 s of error per event at 12 MHz.
  ntpu_uart_device #(
    .CLKS_PER_BIT (CLKS_PER_BIT),
    .RX_FIFO_DEPTH(RX_FIFO_DEPTH),
    .CORE_EN      (CORE_EN),
    .N            (N),
    .UB_ROWS      (UB_ROWS),
    .WB_ROWS      (WB_ROWS),
    .ACC_ROWS     (ACC_ROWS),
    .MAX_PAYLOAD  (MAX_PAYLOAD),
    .PE_STAGES    (PE_STAGES),
    .VEC_EN       (VEC_EN),
    .TRANSPOSE_A_EN(TRANSPOSE_A_EN),
    .COUNTER_W    (COUNTER_W),
    .BF16_SHARED  (BF16_SHARED),
    .SEG_DEPTH    (SEG_DEPTH),
    .CLOCK_HZ     (32'(CLOCK_HZ))
  ) u_device (
    .clk     (clk),
    .rst     (rst),
    .rxd     (uart_rx),
    .txd     (uart_tx),
    .activity(link_activity),
    .error   (link_error)
  );

  assign led_g_n = !link_activity;
  assign led_r_n = !(rst || link_error);

endmodule

`default_nettype wire
