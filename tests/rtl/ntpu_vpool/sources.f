rtl/ntpu_ram.sv
rtl/ntpu_fp32_add.sv
rtl/ntpu_fp32_mul.sv
rtl/ntpu_vpool.sv
tests/rtl/ntpu_vpool/tb.sv
