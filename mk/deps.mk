# SPDX-License-Identifier: Apache-2.0
# `make deps`: install the Debian packages the build and tests need, with apt-get (through sudo
# when not root). Quick and silent when everything is there already. PyTorch (python3-torch) is
# among them for the interop tests (tests/cli/torch_interop.sh: checkpoints into and out of
# torch.nn.Sequential); `make bench` uses it as its CPU reference (deps-bench), on OpenBLAS; the
# library never does. Debian's PyTorch links libblas.so.3 by that generic name, so the BLAS is
# whichever the loader finds: the system's alternative (OpenBLAS, priority 100, once installed; the
# reference BLAS, 5-10x slower, otherwise). tools/bench_torch.py does not rely on it: it puts
# OpenBLAS's directory first on LD_LIBRARY_PATH.

DEB_PACKAGES := gcc g++ make verilator iverilog pkg-config zlib1g-dev libcriterion-dev \
                libusb-1.0-0-dev libcjson-dev dataset-fashion-mnist python3-numpy clang-format python3-torch \
                gcc-arm-none-eabi libunicorn-dev clang-14 libfuzzer-14-dev libclang-rt-14-dev openmpi-bin \
                libopenmpi-dev
BENCH_DEB_PACKAGES := python3-torch libopenblas0-pthread
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# $(call apt_install,TARGET,PACKAGES): installs those of PACKAGES that are missing.
define apt_install
	@missing=$$(for p in $(2); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "make $(1): installing" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null \
	    || { echo "make $(1): apt-get failed; install these by hand:" $$missing; exit 1; }; \
	fi
endef

.PHONY: deps
deps: ## install missing Debian packages (quick when all are present)
	$(call apt_install,deps,$(DEB_PACKAGES))

.PHONY: deps-bench
deps-bench: deps ## also install PyTorch (python3-torch) and OpenBLAS, the CPU reference of make bench
	$(call apt_install,deps-bench,$(BENCH_DEB_PACKAGES))

.PHONY: deps-quiet
deps-quiet: deps
