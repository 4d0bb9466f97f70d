rtl/ntpu_fp32_add.sv
tests/rtl/ntpu_fp32_add/tb.sv
tests/rtl/common/fp32_vector_check.sv
