/* SPDX-License-Identifier: Apache-2.0 */
/* Differential test: random command streams (every opcode, both dtypes, special
 * values, invalid commands mixed in) through the golden model and the RTL; the
 * reply streams must be bit-identical, frame for frame. The 1.1 commands
 * (MATMUL TRANSPOSE_A, ACT, RELU_GRAD, COLSUM), 1.3's OPTIM, 1.4's programs
 * (WRITE_MEM / READ_MEM of PM, RUN of random commands, broken programs) and 1.4's
 * OS memory and OPTIM ADAM, and 1.5's MATMUL CONV modes and POOL join the streams
 * when the device's feature bits announce them (NTPU_TEST_TWIN, pair.h: against a
 * second golden model, which has them all). Every frame is tagged with its command family, and a run of
 * 1000 streams or more fails unless each family had the reply it is meant to
 * get (OK or an error) at least a few times (see `families` below).
 * Usage: diff_random [streams=1000] [seed=1] */
#include "pair.h"

enum { UB_WIN = 128, WB_WIN = 64, ACC_WIN = 128, OS_WIN = 64 }; /* rows every stream works in */

static unsigned N, UB_ROWS, WB_ROWS, ACC_ROWS, OS_ROWS, MAX_PAYLOAD;
static int HAS_TRANSPOSE_A, HAS_VECTOR, HAS_OPTIM, HAS_PROGRAM, HAS_ADAM, HAS_CONV, HAS_POOL;
static unsigned PM_ROWS;
enum { PM_WIN = 256 };          /* PM rows the programs use */
static unsigned long adam_rows; /* rows of the valid OPTIM ADAMs sent: the streams reach the Adam datapath */

/* The command families the streams are meant to exercise, each with the reply it is meant to get: every
 * frame sent is tagged with its family, and its reply status counted. At the end each family the
 * device's features allow must have had its intended reply (NTPU_DEV_OK for a valid command, any error
 * for an invalid one) FAMILY_MIN times, so that a generator change that stops sending a family, or a
 * device change that rejects every valid command of one (or accepts every invalid one), fails the run
 * instead of leaving it untested. A family marked `always` must get its intended reply every time:
 * those whose outcome the generator fixes (the setup and read-back, the commands valid in any state,
 * errors no state can avoid). The rest come out mostly as meant: e.g. a program holds random
 * commands, some invalid, and runs to its end only when none is. */
