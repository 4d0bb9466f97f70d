/* SPDX-License-Identifier: Apache-2.0 */
/* Plumbing shared by the ntpu commands: option parsing, errors, JSON and number
 * formatting, opening the device. */
#define _DEFAULT_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "ranks.h"

int whole_number(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !*s)
        return -1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (whole_number(s, lo, hi, out))
        return fail("%s: '%s' is not a whole number in %" PRIu64 "..%" PRIu64, opt, s ? s : "", lo, hi);
    return 0;
}

int fail(const char *fmt, ...)
{
    char msg[8192]; /* room for a 4096-character device string and its reason */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One line, whatever a file put in it (a key or tensor name with a newline or an escape sequence). */
    fputs("ntpu: ", stderr);
    if (ranks_size() > 1) /* under mpirun: which rank says it */
        fprintf(stderr, "rank %d: ", ranks_rank());
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        if (*p < 0x20 || *p == 0x7F)
            fprintf(stderr, "\\x%02x", *p);
        else
            fputc(*p, stderr);
    }
    fputc('\n', stderr);
    return 1;
}

/* Parses argv (after the command name) into the common options, the command's
 * options and up to max_pos positional arguments. "--opt=value", "-oVALUE" and
 * "--" work as usual. Returns 0, or 1 after printing the error. */
int parse_args(int argc, char **argv, common *cm, const option *opts, size_t nopts, char **pos, int max_pos, int *npos)
{
    *npos = 0;
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == 0) {
            if (*npos == max_pos)
                return fail("unexpected argument '%s'", a);
            pos[(*npos)++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_pos = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cm->help = 1;
            continue;
        }
        if (!strcmp(a, "--json")) {
            cm->json = 1;
            continue;
        }
        /* Split "--name=value" and "-xVALUE". */
        const char *inline_val = NULL;
        char name[64];
        if (a[1] == '-') {
            const char *eq = strchr(a, '=');
            size_t len = eq ? (size_t)(eq - a) : strlen(a);
            if (len >= sizeof name)
                return fail("unknown option '%s'", a);
            memcpy(name, a, len);
            name[len] = 0;
            inline_val = eq ? eq + 1 : NULL;
        } else {
            name[0] = '-';
            name[1] = a[1];
            name[2] = 0;
            inline_val = a[2] ? a + 2 : NULL;
        }
        const char **slot = NULL;
        int *flag = NULL;
        if (!strcmp(name, "-d") || !strcmp(name, "--device")) {
            if (cm->n_devices >= NTPU_MAX_DEVICES)
                return fail("-d given more than %d times", NTPU_MAX_DEVICES);
            slot = &cm->devices[cm->n_devices++];
        } else {
            for (size_t k = 0; k < nopts; k++) {
                if (!strcmp(name, opts[k].name) ||
                    (opts[k].short_name && name[1] == opts[k].short_name && name[2] == 0)) {
                    slot = opts[k].val;
                    flag = opts[k].flag;
                    break;
                }
            }
        }
        if (!slot && !flag)
            return fail("unknown option '%s' (see --help)", a);
        if (flag) {
            if (inline_val)
                return fail("option '%s' takes no value", name);
            *flag = 1;
            continue;
        }
        if (!inline_val) {
            if (i + 1 >= argc)
                return fail("option '%s' needs a value", name);
            inline_val = argv[++i];
        }
        *slot = inline_val;
        cm->device = cm->devices[0];
    }
    if (cm->n_devices > (cm->max_devices ? cm->max_devices : 1))
        return fail("-d given %zu times: this command runs on one device", cm->n_devices);
    return 0;
}

/* A JSON string literal of s. */
void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* 1234567 -> "1,234,567" */
const char *grouped(uint64_t v, char *buf, size_t len)
{
    char raw[32];
    int n = snprintf(raw, sizeof raw, "%" PRIu64, v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = 0;
    return buf;
}

/* 1536 -> "1.5 KiB" */
const char *bytes_str(uint64_t v, char *buf, size_t len)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB"};
    double x = (double)v;
    int u = 0;
    while (x >= 1024 && u < 3) {
        x /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", x, unit[u]);
    return buf;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Opens the device or explains why not. */
ntpu_device *open_device(const char *device)
{
    ntpu_device *dev = NULL;
    ntpu_status st = ntpu_open(device, &dev);
    if (st == NTPU_OK)
        return dev;
    const char *name = device && *device ? device : getenv("NTPU_DEVICE");
    fail("cannot open device '%s': %s", name && *name ? name : "vsim",
         dev ? ntpu_last_error(dev) : ntpu_status_str(st));
    ntpu_close(dev);
    return NULL;
}

const char *device_with_threads(const char *device, const char *threads, char *buf, size_t len)
{
    if (!threads)
        return device;
    uint64_t t;
    if (parse_u64("--threads", threads, 1, 64, &t))
        return NULL;
    const char *name = device && *device ? device : getenv("NTPU_DEVICE");
    if (!name || strncmp(name, "ref", 3) != 0 || (name[3] != 0 && name[3] != ':')) {
        fail("--threads: only the golden model (-d ref) runs on more threads, not '%s'", name ? name : "vsim");
        return NULL;
    }
    if (snprintf(buf, len, "%s%sthreads=%llu", name, name[3] ? "," : ":", (unsigned long long)t) >= (int)len) {
        fail("--threads: the device name '%s' is too long", name);
        return NULL;
    }
    return buf;
}

const char *dtype_name(ntpu_dtype d)
{
    return d == NTPU_DTYPE_BF16 ? "bf16" : "int8";
}
