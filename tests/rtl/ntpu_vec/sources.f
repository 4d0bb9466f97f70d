rtl/ntpu_fp32_add.sv
rtl/ntpu_requant.sv
rtl/ntpu_vec.sv
tests/rtl/ntpu_vec/tb.sv
