# `make deps`: install the Debian packages the build and tests need, with apt-get (through sudo
# when not root). Quick and silent when everything is there already.

DEB_PACKAGES := gcc g++ make verilator iverilog pkg-config zlib1g-dev libcriterion-dev \
                libusb-1.0-0-dev libcjson-dev dataset-fashion-mnist python3-numpy
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps
deps: ## install missing Debian packages (quick when all are present)
	@missing=$$(for p in $(DEB_PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null \
	    || { echo "make deps: apt-get failed; install these by hand:" $$missing; exit 1; }; \
	fi

.PHONY: deps-quiet
deps-quiet: deps
