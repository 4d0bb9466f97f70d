# SPDX-License-Identifier: Apache-2.0
# Prints a board's core parameters (BOARD_PARAMS), read after the board's board.mk:
#   make -f fpga/boards/<board>/board.mk -f mk/board_params.mk board-params
# so that the simulated board (vsim:board=...) is built with the bitstream's parameters.
.PHONY: board-params
board-params:
	@echo $(BOARD_PARAMS)

# Every configuration of this board that builds a bitstream (make fpga-all).
.PHONY: board-configs
board-configs:
	@echo $(BOARD_CONFIGS)

# The configurations of this board that the library simulates (vsim:board=...,config=...; mk/board_sim.mk).
.PHONY: board-sim-configs
board-sim-configs:
	@echo $(BOARD_SIM_CONFIGS)

# One configuration's simulated model, as make variables (mk/board_sim.mk includes them). Needs
# CONFIG, BOARD (the directory's name) and BOARD_MK.
SIM_ID = $(BOARD)_$(CONFIG)
.PHONY: board-sim-vars
board-sim-vars:
	@echo 'BOARD_SIMS += $(SIM_ID)'
	@echo 'BSIM_$(SIM_ID)_BOARD := $(BOARD)'
	@echo 'BSIM_$(SIM_ID)_CONFIG := $(CONFIG)'
	@echo 'BSIM_$(SIM_ID)_MK := $(BOARD_MK)'
	@echo 'BSIM_$(SIM_ID)_TOP := $(BOARD_TOP)'
	@echo 'BSIM_$(SIM_ID)_SRCS := $(BOARD_SRCS)'
	@echo 'BSIM_$(SIM_ID)_PARAMS := $(BOARD_PARAMS)'
	@echo 'BSIM_$(SIM_ID)_CLOCK_HZ := $(BOARD_CLOCK_HZ)'
	@echo 'BSIM_$(SIM_ID)_BAUD := $(BOARD_BAUD)'
	@echo 'BSIM_$(SIM_ID)_PINS := $(BOARD_SIM_PINS)'
	@echo 'BSIM_$(SIM_ID)_ERR_LED := $(BOARD_SIM_ERR_LED)'
