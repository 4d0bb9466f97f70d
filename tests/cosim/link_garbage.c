/* SPDX-License-Identifier: Apache-2.0 */
/* Garbage on the link: random bytes (with fake headers among them), well-framed
 * invalid commands, frames out of SEQ order and SYNCs go to the golden model and
 * the RTL. Both must answer with the same replies, byte for byte; after the
 * host's resynchronization (docs/protocol.md) SYNC must report the SEQ the device
 * expects, and a matmul must still give the right answer.
 * Usage: link_garbage [rounds=200] [seed=7] */
#include "pair.h"

static unsigned N, MAX_PAYLOAD;

static void garbage(pair *p)
{
    uint8_t buf[600];
    size_t n = 1 + rnd_below(sizeof buf - 8);
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)rnd();
    for (unsigned k = rnd_below(4); k > 0; k--) { /* fake headers: short, too long, or very long frames */
        size_t at = rnd_below((unsigned)n);
        unsigned len = rnd_below(3) == 0 ? MAX_PAYLOAD + 1 + rnd_below(1000)
                       : rnd_below(3)    ? rnd_below(64)
                                         : rnd_below(MAX_PAYLOAD + 1);
        buf[at] = NTPU_SOF_CMD;
        if (at + 3 < n)
            put16(buf + at + 2, len);
    }
    pair_raw(p, buf, n);
}

static void invalid_command(pair *p)
{
    uint8_t c[16] = {0};
    switch (rnd_below(8)) {
    case 0:
        c[0] = (uint8_t)(0x0D + rnd_below(0xF3));
        pair_cmd(p, c, 1 + rnd_below(16));
        break;
    case 6: /* out of order: ERR_SEQ, nothing runs, the expected SEQ stays */
        c[0] = NTPU_OP_NOP;
        pair_frame(p, (uint8_t)(p->seq + 1 + rnd_below(255)), c, 1);
        break;
    case 7: /* SYNC with any SEQ (LEN 1), or a bad LEN: neither takes a place in the order */
        c[0] = NTPU_OP_SYNC;
        pair_frame(p, (uint8_t)rnd(), c, rnd_below(4) ? 1 : 2 + rnd_below(8));
        break;
    case 1:
        c[0] = (uint8_t)rnd_below(9);
        pair_cmd(p, c, 10 + rnd_below(6));
        break; /* wrong length */
    case 2:
        c[0] = NTPU_OP_READ_MEM;
        c[1] = (uint8_t)(3 + rnd_below(253));
        put16(c + 4, 1);
        pair_cmd(p, c, 6);
        break;
    case 3:
        c[0] = NTPU_OP_MATMUL;
        c[1] = (uint8_t)(4 << rnd_below(6));
        pair_cmd(p, c, 8);
        break;
    case 4:
        c[0] = NTPU_OP_MATMUL;
        put16(c + 2, 0xFFFF);
        put16(c + 6, 2);
        pair_cmd(p, c, 8);
        break;
    default:
        c[0] = NTPU_OP_COUNTERS;
        c[1] = 0x80;
        pair_cmd(p, c, 2);
        break;
    }
}

