+define+LINK_W=4
rtl/ntpu_pkg.sv
rtl/ntpu_crc32.sv
rtl/ntpu_ram.sv
rtl/ntpu_link_rx.sv
tests/rtl/ntpu_link_rx/tb.sv
