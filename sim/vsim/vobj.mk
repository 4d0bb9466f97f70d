# Included from the Verilator output directory: builds the model's objects and Verilator's run-time
# objects, and lists them in objs.txt for the library (plain objects, so one archive holds them all).
include Vntpu_core.mk

.PHONY: vsim-objs
vsim-objs: $(VK_OBJS) $(VK_GLOBAL_OBJS)
	@echo $(addprefix $(CURDIR)/,$(VK_OBJS) $(VK_GLOBAL_OBJS)) > objs.txt
