rtl/ntpu_pkg.sv
rtl/ntpu_ram.sv
rtl/ntpu_seq.sv
rtl/ntpu_bf16_mul.sv
rtl/ntpu_fp32_add.sv
rtl/ntpu_pe.sv
rtl/ntpu_array.sv
tests/rtl/ntpu_seq/tb.sv
