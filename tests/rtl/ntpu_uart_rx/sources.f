rtl/ntpu_uart_rx.sv
tests/rtl/ntpu_uart_rx/tb.sv
