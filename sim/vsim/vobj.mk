# Included from the Verilator output directory: builds the model archive and Verilator's run-time
# objects, and lists them in objs.txt for the library link.
include Vntpu_core.mk

.PHONY: vsim-objs
vsim-objs: Vntpu_core__ALL.a $(VK_GLOBAL_OBJS)
	@echo $(addprefix $(CURDIR)/,Vntpu_core__ALL.a $(VK_GLOBAL_OBJS)) > objs.txt
