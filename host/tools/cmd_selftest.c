/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu selftest: a short check of a freshly flashed board (or a simulator):
 * the ID block, the link, the three memories, small matmuls in both dtypes
 * compared bit for bit with a plain C loop and the golden model, and two
 * training steps compared with the golden model. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ntpu/nn.h"

static const char selftest_help[] =
    "usage: ntpu selftest [-d DEV] [--json]\n"
    "\n"
    "Checks a device in well under a minute: its ID block, the link (100 fence round\n"
    "trips and STATUS), a memory test of UB, WB and ACC (walking ones and address\n"
    "patterns over the first and last rows, a stride and every power-of-two row), and\n"
    "small int8 and bf16 matmuls compared bit for bit with a plain C loop written from\n"
    "docs/numerics.md and, on a device other than the golden model, with the golden\n"
    "model (ref); with bf16 also two training steps of a tiny MLP (the library does the\n"
    "vector unit's and TRANSPOSE_A's part on a device without them, as the iCEBreaker),\n"
    "loss and logits compared bit for bit with ref (on ref itself with all features:\n"
    "with ref doing that part through the library's host fallbacks).\n"
    "Prints one line per check, 'PASS <name>: <detail>', 'FAIL <name>: <detail>', or\n"
    "'SKIP <name>: <why>' for a check the device cannot run (a dtype it does not have).\n"
    "Exit status 0 when no check failed (skipped ones do not count as passed), else 1.\n"
    "The memory test and the matmuls overwrite the device's memories.\n"
    "\n"
    "  -d, --device DEV  the device (default: $NTPU_DEVICE, else vsim)\n"
    "  --json            one JSON object on stdout: {\"device\",\"checks\":[{\"name\",\"status\":\n"
    "                    \"pass\"|\"fail\"|\"skip\",\"pass\",\"detail\"}],\"passed\",\"failed\",\n"
    "                    \"skipped\"}; \"pass\" is true for a check that ran and passed\n";

#define MAX_CHECKS 16

/* A check that did not run (the device lacks what it needs) is SKIP: neither a pass nor a failure. */
enum check_status { CHECK_PASS, CHECK_FAIL, CHECK_SKIP };

typedef struct check {
    char name[48];
    enum check_status status;
    char detail[200];
} check;

typedef struct run {
    check c[MAX_CHECKS];
    int n;
    int json;
} run;

static const char *const status_word[] = {"PASS", "FAIL", "SKIP"};
static const char *const status_json[] = {"pass", "fail", "skip"};

