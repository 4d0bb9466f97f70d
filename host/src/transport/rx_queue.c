/* SPDX-License-Identifier: Apache-2.0 */
/* The receive queue of the USB transports (see rx_queue.h). */
#include "rx_queue.h"

#include <stdlib.h>
#include <string.h>

uint8_t *ntpu_rx_queue_reserve(ntpu_rx_queue *q, size_t n)
{
    if (n > q->limit || q->len > q->limit - n)
        return NULL;
    /* Even n == 0 gets a buffer, so the caller always has somewhere to write. */
    if (!q->buf || q->head + q->len + n > q->cap) {
        /* Move the unread bytes to the front first; grow only if that is not enough. */
        if (q->buf && q->len + n <= q->cap) {
            memmove(q->buf, q->buf + q->head, q->len);
        } else {
            size_t cap = q->cap ? q->cap : 4096;
            while (cap < q->len + n)
                cap *= 2;
            uint8_t *nb = malloc(cap);
            if (!nb)
                return NULL;
            if (q->len)
                memcpy(nb, q->buf + q->head, q->len);
            free(q->buf);
            q->buf = nb;
            q->cap = cap;
        }
        q->head = 0;
    }
    return q->buf + q->head + q->len;
}

void ntpu_rx_queue_commit(ntpu_rx_queue *q, size_t n)
{
    q->len += n;
}

int ntpu_rx_queue_push(ntpu_rx_queue *q, const uint8_t *in, size_t n)
{
    uint8_t *dst = ntpu_rx_queue_reserve(q, n);
    if (!dst)
        return -1;
    if (n)
        memcpy(dst, in, n);
    ntpu_rx_queue_commit(q, n);
    return 0;
}

size_t ntpu_rx_queue_take(ntpu_rx_queue *q, uint8_t *out, size_t n)
{
    size_t m = n < q->len ? n : q->len;
    if (m) {
        memcpy(out, q->buf + q->head, m);
        q->head += m;
        q->len -= m;
    }
    if (!q->len)
        q->head = 0;
    return m;
}

void ntpu_rx_queue_free(ntpu_rx_queue *q)
{
    free(q->buf);
    q->buf = NULL;
    q->head = q->len = q->cap = 0;
}