enum family {
    F_INFO,
    F_SETUP,
    F_READBACK,
    F_CONSTS,
    F_COUNTERS,
    F_WRITE_UB,
    F_WRITE_WB,
    F_WRITE_ACC,
    F_WRITE_PM,
    F_WRITE_OS,
    F_WRITE_END, /* WRITE_MEM: F_WRITE_UB + mem */
    F_READ_UB,
    F_READ_WB,
    F_READ_ACC,
    F_READ_PM,
    F_READ_OS, /* READ_MEM: F_READ_UB + mem */
    F_LOADW,
    F_LOADW_T,
    F_MM_INT8,
    F_MM_INT8_ACC,
    F_MM_BF16,
    F_MM_BF16_ACC, /* F_MM_INT8 + flags */
    F_FENCE,
    F_NOP,
    F_STATUS,
    F_SYNC,
    F_BAD_OPCODE,
    F_BAD_MM_LEN,
    F_BAD_MEM,
    F_BAD_LOADW_FLAGS,
    F_BAD_LOADW_RANGE,
    F_BAD_MM_RANGE,
    F_BAD_READ_PAYLOAD,
    F_BAD_SEQ,
    F_BAD_WRITE_LEN,
    F_ACT_UB,
    F_ACT_WB,
    F_ACT_ACC,
    F_ACT_INT8, /* F_ACT_UB + OUT / 4 */
    F_RELU_GRAD_UB,
    F_RELU_GRAD_WB,
    F_RELU_GRAD_ACC,
    F_COLSUM,
    F_COLSUM_ACC,
    F_MM_T,
    F_BAD_ACT_FLAGS,
    F_BAD_RELU_GRAD_OUT,
    F_BAD_COLSUM_FLAGS,
    F_BAD_VEC_LEN,
    F_BAD_ACT_INT8_AUX,
    F_BAD_ACT_BIAS_AUX,
    F_BAD_RELU_GRAD_MASK,
    F_BAD_COLSUM_DST,
    F_BAD_ACT_DST, /* F_BAD_ACT_FLAGS + kind */
    F_BAD_MM_T_ROWS,
    F_BAD_MM_T_LEN8,
    F_BAD_MM_LEN10,
    F_BAD_MM_T_STRIDE, /* F_BAD_MM_T_ROWS + kind */
    F_SGD,
    F_MOMENTUM,
    F_BAD_OPTIM_FLAGS,
    F_BAD_OPTIM_LEN,
    F_BAD_OPTIM_STATE,
    F_BAD_OPTIM_GRAD,
    F_BAD_OPTIM_MU, /* + kind */
    F_ADAM,
    F_ADAMW,
    F_BAD_ADAM_LEN10,
    F_BAD_ADAM_LEN12,
    F_BAD_ADAM_MOMENTUM,
    F_BAD_ADAM_DECOUPLED,
    F_BAD_ADAM_FLAGS,
    F_BAD_ADAM_AUX,
    F_BAD_ADAM_OS, /* F_BAD_ADAM_LEN10 + kind */
    F_RUN,
    F_RUN_BAD_LEN,
    F_RUN_CUT,
    F_BAD_RUN_RANGE,
    F_BAD_RUN_FLAGS,
    F_BAD_RUN_LEN,
    F_BAD_RUN_ADDR,
    F_CONV,
    F_CONV_T,
    F_CONV_DW,
    F_BAD_CONV,
    F_BAD_CONV_DW,
    F_POOL,
    F_BAD_POOL,
    F_COUNT
};
enum { WANT_OK = 1, WANT_ERR = 0, FAMILY_MIN = 5, FAMILY_STREAMS = 1000 }; /* 1000 streams: the rarest ~20 */
static const struct {
    const char *name;
    int want_ok, always;
    unsigned needs; /* NTPU_FEATURE_* bits the family needs */
    int fixed;      /* sent a fixed number of times, not at random: at least once is enough */
} families[F_COUNT] = {
    [F_INFO] = {"INFO", WANT_OK, 1, 0, 1},
    [F_SETUP] = {"WRITE_MEM zeroing the windows", WANT_OK, 1, 0, 1},
    [F_READBACK] = {"READ_MEM of the windows after a stream", WANT_OK, 1, 0, 1},
    [F_CONSTS] = {"WRITE_MEM of ACT/OPTIM constants", WANT_OK, 1, 0, 0},
    [F_COUNTERS] = {"COUNTERS", WANT_OK, 1, 0, 1},
    [F_WRITE_UB] = {"WRITE_MEM UB", WANT_OK, 1, 0},
    [F_WRITE_WB] = {"WRITE_MEM WB", WANT_OK, 1, 0},
    [F_WRITE_ACC] = {"WRITE_MEM ACC", WANT_OK, 1, 0},
    [F_WRITE_PM] = {"WRITE_MEM PM", WANT_OK, 1, NTPU_FEATURE_PROGRAM_BIT},
    [F_WRITE_OS] = {"WRITE_MEM OS", WANT_OK, 1, NTPU_FEATURE_ADAM_BIT},
    [F_WRITE_END] = {"WRITE_MEM of a memory's last rows", WANT_OK, 1, 0},
    [F_READ_UB] = {"READ_MEM UB", WANT_OK, 1, 0},
    [F_READ_WB] = {"READ_MEM WB", WANT_OK, 1, 0},
    [F_READ_ACC] = {"READ_MEM ACC", WANT_OK, 1, 0},
    [F_READ_PM] = {"READ_MEM PM", WANT_OK, 1, NTPU_FEATURE_PROGRAM_BIT},
    [F_READ_OS] = {"READ_MEM OS", WANT_OK, 1, NTPU_FEATURE_ADAM_BIT},
    [F_LOADW] = {"LOAD_W", WANT_OK, 1, 0},
    [F_LOADW_T] = {"LOAD_W TRANSPOSE", WANT_OK, 1, NTPU_FEATURE_TRANSPOSE_BIT},
    [F_MM_INT8] = {"MATMUL int8", WANT_OK, 1, 0},
    [F_MM_BF16] = {"MATMUL bf16", WANT_OK, 1, 0},
    [F_MM_INT8_ACC] = {"MATMUL int8 ACCUMULATE", WANT_OK, 1, 0},
    [F_MM_BF16_ACC] = {"MATMUL bf16 ACCUMULATE", WANT_OK, 1, 0},
    [F_FENCE] = {"FENCE", WANT_OK, 1, 0},
    [F_NOP] = {"NOP", WANT_OK, 1, 0},
    [F_STATUS] = {"STATUS", WANT_OK, 1, 0},
    [F_SYNC] = {"SYNC with any SEQ", WANT_OK, 1, 0},
    [F_BAD_OPCODE] = {"an unknown opcode", WANT_ERR, 1, 0},
    [F_BAD_MM_LEN] = {"MATMUL of the wrong length", WANT_ERR, 1, 0},
    [F_BAD_MEM] = {"READ_MEM of memory 3 and up", WANT_ERR, 0, 0}, /* 3 (PM) and 4 (OS) may exist */
    [F_BAD_LOADW_FLAGS] = {"LOAD_W with reserved flags", WANT_ERR, 1, 0},
    [F_BAD_LOADW_RANGE] = {"LOAD_W past the end of WB", WANT_ERR, 1, 0},
    [F_BAD_MM_RANGE] = {"MATMUL past the end of ACC", WANT_ERR, 1, 0},
    [F_BAD_READ_PAYLOAD] = {"READ_MEM over the max payload", WANT_ERR, 1, 0},
    [F_BAD_SEQ] = {"a frame out of SEQ order", WANT_ERR, 1, 0},
    [F_BAD_WRITE_LEN] = {"WRITE_MEM with less data than rows", WANT_ERR, 1, 0},
    [F_ACT_UB] = {"ACT to UB", WANT_OK, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_ACT_WB] = {"ACT to WB", WANT_OK, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_ACT_ACC] = {"ACT to ACC", WANT_OK, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_ACT_INT8] = {"ACT int8", WANT_OK, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_RELU_GRAD_UB] = {"RELU_GRAD to UB", WANT_OK, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_RELU_GRAD_WB] = {"RELU_GRAD to WB", WANT_OK, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_RELU_GRAD_ACC] = {"RELU_GRAD to ACC", WANT_OK, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_COLSUM] = {"COLSUM", WANT_OK, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_COLSUM_ACC] = {"COLSUM ACCUMULATE", WANT_OK, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_MM_T] = {"MATMUL TRANSPOSE_A", WANT_OK, 1, NTPU_FEATURE_TRANSPOSE_A_BIT},
    [F_BAD_ACT_FLAGS] = {"ACT with reserved flags", WANT_ERR, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_BAD_RELU_GRAD_OUT] = {"RELU_GRAD with OUT INT8 or reserved flags", WANT_ERR, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_BAD_COLSUM_FLAGS] = {"COLSUM with reserved flags", WANT_ERR, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_BAD_VEC_LEN] = {"a vector command of the wrong length", WANT_ERR, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_BAD_ACT_INT8_AUX] = {"ACT int8 with its aux rows past ACC", WANT_ERR, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_BAD_ACT_BIAS_AUX] = {"ACT BIAS with its aux row past ACC", WANT_ERR, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_BAD_RELU_GRAD_MASK] = {"RELU_GRAD with its mask past UB", WANT_ERR, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_BAD_COLSUM_DST] = {"COLSUM to a row past ACC", WANT_ERR, 1, NTPU_FEATURE_VECTOR_BIT},
    [F_BAD_ACT_DST] = {"ACT to rows past UB or WB", WANT_ERR, 0, NTPU_FEATURE_VECTOR_BIT}, /* OUT ACC fits */
    [F_BAD_MM_T_ROWS] = {"MATMUL TRANSPOSE_A, rows not whole blocks", WANT_ERR, 1, NTPU_FEATURE_TRANSPOSE_A_BIT},
    [F_BAD_MM_T_LEN8] = {"MATMUL TRANSPOSE_A of length 8", WANT_ERR, 1, NTPU_FEATURE_TRANSPOSE_A_BIT},
    [F_BAD_MM_LEN10] = {"MATMUL of length 10 without TRANSPOSE_A", WANT_ERR, 1, NTPU_FEATURE_TRANSPOSE_A_BIT},
    [F_BAD_MM_T_STRIDE] = {"MATMUL TRANSPOSE_A, a stride past UB", WANT_ERR, 1, NTPU_FEATURE_TRANSPOSE_A_BIT},
    [F_SGD] = {"OPTIM SGD", WANT_OK, 1, NTPU_FEATURE_OPTIM_BIT},
    [F_MOMENTUM] = {"OPTIM MOMENTUM", WANT_OK, 1, NTPU_FEATURE_OPTIM_BIT},
    [F_BAD_OPTIM_FLAGS] = {"OPTIM with reserved flags", WANT_ERR, 1, NTPU_FEATURE_OPTIM_BIT},
    [F_BAD_OPTIM_LEN] = {"OPTIM of the wrong length", WANT_ERR, 1, NTPU_FEATURE_OPTIM_BIT},
    [F_BAD_OPTIM_STATE] = {"OPTIM MOMENTUM, state rows past ACC", WANT_ERR, 1, NTPU_FEATURE_OPTIM_BIT},
    [F_BAD_OPTIM_GRAD] = {"OPTIM, gradient rows past ACC", WANT_ERR, 1, NTPU_FEATURE_OPTIM_BIT},
    [F_BAD_OPTIM_MU] = {"OPTIM MOMENTUM, its mu row past ACC", WANT_ERR, 1, NTPU_FEATURE_OPTIM_BIT},
    [F_ADAM] = {"OPTIM ADAM", WANT_OK, 1, NTPU_FEATURE_ADAM_BIT},
    [F_ADAMW] = {"OPTIM ADAM DECOUPLED", WANT_OK, 1, NTPU_FEATURE_ADAM_BIT},
    [F_BAD_ADAM_LEN10] = {"OPTIM ADAM of length 10", WANT_ERR, 1, NTPU_FEATURE_ADAM_BIT},
    [F_BAD_ADAM_LEN12] = {"OPTIM of length 12 without ADAM", WANT_ERR, 1, NTPU_FEATURE_ADAM_BIT},
    [F_BAD_ADAM_MOMENTUM] = {"OPTIM ADAM with MOMENTUM", WANT_ERR, 1, NTPU_FEATURE_ADAM_BIT},
    [F_BAD_ADAM_DECOUPLED] = {"OPTIM DECOUPLED without ADAM", WANT_ERR, 1, NTPU_FEATURE_ADAM_BIT},
    [F_BAD_ADAM_FLAGS] = {"OPTIM ADAM with reserved flags", WANT_ERR, 1, NTPU_FEATURE_ADAM_BIT},
    [F_BAD_ADAM_AUX] = {"OPTIM ADAM, a constant row past ACC", WANT_ERR, 1, NTPU_FEATURE_ADAM_BIT},
    [F_BAD_ADAM_OS] = {"OPTIM ADAM, v's rows past OS", WANT_ERR, 1, NTPU_FEATURE_ADAM_BIT},
    [F_RUN] = {"RUN of a program to its end", WANT_OK, 0, NTPU_FEATURE_PROGRAM_BIT},
    [F_RUN_BAD_LEN] = {"RUN, a LEN past the program", WANT_ERR, 0, NTPU_FEATURE_PROGRAM_BIT},
    [F_RUN_CUT] = {"RUN of a program cut short", WANT_ERR, 0, NTPU_FEATURE_PROGRAM_BIT},
    [F_BAD_RUN_RANGE] = {"RUN past the end of PM", WANT_ERR, 1, NTPU_FEATURE_PROGRAM_BIT},
    [F_BAD_RUN_FLAGS] = {"RUN with reserved flags", WANT_ERR, 1, NTPU_FEATURE_PROGRAM_BIT},
    [F_BAD_RUN_LEN] = {"RUN of the wrong length", WANT_ERR, 1, NTPU_FEATURE_PROGRAM_BIT},
    [F_BAD_RUN_ADDR] = {"RUN at address 0xFFFF", WANT_ERR, 1, NTPU_FEATURE_PROGRAM_BIT},
    [F_CONV] = {"MATMUL CONV", WANT_OK, 1, NTPU_FEATURE_CONV_BIT},
    [F_CONV_T] = {"MATMUL CONV CONV_T", WANT_OK, 1, NTPU_FEATURE_CONV_BIT},
    [F_CONV_DW] = {"MATMUL CONV TRANSPOSE_A", WANT_OK, 1, NTPU_FEATURE_CONV_BIT | NTPU_FEATURE_TRANSPOSE_A_BIT},
    [F_BAD_CONV] = {"MATMUL CONV: a zero field, bad flags or LEN, past UB", WANT_ERR, 1, NTPU_FEATURE_CONV_BIT},
    [F_BAD_CONV_DW] = {"MATMUL CONV TRANSPOSE_A, rows not whole taps", WANT_ERR, 1,
                       NTPU_FEATURE_CONV_BIT | NTPU_FEATURE_TRANSPOSE_A_BIT},
    [F_POOL] = {"POOL", WANT_OK, 1, NTPU_FEATURE_POOL_BIT},
    [F_BAD_POOL] = {"POOL: bad flags, fields, LEN, overlap or range", WANT_ERR, 1, NTPU_FEATURE_POOL_BIT},
};
static unsigned FEATURES;
static unsigned long fam_count[F_COUNT][2]; /* [family][reply OK] */
static unsigned char frame_fam[8192];       /* the family of each frame sent since the last exchange */
static size_t frames_tagged;

