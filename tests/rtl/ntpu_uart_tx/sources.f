rtl/ntpu_uart_tx.sv
rtl/ntpu_uart_rx.sv
tests/rtl/ntpu_uart_tx/tb.sv
