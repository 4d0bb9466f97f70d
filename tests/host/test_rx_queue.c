/* SPDX-License-Identifier: Apache-2.0 */
/* The receive queue of the USB transports (host/src/transport/rx_queue.c): order, the limit, compaction.
 * The ftdi transport's push through its status-byte stripping is tested in test_ftdi.c. */
#include <criterion/criterion.h>
#include <string.h>

#include "transport/rx_queue.h"

Test(rx_queue, fifo_order_limit_and_compaction)
{
    ntpu_rx_queue q = {0};
    q.limit = 10000;
    uint8_t in[6000], out[6000];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(i * 7 + 3);
    cr_assert_eq(ntpu_rx_queue_push(&q, in, 3000), 0);
    cr_assert_eq(ntpu_rx_queue_take(&q, out, 1000), 1000u);
    cr_assert_eq(memcmp(out, in, 1000), 0);
    cr_assert_eq(ntpu_rx_queue_push(&q, in + 3000, 3000), 0);
    cr_assert_eq(ntpu_rx_queue_push(&q, in, 6000), -1, "past the limit");
    cr_assert_eq(q.len, 5000u, "a refused push adds nothing");
    cr_assert_eq(ntpu_rx_queue_take(&q, out, 6000), 5000u);
    cr_assert_eq(memcmp(out, in + 1000, 5000), 0);
    cr_assert_eq(ntpu_rx_queue_take(&q, out, 10), 0u);
    cr_assert_eq(ntpu_rx_queue_push(&q, in, 0), 0);
    cr_assert_eq(q.len, 0u);
    ntpu_rx_queue_free(&q);
    cr_assert_null(q.buf);
}

Test(rx_queue, reserve_then_commit_adds_only_what_was_written)
{
    ntpu_rx_queue q = {.limit = 100};
    uint8_t *dst = ntpu_rx_queue_reserve(&q, 100);
    cr_assert_not_null(dst);
    memcpy(dst, "abc", 3);
    ntpu_rx_queue_commit(&q, 3);
    cr_assert_eq(q.len, 3u);
    cr_assert_null(ntpu_rx_queue_reserve(&q, 98), "3 held + 98 is past the limit of 100");
    cr_assert_not_null(ntpu_rx_queue_reserve(&q, 97));
    uint8_t out[4] = {0};
    cr_assert_eq(ntpu_rx_queue_take(&q, out, sizeof out), 3u);
    cr_assert_str_eq((const char *)out, "abc");
    ntpu_rx_queue_free(&q);
}
