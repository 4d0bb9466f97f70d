/* SPDX-License-Identifier: Apache-2.0 */
/* The RTL's link receiver and command decoder against the golden model's, on the inputs the fuzzer
 * found (tests/fuzz/fuzz_ref_link.c; its corpus, and a campaign's build/fuzz/corpus/ref_link): each
 * input goes to a fresh pair (pair.h) exactly as the fuzz target feeds it to the golden model, raw
 * bytes in writes of the size its second byte gives, or frames with valid CRCs, and the two reply
 * streams must be the same, byte for byte. A mismatch, a reply missing (vsim stuck) or one too many
 * names the input. Here the models are vsim's size (the fuzz target's golden model is smaller, so its
 * inputs meet other memory bounds: still inputs both must agree on).
 * random=K[:SEED] adds K random inputs of the same form: frames of a valid opcode with small random
 * fields, and raw bytes with a SOF here and there.
 * Usage: fuzz_replay [random=K[:SEED]] DIR_OR_FILE... */
#include <dirent.h>
#include <sys/stat.h>

#include "pair.h"

/* fuzz_ref_link.c's frame lengths are taken modulo its model's max_payload + 1: the same here, so the
 * same frames come out of an input. */
#define FUZZ_MAX_PAYLOAD 1024u
static unsigned long inputs, exchanges, reply_bytes;

/* An INFO reply: status OK, then the ID block. */
static int id_reply(const uint8_t *payload, size_t len)
{
    return len == 1 + NTPU_ID_BYTES && payload[0] == 0 && get32(payload + 1 + NTPU_ID_OFF_MAGIC) == NTPU_ID_MAGIC;
}

/* The command each SEQ last named in the bytes sent (any well-framed command with a valid CRC, also
 * inside raw bytes): a reply carries its command's SEQ, and STATUS's and COUNTERS's carry timing. */
static int op_of_seq[256];
static uint8_t sent[1 << 17];
static size_t sent_len;

/* Scans everything sent so far again (inputs are a few kB): a fake header's length may hide a real
 * frame behind it until more bytes arrive. */
static void note_sent(const uint8_t *b, size_t n)
{
    n = n < sizeof sent - sent_len ? n : sizeof sent - sent_len;
    memcpy(sent + sent_len, b, n);
    sent_len += n;
    for (size_t at = 0; at + NTPU_FRAME_OVERHEAD <= sent_len; at++) {
        const uint8_t *f = sent + at;
        size_t len = get16(f + 2);
        if (f[0] == NTPU_SOF_CMD && len && at + NTPU_FRAME_OVERHEAD + len <= sent_len &&
            crc32(0, f + 1, (uInt)(3 + len)) == get32(f + 4 + len))
            op_of_seq[f[1]] = f[4];
    }
}

/* Whether byte i of the payload of a reply to op may differ between the models: STATUS's busy flag
 * and dropped count, and COUNTERS's but macs, are measured on the RTL and estimated by the golden model
 * (docs/isa.md: only macs is architectural). */
static int timing_byte(int op, const uint8_t *payload, size_t len, size_t i)
{
    if (payload[0] != NTPU_DEV_OK || i == 0)
        return 0;
    if (op == NTPU_OP_STATUS && len == 1 + NTPU_STATUS_BYTES)
        return i == 1 + NTPU_STATUS_OFF_BUSY || i >= 1 + NTPU_STATUS_OFF_DROPPED;
    if (op == NTPU_OP_COUNTERS && len == 1 + NTPU_CNT_COUNT * 8) {
        unsigned c = (unsigned)(i - 1) / 8;
        return c != NTPU_CNT_MACS;
    }
    return 0;
}

/* The same replies, frame by frame, but for their timing bytes; INFO's may differ only in the platform
 * byte (0 golden model, 1 RTL). CRCs differ with them. */
