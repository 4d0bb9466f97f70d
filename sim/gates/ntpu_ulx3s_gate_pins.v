// The ULX3S netlist's pins under the names the board harness drives (sim/vsim/vsim_board.cpp was
// written for the iCEBreaker top): make fpga-test Verilates this module with the synthesized
// ntpu_ulx3s_top, so one harness plays the host's UART for both boards.
//   clk_12m  -> clk_25mhz, driven at the PLL's output rate (sim/gates/EHXPLLL.v)
//   uart_rx  -> ftdi_txd (host -> FPGA), uart_tx <- ftdi_rxd (FPGA -> host)
//   btn_n    -> btn_pwr_n; led_r_n <- !led[1] (reset or link error), led_g_n <- !led[0] (traffic)
`default_nettype none

module ntpu_ulx3s_gate_pins (
  input  wire clk_12m,
  input  wire uart_rx,
  output wire uart_tx,
  input  wire btn_n,
  output wire led_r_n,
  output wire led_g_n
);
  wire [7:0] led;

  ntpu_ulx3s_top u_top (
    .clk_25mhz(clk_12m),
    .ftdi_txd (uart_rx),
    .ftdi_rxd (uart_tx),
    .btn_pwr_n(btn_n),
    .led      (led)
  );

  assign led_r_n = !led[1];
  assign led_g_n = !led[0];

  wire unused_ok = &{1'b0, led[7:2], 1'b0};
endmodule

`default_nettype wire
