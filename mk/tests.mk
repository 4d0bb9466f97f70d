# SPDX-License-Identifier: Apache-2.0
# `make test`: Criterion unit tests (under ASan/UBSan), one Icarus bench per RTL block, and the
# differential tests that run the same command streams through the golden model and the RTL.

TEST_BUILD := $(BUILD)/tests
HOST_TEST_SRCS := $(sort $(wildcard tests/host/*.c))
COSIM_SRCS := $(sort $(wildcard tests/cosim/*.c))
RTL_BENCHES := $(sort $(patsubst tests/rtl/%/sources.f,%,$(wildcard tests/rtl/*/sources.f)))
VSIM_OBJS := $(VSIM_CXX_SRCS:%.cpp=$(BUILD)/obj/%.o)

# Criterion binary: sanitized C objects; the Verilated model and its harness stay unsanitized.
$(TEST_BUILD)/host_tests: $(HOST_TEST_SRCS:%.c=$(BUILD)/san/%.o) $(LIB_SAN_OBJS) $(VSIM_OBJS) $(BOARD_SIM_OBJS) $(PICO_EMU_OBJS) \
                          $(VSTAMPS)
	@mkdir -p $(dir $@)
	$(CXX) $(SAN) -o $@ $(filter %.o,$^) $$(cat $(VOBJS_ALL)) -lcriterion $(LDLIBS)

# The shared headers (pair.h) are prerequisites too: a change to one rebuilds every test.
COSIM_HDRS := $(wildcard tests/cosim/*.h)

$(TEST_BUILD)/cosim/%: tests/cosim/%.c $(COSIM_HDRS) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@.o
	$(CXX) -o $@ $@.o $(LIB_A) $(LDLIBS)

# Each bench directory has sources.f (files for iverilog, relative to the top) and optionally
# gen.c, a vector generator built against the golden model's numerics; its output directory
# reaches the bench as +dir=DIR. A bench passes when vvp exits 0 and prints PASS.
$(TEST_BUILD)/rtl/%/tb.vvp: tests/rtl/%/sources.f $(RTL_SRCS) $(wildcard tests/rtl/*/*)
	@mkdir -p $(dir $@)
	$(IVERILOG) -g2012 -Wall -Wno-timescale -o $@ -f $<

# The same benches built by Verilator with vsim's simulation forms (sim/vsim/ntpu_*.sv) in place of
# their rtl/ twins, for the twins that compute differently from the synthesised logic: the fp32 add by
# doubles (docs/decisions/0019-vsim-fp-add.md), the array's rows computed whole (decision 0020) and
# its skew lines, the receiver's and transmitter's byte counts (decision 0017), the transposer's row
# taken in one block and the sequencer's hazard loop (decision 0022). Checked vector for vector like
# the logic the boards get; the whole core is held to rtl/ by the lockstep check below.
VERILATOR_BENCHES := ntpu_fp32_add ntpu_array ntpu_array_pipe ntpu_array_shared ntpu_link_rx_wide ntpu_transpose \
                     ntpu_link_tx_wide ntpu_seq ntpu_seq_conv
