/* Differential test: random command streams (every opcode, both dtypes, special
 * values, invalid commands mixed in) through the golden model and the RTL; the
 * reply streams must be bit-identical, frame for frame.
 * Usage: diff_random [streams=1000] [seed=1] */
#include "pair.h"

enum { UB_WIN = 128, WB_WIN = 64, ACC_WIN = 128 }; /* rows every stream works in */

static unsigned N, UB_ROWS, WB_ROWS, ACC_ROWS, MAX_PAYLOAD;

static uint16_t rnd_bf16(void)
{
    uint16_t sign = (uint16_t)(rnd_below(2) << 15);
    unsigned exp;
    switch (rnd_below(20)) {
    case 0: return sign;                                               /* ±0 */
    case 1: return sign | 0x7F80;                                      /* ±Inf */
    case 2: return sign | 0x7F80 | (uint16_t)(1 + rnd_below(0x7F));     /* NaN */
    case 3: return sign | (uint16_t)(1 + rnd_below(0x7F));              /* subnormal */
    case 4: exp = 230 + rnd_below(25); break;                           /* products overflow */
    case 5: exp = 1 + rnd_below(20); break;                             /* products underflow */
    case 6: return sign | (rnd_below(2) ? 0x0080 : 0x7F7F);             /* min normal, max */
    default: exp = 118 + rnd_below(18); break;                          /* ordinary */
    }
    return sign | (uint16_t)(exp << 7) | (uint16_t)rnd_below(0x80);
}

static uint32_t rnd_f32(void)
{
    uint32_t sign = (uint32_t)rnd_below(2) << 31;
    switch (rnd_below(12)) {
    case 0: return sign;
    case 1: return sign | 0x7F800000u;
    case 2: return sign | 0x7F800000u | (uint32_t)(1 + rnd_below(0x7FFFFF));
    case 3: return sign | (uint32_t)(1 + rnd_below(0x7FFFFF));
    case 4: return (uint32_t)rnd();
    default: return sign | (uint32_t)(118 + rnd_below(18)) << 23 | (uint32_t)rnd_below(0x800000);
    }
}

static unsigned row_bytes(unsigned mem) { return mem == NTPU_MEM_ACC ? 4 * N : 2 * N; }

/* Random row data for memory mem; `bf16` picks the flavour of UB/WB lanes. */
static void fill_rows(uint8_t *p, unsigned mem, unsigned rows, int bf16)
{
    for (unsigned i = 0; i < rows * N; i++) {
        if (mem == NTPU_MEM_ACC)
            put32(p + 4 * i, rnd_below(2) ? rnd_f32() : (uint32_t)rnd());
        else
            put16(p + 2 * i, bf16 ? rnd_bf16() : (uint16_t)rnd()); /* int8: high byte must be ignored */
    }
}

static void write_mem(pair *p, unsigned mem, unsigned addr, unsigned rows, int bf16)
{
    static uint8_t cmd[65536];
    cmd[0] = NTPU_OP_WRITE_MEM;
    cmd[1] = (uint8_t)mem;
    put16(cmd + 2, addr);
    put16(cmd + 4, rows);
    fill_rows(cmd + 6, mem, rows, bf16);
    pair_cmd(p, cmd, 6 + (size_t)rows * row_bytes(mem));
}

static void mem_cmd(pair *p, unsigned op, unsigned mem, unsigned addr, unsigned rows)
{
    uint8_t cmd[6] = {(uint8_t)op, (uint8_t)mem};
    put16(cmd + 2, addr);
    put16(cmd + 4, rows);
    pair_cmd(p, cmd, 6);
}

static unsigned window(unsigned mem) { return mem == NTPU_MEM_UB ? UB_WIN : mem == NTPU_MEM_WB ? WB_WIN : ACC_WIN; }

