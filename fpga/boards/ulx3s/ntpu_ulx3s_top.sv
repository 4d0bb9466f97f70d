// SPDX-License-Identifier: Apache-2.0
// ULX3S (LFE5U-85F-CABGA381) board top: a clock made from the 25 MHz oscillator, a power-on
// reset, the UART link on the FT231X (8N1 at BAUD), ntpu_core, and two of the LEDs.
//
// Contract (as ntpu_icebreaker_top's, docs/boards.md):
// - Host -> device: ftdi_txd -> ntpu_uart_rx -> RX FIFO (RX_FIFO_DEPTH bytes) -> ntpu_core.s_rx.
//   No flow-control wires: the host keeps at most RX_FIFO_DEPTH bytes of frames whose replies it
//   has not completely received in flight. A dropped byte or a framing error lights led[1]; the
//   link protocol's CRC and resync recover from either.
// - Device -> host: ntpu_core.m_tx -> ntpu_uart_tx -> ftdi_rxd, back to back at the line rate.
// - Reset: the core is held in reset for 2^RESET_W cycles after configuration and after the PLL
//   locks, and while the power button (btn_pwr_n, low when pressed) is held.
// - LEDs (active high): led[0] blinks with link traffic, led[1] lights for about half a second
//   after a link error and stays on while the core is in reset; led[7:2] are off.
// - The clock (CLOCK_HZ): 25 MHz is the oscillator itself, 12.5 MHz the oscillator halved by a
//   flip-flop, anything else comes from the PLL (ntpu_pll; fpga/prim/ecp5/ for the EHXPLLL). The
//   UART needs CLOCK_HZ to be a multiple (>= 4) of BAUD: 12 MHz and 3 Mbaud (4 clocks per bit, the
//   FT231X's top rate) from the PLL; 12.5 MHz and 500 kbaud (3 MHz / 6) without one.
// - CORE_EN = 0 leaves the core out and sends every received byte back (bring-up).
`default_nettype none

module ntpu_ulx3s_top #(
  parameter int CORE_EN = 1,               // 0: no core, the link echoes (bring-up)
  parameter int CLOCK_HZ = 12_000_000,     // core clock (reported by INFO): 25 MHz, 12.5 MHz or a PLL's
  parameter int BAUD = 3_000_000,           // UART bit rate; CLOCK_HZ / BAUD must be an integer >= 4
  parameter int N = 4,                     // array size
  parameter int PE_STAGES = 5,             // pipelined PEs (ntpu_array)
  parameter int BF16_SHARED = 0,           // 1: one fp32 adder for the array's bf16 rows (ntpu_array)
  parameter int VEC_EN = 1,                // 0: no vector unit, the host does ACT, RELU_GRAD, COLSUM
  parameter int COUNTER_W = 64,            // performance counter width (zero-extended on the wire)
  parameter int UB_ROWS = 4096,            // unified buffer rows (DP16KD)
  parameter int WB_ROWS = 4096,            // weight buffer rows (DP16KD)
  parameter int ACC_ROWS = 2048,           // accumulator rows (DP16KD)
  parameter int MAX_PAYLOAD = 4112,        // largest frame payload (DP16KD)
  parameter int RX_FIFO_DEPTH = 2048,      // host -> device bytes buffered (DP16KD)
  parameter int RESET_W = 16               // power-on reset lasts 2^RESET_W cycles
) (
  input  logic       clk_25mhz,  // G2: 25 MHz oscillator
  input  logic       ftdi_txd,   // M1: FT231X TXD, host -> FPGA
  output logic       ftdi_rxd,   // L4: FT231X RXD, FPGA -> host
  input  logic       btn_pwr_n,  // D6: power button, low when pressed (pulled up)
  output logic [7:0] led         // B2 C2 C1 D2 D1 E2 E1 H3: LEDs, active high
);

  localparam int OSC_HZ = 25_000_000;
  localparam int CLKS_PER_BIT = CLOCK_HZ / BAUD;

  if (CLOCK_HZ % BAUD != 0 || CLKS_PER_BIT < 4) begin : g_bad_baud
    initial $fatal(1, "ntpu_ulx3s_top: CLOCK_HZ / BAUD must be an integer >= 4");
  end

  // ---------------------------------------------------------------- clock and reset
  // The core misses 25 MHz (about 19 MHz at N = 4). The halved oscillator needs no PLL (nextpnr
  // puts the divided clock on a global net); other rates come from the PLL.
  logic clk, locked;

  if (CLOCK_HZ == OSC_HZ) begin : g_osc
    assign clk = clk_25mhz;
    assign locked = 1'b1;
  end else if (CLOCK_HZ * 2 == OSC_HZ) begin : g_div2
    logic div_q = 1'b0;
    always_ff @(posedge clk_25mhz) div_q <= !div_q;
    assign clk = div_q;
    assign locked = 1'b1;
  end else begin : g_pll
    ntpu_pll #(
      .CLKIN_HZ (OSC_HZ),
      .CLKOUT_HZ(CLOCK_HZ)
    ) u_pll (
      .clk_in (clk_25mhz),
      .clk_out(clk),
      .locked (locked)
    );
  end

  // `locked` and the button are asynchronous to clk; the counter starts at 0 with the bitstream.
  logic [1:0] lock_sync_q = 2'b00;
  logic [1:0] btn_sync_q = 2'b00;
  logic [RESET_W:0] por_q = '0;
  logic rst;

  always_ff @(posedge clk) begin
    lock_sync_q <= {lock_sync_q[0], locked};
    btn_sync_q <= {btn_sync_q[0], btn_pwr_n};
    if (!lock_sync_q[1] || !btn_sync_q[1]) begin
      por_q <= '0;
    end else if (!por_q[RESET_W]) begin
      por_q <= por_q + (RESET_W + 1)'(1);
    end
  end

  assign rst = !por_q[RESET_W];

  // ---------------------------------------------------------------- link
  logic link_activity, link_error;

  // About 40 ms of activity and 0.7 s of error per event at 25 MHz.
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
    .BF16_SHARED  (BF16_SHARED),
    .VEC_EN       (VEC_EN),
    .COUNTER_W    (COUNTER_W),
    .CLOCK_HZ     (32'(CLOCK_HZ))
  ) u_device (
    .clk     (clk),
    .rst     (rst),
    .rxd     (ftdi_txd),
    .txd     (ftdi_rxd),
    .activity(link_activity),
    .error   (link_error)
  );

  assign led = {6'b0, rst || link_error, link_activity};

endmodule

`default_nettype wire
