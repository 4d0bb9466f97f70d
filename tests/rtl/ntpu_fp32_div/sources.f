rtl/ntpu_iter_count.sv
rtl/ntpu_fp32_div.sv
tests/rtl/common/fp32_iter_check.sv
tests/rtl/ntpu_fp32_div/tb.sv
