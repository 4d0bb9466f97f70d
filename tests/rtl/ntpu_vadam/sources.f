rtl/ntpu_fp32_mul.sv
rtl/ntpu_fp32_add.sv
rtl/ntpu_iter_count.sv
rtl/ntpu_fp32_div.sv
rtl/ntpu_fp32_sqrt.sv
rtl/ntpu_vadam.sv
tests/rtl/ntpu_vadam/tb.sv
