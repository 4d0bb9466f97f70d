# SPDX-License-Identifier: Apache-2.0
# nanoTPU: one Makefile for the RTL model, the library, the CLI, the tests and the demo.
# `make help` lists the targets.

SHELL := /bin/bash
.DEFAULT_GOAL := all

BUILD ?= build
PREFIX ?= /usr/local
# Array size of the simulated core (vsim); the golden model takes its size from the same place.
N ?= 8
# Link bytes per cycle each way of the simulated core (vsim; ref's cycle estimate): a wide, PCIe-like
# host interface. The boards' byte-wide UART tops keep the RTL default of 1 (docs/decisions/0012).
LINK_BYTES ?= 32
# Program memory rows of the simulated core (ref and vsim; protocol 1.4 RUN, decision 0015).
PM_ROWS ?= 8192
# Optimizer-state rows of the simulated core (memory OS, OPTIM ADAM): Adam's m and v for 784-256-10.
OS_ROWS ?= 65536
JOBS ?= $(shell nproc)

CC ?= gcc
CXX ?= g++
VERILATOR ?= verilator
IVERILOG ?= iverilog
VVP ?= vvp

WARN := -Wall -Wextra -Wpedantic -Werror
CPPFLAGS := -Ihost/include -Ihost/src -Isim/ref -Isim/vsim -Isim/rp2040 -Ifirmware/pico-ice -I/usr/include/libusb-1.0 -D_POSIX_C_SOURCE=200809L -DNTPU_DEFAULT_N=$(N) -DNTPU_LINK_BYTES=$(LINK_BYTES) -DNTPU_DEFAULT_PM_ROWS=$(PM_ROWS) -DNTPU_DEFAULT_OS_ROWS=$(OS_ROWS)
CFLAGS := -std=c11 $(WARN) -O2 -g -fPIC -fvisibility=hidden
CXXFLAGS := -std=c++17 -Wall -Wextra -Werror -O2 -g -fPIC -fvisibility=hidden
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDLIBS := -lusb-1.0 -lunicorn -lcjson -lz -lm -lpthread