/* record(r, name, pass, ...): pass is a truth value, PASS or FAIL; skip(r, name, ...) is SKIP. */
__attribute__((format(printf, 4, 0))) static void record_v(run *r, const char *name, enum check_status status,
                                                           const char *fmt, va_list ap)
{
    if (r->n == MAX_CHECKS)
        return;
    check *c = &r->c[r->n++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->status = status;
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    /* Line by line as the checks finish: on a slow board the user sees progress. */
    if (!r->json) {
        printf("%s %s: %s\n", status_word[status], c->name, c->detail);
        fflush(stdout);
    }
}

__attribute__((format(printf, 4, 5))) static void record(run *r, const char *name, int pass, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record_v(r, name, pass ? CHECK_PASS : CHECK_FAIL, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void skip(run *r, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record_v(r, name, CHECK_SKIP, fmt, ap);
    va_end(ap);
}

/* xorshift64*: reproducible data, so a failure can be rerun exactly. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* ------------------------------------------------------------------ 1. ID block */

static int check_id(run *r, const ntpu_info *in)
{
    const char *why = NULL;
    if (in->version_major != NTPU_VERSION_MAJOR)
        why = "unknown protocol major version";
    else if (in->rows != in->cols || in->rows < 2 || in->rows > 64)
        why = "array size not N x N with N in 2..64";
    else if (!(in->dtypes & (NTPU_DTYPE_INT8_BIT | NTPU_DTYPE_BF16_BIT)))
        why = "no dtypes";
    else if (!in->ub_rows || !in->wb_rows || !in->acc_rows)
        why = "a memory size is 0";
    else if (in->wb_rows < in->rows)
        why = "WB smaller than one weight tile";
    else if (!in->max_payload)
        why = "max payload 0";
    record(r, "id", !why,
           "%s%sversion %u.%u, %ux%u, %s%s%s, UB %" PRIu32 " WB %" PRIu32 " ACC %" PRIu32 " rows, payload %u",
           why ? why : "", why ? "; " : "", in->version_major, in->version_minor, in->rows, in->cols,
           in->dtypes & NTPU_DTYPE_INT8_BIT ? "int8" : "",
           (in->dtypes & NTPU_DTYPE_INT8_BIT) && (in->dtypes & NTPU_DTYPE_BF16_BIT) ? "+" : "",
           in->dtypes & NTPU_DTYPE_BF16_BIT ? "bf16" : "", in->ub_rows, in->wb_rows, in->acc_rows, in->max_payload);
    return !why;
}

/* ------------------------------------------------------------------ 2. link */

static void check_link(run *r, ntpu_device *dev)
{
    ntpu_device_status s0, s1;
    ntpu_link_stats l0, ls;
    ntpu_get_link_stats(dev, &l0);
    ntpu_status st = ntpu_read_status(dev, &s0);
    if (st != NTPU_OK) {
        record(r, "link", 0, "STATUS: %s", ntpu_last_error(dev));
        return;
    }
    double t0 = now_s();
    for (int i = 0; i < 100; i++)
        if ((st = ntpu_fence(dev)) != NTPU_OK) {
            record(r, "link", 0, "fence %d of 100: %s", i + 1, ntpu_last_error(dev));
            return;
        }
    double dt = now_s() - t0;
    if ((st = ntpu_read_status(dev, &s1)) != NTPU_OK) {
        record(r, "link", 0, "STATUS: %s", ntpu_last_error(dev));
        return;
    }
    /* Fences may be answered host-side for an empty queue; the device's command
     * count must still not go backwards, and nothing may have been rejected but
     * frames the link recovered (ERR_CRC, ERR_SEQ: docs/protocol.md). */
    ntpu_get_link_stats(dev, &ls);
    int recovered = ls.recoveries > l0.recoveries;
    if (s1.commands < s0.commands || (s1.errors != s0.errors && !recovered) || s1.busy) {
        record(r, "link", 0,
               "STATUS after 100 fences: commands %" PRIu32 " -> %" PRIu32 ", errors %" PRIu32 " -> %" PRIu32
               ", busy %u",
               s0.commands, s1.commands, s0.errors, s1.errors, s1.busy);
        return;
    }
    record(r, "link", 1,
           "100 fences in %.3f s (%.2f ms each), STATUS readable, %" PRIu64 " frames out, %" PRIu64 " in, %" PRIu64
           " resyncs, %" PRIu64 " recoveries",
           dt, dt * 10.0, ls.tx_frames, ls.rx_frames, ls.resyncs, ls.recoveries);
}

/* ------------------------------------------------------------------ 3. memories */

typedef struct span {
    uint32_t addr, rows;
} span;

/* The rows to test: all for a small memory; else the first and last 256, 16
 * blocks of 8 spread evenly between, and 8 rows at every power of two (a stuck
 * or shorted address line shows up there). Overlaps are harmless: the pattern
 * depends only on the address. */
static size_t mem_spans(uint32_t total, span *sp)
{
    size_t n = 0;
    if (total <= 1024) {
        sp[n++] = (span){0, total};
        return n;
    }
    sp[n++] = (span){0, 256};
    sp[n++] = (span){total - 256, 256};
    for (uint32_t k = 1; k <= 16; k++)
        sp[n++] = (span){(uint32_t)((uint64_t)total * k / 17), 8};
    for (uint32_t a = 256; a && a < total; a <<= 1)
        sp[n++] = (span){a, a + 8 <= total ? 8 : total - a};
    return n;
}

/* Pattern p at (row, lane), `bits` wide: 0 walking ones, 1 address pattern
 * (row and lane mixed, so two rows that alias read back differently), 2 its
 * complement. */
static uint32_t pattern(int p, uint32_t row, unsigned lane, unsigned n, unsigned bits)
{
    uint32_t mask = bits == 32 ? 0xffffffffu : (1u << bits) - 1u;
    if (p == 0)
        return (1u << ((row * n + lane) % bits)) & mask;
    uint32_t v = (row * 0x9E3779B1u) ^ (lane * 0x85EBCA77u) ^ (row >> 7);
    v ^= v >> 15;
    return (p == 1 ? v : ~v) & mask;
}

static void check_mem(run *r, ntpu_device *dev, const ntpu_info *in, enum ntpu_mem mem)
{
    static const char *names[] = {"memory UB", "memory WB", "memory ACC"};
    const char *name = names[mem];
    uint32_t total = mem == NTPU_MEM_UB ? in->ub_rows : mem == NTPU_MEM_WB ? in->wb_rows : in->acc_rows;
    unsigned n = in->cols, bits = mem == NTPU_MEM_ACC ? 32 : 16;
    size_t esz = bits / 8;
    span sp[64];
    size_t nsp = mem_spans(total, sp);
    uint32_t maxrows = 0;
    uint64_t tested = 0;
    for (size_t i = 0; i < nsp; i++) {
        maxrows = sp[i].rows > maxrows ? sp[i].rows : maxrows;
        tested += sp[i].rows;
    }
    unsigned char *buf = malloc((size_t)maxrows * n * esz);
    if (!buf) {
        record(r, name, 0, "out of host memory");
        return;
    }
    for (int p = 0; p < 3; p++) {
        /* Write every span before reading any, so aliasing between them shows. */
        for (size_t i = 0; i < nsp; i++) {
            for (uint32_t k = 0; k < sp[i].rows; k++)
                for (unsigned l = 0; l < n; l++) {
                    uint32_t v = pattern(p, sp[i].addr + k, l, n, bits);
                    if (bits == 32)
                        ((uint32_t *)buf)[(size_t)k * n + l] = v;
                    else
                        ((uint16_t *)buf)[(size_t)k * n + l] = (uint16_t)v;
                }
            if (ntpu_write_rows(dev, mem, sp[i].addr, sp[i].rows, buf) != NTPU_OK) {
                record(r, name, 0, "writing rows %" PRIu32 "..: %s", sp[i].addr, ntpu_last_error(dev));
                free(buf);
                return;
            }
        }
        for (size_t i = 0; i < nsp; i++) {
            if (ntpu_read_rows(dev, mem, sp[i].addr, sp[i].rows, buf) != NTPU_OK) {
                record(r, name, 0, "reading rows %" PRIu32 "..: %s", sp[i].addr, ntpu_last_error(dev));
                free(buf);
                return;
            }
            for (uint32_t k = 0; k < sp[i].rows; k++)
                for (unsigned l = 0; l < n; l++) {
                    uint32_t want = pattern(p, sp[i].addr + k, l, n, bits);
                    uint32_t got =
                        bits == 32 ? ((uint32_t *)buf)[(size_t)k * n + l] : ((uint16_t *)buf)[(size_t)k * n + l];
                    if (got != want) {
                        static const char *pn[] = {"walking ones", "address pattern", "inverted address pattern"};
                        record(r, name, 0, "%s: row %" PRIu32 " lane %u wrote 0x%0*" PRIx32 ", read 0x%0*" PRIx32,
                               pn[p], sp[i].addr + k, l, (int)bits / 4, want, (int)bits / 4, got);
                        free(buf);
                        return;
                    }
                }
        }
    }
    free(buf);
    record(r, name, 1, "%" PRIu64 " of %" PRIu32 " rows x 3 patterns (walking ones, address, inverted)", tested, total);
}

/* ------------------------------------------------------------------ 4. matmuls */

/* A reference for the matmuls written from docs/numerics.md, not taken from
 * the golden model, so that the check can fail on the golden model too. int8:
 * products summed in int32 with wrap-around. bf16: the inputs rounded to bf16,
 * then each result one sequential fp32 chain, acc = round(acc + a*b) for k
 * ascending from +0, subnormals read and written as zero of their sign. The
 * sums are single C float additions (IEEE RNE; ISO C mode keeps GCC from
 * contracting them into fused multiply-adds). */

static float plain_ftz(float x)
{
    return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

static float plain_nan(void) /* the canonical quiet NaN, 0x7FC00000 */
{
    uint32_t u = 0x7FC00000u;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* fp32 -> bf16, as the fp32 value it stands for: 8 significant bits, to nearest, ties to even
 * (nearbyint in the default rounding mode); past the largest bf16 it is Inf. */
static float plain_bf16(float x)
{
    if (isnan(x)) { /* sign and the top fraction bits kept, quiet bit set */
        uint32_t u;
        memcpy(&u, &x, sizeof u);
        u = (u | 0x00400000u) & 0xFFFF0000u;
        memcpy(&x, &u, sizeof x);
        return x;
    }
    x = plain_ftz(x);
    if (x == 0.0f || isinf(x))
        return x;
    int e;
    double m = frexp((double)x, &e); /* x = m * 2^e, 0.5 <= |m| < 1 */
    double v = ldexp(nearbyint(ldexp(m, 8)), e - 8);
    return fabs(v) > FLT_MAX ? (float)copysign(INFINITY, v) : (float)v;
}

static float plain_mac_bf16(float acc, float a, float b)
{
    double p = (double)plain_ftz(a) * (double)plain_ftz(b); /* exact: two 8-bit significands */
    float pf;
    if (isnan(p))
        pf = plain_nan();
    else if (fabs(p) > FLT_MAX)
        pf = (float)copysign(INFINITY, p);
    else if (fabs(p) < FLT_MIN)
        pf = (float)copysign(0.0, p);
    else
        pf = (float)p;
    float sum = plain_ftz(plain_ftz(acc) + pf);
    return isnan(sum) ? plain_nan() : sum;
}

/* C = A.B into R by the rules above; A, B and R as ntpu_matmul takes them. */
static void plain_matmul(ntpu_dtype dt, const void *A, const void *B, uint32_t *R, size_t M, size_t K, size_t N)
{
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            if (dt == NTPU_DTYPE_INT8) {
                uint32_t acc = 0;
                for (size_t k = 0; k < K; k++)
                    acc += (uint32_t)((int32_t)((const int8_t *)A)[m * K + k] * ((const int8_t *)B)[k * N + n]);
                R[m * N + n] = acc;
            } else {
                float acc = 0.0f;
                for (size_t k = 0; k < K; k++)
                    acc = plain_mac_bf16(acc, plain_bf16(((const float *)A)[m * K + k]),
                                         plain_bf16(((const float *)B)[k * N + n]));
                memcpy(&R[m * N + n], &acc, sizeof acc);
            }
        }
}

/* The device's C against the plain loop's, and against the golden model's
 * when ref is not NULL (NULL: the device is the golden model). */
static void check_matmul(run *r, ntpu_device *dev, ntpu_device *ref, const ntpu_info *in, ntpu_dtype dt, size_t M,
                         size_t K, size_t N, uint64_t seed)
{
    char name[48];
    snprintf(name, sizeof name, "matmul %s %zux%zux%zu", dt == NTPU_DTYPE_INT8 ? "int8" : "bf16", M, K, N);
    unsigned bit = dt == NTPU_DTYPE_INT8 ? NTPU_DTYPE_INT8_BIT : NTPU_DTYPE_BF16_BIT;
    if (!(in->dtypes & bit)) {
        /* A dtype the ID block does not claim is not a defect, and nothing was tested. */
        skip(r, name, "the device has no %s", dt == NTPU_DTYPE_INT8 ? "int8" : "bf16");
        return;
    }
    size_t es = dt == NTPU_DTYPE_INT8 ? 1 : 4;
    unsigned char *A = malloc(M * K * es), *B = malloc(K * N * es);
    uint32_t *C = malloc(M * N * 4), *R = malloc(M * N * 4), *P = malloc(M * N * 4);
    if (!A || !B || !C || !R || !P) {
        record(r, name, 0, "out of host memory");
        goto out;
    }
    uint64_t s = seed;
    for (size_t i = 0; i < M * K + K * N; i++) {
        uint64_t v = rng_next(&s);
        unsigned char *dst = i < M * K ? A + i * es : B + (i - M * K) * es;
        if (dt == NTPU_DTYPE_INT8) {
            *(int8_t *)dst = (int8_t)(uint8_t)v; /* the full range, -128 included */
        } else {
            /* Magnitudes over 2^-8..2^8 and both signs: products round and
             * sums cancel, so the accumulation order matters. */
            float f = (float)((v >> 11) & 0xffff) / 65536.0f + 0.5f;
            int e = (int)((v >> 32) % 17) - 8;
            f = (float)((v >> 40) & 1 ? -1 : 1) * f * (e < 0 ? 1.0f / (float)(1u << -e) : (float)(1u << e));
            memcpy(dst, &f, 4);
        }
    }
    if (ntpu_matmul(dev, dt, A, B, C, M, K, N) != NTPU_OK) {
        record(r, name, 0, "device: %s", ntpu_last_error(dev));
        goto out;
    }
    if (ref && ntpu_matmul(ref, dt, A, B, R, M, K, N) != NTPU_OK) {
        record(r, name, 0, "golden model: %s", ntpu_last_error(ref));
        goto out;
    }
    plain_matmul(dt, A, B, P, M, K, N);
    for (size_t i = 0; i < M * N; i++) {
        if (C[i] != P[i]) {
            if (ref)
                record(r, name, 0,
                       "C[%zu][%zu] is 0x%08" PRIx32 ", a plain C loop gives 0x%08" PRIx32
                       ", the golden model 0x%08" PRIx32,
                       i / N, i % N, C[i], P[i], R[i]);
            else
                record(r, name, 0, "C[%zu][%zu] is 0x%08" PRIx32 ", a plain C loop gives 0x%08" PRIx32, i / N, i % N,
                       C[i], P[i]);
            goto out;
        }
        if (ref && R[i] != P[i]) {
            record(r, name, 0,
                   "C[%zu][%zu] is 0x%08" PRIx32 ", as a plain C loop gives; the golden model gives "
                   "0x%08" PRIx32,
                   i / N, i % N, C[i], R[i]);
            goto out;
        }
    }
    if (ref)
        record(r, name, 1, "%zu results equal a plain C loop's and the golden model's bit for bit (seed %" PRIu64 ")",
               M * N, seed);
    else
        record(r, name, 1, "%zu results equal a plain C loop's bit for bit (seed %" PRIu64 ")", M * N, seed);
out:
    free(A);
    free(B);
    free(C);
    free(R);
    free(P);
}

/* ------------------------------------------------------------------ 5. training */

/* Creates a small model with `seed` on dev and runs two Adam steps on x;
 * losses[2] and the logits after them come back. */
static ntpu_status train_two(ntpu_device *dev, const float *x, const uint8_t *y, float *losses, float *logits)
{
    static const unsigned sizes[] = {20, 12, 5};
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    ntpu_model *m = NULL;
    ntpu_status st = ntpu_model_create(dev, sizes, 3, 8, 7, &opt, &m);
    for (int i = 0; i < 2 && st == NTPU_OK; i++) {
        ntpu_step_result res;
        st = ntpu_model_train_step(m, x, y, 8, &res);
        losses[i] = res.loss;
    }
    if (st == NTPU_OK)
        st = ntpu_model_predict(m, x, 8, logits);
    ntpu_model_free(m);
    return st;
}

/* ref_what names ref in the details: the golden model, or (the device being the
 * golden model with every feature) the golden model without the vector unit
 * and TRANSPOSE_A, whose part the library then does on the host. */
static void check_train(run *r, ntpu_device *dev, ntpu_device *ref, const char *ref_what, const ntpu_info *in)
{
    const char *name = "train step";
    /* A device without TRANSPOSE_A (or the vector unit) still trains: the library
     * does that part on the host. Anything else it cannot do comes back as
     * NTPU_ERR_UNSUPPORTED below. */
    if (!(in->dtypes & NTPU_DTYPE_BF16_BIT)) {
        skip(r, name, "the device has no bf16");
        return;
    }
    float x[8 * 20], ld[2], lr[2], pd[8 * 5], pr[8 * 5];
    uint8_t y[8];
    uint64_t s = 5;
    for (size_t i = 0; i < 8 * 20; i++)
        x[i] = (float)(rng_next(&s) >> 40) / (float)(1u << 24) * 2.0f - 1.0f;
    for (size_t i = 0; i < 8; i++)
        y[i] = (uint8_t)(rng_next(&s) % 5);
    ntpu_status st = train_two(dev, x, y, ld, pd);
    if (st == NTPU_ERR_UNSUPPORTED) {
        skip(r, name, "%s", ntpu_last_error(dev));
        return;
    }
    if (st != NTPU_OK) {
        record(r, name, 0, "device: %s", ntpu_last_error(dev));
        return;
    }
    if ((st = train_two(ref, x, y, lr, pr)) != NTPU_OK) {
        record(r, name, 0, "%s: %s", ref_what, ntpu_last_error(ref));
        return;
    }
    for (int i = 0; i < 2; i++)
        if (memcmp(&ld[i], &lr[i], sizeof ld[i])) {
            record(r, name, 0, "loss of step %d is %.9g, that of %s %.9g", i + 1, (double)ld[i], ref_what,
                   (double)lr[i]);
            return;
        }
    for (size_t i = 0; i < 8 * 5; i++)
        if (memcmp(&pd[i], &pr[i], sizeof pd[i])) {
            record(r, name, 0, "logit %zu after two steps is %.9g, that of %s %.9g", i, (double)pd[i], ref_what,
                   (double)pr[i]);
            return;
        }
    record(r, name, 1,
           "20-12-5 MLP, two Adam steps: losses %.6f, %.6f and the logits equal those of %s bit for "
           "bit",
           (double)ld[0], (double)ld[1], ref_what);
}

/* ------------------------------------------------------------------ the command */

int cmd_selftest(common *cm, int argc, char **argv)
{
    char *pos[1];
    int npos;
    if (parse_args(argc, argv, cm, NULL, 0, pos, 0, &npos))
        return 1;
    if (cm->help) {
        fputs(selftest_help, stdout);
        return 0;
    }
    /* Opening reads and checks the ID block's magic: a failure here is one
     * error line like every other command's, not a check. */
    ntpu_device *dev = open_device(cm->device);
    if (!dev)
        return 1;
    ntpu_info in;
    ntpu_get_info(dev, &in);
    run *r = calloc(1, sizeof *r);
    if (!r) {
        ntpu_close(dev);
        return fail("selftest: out of memory");
    }
    r->json = cm->json;

    if (check_id(r, &in)) {
        check_link(r, dev);
        check_mem(r, dev, &in, NTPU_MEM_UB);
        check_mem(r, dev, &in, NTPU_MEM_WB);
        check_mem(r, dev, &in, NTPU_MEM_ACC);
        /* The golden model with the device's array size, so both tile alike;
         * the results would be equal for any size (docs/numerics.md). On the
         * golden model itself that would compare it with itself: there the
         * matmuls have the plain loop alone, and the training runs against ref
         * without the vector unit and TRANSPOSE_A when the device has both. */
        const unsigned both = NTPU_FEATURE_VECTOR_BIT | NTPU_FEATURE_TRANSPOSE_A_BIT;
        int self = in.platform == 0, bare = self && (in.features & both) == both;
        char refname[64];
        snprintf(refname, sizeof refname, "ref:n=%u%s", in.rows, bare ? ",novec=1,notra=1" : "");
        const char *ref_what = bare ? "the golden model without its vector unit and TRANSPOSE_A" : "the golden model";
        ntpu_device *ref = NULL;
        if (ntpu_open(refname, &ref) != NTPU_OK) {
            record(r, "golden model", 0, "cannot open '%s': %s", refname, ntpu_last_error(ref));
        } else {
            size_t n = in.rows;
            for (int d = 0; d < 2; d++) {
                ntpu_dtype dt = d ? NTPU_DTYPE_BF16 : NTPU_DTYPE_INT8;
                check_matmul(r, dev, self ? NULL : ref, &in, dt, 17, 23, 19, 1 + d);
                check_matmul(r, dev, self ? NULL : ref, &in, dt, 2 * n, n, 3 * n, 3 + d);
            }
            check_train(r, dev, ref, ref_what, &in);
        }
        ntpu_close(ref);
    }
    ntpu_close(dev);

    int count[3] = {0, 0, 0};
    for (int i = 0; i < r->n; i++)
        count[r->c[i].status]++;
    int failed = count[CHECK_FAIL];
    if (cm->json) {
        printf("{\"device\":");
        json_str(stdout, in.device);
        printf(",\"checks\":[");
        for (int i = 0; i < r->n; i++) {
            printf("%s{\"name\":", i ? "," : "");
            json_str(stdout, r->c[i].name);
            printf(",\"status\":\"%s\",\"pass\":%s,\"detail\":", status_json[r->c[i].status],
                   r->c[i].status == CHECK_PASS ? "true" : "false");
            json_str(stdout, r->c[i].detail);
            printf("}");
        }
        printf("],\"passed\":%d,\"failed\":%d,\"skipped\":%d}\n", count[CHECK_PASS], failed, count[CHECK_SKIP]);
    }
    int total = r->n;
    free(r);
    if (failed)
        return fail("selftest: %d of %d checks failed", failed, total);
    return 0;
}
