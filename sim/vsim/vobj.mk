# SPDX-License-Identifier: Apache-2.0
# Included from a Verilator output directory: builds the model's objects (and, for the first model,
# Verilator's run-time objects) and lists them in objs.txt for the library (plain objects, so one
# archive holds them all). VMODEL names the model (--prefix); VRUNTIME=0 leaves the run-time out,
# for a second model in the same library, which shares the first one's; VRUNTIME=trace keeps only
# the trace writer, for a traced model whose library's first model has none.
VMODEL ?= Vntpu_core
VRUNTIME ?= 1
include $(VMODEL).mk

VSIM_OBJS := $(VK_OBJS) $(if $(filter 1,$(VRUNTIME)),$(VK_GLOBAL_OBJS)) \
             $(if $(filter trace,$(VRUNTIME)),$(filter verilated_fst_c.o,$(VK_GLOBAL_OBJS)))

.PHONY: vsim-objs
vsim-objs: $(VSIM_OBJS)
	@echo $(addprefix $(CURDIR)/,$(VSIM_OBJS)) > objs.txt