/* One random command, usually valid. */
static void random_command(pair *p)
{
    uint8_t c[16] = {0};
    unsigned mem = rnd_below(3), rows = 1 + rnd_below(3 * N);
    switch (rnd_below(24)) {
    case 0: case 1: case 2: case 3: /* WRITE_MEM inside the window */
        write_mem(p, mem, rnd_below(window(mem) - rows + 1), rows, rnd_below(4) != 0);
        break;
    case 4: case 5: /* READ_MEM inside the window */
        mem_cmd(p, NTPU_OP_READ_MEM, mem, rnd_below(window(mem) - rows + 1), rows);
        break;
    case 6: case 7: case 8: /* LOAD_W */
        c[0] = NTPU_OP_LOAD_W;
        c[1] = rnd_below(2) ? NTPU_LOADW_TRANSPOSE : 0;
        put16(c + 2, rnd_below(WB_WIN - N + 1));
        pair_cmd(p, c, NTPU_LEN_LOAD_W);
        break;
    case 9: case 10: case 11: case 12: case 13: case 14: /* MATMUL */
        c[0] = NTPU_OP_MATMUL;
        c[1] = (uint8_t)((rnd_below(2) ? NTPU_MATMUL_BF16 : 0) | (rnd_below(3) ? NTPU_MATMUL_ACCUMULATE : 0));
        if (rnd_below(16) == 0)
            rows = 0;
        put16(c + 2, rnd_below(UB_WIN - rows + 1));
        put16(c + 4, rnd_below(ACC_WIN - rows + 1));
        put16(c + 6, rows);
        pair_cmd(p, c, NTPU_LEN_MATMUL);
        break;
    case 15: c[0] = NTPU_OP_FENCE; pair_cmd(p, c, 1); break;
    case 16: c[0] = NTPU_OP_NOP; pair_cmd(p, c, 1); break;
    case 17: c[0] = NTPU_OP_STATUS; pair_cmd(p, c, 1); break;
    case 18: /* writes at the very end of a memory: valid, never read back */
        write_mem(p, mem, (mem == NTPU_MEM_UB ? UB_ROWS : mem == NTPU_MEM_WB ? WB_ROWS : ACC_ROWS) - rows, rows, 1);
        break;
    default: { /* invalid: each kind of error */
        unsigned kind = rnd_below(8);
        if (kind == 0) { c[0] = (uint8_t)(0x09 + rnd_below(0xF7)); pair_cmd(p, c, 1 + rnd_below(8)); }
        else if (kind == 1) { c[0] = NTPU_OP_MATMUL; pair_cmd(p, c, rnd_below(2) ? 7 : 9); }
        else if (kind == 2) { mem_cmd(p, NTPU_OP_READ_MEM, 3 + rnd_below(250), 0, 1); }
        else if (kind == 3) { c[0] = NTPU_OP_LOAD_W; c[1] = (uint8_t)(2 << rnd_below(7)); pair_cmd(p, c, 4); }
        else if (kind == 4) { c[0] = NTPU_OP_LOAD_W; put16(c + 2, WB_ROWS - N + 1 + rnd_below(N)); pair_cmd(p, c, 4); }
        else if (kind == 5) { c[0] = NTPU_OP_MATMUL; put16(c + 4, ACC_ROWS - 1); put16(c + 6, 2); pair_cmd(p, c, 8); }
        else if (kind == 6) { mem_cmd(p, NTPU_OP_READ_MEM, NTPU_MEM_ACC, 0, MAX_PAYLOAD / (4 * N) + 1); }
        else { c[0] = NTPU_OP_WRITE_MEM; c[1] = (uint8_t)mem; put16(c + 4, 2); pair_cmd(p, c, 6 + row_bytes(mem)); }
    }
    }
}

/* Compares the two reply streams of the last exchange frame by frame. STATUS's
 * `busy` and `dropped` are not architectural (docs/isa.md), so they are masked. */
static void compare(pair *p, size_t n, const uint8_t *status_frames, unsigned stream)
{
    static size_t ro[4096], rl[4096], vo[4096], vl[4096];
    size_t fr = split_replies(p->ref_rx, n, ro, rl, 4096);
    size_t fv = split_replies(p->vsim_rx, n, vo, vl, 4096);
    if (fr != fv)
        die("stream %u: %zu replies from ref, %zu from vsim", stream, fr, fv);
    for (size_t k = 0; k < fr; k++) {
        const uint8_t *a = p->ref_rx + ro[k], *b = p->vsim_rx + vo[k];
        if (rl[k] != vl[k])
            die("stream %u reply %zu: length %zu (ref) vs %zu (vsim)", stream, k, rl[k], vl[k]);
        for (size_t i = 0; i < rl[k]; i++) {
            int masked = status_frames[k] && a[0] == NTPU_DEV_OK &&
                         (i == 1 + NTPU_STATUS_OFF_BUSY || (i >= 1 + NTPU_STATUS_OFF_DROPPED && i < 1 + NTPU_STATUS_BYTES));
            if (!masked && a[i] != b[i])
                die("stream %u reply %zu (seq %u, status ref %u vsim %u): byte %zu differs: ref 0x%02x vsim 0x%02x",
                    stream, k, p->ref_rx[ro[k] - 3], a[0], b[0], i, a[i], b[i]);
        }
    }
}

