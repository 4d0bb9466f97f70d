rtl/ntpu_requant.sv
tests/rtl/ntpu_requant/tb.sv