static void tag(unsigned fam)
{
    if (frames_tagged == sizeof frame_fam)
        die("more than %zu frames in one exchange", sizeof frame_fam);
    frame_fam[frames_tagged++] = (unsigned char)fam;
}

/* pair_cmd and pair_frame with the frame's family. */
static void send(pair *p, unsigned fam, const uint8_t *payload, size_t len)
{
    tag(fam);
    pair_cmd(p, payload, len);
}

static void send_seq(pair *p, unsigned fam, uint8_t seq, const uint8_t *payload, size_t len)
{
    tag(fam);
    pair_frame(p, seq, payload, len);
}

/* Counts each reply of the last exchange (n bytes; ref's, which vsim's equal) for the family of its frame. */
static void tally(const pair *p, size_t n, unsigned stream)
{
    static size_t off[8192], len[8192];
    size_t k = split_replies(p->ref_rx, n, off, len, 8192);
    if (k != frames_tagged)
        die("stream %u: %zu replies to %zu frames", stream, k, frames_tagged);
    for (size_t i = 0; i < k; i++) {
        unsigned f = frame_fam[i];
        int ok = p->ref_rx[off[i]] == NTPU_DEV_OK;
        fam_count[f][ok]++;
        if (families[f].always && ok != families[f].want_ok)
            die("stream %u reply %zu: %s got status %u, meant to be %s", stream, i, families[f].name, p->ref_rx[off[i]],
                families[f].want_ok ? "OK" : "an error");
    }
    frames_tagged = 0;
}

/* The end of a run: with FAMILY_STREAMS streams or more, every family the device's features allow had
 * its intended reply at least FAMILY_MIN times; with fewer the shortfall is only reported. */
static void check_families(unsigned streams)
{
    unsigned checked = 0, short_of = 0, fewest = F_COUNT;
    for (unsigned f = 0; f < F_COUNT; f++) {
        if ((families[f].needs & FEATURES) != families[f].needs)
            continue;
        checked++;
        unsigned long got = fam_count[f][families[f].want_ok], other = fam_count[f][!families[f].want_ok];
        unsigned long want = families[f].fixed ? 1 : FAMILY_MIN;
        if (got < want) {
            printf("%s %s: %lu %s replies (and %lu %s), at least %lu wanted\n",
                   streams >= FAMILY_STREAMS ? "FAIL" : "note:", families[f].name, got,
                   families[f].want_ok ? "OK" : "error", other, families[f].want_ok ? "errors" : "OK", want);
            short_of++;
        } else if (!families[f].fixed && (fewest == F_COUNT || got < fam_count[fewest][families[fewest].want_ok])) {
            fewest = f;
        }
    }
    if (short_of && streams >= FAMILY_STREAMS)
        die("%u of %u command families had their intended reply too few times", short_of, checked);
    if (fewest < F_COUNT)
        printf("%u command families, %u of them with their intended reply as often as wanted (%d times for the "
               "random ones; fewest: %s, %lu)\n",
               checked, checked - short_of, FAMILY_MIN, families[fewest].name,
               fam_count[fewest][families[fewest].want_ok]);
}