int main(int argc, char **argv)
{
    unsigned streams = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
    pair p;
    pair_open(&p);

    /* Configuration from the golden model's ID block; the RTL's must match. */
    uint8_t info = NTPU_OP_INFO;
    pair_cmd(&p, &info, 1);
    size_t n = pair_exchange(&p);
    if (n != NTPU_FRAME_OVERHEAD + 1 + NTPU_ID_BYTES || p.ref_rx[4] != NTPU_DEV_OK)
        die("INFO reply malformed");
    const uint8_t *id = p.ref_rx + 5, *vid = p.vsim_rx + 5;
    if (memcmp(id, vid, NTPU_ID_OFF_PLATFORM) != 0)
        die("ID blocks differ between ref and vsim");
    if (id[NTPU_ID_OFF_PLATFORM] != 0 || vid[NTPU_ID_OFF_PLATFORM] != 1)
        die("platform bytes wrong: ref %u vsim %u", id[NTPU_ID_OFF_PLATFORM], vid[NTPU_ID_OFF_PLATFORM]);
    N = id[NTPU_ID_OFF_ROWS];
    MAX_PAYLOAD = get16(id + NTPU_ID_OFF_MAX_PAYLOAD);
    UB_ROWS = get32(id + NTPU_ID_OFF_UB_ROWS);
    WB_ROWS = get32(id + NTPU_ID_OFF_WB_ROWS);
    ACC_ROWS = get32(id + NTPU_ID_OFF_ACC_ROWS);
    printf("device: N=%u ub=%u wb=%u acc=%u max_payload=%u\n", N, UB_ROWS, WB_ROWS, ACC_ROWS, MAX_PAYLOAD);

    /* Give the windows defined contents (memory after reset is unspecified). */
    static uint8_t zero[65536];
    for (unsigned mem = 0; mem < 3; mem++) {
        unsigned per = (MAX_PAYLOAD - 6) / row_bytes(mem);
        for (unsigned a = 0; a < window(mem); a += per) {
            unsigned rows = window(mem) - a < per ? window(mem) - a : per;
            uint8_t *cmd = zero;
            cmd[0] = NTPU_OP_WRITE_MEM; cmd[1] = (uint8_t)mem; put16(cmd + 2, a); put16(cmd + 4, rows);
            pair_cmd(&p, cmd, 6 + (size_t)rows * row_bytes(mem));
            memset(cmd, 0, 6);
        }
    }
    pair_exchange(&p);

    unsigned long frames = 0, errors = 0;
    for (unsigned s = 0; s < streams; s++) {
        uint8_t status_frames[4096] = {0};
        unsigned cmds = 4 + rnd_below(24);
        for (unsigned c = 0; c < cmds; c++) {
            size_t before = p.tx_len;
            random_command(&p);
            status_frames[c] = p.tx[before + 4] == NTPU_OP_STATUS && get16(p.tx + before + 2) == 1;
        }
        mem_cmd(&p, NTPU_OP_READ_MEM, NTPU_MEM_ACC, 0, ACC_WIN / 2);
        mem_cmd(&p, NTPU_OP_READ_MEM, NTPU_MEM_ACC, ACC_WIN / 2, ACC_WIN / 2);
        n = pair_exchange(&p);
        compare(&p, n, status_frames, s);
        size_t off[4096], len[4096];
        size_t k = split_replies(p.ref_rx, n, off, len, 4096);
        frames += k;
        for (size_t i = 0; i < k; i++)
            errors += p.ref_rx[off[i]] != NTPU_DEV_OK;
    }

    /* MACs are architectural: both sides must have counted the same. */
    uint8_t cnt[2] = {NTPU_OP_COUNTERS, 0};
    pair_cmd(&p, cnt, 2);
    pair_exchange(&p);
    uint64_t mr = 0, mv = 0;
    for (int i = 7; i >= 0; i--) {
        mr = mr << 8 | p.ref_rx[5 + 8 * NTPU_CNT_MACS + i];
        mv = mv << 8 | p.vsim_rx[5 + 8 * NTPU_CNT_MACS + i];
    }
    if (mr != mv)
        die("MAC counters differ: ref %llu vsim %llu", (unsigned long long)mr, (unsigned long long)mv);
    printf("%u random command streams, %lu replies (%lu errors among them), %llu MACs: "
           "ref and vsim bit-identical (%llu vsim cycles)\n",
           streams, frames, errors, (unsigned long long)mr, (unsigned long long)ntpu_vsim_cycles(p.vsim));
    pair_close(&p);
    puts("PASS diff_random");
    return 0;
}
