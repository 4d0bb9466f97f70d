rtl/ntpu_ram.sv
rtl/ntpu_fifo.sv
rtl/ntpu_spi_target.sv
rtl/ntpu_spi_device.sv
tests/rtl/ntpu_spi_device/tb.sv
