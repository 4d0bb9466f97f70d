# Prints a board's core parameters (BOARD_PARAMS), read after the board's board.mk:
#   make -f fpga/boards/<board>/board.mk -f mk/board_params.mk board-params
# so that the simulated board (vsim:board=...) is built with the bitstream's parameters.
.PHONY: board-params
board-params:
	@echo $(BOARD_PARAMS)
