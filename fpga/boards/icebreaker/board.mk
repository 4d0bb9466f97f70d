# SPDX-License-Identifier: Apache-2.0
# iCEBreaker (iCE40UP5K-SG48): what mk/fpga.mk needs to build it. See docs/boards.md and
# docs/decisions/0006-icebreaker-config.md for why these numbers.
#   CONFIG=core (default): ntpu_core behind the UART link.
#   CONFIG=echo: the same top without the core, echoing every byte: link bring-up.
# BOARD_PARAMS (CONFIG=core) also builds the simulated board, vsim:board=icebreaker (Makefile, docs/boards.md).
BOARD_FAMILY := ice40
BOARD_DEVICE := iCE40UP5K-SG48
BOARD_TOP := ntpu_icebreaker_top
BOARD_SRCS := fpga/boards/icebreaker/ntpu_icebreaker_top.sv
BOARD_PCF := fpga/boards/icebreaker/icebreaker.pcf
BOARD_PNR := nextpnr-ice40 --up5k --package sg48
BOARD_CLOCK_HZ := 12000000
BOARD_BAUD := 3000000
include fpga/boards/up5k_core.mk
CONFIG ?= core
# Every configuration below (make fpga-all).
BOARD_CONFIGS := core echo
# The simulated board (vsim:board=icebreaker, mk/board_sim.mk): the configurations built, the top's pins
# in the order clock, FPGA receive (host -> FPGA), FPGA transmit, button (held high: released), and
# the C test (t: the model) of the LED the top lights during reset and after a link error.
BOARD_SIM_CONFIGS := core
BOARD_SIM_PINS := clk_12m uart_rx uart_tx btn_n
BOARD_SIM_ERR_LED := !t->led_r_n
BOARD_LINK := PLL_EN=0 CLOCK_HZ=$(BOARD_CLOCK_HZ) BAUD=$(BOARD_BAUD) RX_FIFO_DEPTH=2048
ifeq ($(CONFIG),core)
# Top-level parameters (chparam): the core's configuration on this board.
BOARD_PARAMS := $(BOARD_LINK) $(UP5K_CORE_PARAMS)
BOARD_CONFIG := $(UP5K_CORE_CONFIG)
BOARD_SUFFIX :=
else ifeq ($(CONFIG),echo)
BOARD_PARAMS := $(BOARD_LINK) CORE_EN=0
BOARD_CONFIG := UART echo, no core (bring-up)
BOARD_SUFFIX := -echo
else
$(error BOARD=icebreaker: CONFIG must be core or echo)
endif