static uint16_t rnd_bf16(void)
{
    uint16_t sign = (uint16_t)(rnd_below(2) << 15);
    unsigned exp;
    switch (rnd_below(20)) {
    case 0: return sign;                                            /* ±0 */
    case 1: return sign | 0x7F80;                                   /* ±Inf */
    case 2: return sign | 0x7F80 | (uint16_t)(1 + rnd_below(0x7F)); /* NaN */
    case 3: return sign | (uint16_t)(1 + rnd_below(0x7F));          /* subnormal */
    case 4: exp = 230 + rnd_below(25); break;                       /* products overflow */
    case 5: exp = 1 + rnd_below(20); break;                         /* products underflow */
    case 6: return sign | (rnd_below(2) ? 0x0080 : 0x7F7F);         /* min normal, max */
    default: exp = 118 + rnd_below(18); break;                      /* ordinary */
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

static unsigned row_bytes(unsigned mem)
{
    return mem == NTPU_MEM_ACC || mem == NTPU_MEM_OS ? 4 * N : 2 * N;
} /* PM: 2N */

/* Random row data for memory mem; `bf16` picks the flavour of UB/WB lanes. */
static void fill_rows(uint8_t *p, unsigned mem, unsigned rows, int bf16)
{
    for (unsigned i = 0; i < rows * N; i++) {
        if (mem == NTPU_MEM_ACC || mem == NTPU_MEM_OS)
            put32(p + 4 * i, rnd_below(2) ? rnd_f32() : (uint32_t)rnd());
        else
            put16(p + 2 * i, bf16 ? rnd_bf16() : (uint16_t)rnd()); /* int8: high byte must be ignored */
    }
}

static void write_mem(pair *p, unsigned fam, unsigned mem, unsigned addr, unsigned rows, int bf16)
{
    static uint8_t cmd[65536];
    cmd[0] = NTPU_OP_WRITE_MEM;
    cmd[1] = (uint8_t)mem;
    put16(cmd + 2, addr);
    put16(cmd + 4, rows);
    fill_rows(cmd + 6, mem, rows, bf16);
    send(p, fam, cmd, 6 + (size_t)rows * row_bytes(mem));
}

static void mem_cmd(pair *p, unsigned fam, unsigned op, unsigned mem, unsigned addr, unsigned rows)
{
    uint8_t cmd[6] = {(uint8_t)op, (uint8_t)mem};
    put16(cmd + 2, addr);
    put16(cmd + 4, rows);
    send(p, fam, cmd, 6);
}

static unsigned window(unsigned mem)
{
    return mem == NTPU_MEM_UB ? UB_WIN : mem == NTPU_MEM_WB ? WB_WIN : mem == NTPU_MEM_OS ? OS_WIN : ACC_WIN;
}

static unsigned mem_size(unsigned mem)
{
    return mem == NTPU_MEM_UB ? UB_ROWS : mem == NTPU_MEM_WB ? WB_ROWS : mem == NTPU_MEM_OS ? OS_ROWS : ACC_ROWS;
}

static unsigned out_window(unsigned out)
{
    return out == NTPU_OUT_WB ? WB_WIN : out == NTPU_OUT_ACC ? ACC_WIN : UB_WIN;
}

/* [op][flags][a u16][b u16][rows u16][d u16]: the layout of ACT, RELU_GRAD,
 * COLSUM (no d) and MATMUL TRANSPOSE_A (d = stride). */
static void cmd10(pair *p, unsigned fam, unsigned op, unsigned flags, unsigned a, unsigned b, unsigned rows, unsigned d,
                  size_t len)
{
    uint8_t c[10] = {(uint8_t)op, (uint8_t)flags};
    put16(c + 2, a);
    put16(c + 4, b);
    put16(c + 6, rows);
    put16(c + 8, d);
    send(p, fam, c, len);
}

/* A destination near the source when both are in one memory, so in-place and
 * overlapping rows (docs/isa.md, "Order") come up often. */
static unsigned dst_near(unsigned src, unsigned rows, unsigned win)
{
    if (rnd_below(2) == 0)
        return rnd_below(win - rows + 1);
    int d = (int)src + (int)rnd_below(7) - 3;
    return d < 0 ? 0 : d > (int)(win - rows) ? win - rows : (unsigned)d;
}

/* Multipliers and shifts for int8 ACT at ACC rows aux+1, aux+2: mostly
 * normalized values, some outside (negative, zero, shifts past 31). */
static void write_requant_params(pair *p, unsigned aux)
{
    static uint8_t cmd[6 + 2 * 4 * 64];
    cmd[0] = NTPU_OP_WRITE_MEM;
    cmd[1] = NTPU_MEM_ACC;
    put16(cmd + 2, aux + 1);
    put16(cmd + 4, 2);
    for (unsigned n = 0; n < N; n++) {
        uint32_t m = rnd_below(6) ? (1u << 30) | (uint32_t)(rnd() >> 34) : (uint32_t)rnd();
        uint32_t s = rnd_below(6) ? rnd_below(32) : (uint32_t)rnd();
        put32(cmd + 6 + 4 * n, m);
        put32(cmd + 6 + 4 * (N + n), s);
    }
    send(p, F_CONSTS, cmd, 6 + 2 * (size_t)row_bytes(NTPU_MEM_ACC));
}

/* lr, wd, mu rows at aux for OPTIM: mostly ordinary hyperparameters (small
 * positive, some zero, some negative), sometimes any fp32 value. */
static void write_optim_consts(pair *p, unsigned aux)
{
    static uint8_t cmd[6 + 3 * 4 * 64];
    cmd[0] = NTPU_OP_WRITE_MEM;
    cmd[1] = NTPU_MEM_ACC;
    put16(cmd + 2, aux);
    put16(cmd + 4, 3);
    for (unsigned i = 0; i < 3 * N; i++) {
        uint32_t v;
        switch (rnd_below(6)) {
        case 0: v = rnd_f32(); break;
        case 1: v = rnd_below(2) ? 0 : 0x80000000u; break;
        default: v = (uint32_t)(100 + rnd_below(27)) << 23 | (uint32_t)rnd_below(0x800000); break;
        }
        put32(cmd + 6 + 4 * i, v);
    }
    send(p, F_CONSTS, cmd, 6 + 3 * (size_t)row_bytes(NTPU_MEM_ACC));
}

/* One random OPTIM, usually valid: SGD or momentum, gradients anywhere in the
 * window (overlapping the parameter or state rows too), or one of each error. */
static void random_optim(pair *p)
{
    unsigned rows = rnd_below(3 * N + 1), mom = rnd_below(2);
    if (rnd_below(6) == 0) {
        unsigned e = rnd_below(5);
        unsigned f = F_BAD_OPTIM_FLAGS + e;
        if (e == 0)
            cmd10(p, f, NTPU_OP_OPTIM, 2u << rnd_below(7), 0, 0, 1, 0, NTPU_LEN_OPTIM);
        else if (e == 1)
            cmd10(p, f, NTPU_OP_OPTIM, mom, 0, 0, 1, 0, rnd_below(2) ? 8 : 9);
        else if (e == 2) /* the state rows run past the end; the parameters alone would fit */
            cmd10(p, f, NTPU_OP_OPTIM, NTPU_OPTIM_MOMENTUM, ACC_ROWS - 2 * N + 1 + rnd_below(N), 0, N, 0, 10);
        else if (e == 3)
            cmd10(p, f, NTPU_OP_OPTIM, mom, 0, ACC_ROWS - rnd_below(2), 2, 0, 10);
        else /* mu's row past the end; lr and wd alone would fit */
            cmd10(p, f, NTPU_OP_OPTIM, NTPU_OPTIM_MOMENTUM, 0, 0, 1, ACC_ROWS - 3 + 1 + rnd_below(2), 10);
        return;
    }
    unsigned prow = rnd_below(ACC_WIN - rows * (1 + mom) + 1), aux = rnd_below(ACC_WIN - 3 + 1);
    unsigned grow = rnd_below(2) ? rnd_below(ACC_WIN - rows + 1) : dst_near(prow, rows, ACC_WIN);
    if (rnd_below(3))
        write_optim_consts(p, aux);
    cmd10(p, mom ? F_MOMENTUM : F_SGD, NTPU_OP_OPTIM, mom, prow, grow, rows, aux, NTPU_LEN_OPTIM);
}

/* The nine Adam constants at aux: mostly ordinary values (small positive like
 * lr, eps, 1 - b1; near 1 like b1, c1; some zero), sometimes any fp32 value. */
static void write_adam_consts(pair *p, unsigned aux)
{
    static uint8_t cmd[6 + NTPU_ADAM_AUX_ROWS * 4 * 64];
    cmd[0] = NTPU_OP_WRITE_MEM;
    cmd[1] = NTPU_MEM_ACC;
    put16(cmd + 2, aux);
    put16(cmd + 4, NTPU_ADAM_AUX_ROWS);
    for (unsigned i = 0; i < NTPU_ADAM_AUX_ROWS * N; i++) {
        uint32_t v;
        switch (rnd_below(8)) {
        case 0: v = rnd_f32(); break;
        case 1: v = rnd_below(2) ? 0 : 0x80000000u; break;
        case 2:
        case 3: v = 0x3F000000u | (uint32_t)rnd_below(0x1000000); break; /* [0.5, 2) */
        default: v = (uint32_t)(90 + rnd_below(37)) << 23 | (uint32_t)rnd_below(0x800000); break;
        }
        put32(cmd + 6 + 4 * i, v);
    }
    send(p, F_CONSTS, cmd, 6 + NTPU_ADAM_AUX_ROWS * (size_t)row_bytes(NTPU_MEM_ACC));
}

static void optim12(pair *p, unsigned fam, unsigned flags, unsigned prow, unsigned grow, unsigned rows, unsigned aux,
                    unsigned s, size_t len)
{
    uint8_t c[12] = {NTPU_OP_OPTIM, (uint8_t)flags};
    put16(c + 2, prow);
    put16(c + 4, grow);
    put16(c + 6, rows);
    put16(c + 8, aux);
    put16(c + 10, s);
    send(p, fam, c, len);
}

/* One random OPTIM ADAM (1.4), usually valid: Adam or AdamW, gradients and
 * constants anywhere in the window (overlapping the parameters too), or one of
 * each error. */
static void random_adam(pair *p)
{
    const unsigned A = NTPU_OPTIM_ADAM, D = NTPU_OPTIM_DECOUPLED;
    unsigned rows = rnd_below(N + 1), dec = rnd_below(2) ? D : 0;
    if (rnd_below(5) == 0) {
        unsigned e = rnd_below(7), f = F_BAD_ADAM_LEN10 + e;
        if (e == 0)
            optim12(p, f, A | dec, 0, 0, 1, 0, 0, NTPU_LEN_OPTIM); /* LEN 10 */
        else if (e == 1)
            optim12(p, f, 0, 0, 0, 1, 0, 0, NTPU_LEN_OPTIM_ADAM); /* LEN 12 without */
        else if (e == 2)
            optim12(p, f, A | NTPU_OPTIM_MOMENTUM, 0, 0, 1, 0, 0, 12); /* with MOMENTUM */
        else if (e == 3)
            optim12(p, f, D | (8u << rnd_below(5)), 0, 0, 1, 0, 0, 10); /* DECOUPLED alone, reserved */
        else if (e == 4)
            optim12(p, f, A | (8u << rnd_below(5)), 0, 0, 1, 0, 0, 12); /* reserved bits */
        else if (e == 5)                                                /* a constant row past the end */
            optim12(p, f, A | dec, 0, 0, 1, ACC_ROWS - NTPU_ADAM_AUX_ROWS + 1 + rnd_below(2), 0, 12);
        else /* v's rows past the end of OS; m's alone would fit */
            optim12(p, f, A | dec, 0, 0, N, 0, OS_ROWS - 2 * N + 1 + rnd_below(N), 12);
        return;
    }
    unsigned prow = rnd_below(ACC_WIN - rows + 1), aux = rnd_below(ACC_WIN - NTPU_ADAM_AUX_ROWS + 1);
    unsigned grow = rnd_below(2) ? rnd_below(ACC_WIN - rows + 1) : dst_near(prow, rows, ACC_WIN);
    unsigned s = rnd_below(OS_WIN - 2 * rows + 1);
    if (rnd_below(3))
        write_adam_consts(p, aux);
    optim12(p, dec ? F_ADAMW : F_ADAM, A | dec, prow, grow, rows, aux, s, NTPU_LEN_OPTIM_ADAM);
    adam_rows += rows;
}

/* One random 1.1 command, usually valid. */
static void random_command_v11(pair *p)
{
    unsigned rows = rnd_below(3 * N + 1), kind = rnd_below(HAS_TRANSPOSE_A ? 12 : 9);
    if (!HAS_VECTOR)
        kind = 9 + rnd_below(3);
    if (HAS_ADAM && rnd_below(5) == 0) {
        random_adam(p);
        return;
    }
    if (HAS_OPTIM && rnd_below(4) == 0) {
        random_optim(p);
        return;
    }
    switch (kind) {
    case 0:
    case 1:
    case 2: { /* ACT, every flag combination */
        unsigned flags = rnd_below(16), out = flags & NTPU_OUT_MASK;
        unsigned src = rnd_below(ACC_WIN - rows + 1), aux = rnd_below(ACC_WIN - 2);
        unsigned dst = out == NTPU_OUT_ACC ? dst_near(src, rows, ACC_WIN) : rnd_below(out_window(out) - rows + 1);
        if (out == NTPU_OUT_INT8 && rnd_below(2))
            write_requant_params(p, aux);
        cmd10(p, F_ACT_UB + out / 4, NTPU_OP_ACT, flags, src, dst, rows, aux, NTPU_LEN_ACT);
        break;
    }
    case 3:
    case 4: { /* RELU_GRAD, OUT 0..2 */
        unsigned out = rnd_below(3) << 2, src = rnd_below(ACC_WIN - rows + 1), mask = rnd_below(UB_WIN - rows + 1);
        unsigned dst = out == NTPU_OUT_ACC  ? dst_near(src, rows, ACC_WIN)
                       : out == NTPU_OUT_UB ? dst_near(mask, rows, UB_WIN)
                                            : rnd_below(WB_WIN - rows + 1);
        cmd10(p, F_RELU_GRAD_UB + out / 4, NTPU_OP_RELU_GRAD, out, src, dst, rows, mask, NTPU_LEN_RELU_GRAD);
        break;
    }
    case 5:
    case 6: { /* COLSUM, the result row sometimes inside the summed rows */
        unsigned src = rnd_below(ACC_WIN - rows + 1);
        unsigned dst = rows && rnd_below(3) == 0 ? src + rnd_below(rows) : rnd_below(ACC_WIN);
        unsigned acc = rnd_below(2);
        cmd10(p, acc ? F_COLSUM_ACC : F_COLSUM, NTPU_OP_COLSUM, acc, src, dst, rows, 0, NTPU_LEN_COLSUM);
        break;
    }
    case 7:
    case 8: { /* invalid vector commands: each kind of error */
        unsigned e = rnd_below(9), f = F_BAD_ACT_FLAGS + e;
        if (e == 0)
            cmd10(p, f, NTPU_OP_ACT, 0x10u << rnd_below(4), 0, 0, 1, 0, NTPU_LEN_ACT);
        else if (e == 1)
            cmd10(p, f, NTPU_OP_RELU_GRAD, rnd_below(2) ? NTPU_OUT_INT8 : 1u << rnd_below(2), 0, 0, 1, 0, 10);
        else if (e == 2)
            cmd10(p, f, NTPU_OP_COLSUM, 2u << rnd_below(7), 0, 0, 1, 0, NTPU_LEN_COLSUM);
        else if (e == 3)
            cmd10(p, f, NTPU_OP_ACT + rnd_below(3), 0, 0, 0, 1, 0, 7 + rnd_below(2) * 2 + rnd_below(2) * 4);
        else if (e == 4) /* int8 aux rows past the end; BIAS alone would fit */
            cmd10(p, f, NTPU_OP_ACT, NTPU_OUT_INT8 | rnd_below(4), 0, 0, 1, ACC_ROWS - 2 + rnd_below(2), 10);
        else if (e == 5)
            cmd10(p, f, NTPU_OP_ACT, NTPU_ACT_BIAS | (rnd_below(3) << 2), 0, 0, 1, ACC_ROWS, 10);
        else if (e == 6)
            cmd10(p, f, NTPU_OP_RELU_GRAD, NTPU_OUT_ACC, 0, 0, 2, UB_ROWS - 1, 10);
        else if (e == 7)
            cmd10(p, f, NTPU_OP_COLSUM, 0, 0, ACC_ROWS, 0, 0, 8);
        else
            cmd10(p, f, NTPU_OP_ACT, rnd_below(3) << 2, 0, (rnd_below(3) == 0 ? WB_ROWS : UB_ROWS) - 1, 2, 0, 10);
        break;
    }
    case 9:
    case 10: { /* MATMUL TRANSPOSE_A: blocks of N UB rows, stride from 0 to past N */
        unsigned blocks = rnd_below(4), flags = NTPU_MATMUL_TRANSPOSE_A | rnd_below(4);
        unsigned max_stride = blocks > 1 ? (UB_WIN - N) / (blocks - 1) : 3 * N;
        unsigned stride = rnd_below(3) ? N + rnd_below(2) * rnd_below(N) : rnd_below(max_stride + 1);
        if (stride > max_stride)
            stride = max_stride;
        unsigned span = blocks ? (blocks - 1) * stride + N : 0;
        cmd10(p, F_MM_T, NTPU_OP_MATMUL, flags, rnd_below(UB_WIN - span + 1), rnd_below(ACC_WIN - blocks * N + 1),
              blocks * N, stride, NTPU_LEN_MATMUL_T);
        break;
    }
    default: { /* invalid MATMUL TRANSPOSE_A */
        unsigned e = rnd_below(4), f = F_BAD_MM_T_ROWS + e;
        if (e == 0)
            cmd10(p, f, NTPU_OP_MATMUL, NTPU_MATMUL_TRANSPOSE_A, 0, 0, N + 1 + rnd_below(N - 1), N, 10);
        else if (e == 1)
            cmd10(p, f, NTPU_OP_MATMUL, NTPU_MATMUL_TRANSPOSE_A, 0, 0, N, N, 8);
        else if (e == 2)
            cmd10(p, f, NTPU_OP_MATMUL, 0, 0, 0, N, N, 10);
        else
            cmd10(p, f, NTPU_OP_MATMUL, NTPU_MATMUL_TRANSPOSE_A, 1, 0, 2 * N, 0xFFFF, 10);
    }
    }
}

/* A random offset: small, or (1 in 8) far outside any map. */
static int rnd_offset(int wide)
{
    if (rnd_below(8) == 0)
        return wide ? (int)rnd_below(1000) - 500 : (int)rnd_below(256) - 128;
    return (int)rnd_below(7) - 3;
}

/* A MATMUL CONV (1.5), forward or CONV_T: a small map in the UB window, the rows in the ACC window. */
static void random_conv_rows(pair *p, unsigned flags)
{
    uint8_t c[NTPU_LEN_MATMUL_CONV] = {NTPU_OP_MATMUL, (uint8_t)flags};
    unsigned in_h = 1 + rnd_below(4), in_w = 1 + rnd_below(4), mb = 1 + rnd_below(4), map = in_h * in_w * mb;
    unsigned rows = rnd_below(8) == 0 ? 0 : rnd_below(ACC_WIN + 1);
    put16(c + 2, rnd_below(UB_WIN - map + 1));
    put16(c + 4, rnd_below(ACC_WIN - rows + 1));
    put16(c + 6, rows);
    c[8] = (uint8_t)in_h, c[9] = (uint8_t)in_w, c[10] = (uint8_t)(1 + rnd_below(6)), c[11] = (uint8_t)mb;
    c[12] = (uint8_t)(1 + rnd_below(3)), c[13] = (uint8_t)rnd_offset(0), c[14] = (uint8_t)rnd_offset(0);
    send(p, flags & NTPU_MATMUL_CONV_T ? F_CONV_T : F_CONV, c, sizeof c);
}

/* A weight-gradient MATMUL CONV TRANSPOSE_A (1.5): CT channel tiles of k*k blocks. */
static void random_conv_dw(pair *p, unsigned flags)
{
    uint8_t c[NTPU_LEN_MATMUL_CONV_DW] = {NTPU_OP_MATMUL, (uint8_t)flags};
    unsigned k = 1 + rnd_below(3), in_h = 1 + rnd_below(3), in_w = 1 + rnd_below(3), mb = 1 + rnd_below(N + 4);
    while (in_h * in_w * mb - mb + N > UB_WIN) /* a large N: one tile's blocks must fit the window */
        in_h > 1 ? in_h-- : in_w--;
    unsigned map = in_h * in_w * mb, ts = map + rnd_below(4), ct = 1 + rnd_below(4);
    while (ct > 1 && (ct * k * k * N > ACC_WIN || (ct - 1) * ts + map - mb + N > UB_WIN))
        ct--;
    if (k * k * N > ACC_WIN)
        k = 1;
    unsigned rows = rnd_below(8) == 0 ? 0 : ct * k * k * N, end = rows ? (ct - 1) * ts + map - mb + N : 0;
    put16(c + 2, rnd_below(UB_WIN - end + 1));
    put16(c + 4, rnd_below(ACC_WIN - rows + 1));
    put16(c + 6, rows);
    put16(c + 8, ts);
    c[10] = (uint8_t)in_h, c[11] = (uint8_t)in_w, c[12] = (uint8_t)mb, c[13] = (uint8_t)k;
    put16(c + 14, (unsigned)rnd_offset(1) & 0xFFFFu);
    put16(c + 16, (unsigned)rnd_offset(1) & 0xFFFFu);
    send(p, F_CONV_DW, c, sizeof c);
}

/* Invalid MATMUL CONVs: each kind of error. */
static void bad_conv(pair *p)
{
    uint8_t c[NTPU_LEN_MATMUL_CONV_DW] = {NTPU_OP_MATMUL, NTPU_MATMUL_CONV};
    c[8] = c[9] = c[10] = c[11] = c[12] = c[13] = 1;
    put16(c + 6, N);
    unsigned e = rnd_below(HAS_TRANSPOSE_A ? 7 : 5);
    if (e == 0) { /* a zero size field */
        c[8 + rnd_below(5)] = 0;
        send(p, F_BAD_CONV, c, NTPU_LEN_MATMUL_CONV);
    } else if (e == 1) { /* the wrong length for the flags */
        send(p, F_BAD_CONV, c, rnd_below(2) ? NTPU_LEN_MATMUL : NTPU_LEN_MATMUL_CONV_DW);
    } else if (e == 2) { /* CONV_T without CONV */
        c[1] = NTPU_MATMUL_CONV_T;
        send(p, F_BAD_CONV, c, NTPU_LEN_MATMUL);
    } else if (e == 3) { /* the whole map past UB (255 x 255 x 255 rows: no 16-bit wrap) */
        c[8] = c[9] = c[11] = (uint8_t)(rnd_below(2) ? 255 : 1);
        put16(c + 2, UB_ROWS - (c[8] == 1 ? 0 : 2));
        send(p, F_BAD_CONV, c, NTPU_LEN_MATMUL_CONV);
    } else if (e == 4) { /* reserved bits 7:5 */
        c[1] |= (uint8_t)(0x20u << rnd_below(3));
        send(p, F_BAD_CONV, c, NTPU_LEN_MATMUL_CONV);
    } else if (e == 5) { /* rows not a multiple of N*k*k, or CONV_T with TRANSPOSE_A */
        c[1] |= NTPU_MATMUL_TRANSPOSE_A | (rnd_below(2) ? NTPU_MATMUL_CONV_T : 0);
        c[13] = 2;
        put16(c + 6, (c[1] & NTPU_MATMUL_CONV_T) ? 4 * N : N * (1 + rnd_below(3)));
        send(p, F_BAD_CONV_DW, c, NTPU_LEN_MATMUL_CONV_DW);
    } else { /* the last block past UB: tile_stride large */
        c[1] |= NTPU_MATMUL_TRANSPOSE_A;
        put16(c + 6, 2 * N);
        put16(c + 8, 0xFFFF);
        send(p, F_BAD_CONV, c, NTPU_LEN_MATMUL_CONV_DW);
    }
}

/* Three ranges of lengths len[] placed in a window of win rows in a random order, apart. */
static void place3(const unsigned len[3], unsigned win, unsigned at[3])
{
    unsigned order[3] = {0, 1, 2}, slack = win - len[0] - len[1] - len[2], pos = 0;
    for (unsigned i = 2; i > 0; i--) {
        unsigned j = rnd_below(i + 1), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    for (unsigned i = 0; i < 3; i++) {
        unsigned gap = rnd_below(slack / 2 + 1);
        slack -= gap;
        pos += gap;
        at[order[i]] = pos;
        pos += len[order[i]];
    }
}

/* A POOL (1.5), valid or (1 in 4) invalid. */
static void random_pool(pair *p)
{
    unsigned mode = rnd_below(4), k = 1 + rnd_below(3), in_h = k + rnd_below(2), in_w = k + rnd_below(2);
    unsigned mb = 1 + rnd_below(2), map = in_h * in_w * mb, pooled = (in_h / k) * (in_w / k) * mb;
    const int grad = mode >= NTPU_POOL_MODE_MAX_GRAD, avg = mode & 1;
    unsigned len[3] = {grad ? pooled : map, grad ? map : pooled, avg ? 1 : pooled}, at[3];
    place3(len, UB_WIN < ACC_WIN ? UB_WIN : ACC_WIN, at);
    uint8_t c[NTPU_LEN_POOL + 1] = {NTPU_OP_POOL, (uint8_t)mode};
    unsigned fam = F_POOL;
    size_t l = NTPU_LEN_POOL;
    if (rnd_below(4) == 0) {
        unsigned e = rnd_below(5);
        fam = F_BAD_POOL;
        if (e == 0)
            c[1] |= (uint8_t)(4u << rnd_below(6));
        else if (e == 1)
            k = rnd_below(2) ? 0 : in_h + 1;
        else if (e == 2)
            l = rnd_below(2) ? NTPU_LEN_POOL - 1 : NTPU_LEN_POOL + 1;
        else if (e == 3) /* dst over src's last row */
            at[1] = at[0] + len[0] - 1;
        else
            at[0] = (grad ? ACC_ROWS : UB_ROWS) - len[0] + 1;
    }
    put16(c + 2, at[0]);
    put16(c + 4, at[1]);
    put16(c + 6, at[2]);
    c[8] = (uint8_t)in_h, c[9] = (uint8_t)in_w, c[10] = (uint8_t)mb, c[11] = (uint8_t)k;
    send(p, fam, c, l);
}

/* One random 1.5 command: a CONV MATMUL or a POOL, as the features allow. */
static void random_command_v15(pair *p)
{
    unsigned kind = HAS_CONV ? rnd_below(HAS_POOL ? 5 : 4) : 4;
    unsigned dtype = rnd_below(2) ? NTPU_MATMUL_BF16 : 0, acc = rnd_below(2) ? NTPU_MATMUL_ACCUMULATE : 0;
    if (kind == 0)
        random_conv_rows(p, NTPU_MATMUL_CONV | dtype | acc);
    else if (kind == 1)
        random_conv_rows(p, NTPU_MATMUL_CONV | NTPU_MATMUL_CONV_T | dtype | acc);
    else if (kind == 2 && HAS_TRANSPOSE_A)
        random_conv_dw(p, NTPU_MATMUL_CONV | NTPU_MATMUL_TRANSPOSE_A | dtype | acc);
    else if (kind <= 3)
        bad_conv(p);
    else
        random_pool(p);
}

/* One random command, usually valid. */
static void random_command(pair *p)
{
    uint8_t c[16] = {0};
    unsigned mem = HAS_ADAM && rnd_below(5) == 0 ? NTPU_MEM_OS : rnd_below(3), rows = 1 + rnd_below(3 * N);
    if ((HAS_CONV || HAS_POOL) && rnd_below(6) == 0) {
        random_command_v15(p);
        return;
    }
    if ((HAS_VECTOR || HAS_TRANSPOSE_A) && rnd_below(3) == 0) {
        random_command_v11(p);
        return;
    }
    switch (rnd_below(24)) {
    case 0:
    case 1:
    case 2:
    case 3: /* WRITE_MEM inside the window */
        write_mem(p, F_WRITE_UB + mem, mem, rnd_below(window(mem) - rows + 1), rows, rnd_below(4) != 0);
        break;
    case 4:
    case 5: /* READ_MEM inside the window */
        mem_cmd(p, F_READ_UB + mem, NTPU_OP_READ_MEM, mem, rnd_below(window(mem) - rows + 1), rows);
        break;
    case 6:
    case 7:
    case 8: /* LOAD_W */
        c[0] = NTPU_OP_LOAD_W;
        c[1] = rnd_below(2) ? NTPU_LOADW_TRANSPOSE : 0;
        put16(c + 2, rnd_below(WB_WIN - N + 1));
        send(p, c[1] ? F_LOADW_T : F_LOADW, c, NTPU_LEN_LOAD_W);
        break;
    case 9:
    case 10:
    case 11:
    case 12:
    case 13:
    case 14: /* MATMUL */
        c[0] = NTPU_OP_MATMUL;
        c[1] = (uint8_t)((rnd_below(2) ? NTPU_MATMUL_BF16 : 0) | (rnd_below(3) ? NTPU_MATMUL_ACCUMULATE : 0));
        if (rnd_below(16) == 0)
            rows = 0;
        put16(c + 2, rnd_below(UB_WIN - rows + 1));
        put16(c + 4, rnd_below(ACC_WIN - rows + 1));
        put16(c + 6, rows);
        send(p, F_MM_INT8 + c[1], c, NTPU_LEN_MATMUL);
        break;
    case 15:
        c[0] = NTPU_OP_FENCE;
        send(p, F_FENCE, c, 1);
        break;
    case 16:
        c[0] = NTPU_OP_NOP;
        send(p, F_NOP, c, 1);
        break;
    case 17:
        c[0] = NTPU_OP_STATUS;
        send(p, F_STATUS, c, 1);
        break;
    case 18: /* writes at the very end of a memory: valid, never read back */
        write_mem(p, F_WRITE_END, mem, mem_size(mem) - rows, rows, 1);
        break;
    default: { /* invalid: each kind of error */
        unsigned kind = rnd_below(10);
        if (kind == 0) { /* the first unknown opcode and beyond */
            unsigned first = HAS_POOL      ? NTPU_OP_POOL + 1
                             : HAS_PROGRAM ? NTPU_OP_RUN + 1
                             : HAS_OPTIM   ? NTPU_OP_OPTIM + 1
                             : HAS_VECTOR  ? NTPU_OP_SYNC + 1
                                           : NTPU_OP_COUNTERS + 1;
            c[0] = (uint8_t)(first + rnd_below(0x100 - first));
            send(p, F_BAD_OPCODE, c, 1 + rnd_below(8));
        } else if (kind == 1) {
            c[0] = NTPU_OP_MATMUL;
            send(p, F_BAD_MM_LEN, c, rnd_below(2) ? 7 : 9);
        } else if (kind == 2) {
            mem_cmd(p, F_BAD_MEM, NTPU_OP_READ_MEM, 3 + rnd_below(250), 0, 1);
        } else if (kind == 3) {
            c[0] = NTPU_OP_LOAD_W;
            c[1] = (uint8_t)(2 << rnd_below(7));
            send(p, F_BAD_LOADW_FLAGS, c, 4);
        } else if (kind == 4) {
            c[0] = NTPU_OP_LOAD_W;
            put16(c + 2, WB_ROWS - N + 1 + rnd_below(N));
            send(p, F_BAD_LOADW_RANGE, c, 4);
        } else if (kind == 5) {
            c[0] = NTPU_OP_MATMUL;
            put16(c + 4, ACC_ROWS - 1);
            put16(c + 6, 2);
            send(p, F_BAD_MM_RANGE, c, 8);
        } else if (kind == 6) {
            mem_cmd(p, F_BAD_READ_PAYLOAD, NTPU_OP_READ_MEM, NTPU_MEM_ACC, 0, MAX_PAYLOAD / (4 * N) + 1);
        } else if (kind == 7) { /* out of SEQ order (1.2): ERR_SEQ, nothing runs */
            c[0] = NTPU_OP_READ_MEM;
            c[1] = (uint8_t)mem;
            put16(c + 4, 1);
            send_seq(p, F_BAD_SEQ, (uint8_t)(p->seq + 1 + rnd_below(255)), c, 6);
        } else if (kind == 8) {
            c[0] = NTPU_OP_SYNC;
            send_seq(p, F_SYNC, (uint8_t)rnd(), c, 1);
        } /* any SEQ (1.2) */
        else {
            c[0] = NTPU_OP_WRITE_MEM;
            c[1] = (uint8_t)mem;
            put16(c + 4, 2);
            send(p, F_BAD_WRITE_LEN, c, 6 + row_bytes(mem));
        }
    }
    }
}

/* A random program (1.4): random commands, each as random_command would send
 * it (so some that a program may not hold), written to PM and run, sometimes
 * broken on purpose; or one of RUN's own errors. */
static void random_program(pair *p)
{
    static uint8_t prog[PM_WIN * 2 * 64 + 64];
    const size_t cap = (size_t)PM_WIN * 2 * N;
    unsigned e = rnd_below(12);
    if (e == 0) { /* RUN's own checks: range, flags, length */
        unsigned k = rnd_below(4);
        uint8_t c[8] = {NTPU_OP_RUN};
        unsigned f = F_BAD_RUN_RANGE + k;
        if (k == 0) {
            put16(c + 2, PM_ROWS - rnd_below(3));
            put16(c + 4, 3 + rnd_below(3));
            send(p, f, c, 6);
        } else if (k == 1) {
            c[1] = (uint8_t)(1u << rnd_below(8));
            send(p, f, c, 6);
        } else if (k == 2)
            send(p, f, c, rnd_below(2) ? 5 : 7);
        else {
            put16(c + 2, 0xFFFF);
            put16(c + 4, 2);
            send(p, f, c, 6);
        }
        return;
    }
    size_t len = 0;
    unsigned cmds = 1 + rnd_below(6), fam = F_RUN;
    uint8_t seq = p->seq;
    size_t tagged = frames_tagged;
    for (unsigned i = 0; i < cmds; i++) {
        size_t at = p->tx_len;
        random_command(p);
        /* take the frames back out of the stream: their payloads form the program */
        for (size_t f = at; f < p->tx_len; f += NTPU_FRAME_OVERHEAD + get16(p->tx + f + 2)) {
            size_t l = get16(p->tx + f + 2);
            if (len + 2 + l + 2 > cap)
                break;
            put16(prog + len, (unsigned)l);
            memcpy(prog + len + 2, p->tx + f + 4, l);
            len += 2 + l;
        }
        p->tx_len = at;
    }
    p->seq = seq;
    frames_tagged = tagged;
    if (e == 1 && len + 2 <= cap) { /* a LEN that runs past the program */
        put16(prog + len, 1 + rnd_below(300));
        len += 2;
        fam = F_RUN_BAD_LEN;
    }
    unsigned rb = 2 * N, rows = (unsigned)((len + rb - 1) / rb);
    memset(prog + len, 0, (size_t)rows * rb - len);
    unsigned addr = rnd_below(PM_WIN - rows + 1);
    static uint8_t cmd[6 + PM_WIN * 2 * 64];
    cmd[0] = NTPU_OP_WRITE_MEM;
    cmd[1] = NTPU_MEM_PM;
    unsigned per = (MAX_PAYLOAD - 6) / rb;
    for (unsigned done = 0; done < rows; done += per) {
        unsigned k = rows - done < per ? rows - done : per;
        put16(cmd + 2, addr + done);
        put16(cmd + 4, k);
        memcpy(cmd + 6, prog + (size_t)done * rb, (size_t)k * rb);
        send(p, F_WRITE_PM, cmd, 6 + (size_t)k * rb);
    }
    if (e == 2 && rows > 1) { /* cut short, possibly inside a command */
        rows = 1 + rnd_below(rows - 1);
        fam = F_RUN_CUT;
    }
    uint8_t c[6] = {NTPU_OP_RUN, 0};
    put16(c + 2, addr);
    put16(c + 4, rows + (e == 3 ? rnd_below(3) : 0)); /* more rows: the zero padding ends it */
    send(p, fam, c, 6);
    if (rnd_below(4) == 0) /* PM reads back */
        mem_cmd(p, F_READ_PM, NTPU_OP_READ_MEM, NTPU_MEM_PM, addr,
                rows < (MAX_PAYLOAD - 1) / rb ? rows : (MAX_PAYLOAD - 1) / rb);
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
            int masked =
                status_frames[k] && a[0] == NTPU_DEV_OK &&
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
    send(&p, F_INFO, &info, 1);
    size_t n = pair_exchange(&p);
    tally(&p, n, 0);
    if (n != NTPU_FRAME_OVERHEAD + 1 + NTPU_ID_BYTES || p.ref_rx[4] != NTPU_DEV_OK)
        die("INFO reply malformed");
    const uint8_t *id = p.ref_rx + 5, *vid = p.vsim_rx + 5;
    if (memcmp(id, vid, NTPU_ID_OFF_CLOCK_HZ) != 0 ||
        memcmp(id + NTPU_ID_OFF_PM_ROWS, vid + NTPU_ID_OFF_PM_ROWS, NTPU_ID_BYTES - NTPU_ID_OFF_PM_ROWS) != 0) {
        for (unsigned i = 0; i < NTPU_ID_BYTES; i++) /* name the first field that differs */
            if (id[i] != vid[i])
                die("ID blocks differ between ref and vsim at byte %u: ref 0x%02x vsim 0x%02x (ref version %u.%u, "
                    "vsim %u.%u; offsets in protocol.h)",
                    i, id[i], vid[i], id[NTPU_ID_OFF_VERSION_MAJOR], id[NTPU_ID_OFF_VERSION_MINOR],
                    vid[NTPU_ID_OFF_VERSION_MAJOR], vid[NTPU_ID_OFF_VERSION_MINOR]);
    }
    /* 1.0 and 1.1 devices both pass; the feature bits say what to test */
    if (id[NTPU_ID_OFF_VERSION_MAJOR] != NTPU_VERSION_MAJOR || id[NTPU_ID_OFF_VERSION_MINOR] > NTPU_VERSION_MINOR)
        die("unknown version %u.%u", id[NTPU_ID_OFF_VERSION_MAJOR], id[NTPU_ID_OFF_VERSION_MINOR]);
    HAS_TRANSPOSE_A = (id[NTPU_ID_OFF_FEATURES] & NTPU_FEATURE_TRANSPOSE_A_BIT) != 0;
    HAS_VECTOR = (id[NTPU_ID_OFF_FEATURES] & NTPU_FEATURE_VECTOR_BIT) != 0;
    HAS_OPTIM = (id[NTPU_ID_OFF_FEATURES] & NTPU_FEATURE_OPTIM_BIT) != 0;
    HAS_PROGRAM = (id[NTPU_ID_OFF_FEATURES] & NTPU_FEATURE_PROGRAM_BIT) != 0;
    PM_ROWS = get32(id + NTPU_ID_OFF_PM_ROWS);
    if (HAS_PROGRAM && PM_ROWS < PM_WIN)
        die("PM has %u rows, the test needs %u", PM_ROWS, (unsigned)PM_WIN);
    HAS_ADAM = (id[NTPU_ID_OFF_FEATURES] & NTPU_FEATURE_ADAM_BIT) != 0;
    HAS_CONV = (id[NTPU_ID_OFF_FEATURES] & NTPU_FEATURE_CONV_BIT) != 0;
    HAS_POOL = (id[NTPU_ID_OFF_FEATURES] & NTPU_FEATURE_POOL_BIT) != 0;
    FEATURES = id[NTPU_ID_OFF_FEATURES];
    OS_ROWS = get32(id + NTPU_ID_OFF_OS_ROWS);
    if (HAS_ADAM != (OS_ROWS > 0) || (HAS_ADAM && OS_ROWS < OS_WIN))
        die("feature ADAM %d with %u OS rows", HAS_ADAM, OS_ROWS);
    if (id[NTPU_ID_OFF_PLATFORM] != 0 || vid[NTPU_ID_OFF_PLATFORM] != (p.twin ? 0 : 1))
        die("platform bytes wrong: ref %u vsim %u", id[NTPU_ID_OFF_PLATFORM], vid[NTPU_ID_OFF_PLATFORM]);
    /* the clock: 0 in simulation, a board's own (the RTL and the board model must agree on it) */
    uint32_t clock_hz = 0;
    if (p.board) {
        ntpu_vsim_board_stats st;
        ntpu_vsim_board_get_stats(p.board, &st);
        clock_hz = st.clock_hz;
    }
    if (get32(id + NTPU_ID_OFF_CLOCK_HZ) != 0 || get32(vid + NTPU_ID_OFF_CLOCK_HZ) != clock_hz)
        die("clock_hz wrong: ref %u vsim %u, expected 0 and %u", get32(id + NTPU_ID_OFF_CLOCK_HZ),
            get32(vid + NTPU_ID_OFF_CLOCK_HZ), clock_hz);
    N = id[NTPU_ID_OFF_ROWS];
    MAX_PAYLOAD = get16(id + NTPU_ID_OFF_MAX_PAYLOAD);
    UB_ROWS = get32(id + NTPU_ID_OFF_UB_ROWS);
    WB_ROWS = get32(id + NTPU_ID_OFF_WB_ROWS);
    ACC_ROWS = get32(id + NTPU_ID_OFF_ACC_ROWS);
    printf("device: version %u.%u N=%u ub=%u wb=%u acc=%u pm=%u os=%u max_payload=%u%s%s%s%s%s%s%s\n",
           id[NTPU_ID_OFF_VERSION_MAJOR], id[NTPU_ID_OFF_VERSION_MINOR], N, UB_ROWS, WB_ROWS, ACC_ROWS, PM_ROWS,
           OS_ROWS, MAX_PAYLOAD, HAS_TRANSPOSE_A ? " +TRANSPOSE_A" : "", HAS_VECTOR ? " +VECTOR" : "",
           HAS_OPTIM ? " +OPTIM" : "", HAS_PROGRAM ? " +PROGRAM" : "", HAS_ADAM ? " +ADAM" : "",
           HAS_CONV ? " +CONV" : "", HAS_POOL ? " +POOL" : "");

    /* Give the windows defined contents (memory after reset is unspecified). */
    static uint8_t zero[65536];
    for (unsigned mem = 0; mem <= NTPU_MEM_OS; mem++) {
        if (mem == 3 || (mem == NTPU_MEM_OS && !HAS_ADAM))
            continue;
        unsigned per = (MAX_PAYLOAD - 6) / row_bytes(mem);
        for (unsigned a = 0; a < window(mem); a += per) {
            unsigned rows = window(mem) - a < per ? window(mem) - a : per;
            uint8_t *cmd = zero;
            cmd[0] = NTPU_OP_WRITE_MEM;
            cmd[1] = (uint8_t)mem;
            put16(cmd + 2, a);
            put16(cmd + 4, rows);
            send(&p, F_SETUP, cmd, 6 + (size_t)rows * row_bytes(mem));
            memset(cmd, 0, 6);
        }
    }
    tally(&p, pair_exchange(&p), 0);

    unsigned long frames = 0, errors = 0;
    for (unsigned s = 0; s < streams; s++) {
        uint8_t status_frames[4096] = {0};
        unsigned cmds = 4 + rnd_below(24), nframes = 0;
        for (unsigned c = 0; c < cmds; c++) {
            size_t at = p.tx_len;
            if (HAS_PROGRAM && rnd_below(5) == 0)
                random_program(&p);
            else
                random_command(&p);
            for (; at < p.tx_len; at += NTPU_FRAME_OVERHEAD + get16(p.tx + at + 2)) /* a command may add frames */
                status_frames[nframes++] = p.tx[at + 4] == NTPU_OP_STATUS && get16(p.tx + at + 2) == 1;
        }
        mem_cmd(&p, F_READBACK, NTPU_OP_READ_MEM, NTPU_MEM_ACC, 0, ACC_WIN / 2);
        mem_cmd(&p, F_READBACK, NTPU_OP_READ_MEM, NTPU_MEM_ACC, ACC_WIN / 2, ACC_WIN / 2);
        if (HAS_ADAM) { /* OPTIM ADAM writes m and v there */
            mem_cmd(&p, F_READBACK, NTPU_OP_READ_MEM, NTPU_MEM_OS, 0, OS_WIN / 2);
            mem_cmd(&p, F_READBACK, NTPU_OP_READ_MEM, NTPU_MEM_OS, OS_WIN / 2, OS_WIN / 2);
        }
        for (unsigned mem = NTPU_MEM_UB; HAS_VECTOR && mem <= NTPU_MEM_WB; mem++) { /* ACT, RELU_GRAD write there */
            unsigned per = (MAX_PAYLOAD - 1) / row_bytes(mem);
            for (unsigned a = 0; a < window(mem); a += per)
                mem_cmd(&p, F_READBACK, NTPU_OP_READ_MEM, mem, a, window(mem) - a < per ? window(mem) - a : per);
        }
        n = pair_exchange(&p);
        compare(&p, n, status_frames, s);
        tally(&p, n, s);
        size_t off[4096], len[4096];
        size_t k = split_replies(p.ref_rx, n, off, len, 4096);
        frames += k;
        for (size_t i = 0; i < k; i++)
            errors += p.ref_rx[off[i]] != NTPU_DEV_OK;
    }

    /* MACs are architectural: both sides must have counted the same. */
    uint8_t cnt[2] = {NTPU_OP_COUNTERS, 0};
    send(&p, F_COUNTERS, cnt, 2);
    tally(&p, pair_exchange(&p), streams);
    uint64_t mr = 0, mv = 0;
    for (int i = 7; i >= 0; i--) {
        mr = mr << 8 | p.ref_rx[5 + 8 * NTPU_CNT_MACS + i];
        mv = mv << 8 | p.vsim_rx[5 + 8 * NTPU_CNT_MACS + i];
    }
    if (mr != mv)
        die("MAC counters differ: ref %llu vsim %llu", (unsigned long long)mr, (unsigned long long)mv);
    printf("%u random command streams, %lu replies (%lu errors among them), %llu MACs, %lu Adam rows: "
           "ref and %s bit-identical (%llu cycles)\n",
           streams, frames, errors, (unsigned long long)mr, adam_rows,
           p.board  ? "board"
           : p.twin ? "its twin"
                    : "vsim",
           (unsigned long long)pair_cycles(&p));
    if (HAS_ADAM && streams >= 100 && adam_rows == 0)
        die("no OPTIM ADAM row ran");
    check_families(streams);
    pair_close(&p);
    puts("PASS diff_random");
    return 0;
}
