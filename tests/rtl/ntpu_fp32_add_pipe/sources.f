rtl/ntpu_fp32_add_pipe.sv
tests/rtl/ntpu_fp32_add_pipe/tb.sv