# ---------------------------------------------------------------- sources
RTL_SRCS := rtl/ntpu_pkg.sv $(filter-out rtl/ntpu_pkg.sv,$(sort $(wildcard rtl/*.sv)))
# libntpu: the device core in host/src/, its parts in one folder each (transport/, io/, nn/, fallback/).
LIB_C_SRCS := $(sort $(wildcard host/src/*.c host/src/*/*.c) $(wildcard sim/ref/*.c))
# vsim_board_model.cpp is compiled once per simulated board configuration (mk/board_sim.mk).
VSIM_CXX_SRCS := $(filter-out sim/vsim/vsim_board_model.cpp,$(sort $(wildcard sim/vsim/*.cpp)))
# The emulated pico-ice (vsim:board=pico-ice, mk/board_sim.mk): the RP2040 emulator and the firmware image.
PICO_EMU_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard sim/rp2040/*.c))) \
                 $(BUILD)/obj/sim/rp2040/pico_ice_firmware.o
LIB_OBJS = $(LIB_C_SRCS:%.c=$(BUILD)/obj/%.o) $(VSIM_CXX_SRCS:%.cpp=$(BUILD)/obj/%.o) $(BOARD_SIM_OBJS) $(PICO_EMU_OBJS)
LIB_SAN_OBJS := $(LIB_C_SRCS:%.c=$(BUILD)/san/%.o)

VOBJ := $(BUILD)/vobj
# C++ flags of the Verilated models (docs/decisions/0010-fast-vsim.md).
VOPT := OPT_FAST=-O2 OPT_SLOW=-O1 OPT_GLOBAL=-O2
# The core model (vsim) is built guided by a profile (docs/decisions/0017-vsim-speed.md): compiled
# with -fprofile-generate, run on the recorded matmul streams in tools/pgo, compiled again with
# -fprofile-use (partial training: code the streams miss keeps its -O2). VPGO=0 builds it plainly.
VPGO ?= 1
VPGO_STREAMS := $(sort $(wildcard tools/pgo/*.bin))
VPGO_GEN := OPT_FAST="-O2 -fprofile-generate -fprofile-update=single" OPT_SLOW=-O1 OPT_GLOBAL=-O2
VPGO_USE := OPT_FAST="-O2 -fprofile-use -fprofile-partial-training -Wno-missing-profile" OPT_SLOW=-O1 \
            OPT_GLOBAL=-O2
# -fno-semantic-interposition: the model's functions may call each other directly and be inlined
# within a file (-fPIC alone assumes another library could replace them): ~1 % fewer instructions.
VCXXFLAGS := -fPIC -std=c++17 -fno-semantic-interposition
VMODEL := $(VOBJ)/Vntpu_core__ALL.a
# Two models of the core: Vntpu_core without tracing, which lets Verilator keep internal signals in
# C++ locals (~15 % faster), for every run; Vntpu_core_trace for vsim:trace=FILE only. Both are the
# core behind sim/vsim/ntpu_vsim_core.sv, which ties m_tx_ready high (the harness takes every byte).
# vsim's sources: rtl/ with the simulation forms of sim/vsim/ (a module of the same name as its rtl/
# twin, held to it by the lockstep check: docs/decisions/0025-one-rtl.md) in place of their twins, and
# the modules only vsim has. The boards' link modules (UART, FIFO, PLL) are not part of the core.
VSIM_TWINS := $(sort $(filter $(patsubst rtl/%,sim/vsim/%,$(RTL_SRCS)),$(wildcard sim/vsim/ntpu_*.sv)))
VSIM_ONLY := sim/vsim/ntpu_vsim_delay.sv sim/vsim/ntpu_vsim_gate.sv sim/vsim/ntpu_vsim_core.sv
VSIM_SRCS := rtl/ntpu_pkg.sv sim/vsim/ntpu_vsim_pkg.sv \
             $(filter-out rtl/ntpu_pkg.sv rtl/ntpu_uart_% rtl/ntpu_spi_% rtl/ntpu_fifo.sv rtl/ntpu_pll.sv \
                          $(patsubst sim/vsim/%,rtl/%,$(VSIM_TWINS)),$(RTL_SRCS)) $(VSIM_TWINS) $(VSIM_ONLY)
VPARAMS := -GN=$(N) -GLINK_BYTES=$(LINK_BYTES) -GPM_ROWS=$(PM_ROWS) -GMEM_OVERLAP=1 -GOS_ROWS=$(OS_ROWS) -GCONV_EN=1 -GPOOL_EN=1
VFLAGS := --cc --top-module ntpu_vsim_core --prefix Vntpu_core $(VPARAMS) -O3 --x-assign fast --x-initial fast \
          --noassert -Wno-fatal -Mdir $(VOBJ)
VOBJ_TRACE := $(BUILD)/vobj-trace
VFLAGS_TRACE := --cc --top-module ntpu_vsim_core --prefix Vntpu_core_trace $(VPARAMS) -O3 --x-assign fast \
                --x-initial fast --noassert --trace-fst -Wno-fatal -Mdir $(VOBJ_TRACE)
# The same core from rtl/ alone, exactly what synthesis reads (vsim:rtl): no simulation forms, no gated
# clocks, two evals a cycle. Also the reference of the lockstep check (mk/tests.mk).
VOBJ_RTL := $(BUILD)/vobj-rtl
VFLAGS_RTL := --cc --top-module ntpu_core --prefix Vntpu_core_rtl $(VPARAMS) -O3 --x-assign fast --x-initial fast \
              --noassert -Wno-fatal -Mdir $(VOBJ_RTL)

include mk/board_sim.mk
VOBJS_ALL := $(VOBJ)/objs.txt $(VOBJ_TRACE)/objs.txt $(VOBJ_RTL)/objs.txt $(BOARD_SIM_VOBJS) $(PICO_SIM)/objs.txt
VSTAMPS := $(VOBJ)/stamp $(VOBJ_TRACE)/stamp $(VOBJ_RTL)/stamp $(BOARD_SIM_STAMPS) $(PICO_SIM)/stamp

LIB_A := $(BUILD)/libntpu.a
LIB_SO := $(BUILD)/libntpu.so
CLI := $(BUILD)/ntpu
VERSION := $(shell sed -n 's/^\#define NTPU_LIB_VERSION "\(.*\)"/\1/p' host/include/ntpu/ntpu.h)

include mk/deps.mk
include mk/protocol.mk

# ---------------------------------------------------------------- build
.PHONY: all
EXAMPLES := $(patsubst host/examples/%.c,$(BUILD)/examples/%,$(wildcard host/examples/*.c))

all: $(PROTOCOL_OUT) $(CLI) $(LIB_A) $(LIB_SO) $(EXAMPLES) ## build the library, the CLI, the examples and the Verilator model

# Verilate when any RTL file changes; the model's own makefile then compiles it at -O2
# (Verilator's default -Os is ~9x slower here, see docs/simulation-facts.md).
$(VOBJ)/stamp: $(VSIM_SRCS) Makefile sim/vsim/vobj.mk tools/vsim_pgo_train.cpp sim/vsim/link_words.h sim/vsim/clock_edge.h $(VPGO_STREAMS)
	@mkdir -p $(VOBJ)
	$(VERILATOR) $(VFLAGS) $(VSIM_SRCS)
ifeq ($(VPGO),1)
	rm -f $(VOBJ)/*.o $(VOBJ)/*.gcda
	$(MAKE) -s -C $(VOBJ) -f $(CURDIR)/sim/vsim/vobj.mk -j$(JOBS) $(VPGO_GEN) CXXFLAGS="$(VCXXFLAGS)" vsim-objs
	$(CXX) -std=c++17 -O1 -DNTPU_LINK_BYTES=$(LINK_BYTES) -I$(VOBJ) -isystem /usr/share/verilator/include \
	       -isystem /usr/share/verilator/include/vltstd -fprofile-generate tools/vsim_pgo_train.cpp \
	       $$(cat $(VOBJ)/objs.txt) -lpthread -o $(VOBJ)/vsim_pgo_train
	$(VOBJ)/vsim_pgo_train $(VPGO_STREAMS)
	rm -f $(VOBJ)/*.o
	$(MAKE) -s -C $(VOBJ) -f $(CURDIR)/sim/vsim/vobj.mk -j$(JOBS) $(VPGO_USE) CXXFLAGS="$(VCXXFLAGS)" vsim-objs
else
	rm -f $(VOBJ)/*.o $(VOBJ)/*.gcda
	$(MAKE) -s -C $(VOBJ) -f $(CURDIR)/sim/vsim/vobj.mk -j$(JOBS) $(VOPT) CXXFLAGS="$(VCXXFLAGS)" vsim-objs
endif
	@touch $@

# The traced core brings the FST writer (VRUNTIME=trace) for itself and the board model. Compiled
# at -O1: it only runs for waveforms, and -O1 builds it in about half the time.
$(VOBJ_TRACE)/stamp: $(VSIM_SRCS) Makefile sim/vsim/vobj.mk
	@mkdir -p $(VOBJ_TRACE)
	$(VERILATOR) $(VFLAGS_TRACE) $(VSIM_SRCS)
	$(MAKE) -s -C $(VOBJ_TRACE) -f $(CURDIR)/sim/vsim/vobj.mk -j$(JOBS) VMODEL=Vntpu_core_trace VRUNTIME=trace \
	        OPT_FAST=-O1 OPT_SLOW=-O1 OPT_GLOBAL=-O2 CXXFLAGS="$(VCXXFLAGS)" vsim-objs
	@touch $@

# The rtl/ core (vsim:rtl): the model's objects only (Verilator's run-time comes with the core model's).
$(VOBJ_RTL)/stamp: $(RTL_SRCS) Makefile sim/vsim/vobj.mk
	@mkdir -p $(VOBJ_RTL)
	$(VERILATOR) $(VFLAGS_RTL) $(filter-out rtl/ntpu_uart_% rtl/ntpu_spi_% rtl/ntpu_fifo.sv rtl/ntpu_pll.sv,$(RTL_SRCS))
	$(MAKE) -s -C $(VOBJ_RTL) -f $(CURDIR)/sim/vsim/vobj.mk -j$(JOBS) VMODEL=Vntpu_core_rtl VRUNTIME=0 \
	        $(VOPT) CXXFLAGS="$(VCXXFLAGS)" vsim-objs
	@touch $@

$(BUILD)/obj/%.o: %.c | deps-quiet $(PROTOCOL_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/sim/vsim/%.o: sim/vsim/%.cpp $(VOBJ)/stamp $(VOBJ_TRACE)/stamp $(VOBJ_RTL)/stamp $(PICO_SIM)/stamp
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) -I$(VOBJ) -I$(VOBJ_TRACE) -I$(VOBJ_RTL) -I$(PICO_SIM) -isystem /usr/share/verilator/include -isystem /usr/share/verilator/include/vltstd \
	       $(CXXFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/sim/vsim/vsim_board.o: sim/vsim/vsim_board.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/san/%.o: %.c | deps-quiet $(PROTOCOL_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -MMD -MP -c $< -o $@

# The static library carries the Verilated model, so users link one archive.
$(LIB_A): $(LIB_OBJS) $(VSTAMPS)
	@rm -f $@
	ar rcs $@ $(LIB_OBJS) $$(cat $(VOBJS_ALL))

$(LIB_SO): $(LIB_OBJS) $(VSTAMPS)
	$(CXX) -shared -o $@ -Wl,-soname,libntpu.so.1 $(LIB_OBJS) $$(cat $(VOBJS_ALL)) $(LDLIBS)

CLI_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard host/tools/*.c)))

# ntpu train under mpirun (host/tools/ranks.c) links Open MPI; its flags are asked for when the rule runs,
# after `make deps` has installed it.
MPI_CFLAGS = $$(pkg-config --cflags ompi-c)
MPI_LIBS = $$(pkg-config --libs ompi-c)
$(BUILD)/obj/host/tools/ranks.o: host/tools/ranks.c | deps-quiet $(PROTOCOL_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(MPI_CFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(CLI): $(CLI_OBJS) $(LIB_A)
	$(CXX) -o $@ $^ $(LDLIBS) $(MPI_LIBS)

# vsim_speed: the Verilated core's speed without the host library in the loop (tools/vsim_speed.c).
# It records the library's byte stream by wrapping the harness's write and read.
.PHONY: vsim-speed
vsim-speed: $(BUILD)/tools/vsim_speed ## cycles/s and MAC/s of the Verilated core (int8 and bf16 128^3 matmuls)
	$(BUILD)/tools/vsim_speed int8 $(if $(S),$(S),128) 3
	$(BUILD)/tools/vsim_speed bf16 $(if $(S),$(S),128) 1

# Where vsim's instructions go, by module (tools/vsim_profile.py, under valgrind): vsim_speed built
# again with -g and without profile guidance, in $(BUILD)/profile. M=module lists its costliest
# lines, DTYPE=bf16 and S=size pick the matmul.
.PHONY: vsim-profile
vsim-profile: ## instructions per simulated cycle of vsim, by module (needs valgrind; M=u_seq for one module's lines)
	$(MAKE) BUILD=$(BUILD)/profile VPGO=0 VCXXFLAGS="$(VCXXFLAGS) -g" $(BUILD)/profile/tools/vsim_speed
	python3 tools/vsim_profile.py $(BUILD)/profile/tools/vsim_speed --dtype $(if $(DTYPE),$(DTYPE),int8) \
	  --size $(if $(S),$(S),128) $(if $(M),--module $(M))

$(BUILD)/tools/vsim_speed: tools/vsim_speed.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIB_A) -Wl,--wrap=ntpu_vsim_write -Wl,--wrap=ntpu_vsim_read -lstdc++ $(LDLIBS) -o $@

# The examples build as a user would build them: against the installed headers and the archive.
$(BUILD)/examples/%: host/examples/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) -O2 -Ihost/include $< $(LIB_A) -lstdc++ $(LDLIBS) -o $@

.PHONY: install
install: all ## install the library, headers, pkg-config file and CLI under PREFIX
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/ntpu $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(LIB_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIB_SO) $(DESTDIR)$(PREFIX)/lib/libntpu.so.1
	ln -sf libntpu.so.1 $(DESTDIR)$(PREFIX)/lib/libntpu.so
	install -m 644 host/include/ntpu/*.h $(DESTDIR)$(PREFIX)/include/ntpu/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' host/ntpu.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ntpu.pc
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/
	@# The dynamic linker finds a new library in a system directory (/usr/local/lib) only after ldconfig.
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig > /dev/null; then ldconfig; \
	 elif [ -z "$(DESTDIR)" ]; then echo "note: run ldconfig as root, or set LD_LIBRARY_PATH=$(PREFIX)/lib, before running programs linked with -lntpu"; fi

include mk/firmware.mk
include mk/fuzz.mk
include mk/tests.mk
include mk/fpga.mk

# ---------------------------------------------------------------- lint
.PHONY: lint
lint: deps-quiet $(PROTOCOL_OUT) ## verilator -Wall on rtl/ and sim/vsim/; C/C++ -Werror; clang-format, SPDX, function and line lengths
	@for f in $(RTL_SRCS); do \
	  m=$$(basename $$f .sv); [ "$$m" = ntpu_pkg ] && continue; \
	  $(VERILATOR) --lint-only -Wall --top-module $$m $(RTL_SRCS) || exit 1; \
	done; echo "verilator -Wall: the $(words $(RTL_SRCS)) files of rtl/ clean"
	@for f in $(VSIM_TWINS) $(VSIM_ONLY); do \
	  $(VERILATOR) --lint-only -Wall --top-module $$(basename $$f .sv) $(VSIM_SRCS) || exit 1; \
	done; echo "verilator -Wall: vsim's $(words $(VSIM_TWINS) $(VSIM_ONLY)) simulation-only files clean"
	@$(MAKE) -s all
	@echo "C/C++: built with -Wall -Wextra -Werror"
	@python3 tools/doc_check.py && echo "docs: no line over 300 characters, no decision record over 150 lines"
	@clang-format --dry-run -Werror $(FORMAT_SRCS) || { echo "make lint: the C above is not laid out as .clang-format says: make format" >&2; exit 1; }
	@echo "clang-format: the $(words $(FORMAT_SRCS)) C and C++ files as .clang-format lays them out"
	@python3 tools/spdx_check.py && echo "SPDX: every source file names its licence"
	@python3 tools/func_len.py && echo "host/: no function over 120 lines"
	@awk 'length > 120 { print FILENAME ":" FNR ": " length " columns, more than 120"; bad = 1 } END { exit bad }' \
	  $(RTL_LONG_CHECK) && echo "RTL: no line over 120 columns"

# The C and C++ that clang-format lays out (decision 0029), and the Verilog held to 120 columns.
FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' '*.cpp')
RTL_LONG_CHECK = $(wildcard rtl/*.sv sim/vsim/*.sv sim/gates/*.v fpga/boards/*/*.sv tests/rtl/*/*.sv)

.PHONY: format
format: deps-quiet ## lay out the C and C++ sources as .clang-format says (make lint checks it)
	@clang-format -i $(FORMAT_SRCS) && echo "clang-format: $(words $(FORMAT_SRCS)) files laid out"

# ---------------------------------------------------------------- run
.PHONY: demo
demo: deps all ## train an MLP on Fashion-MNIST on the simulated RTL (vsim), then run it in int8
	@bash tools/demo.sh $(CLI) $(BUILD)/demo

.PHONY: bench
# BENCH_CNN_EPOCHS: the CNN's epochs in (e) (default 5, issue 23's accuracy recipe; 0 leaves the CNN out).
# The CNN on ref takes about 14 s an epoch, PyTorch 13 s (docs/benchmarks.md (e), docs/perf/0032-ref-speed.md).
bench: deps-bench all ## run the whole benchmark, ref against PyTorch+OpenBLAS (MLP, CNN), write docs/benchmarks.md
	$(CLI) bench --json > $(BUILD)/bench.json
	/usr/bin/python3 tools/bench_epochs.py --ntpu $(CLI) --log-dir $(BUILD) > $(BUILD)/bench_epochs.json
	/usr/bin/python3 tools/bench_report.py $(BUILD)/bench.json $(BUILD)/bench_epochs.json > $(BUILD)/benchmarks.md
	mv $(BUILD)/benchmarks.md docs/benchmarks.md
	@cat docs/benchmarks.md

.PHONY: clean
clean: ## remove build/
	rm -rf $(BUILD)

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  make \1\t\2/' | expand -t 22

# Compiler dependency files. Not Verilator's *__ver.d: they list every source of a model as a
# prerequisite of its headers, so a source file moved or deleted would stop make with "No rule to
# make target" in an existing build tree; the models' stamp rules depend on their sources already.
-include $(shell find $(BUILD) -name '*.d' ! -name '*__ver.d' 2>/dev/null)
