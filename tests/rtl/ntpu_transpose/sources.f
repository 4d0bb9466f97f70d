rtl/ntpu_transpose.sv
tests/rtl/ntpu_transpose/tb.sv
