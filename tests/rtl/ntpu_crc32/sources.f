rtl/ntpu_crc32.sv
tests/rtl/ntpu_crc32/tb.sv
