# SPDX-License-Identifier: Apache-2.0
# Coverage-guided fuzzing (libFuzzer, clang-14, under ASan and UBSan) of the parsers and decoders that take
# files and link bytes: tests/fuzz/fuzz_<target>.c, each with a seed corpus (tests/fuzz/corpus/<target>/)
# and a dictionary (tests/fuzz/<target>.dict). The library's C sources are compiled again with clang and
# coverage instrumentation into their own archive; a target links only what it calls.
#   make fuzz FUZZ_SECONDS=N   each target for N seconds (default 60), new inputs kept in build/fuzz/corpus,
#                              findings (crashing inputs) in build/fuzz/findings; a finding fails the run
#   make fuzz-rtl              the golden model's link and decoder inputs the campaign kept (and FUZZ_RANDOM
#                              random ones) through the RTL beside the golden model (tests/cosim/fuzz_replay.c)
#   make test                  runs every target over its seed corpus, then 5 s from it (tests/run.sh)

FUZZ_DIR := $(BUILD)/fuzz
FUZZ_CC := clang-14
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_FLAGS := -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
              -Wno-unused-command-line-argument
FUZZ_LIB_SRCS := $(filter-out host/src/transport/transport_pico_ice.c,$(LIB_C_SRCS))
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)
FUZZ_SECONDS ?= 60

$(FUZZ_DIR)/obj/%.o: %.c | deps-fuzz $(PROTOCOL_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

# The golden model's MAC kernel is no parser, and its unrolled loops under clang's sanitizers and coverage
# take over 15 minutes and 2 GB to compile: it is built as the library builds it, uninstrumented.
$(FUZZ_DIR)/obj/sim/ref/matmul_kernel.o: sim/ref/matmul_kernel.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_DIR)/libntpu_fuzz.a: $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_file.h tests/fuzz/fuzz_boards.h $(FUZZ_DIR)/libntpu_fuzz.a
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer $< $(FUZZ_DIR)/libntpu_fuzz.a -lcjson -lz -lm -lpthread -o $@

# The firmware's control requests: its own source, built for the host (no library).
$(FUZZ_DIR)/fuzz_usb_ctrl: tests/fuzz/fuzz_usb_ctrl.c firmware/pico-ice/usb_ctrl.c $(wildcard firmware/pico-ice/usb_*.h) | deps-fuzz
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -Ifirmware/pico-ice $(FUZZ_FLAGS) -fsanitize=fuzzer tests/fuzz/fuzz_usb_ctrl.c firmware/pico-ice/usb_ctrl.c -o $@

-include $(FUZZ_LIB_OBJS:.o=.d)

.PHONY: fuzz fuzz-build fuzz-rtl deps-fuzz
FUZZ_RANDOM ?= 20000
fuzz-rtl: $(BUILD)/tests/cosim/fuzz_replay ## the fuzzer's decoder inputs and FUZZ_RANDOM random ones through the RTL and the golden model
	@mkdir -p $(FUZZ_DIR)/corpus/ref_link
	$(BUILD)/tests/cosim/fuzz_replay random=$(FUZZ_RANDOM):$$(date +%s) $(FUZZ_DIR)/corpus/ref_link tests/fuzz/corpus/ref_link
	NTPU_TEST_VSIM=rtl $(BUILD)/tests/cosim/fuzz_replay random=$(FUZZ_RANDOM):$$(date +%s) $(FUZZ_DIR)/corpus/ref_link tests/fuzz/corpus/ref_link

fuzz-build: $(FUZZ_BINS) ## build the fuzz targets (libFuzzer, ASan, UBSan)

fuzz: $(FUZZ_BINS) ## fuzz every parser and decoder for FUZZ_SECONDS each (default 60); findings in build/fuzz/findings
	@mkdir -p $(FUZZ_DIR)/findings; rc=0; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s (log $(FUZZ_DIR)/fuzz_$$t.log)"; \
	  $(FUZZ_DIR)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -dict=tests/fuzz/$$t.dict -artifact_prefix=$(FUZZ_DIR)/findings/$$t- \
	    $(FUZZ_DIR)/corpus/$$t tests/fuzz/corpus/$$t > $(FUZZ_DIR)/fuzz_$$t.log 2>&1 || rc=1; \
	  grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)|cov: [0-9]+' $(FUZZ_DIR)/fuzz_$$t.log \
	    | tail -4 | sed 's/^/     /'; \
	done; \
	ls $(FUZZ_DIR)/findings | sed 's/^/     finding: /'; \
	[ $$rc = 0 ] || { echo "make fuzz: a target found a crash, a leak or a timeout: build/fuzz/findings" >&2; exit 1; }

deps-fuzz:
	$(call apt_install,fuzz,clang-14 libfuzzer-14-dev libclang-rt-14-dev)