static void same_streams(const pair *p, size_t n, unsigned round)
{
    if (memcmp(p->ref_rx, p->vsim_rx, n) != 0) {
        size_t i = 0;
        while (p->ref_rx[i] == p->vsim_rx[i])
            i++;
        die("round %u: reply streams differ at byte %zu of %zu", round, i, n);
    }
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 200;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 0) : 7;
    pair p;
    pair_open(&p);
    uint8_t info = NTPU_OP_INFO;
    pair_cmd(&p, &info, 1);
    pair_exchange(&p);
    N = p.ref_rx[5 + NTPU_ID_OFF_ROWS];
    MAX_PAYLOAD = get16(p.ref_rx + 5 + NTPU_ID_OFF_MAX_PAYLOAD);

    static uint8_t zeros[70000];
    static size_t off[65536], len[65536];
    unsigned long error_replies = 0;
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned k = 1 + rnd_below(4); k > 0; k--) {
            if (rnd_below(2))
                garbage(&p);
            else
                invalid_command(&p);
        }
        /* Resynchronize: zeros complete any pending frame, then SYNC. */
        pair_raw(&p, zeros, MAX_PAYLOAD + 8);
        uint8_t sync = NTPU_OP_SYNC, sync_seq = (uint8_t)rnd();
        pair_frame(&p, sync_seq, &sync, 1);
        size_t n = pair_exchange(&p);
        same_streams(&p, n, r);
        size_t k = split_replies(p.ref_rx, n, off, len, 65536);
        if (k == 0)
            die("round %u: no reply at all", r);
        const uint8_t *sync_reply = p.ref_rx + off[k - 1];
        if (sync_reply[-3] != sync_seq || len[k - 1] != 2 || sync_reply[0] != NTPU_DEV_OK)
            die("round %u: the resync SYNC's reply is missing", r);
        for (size_t i = 0; i + 1 < k; i++)
            error_replies += p.ref_rx[off[i]] != NTPU_DEV_OK;
        /* A frame swallowed by a garbage header never ran, nor did any after it
         * (ERR_SEQ): the device expects at most the SEQ after the last one sent. */
        if ((uint8_t)(p.seq - sync_reply[1]) > 8)
            die("round %u: SYNC says the device expects SEQ %u, after %u", r, sync_reply[1], p.seq);
        p.seq = sync_reply[1];

        /* A valid int8 matmul: M rows x N by an N x N tile. */
        unsigned M = 1 + rnd_below(3 * N);
        int8_t a[64 * 24], w[64 * 64];
        uint8_t cmd[4200];
        cmd[0] = NTPU_OP_WRITE_MEM;
        cmd[1] = NTPU_MEM_UB;
        put16(cmd + 2, 0);
        put16(cmd + 4, M);
        for (unsigned i = 0; i < M * N; i++) {
            a[i] = (int8_t)rnd();
            put16(cmd + 6 + 2 * i, (uint8_t)a[i]);
        }
        pair_cmd(&p, cmd, 6 + 2 * M * N);
        cmd[1] = NTPU_MEM_WB;
        put16(cmd + 4, N);
        for (unsigned i = 0; i < N * N; i++) {
            w[i] = (int8_t)rnd();
            put16(cmd + 6 + 2 * i, (uint8_t)w[i]);
        }
        pair_cmd(&p, cmd, 6 + 2 * N * N);
        uint8_t lw[4] = {NTPU_OP_LOAD_W, 0, 0, 0};
        pair_cmd(&p, lw, 4);
        uint8_t mm[8] = {NTPU_OP_MATMUL, 0};
        put16(mm + 6, M);
        pair_cmd(&p, mm, 8);
        uint8_t rd[6] = {NTPU_OP_READ_MEM, NTPU_MEM_ACC, 0, 0};
        put16(rd + 4, M);
        pair_cmd(&p, rd, 6);

        n = pair_exchange(&p);
        same_streams(&p, n, r);
        k = split_replies(p.ref_rx, n, off, len, 65536);
        if (k != 5)
            die("round %u: %zu replies to 5 commands", r, k);
        for (size_t i = 0; i < k; i++)
            if (p.ref_rx[off[i]] != NTPU_DEV_OK)
                die("round %u: command after resync failed with status %u", r, p.ref_rx[off[i]]);
        const uint8_t *c = p.vsim_rx + off[k - 1] + 1;
        for (unsigned m = 0; m < M; m++)
            for (unsigned j = 0; j < N; j++) {
                int32_t want = 0;
                for (unsigned i = 0; i < N; i++)
                    want += a[m * N + i] * w[i * N + j];
                if ((int32_t)get32(c + 4 * (m * N + j)) != want)
                    die("round %u: C[%u][%u] = %d, want %d", r, m, j, (int32_t)get32(c + 4 * (m * N + j)), want);
            }
    }
    printf("%u rounds of garbage and invalid frames: %lu error replies, identical on ref and vsim; "
           "every matmul after resync correct\n",
           rounds, error_replies);
    pair_close(&p);
    puts("PASS link_garbage");
    return 0;
}