$(TEST_BUILD)/rtl-verilator/%/Vtb: tests/rtl/%/sources.f $(RTL_SRCS) $(VSIM_SRCS) $(wildcard tests/rtl/*/*)
	@rm -rf $(dir $@) && mkdir -p $(dir $@)
	@while read -r f; do \
	  case "$$f" in rtl/ntpu_pkg.sv) echo "$$f"; echo sim/vsim/ntpu_vsim_pkg.sv ;; \
	    rtl/*) if [ -f "sim/vsim/$${f#rtl/}" ]; then echo "sim/vsim/$${f#rtl/}"; else echo "$$f"; fi ;; \
	    *) echo "$$f" ;; esac; \
	done < $< > $(dir $@)sources.f
	@grep -q sim/vsim/ntpu_array.sv $(dir $@)sources.f && echo sim/vsim/ntpu_vsim_delay.sv >> $(dir $@)sources.f; \
	 grep -q sim/vsim/ntpu_vsim_pkg.sv $(dir $@)sources.f || sed -i '1i sim/vsim/ntpu_vsim_pkg.sv' $(dir $@)sources.f
	$(VERILATOR) --binary --timing -O3 -Wno-fatal -Wno-lint -Wno-style -Wno-TIMESCALEMOD --top-module tb \
	  -Mdir $(dir $@)obj -o ../Vtb -f $(dir $@)sources.f > $(dir $@)build.log 2>&1 || { tail -20 $(dir $@)build.log; exit 1; }

# The lockstep check of vsim's fast clocking (sim/vsim/lockstep.h): the library again, with the
# harness built with NTPU_VSIM_LOCKSTEP, which clocks a second model the plain way beside its own and
# compares the two after every edge. The Criterion suite and the runs of tests/cosim/lockstep_runs.txt
# are linked against it once more. Only the harness is compiled again; the models are the ones above.
LOCKSTEP := $(TEST_BUILD)/lockstep
LOCKSTEP_RUNS := $(shell sed -n 's/^\([a-z_]*\).*/\1/p' tests/cosim/lockstep_runs.txt | sort -u)

$(LOCKSTEP)/ntpu_lockstep_diff.h: tools/vsim_lockstep_gen.py $(VOBJ)/stamp
	@mkdir -p $(dir $@)
	python3 $< $(VOBJ)/Vntpu_core___024root.h $@.tmp && mv $@.tmp $@

$(LOCKSTEP)/vsim.o: sim/vsim/vsim.cpp $(wildcard sim/vsim/*.h) $(LOCKSTEP)/ntpu_lockstep_diff.h $(VOBJ)/stamp \
                    $(VOBJ_TRACE)/stamp $(VOBJ_RTL)/stamp
	$(CXX) $(CPPFLAGS) -DNTPU_VSIM_LOCKSTEP -I$(LOCKSTEP) -I$(VOBJ) -I$(VOBJ_TRACE) -I$(VOBJ_RTL) \
	       -isystem /usr/share/verilator/include -isystem /usr/share/verilator/include/vltstd $(CXXFLAGS) -c $< -o $@

$(LOCKSTEP)/libntpu.a: $(LIB_A) $(LOCKSTEP)/vsim.o
	cp $(LIB_A) $@.tmp && ar rcs $@.tmp $(LOCKSTEP)/vsim.o && mv $@.tmp $@

$(LOCKSTEP)/host_tests: $(HOST_TEST_SRCS:%.c=$(BUILD)/san/%.o) $(LIB_SAN_OBJS) $(LOCKSTEP)/vsim.o \
                        $(filter-out $(BUILD)/obj/sim/vsim/vsim.o,$(VSIM_OBJS)) $(BOARD_SIM_OBJS) $(PICO_EMU_OBJS) $(VSTAMPS)
	$(CXX) $(SAN) -o $@ $(filter %.o,$^) $$(cat $(VOBJS_ALL)) -lcriterion $(LDLIBS)

$(LOCKSTEP)/cosim/%: tests/cosim/%.c $(COSIM_HDRS) $(LOCKSTEP)/libntpu.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@.o
	$(CXX) -o $@ $@.o $(LOCKSTEP)/libntpu.a $(LDLIBS)

# The pico-ice firmware's host-side tests (tests/firmware/): the image tool and the USB request handling
# compiled for the host, under the sanitizers, in a binary of their own that needs no Verilated model;
# then tests/firmware/image.sh on the image `make firmware` built. `make test-firmware` runs only these.
FW_TEST_SRCS := $(sort $(filter-out tests/firmware/emu_%.c,$(wildcard tests/firmware/*.c))) tools/uf2/uf2.c \
                firmware/pico-ice/usb_ctrl.c
$(TEST_BUILD)/firmware_tests: $(FW_TEST_SRCS) $(wildcard tools/uf2/*.h firmware/pico-ice/*.h) | deps-quiet
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) -O1 -g $(SAN) -Itools/uf2 -Ifirmware/pico-ice $(FW_TEST_SRCS) -lcriterion -o $@

# The firmware image itself on an emulated RP2040 (sim/rp2040/, Unicorn): tests/firmware/emu_pico_ice.c
# boots build/firmware/pico-ice/ntpu-pico-ice.bin, enumerates it and drives the FPGA model. No -Wpedantic:
# Unicorn's uc_hook_add takes its callbacks as void *. Run with ASAN_OPTIONS=detect_leaks=0: libunicorn
# 2.0.1 leaks a block of its own translation cache (tb_invalidate_phys_page_fast) at uc_close.
# The golden model (sim/ref) stands in for the FPGA's design in one check: its sanitized objects only.
EMU_SRCS := $(filter-out sim/rp2040/pico_ice.c,$(sort $(wildcard sim/rp2040/*.c))) tests/firmware/emu_pico_ice.c
EMU_REF_OBJS := $(filter $(BUILD)/san/sim/ref/%,$(LIB_SAN_OBJS))
$(TEST_BUILD)/emu_pico_ice: $(EMU_SRCS) $(wildcard sim/rp2040/*.h) firmware/pico-ice/usb_requests.h $(EMU_REF_OBJS) \
                            | deps-emu
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -O1 -g $(SAN) $(CPPFLAGS) -Isim/rp2040 -Ifirmware/pico-ice $(EMU_SRCS) \
	  $(EMU_REF_OBJS) -lunicorn -lz -lm -lpthread -o $@

# The whole pico-ice path (tests/firmware/emu_usb_path.c): the usb transport from libntpu.a over a fake libusb
# (tests/cli/fakeusb_core.c) whose device is the library's emulated pico-ice (sim/rp2040/pico_ice.c: the
# firmware on the emulated RP2040, the board top's RTL behind its SPI). board_uart.c supplies the checks.
EMU_PATH_C := tests/firmware/emu_usb_path.c tests/firmware/emu_libusb.c tests/cli/fakeusb_core.c \
              tests/cli/fakeusb_vendor.c
$(TEST_BUILD)/emu_usb_path: $(EMU_PATH_C) $(wildcard sim/rp2040/*.h tests/firmware/*.h tests/cli/*.h) \
                            tests/cosim/board_uart.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c11 $(WARN) -O2 -g -Dmain=board_uart_main -c tests/cosim/board_uart.c -o $@.board_uart.o
	$(CC) $(CPPFLAGS) -std=c11 -Wall -Wextra -Werror -O2 -g -Isim/rp2040 -Itests/cli -Itests/firmware $(EMU_PATH_C) \
	  $@.board_uart.o $(LIB_A) -lstdc++ -lunicorn -lcjson -lz -lm -lpthread -o $@

.PHONY: deps-emu
deps-emu:
	$(call apt_install,emu,libunicorn-dev)

.PHONY: test-firmware
test-firmware: firmware $(TEST_BUILD)/firmware_tests $(TEST_BUILD)/emu_pico_ice $(TEST_BUILD)/emu_usb_path ## only the firmware's tests: image checks, USB requests on the host, the image on an emulated RP2040 (seconds)
	$(TEST_BUILD)/firmware_tests --jobs 2
	BUILD=$(BUILD) bash tests/firmware/image.sh
	ASAN_OPTIONS=detect_leaks=0 $(TEST_BUILD)/emu_pico_ice $(FW_BUILD)/ntpu-pico-ice.bin
	$(TEST_BUILD)/emu_usb_path $(FW_BUILD)/ntpu-pico-ice.bin

.PHONY: test
TEST_PARTS := $(BOARD_SIM_LIST) $(TEST_BUILD)/host_tests $(RTL_BENCHES:%=$(TEST_BUILD)/rtl/%/tb.vvp) \
              $(VERILATOR_BENCHES:%=$(TEST_BUILD)/rtl-verilator/%/Vtb) \
              $(COSIM_SRCS:tests/cosim/%.c=$(TEST_BUILD)/cosim/%) $(LOCKSTEP)/host_tests \
              $(LOCKSTEP_RUNS:%=$(LOCKSTEP)/cosim/%) $(TEST_BUILD)/firmware_tests $(FW_UF2) \
              $(TEST_BUILD)/emu_pico_ice $(TEST_BUILD)/emu_usb_path $(FUZZ_BINS)
test: deps protocol-check all $(TEST_PARTS) ## run every test (installs what is missing first)
	@BUILD=$(BUILD) CC="$(CC)" CPPFLAGS="$(CPPFLAGS)" RTL_BENCHES="$(RTL_BENCHES)" \
	  VERILATOR_BENCHES="$(VERILATOR_BENCHES)" FUZZ_TARGETS="$(FUZZ_TARGETS)" \
	  bash tests/run.sh

# link_speed: frames and rows per CPU second between the library and a device (tools/link_speed.c,
# docs/perf/0032-ref-speed.md). A measurement, not a test: make test does not run it.
.PHONY: link-speed
link-speed: $(BUILD)/tools/link_speed ## frames/s and MB/s of rows over the link (DEV=ref by default)
	$(BUILD)/tools/link_speed $(if $(DEV),$(DEV),ref)

$(BUILD)/tools/link_speed: tools/link_speed.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(LIB_A) -lstdc++ $(LDLIBS) -o $@
