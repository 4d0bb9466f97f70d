# FPGA flows (make fpga BOARD=..., make flash BOARD=..., make fpga-report): see fpga/README.md.
# Filled in by the board work; the tools are installed by these targets, not by `make deps`.
