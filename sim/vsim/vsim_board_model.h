/* SPDX-License-Identifier: Apache-2.0 */
// One board top's Verilator model behind an interface of its pins, so that the board harness
// (vsim_board.cpp) drives any board configuration the same way. vsim_board_model.cpp is compiled
// once per configuration that a board's board.mk lists in BOARD_SIM_CONFIGS, against that
// configuration's model and a header the Makefile generates from the board.mk (which pins, which
// clock and bit rate); the Makefile also generates the table of them all, ntpu_board_entries.
#ifndef NTPU_VSIM_BOARD_MODEL_H
#define NTPU_VSIM_BOARD_MODEL_H

#include <cstddef>
#include <cstdint>
#include <string>

class ntpu_board_model
{
  public:
    virtual ~ntpu_board_model() = default;
    // One cycle of the board clock with the host's transmit line (the FPGA's receive pin) at rxd:
    // the low phase, then the rising edge.
    virtual void clock(bool rxd) = 0;
    virtual bool txd() const = 0;     // the FPGA's transmit pin, from a register
    virtual bool err_led() const = 0; // the LED the top lights during reset and after a link error
    virtual void final() = 0;         // ends the simulation and closes the trace
};

struct ntpu_board_entry {
    const char *board, *config; // as in board.mk: fpga/boards/<board>/, CONFIG=<config>
    uint32_t clock_hz, baud;    // the bitstream's CLOCK_HZ and BAUD
    // A new model with its button released and its receive line idle, tracing to trace_path
    // unless it is empty; NULL if the model was built without tracing and trace_path is not
    // empty. Throws std::bad_alloc.
    ntpu_board_model *(*make)(const std::string &trace_path);
};

extern const ntpu_board_entry ntpu_board_entries[];
extern const size_t ntpu_board_entry_count;

#endif
