rtl/ntpu_bf16_mul.sv
rtl/ntpu_fp32_add.sv
rtl/ntpu_pe.sv
tests/rtl/ntpu_pe/tb.sv
