/* SPDX-License-Identifier: Apache-2.0 */
/* The Verilator model of ntpu_core behind a C ABI: the RTL as an in-process
 * device. Bytes written go into the core's receive stream as fast as it accepts
 * them; reading clocks the model until reply bytes come out. One thread at a
 * time per model. */
#ifndef NTPU_VSIM_H
#define NTPU_VSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ntpu_vsim ntpu_vsim;

/* Creates the model and resets it. opts: the part of the device string after
 * "vsim:", comma-separated, NULL or "" for none:
 *   rtl          the core from rtl/ alone, exactly what synthesis reads, rather
 *                than vsim's faster simulation forms (sim/vsim/ntpu_*.sv)
 *   trace=FILE   write an FST waveform of the whole run to FILE (not with rtl)
 * Returns NULL on a bad option or an unwritable trace file, with a one-line
 * reason in err (errlen bytes, NUL-terminated) when err is not NULL. */
ntpu_vsim *ntpu_vsim_new(const char *opts, char *err, size_t errlen);
void ntpu_vsim_free(ntpu_vsim *sim); /* flushes and closes the trace; NULL is a no-op */

/* Queues n bytes for the core's receive stream (s_rx_*). Does not clock. */
void ntpu_vsim_write(ntpu_vsim *sim, const uint8_t *buf, size_t n);

/* Clocks the model, feeding queued bytes, until n reply bytes (m_tx_*) have been
 * collected into buf, or until idle_limit consecutive cycles pass in which no
 * byte moves in either direction. Returns the number of bytes collected. */
size_t ntpu_vsim_read(ntpu_vsim *sim, uint8_t *buf, size_t n, uint64_t idle_limit);

/* Clocks the model until every queued byte has been accepted and the core has been
 * idle (no byte moving) for idle_limit cycles; reply bytes produced meanwhile are
 * kept for ntpu_vsim_read. */
void ntpu_vsim_drain(ntpu_vsim *sim, uint64_t idle_limit);

/* Cycles clocked since creation. */
uint64_t ntpu_vsim_cycles(const ntpu_vsim *sim);

#ifdef __cplusplus
}
#endif

#endif
