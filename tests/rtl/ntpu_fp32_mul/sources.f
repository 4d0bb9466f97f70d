rtl/ntpu_fp32_mul.sv
tests/rtl/ntpu_fp32_mul/tb.sv
tests/rtl/common/fp32_vector_check.sv
