/* SPDX-License-Identifier: Apache-2.0 */
/* The checks both USB transports' fake-libusb tests share (fakeusb_checks.h). */
#include "fakeusb_checks.h"

#include <string.h>

#include "fakeusb_core.h"

int fk_failures;

void fk_fill_pattern(uint8_t *out, size_t total)
{
    for (size_t i = 0; i < total; i++)
        out[i] = (uint8_t)(i * 131u + (i >> 9));
}

void fk_check_round_trip(const ntpu_transport *tp, const uint8_t *out, uint8_t *in, size_t total, const size_t sizes[7])
{
    char err[NTPU_ERRMSG_LEN] = "";
    size_t got, have = 0, step = 0;
    CHECK(tp->ops->send(tp->ctx, out, total, err, sizeof err) == NTPU_OK, "send: %s", err);
    while (have < total) {
        size_t n = sizes[step++ % 7];
        n = n < total - have ? n : total - have;
        ntpu_status st = tp->ops->recv(tp->ctx, in + have, n, 2000, &got, err, sizeof err);
        CHECK(st == NTPU_OK && got == n, "recv %zu at %zu: status %d got %zu (%s)", n, have, st, got, err);
        if (st != NTPU_OK)
            break;
        have += n;
    }
    CHECK(have == total && !memcmp(in, out, total), "the bytes came back changed");
}

void fk_check_idle_and_short_reads(const ntpu_transport *tp, const uint8_t *out, uint8_t *in)
{
    char err[NTPU_ERRMSG_LEN] = "";
    size_t got;
    uint64_t t0 = ms_now();
    ntpu_status st = tp->ops->recv(tp->ctx, in, 1, 200, &got, err, sizeof err);
    uint64_t dt = ms_now() - t0;
    CHECK(st == NTPU_ERR_TIMEOUT && got == 0, "idle recv: status %d got %zu", st, got);
    CHECK(dt >= 195 && dt < 1500, "idle recv took %llu ms for a 200 ms timeout", (unsigned long long)dt);

    CHECK(tp->ops->send(tp->ctx, out, 10, err, sizeof err) == NTPU_OK, "send 10: %s", err);
    st = tp->ops->recv(tp->ctx, in, 20, 300, &got, err, sizeof err);
    CHECK(st == NTPU_ERR_TIMEOUT && got == 10 && !memcmp(in, out, 10), "short recv: status %d got %zu", st, got);
    CHECK(strstr(err, "10 of 20") != NULL, "short recv message: %s", err);
}
