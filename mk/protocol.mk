# SPDX-License-Identifier: Apache-2.0
# The wire protocol's one description, docs/protocol.toml, and the files tools/gen_protocol.py writes from
# it (docs/decisions/0026-protocol-source.md). The generated files are committed, so that a reader of rtl/
# or host/include/ sees them. make regenerates them when the description or the script changes; the
# script writes only the files whose content changes, so an edit that leaves a file alone rebuilds
# nothing that depends on it. `make protocol-check` (part of `make test`) fails when a committed file
# differs from what the description gives: it was edited by hand (or make has not run since the
# description changed).

PROTOCOL_SRC := docs/protocol.toml
PROTOCOL_GEN := tools/gen_protocol.py
PROTOCOL_OUT := rtl/ntpu_pkg.sv host/include/ntpu/protocol.h docs/isa.md
PROTOCOL_STAMP := $(BUILD)/protocol.stamp

$(PROTOCOL_STAMP): $(PROTOCOL_SRC) $(PROTOCOL_GEN)
	@mkdir -p $(dir $@)
	python3 $(PROTOCOL_GEN)
	@touch $@

# An empty recipe, so that make looks at each file's time again once the stamp's recipe has run: a
# file the script left alone keeps its time, and what depends on it is not rebuilt.
$(PROTOCOL_OUT): $(PROTOCOL_STAMP) ;

.PHONY: protocol protocol-check
protocol: $(PROTOCOL_OUT) ## regenerate rtl/ntpu_pkg.sv, protocol.h and docs/isa.md's tables from docs/protocol.toml

protocol-check: ## fail if a file generated from docs/protocol.toml differs from it (edited by hand)
	@python3 $(PROTOCOL_GEN) --check
	@echo "protocol-check: $(PROTOCOL_OUT) match $(PROTOCOL_SRC)"

# Under `make test` and `make protocol-check` the check reads the files as they are, before make
# regenerates anything: a fresh clone (no stamp yet) would otherwise overwrite a hand-edited file
# and pass. After an edit of the description, run make before make test.
ifneq ($(filter test protocol-check,$(MAKECMDGOALS)),)
$(PROTOCOL_STAMP): | protocol-check
endif
