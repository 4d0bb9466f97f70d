# SPDX-License-Identifier: Apache-2.0
# pico-ice (iCE40UP5K-SG48 behind an RP2040): what mk/fpga.mk needs to build it. The core is the
# iCEBreaker's (docs/decisions/0006-icebreaker-config.md); the link is SPI to the RP2040
# (docs/decisions/0037-pico-ice-spi-link.md), which also loads the bitstream (make flash BOARD=pico-ice).
#   CONFIG=core (default): ntpu_core behind the SPI link.
#   CONFIG=echo: the same top without the core, echoing every byte: link bring-up.
BOARD_FAMILY := ice40
BOARD_DEVICE := iCE40UP5K-SG48
BOARD_TOP := ntpu_pico_ice_top
BOARD_SRCS := fpga/boards/pico-ice/ntpu_pico_ice_top.sv
BOARD_PCF := fpga/boards/pico-ice/pico-ice.pcf
BOARD_PNR := nextpnr-ice40 --up5k --package sg48
BOARD_CLOCK_HZ := 12000000
# No UART: the link is SPI at 3 MHz (CLOCK_HZ / 4), a 2-byte header per up to 64 bytes each way.
BOARD_BAUD := 0
BOARD_LINK_DESC := SPI 3 MHz, 363 kB/s at most
BOARD_USB := the nanoTPU firmware 1209:0001
BOARD_FLASH := usb
include fpga/boards/up5k_core.mk
CONFIG ?= core
BOARD_CONFIGS := core echo
BOARD_LINK := CLOCK_HZ=$(BOARD_CLOCK_HZ)
ifeq ($(CONFIG),core)
BOARD_PARAMS := $(BOARD_LINK) $(UP5K_CORE_PARAMS)
BOARD_CONFIG := $(UP5K_CORE_CONFIG)
BOARD_SUFFIX :=
else ifeq ($(CONFIG),echo)
BOARD_PARAMS := $(BOARD_LINK) CORE_EN=0
BOARD_CONFIG := SPI echo, no core (bring-up)
BOARD_SUFFIX := -echo
else
$(error BOARD=pico-ice: CONFIG must be core or echo)
endif