static void same_streams(const pair *p, size_t n, const char *path)
{
    exchanges++;
    reply_bytes += n;
    if (memcmp(p->ref_rx, p->vsim_rx, n) == 0)
        return;
    static size_t roff[65536], rlen[65536], voff[65536], vlen[65536];
    size_t frames = split_replies(p->ref_rx, n, roff, rlen, 65536);
    if (split_replies(p->vsim_rx, n, voff, vlen, 65536) != frames)
        die("%s: the RTL sent another number of reply frames", path);
    for (size_t f = 0; f < frames; f++) {
        const uint8_t *r = p->ref_rx + roff[f], *v = p->vsim_rx + voff[f];
        if (roff[f] != voff[f] || rlen[f] != vlen[f] || memcmp(r - 4, v - 4, 4) != 0)
            die("%s: reply %zu: another header from the RTL", path, f);
        const int op = op_of_seq[r[-3]];
        const size_t plat = 1 + NTPU_ID_OFF_PLATFORM;
        const int info = op == NTPU_OP_INFO && id_reply(r, rlen[f]) && r[plat] == 0 && v[plat] == 1;
        for (size_t i = 0; i < rlen[f]; i++)
            if (r[i] != v[i] && !(info && i == plat) && !timing_byte(op, r, rlen[f], i))
                die("%s: reply %zu (to op 0x%02x) differs at payload byte %zu of %zu: 0x%02x, the RTL 0x%02x", path, f,
                    op, i, rlen[f], r[i], v[i]);
    }
}

static void replay(const char *path, const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    pair p;
    pair_open(&p);
    for (int i = 0; i < 256; i++)
        op_of_seq[i] = -1;
    sent_len = 0;
    const uint8_t *in = data + 2;
    size_t n = size - 2;
    if (data[0] % 2 == 0) {
        size_t chunk = data[1] ? data[1] : 256;
        for (size_t i = 0; i < n; i += chunk) {
            pair_raw(&p, in + i, n - i < chunk ? n - i : chunk);
            note_sent(in + i, n - i < chunk ? n - i : chunk);
            same_streams(&p, pair_exchange(&p), path);
        }
    } else {
        uint8_t seq = data[1];
        while (n >= 2) {
            size_t len = (size_t)(in[0] | in[1] << 8) % (FUZZ_MAX_PAYLOAD + 1);
            in += 2, n -= 2;
            len = len < n ? len : n;
            if (len)
                op_of_seq[seq] = in[0];
            pair_frame(&p, seq++, in, len);
            same_streams(&p, pair_exchange(&p), path);
            in += len, n -= len;
        }
    }
    pair_close(&p);
    inputs++;
}

static void replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("%s: cannot open", path);
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    replay(path, buf, n);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        die("%s: cannot open", dir);
    char **names = NULL;
    size_t count = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        names = realloc(names, (count + 1) * sizeof *names);
        names[count] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        sprintf(names[count++], "%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof *names, by_name);
    for (size_t i = 0; i < count; i++) {
        replay_file(names[i]);
        free(names[i]);
    }
    free(names);
}

/* A random input of fuzz_ref_link's form: mostly frames (a length, then an opcode of the protocol and
 * bytes that make small addresses and counts likely), sometimes raw bytes. */
static size_t random_input(uint8_t *b, size_t cap)
{
    size_t n = 2;
    b[0] = (uint8_t)rnd_below(4) != 0; /* 1: frames */
    b[1] = (uint8_t)rnd();
    for (unsigned k = 1 + rnd_below(12); k > 0 && n + 64 < cap; k--) {
        size_t len = b[0] ? 1 + rnd_below(rnd_below(4) ? 16 : 400) : 1 + rnd_below(200);
        if (n + 2 + len > cap)
            break;
        if (b[0]) {
            put16(b + n, (unsigned)len);
            n += 2;
        }
        for (size_t i = 0; i < len; i++)
            b[n + i] = (uint8_t)(rnd_below(3) ? rnd_below(8) : rnd());
        if (b[0])
            b[n] = (uint8_t)rnd_below(NTPU_OP_POOL + 2);
        else if (len > 4)
            b[n + rnd_below((unsigned)len - 4)] = NTPU_SOF_CMD;
        n += len;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: fuzz_replay DIR_OR_FILE...");
    for (int i = 1; i < argc; i++) {
        unsigned long count;
        if (sscanf(argv[i], "random=%lu", &count) == 1) {
            const char *colon = strchr(argv[i], ':');
            const unsigned long long seed = colon ? strtoull(colon + 1, NULL, 0) : 1;
            rng_state = seed;
            static uint8_t b[8192];
            char name[96];
            for (unsigned long k = 0; k < count; k++) {
                size_t n = random_input(b, sizeof b);
                snprintf(name, sizeof name, "random input %lu of random=%lu:%llu", k, count, seed);
                replay(name, b, n);
            }
            continue;
        }
        struct stat sb;
        if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode))
            replay_dir(argv[i]);
        else
            replay_file(argv[i]);
    }
    if (!inputs)
        die("no input replayed");
    printf("PASS fuzz_replay: %lu inputs, %lu exchanges, %lu reply bytes the same from the RTL and the golden model\n",
           inputs, exchanges, reply_bytes);
    return 0;
}
