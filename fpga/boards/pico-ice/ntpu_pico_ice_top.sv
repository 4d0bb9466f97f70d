// SPDX-License-Identifier: Apache-2.0
// pico-ice board top: the clock the RP2040 makes on GP24, a power-on reset, the SPI link to the RP2040
// (ntpu_spi_device: mode 0, select on GP0, the two-byte header), ntpu_core, and a link error flag.
//
// Contract:
// - Clock: clk_rp on pin 35 (global buffer G0), driven by the RP2040's CLK_GPOUT2 = 48 MHz / divider; the
//   firmware sets 12 MHz at boot, which must equal CLOCK_HZ (INFO reports it). The link's SCK must be at
//   most CLOCK_HZ / 4: the firmware runs it at 3 MHz.
// - Link pins, as the board wires them: spi_sck pin 15 (GP10), spi_mosi pin 14 (ICE_SO, driven by the
//   RP2040's SPI1 TX on GP11), spi_miso pin 17 (ICE_SI, the RP2040's SPI1 RX on GP8), spi_sel_n pin 27
//   (GP0). Pin 16 (ICE_SSN, the FPGA flash's chip select, GP9) is left alone: the RP2040 holds it high.
// - link_err (pin 25, GP1) is high for about 1.4 s after a transaction that broke the link protocol, and
//   while the core is in reset.
// - Reset: the core is held in reset for 2^RESET_W cycles after configuration (longer than the SPRAM
//   clear of the iCE40 ntpu_ram). The RP2040 resets the FPGA as a whole through CRESET_B.
// - CORE_EN = 0 leaves the core out and sends every received byte back: a bring-up bitstream.
`default_nettype none

module ntpu_pico_ice_top #(
  parameter int CORE_EN = 1,               // 0: no core, the link echoes (bring-up)
  parameter int CLOCK_HZ = 12_000_000,     // the clock on clk_rp (reported by INFO)
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
  parameter int RX_FIFO_DEPTH = 512,       // RP2040 -> FPGA bytes buffered (EBR)
  parameter int TX_FIFO_DEPTH = 512,       // FPGA -> RP2040 bytes buffered (EBR)
  parameter int RESET_W = 16               // power-on reset lasts 2^RESET_W cycles
) (
  input  logic clk_rp,     // pin 35: from the RP2040's GP24
  input  logic spi_sck,    // pin 15: GP10
  input  logic spi_sel_n,  // pin 27: GP0
  input  logic spi_mosi,   // pin 14: GP11 (SPI1 TX)
  output logic spi_miso,   // pin 17: GP8 (SPI1 RX)
  output logic link_err    // pin 25: GP1
);

  if (RESET_W < 15) begin : g_bad_reset
    initial $fatal(1, "ntpu_pico_ice_top: RESET_W must be >= 15 (the SPRAM clear takes 2^14 cycles)");
  end

  // The counter starts at 0 with the bitstream.
  logic [RESET_W:0] por_q = '0;
  logic rst, link_error;

  always_ff @(posedge clk_rp) begin
    if (!por_q[RESET_W]) por_q <= por_q + (RESET_W + 1)'(1);
  end
  assign rst = !por_q[RESET_W];

  ntpu_spi_device #(
    .RX_FIFO_DEPTH (RX_FIFO_DEPTH),
    .TX_FIFO_DEPTH (TX_FIFO_DEPTH),
    .CORE_EN       (CORE_EN),
    .N             (N),
    .UB_ROWS       (UB_ROWS),
    .WB_ROWS       (WB_ROWS),
    .ACC_ROWS      (ACC_ROWS),
    .MAX_PAYLOAD   (MAX_PAYLOAD),
    .PE_STAGES     (PE_STAGES),
    .VEC_EN        (VEC_EN),
    .TRANSPOSE_A_EN(TRANSPOSE_A_EN),
    .COUNTER_W     (COUNTER_W),
    .BF16_SHARED   (BF16_SHARED),
    .SEG_DEPTH     (SEG_DEPTH),
    .CLOCK_HZ      (32'(CLOCK_HZ))
  ) u_device (
    .clk  (clk_rp),
    .rst  (rst),
    .sck  (spi_sck),
    .sel_n(spi_sel_n),
    .mosi (spi_mosi),
    .miso (spi_miso),
    .error(link_error)
  );

  assign link_err = rst || link_error;

endmodule

`default_nettype wire
