rtl/ntpu_ram.sv
rtl/ntpu_fifo.sv
tests/rtl/ntpu_fifo/tb.sv
