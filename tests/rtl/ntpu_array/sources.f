rtl/ntpu_bf16_mul.sv
rtl/ntpu_fp32_add.sv
rtl/ntpu_fp32_add_pipe.sv
rtl/ntpu_pe.sv
rtl/ntpu_bf16_shared.sv
rtl/ntpu_array.sv
tests/rtl/ntpu_array/tb_array_run.sv
tests/rtl/ntpu_array/tb.sv
