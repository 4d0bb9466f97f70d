# SPDX-License-Identifier: Apache-2.0
# The core configuration that fits an iCE40UP5K (decision 0006), shared by the boards built on one: the
# iCEBreaker (behind its UART) and the pico-ice (behind its SPI link). Included by their board.mk files.
UP5K_CORE_PARAMS := N=2 PE_STAGES=2 BF16_SHARED=1 SEG_DEPTH=2 VEC_EN=0 TRANSPOSE_A_EN=0 COUNTER_W=32 UB_ROWS=1024 WB_ROWS=16384 ACC_ROWS=512 MAX_PAYLOAD=516
UP5K_CORE_CONFIG := N=2, shared fp32 adder (1 stage), no vector unit or TRANSPOSE_A, 32-bit counters, SEG_DEPTH 2, UB 1024, WB 16384, ACC 512
