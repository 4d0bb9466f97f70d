/* SPDX-License-Identifier: Apache-2.0 */
/* NumPy .npy files (format 1.0, 2.0 and 3.0): a magic string, a version, a
 * header that is a Python dict literal ({'descr': '<f4', 'fortran_order':
 * False, 'shape': (3, 4), }) and the raw array. Only what nanoTPU exchanges is
 * read: 1-D and 2-D, C order, little-endian int8, int32, float32, uint16. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "io/outfile.h"
#include "io/sizes.h"

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

size_t ntpu_elem_size(ntpu_elem e)
{
    switch (e) {
    case NTPU_ELEM_INT8: return 1;
    case NTPU_ELEM_UINT16: return 2;
    case NTPU_ELEM_INT32:
    case NTPU_ELEM_FLOAT32: return 4;
    }
    return 0;
}

static const char *elem_descr(ntpu_elem e)
{
    switch (e) {
    case NTPU_ELEM_INT8: return "|i1";
    case NTPU_ELEM_INT32: return "<i4";
    case NTPU_ELEM_FLOAT32: return "<f4";
    case NTPU_ELEM_UINT16: return "<u2";
    }
    return NULL;
}

void ntpu_tensor_free(ntpu_tensor *t)
{
    if (!t)
        return;
    free(t->data);
    memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------ header parsing */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int eat(cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A quoted Python string without escapes, into out (cap bytes). */
static int parse_str(cursor *c, char *out, size_t cap)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return -1;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || n + 1 >= cap)
            return -1;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end)
        return -1;
    c->p++;
    out[n] = 0;
    return 0;
}

static int parse_word(cursor *c, const char *w)
{
    skip_ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) >= n && !memcmp(c->p, w, n)) {
        c->p += n;
        return 1;
    }
    return 0;
}

/* A tuple of non-negative integers; returns the count (up to 8), or -1. */
static int parse_shape(cursor *c, unsigned long long *dims)
{
    if (!eat(c, '('))
        return -1;
    int nd = 0;
    for (;;) {
        if (eat(c, ')'))
            return nd;
        skip_ws(c);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9' || nd == 8)
            return -1;
        unsigned long long v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (v > (~0ull - 9) / 10)
                return -1;
            v = v * 10 + (unsigned)(*c->p++ - '0');
        }
        if (c->p < c->end && *c->p == 'L') /* Python 2 long literals */
            c->p++;
        dims[nd++] = v;
        if (!eat(c, ',')) {
            if (!eat(c, ')'))
                return -1;
            /* A one-element tuple needs its comma: (3) is not a tuple. */
            return nd == 1 ? -1 : nd;
        }
    }
}

typedef struct npy_header {
    char descr[32];
    int fortran;
    int ndim;
    unsigned long long dims[8];
} npy_header;

static int parse_header(const char *text, size_t len, npy_header *h, char *why, size_t whylen)
{
    cursor c = {text, text + len};
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    if (!eat(&c, '{')) {
        ntpu_errf(why, whylen, "the header is not a dict");
        return -1;
    }
    while (!eat(&c, '}')) {
        char key[32];
        if (parse_str(&c, key, sizeof key) || !eat(&c, ':')) {
            ntpu_errf(why, whylen, "the header dict is malformed");
            return -1;
        }
        if (!strcmp(key, "descr") && !have_descr) {
            if (parse_str(&c, h->descr, sizeof h->descr)) {
                ntpu_errf(why, whylen, "'descr' is not a simple dtype string");
                return -1;
            }
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order") && !have_fortran) {
            if (parse_word(&c, "True"))
                h->fortran = 1;
            else if (parse_word(&c, "False"))
                h->fortran = 0;
            else {
                ntpu_errf(why, whylen, "'fortran_order' is not True or False");
                return -1;
            }
            have_fortran = 1;
        } else if (!strcmp(key, "shape") && !have_shape) {
            if ((h->ndim = parse_shape(&c, h->dims)) < 0) {
                ntpu_errf(why, whylen, "'shape' is not a tuple of integers");
                return -1;
            }
            have_shape = 1;
        } else {
            ntpu_errf(why, whylen, "unexpected or repeated key '%s' in the header", key);
            return -1;
        }
        if (!eat(&c, ',')) {
            if (eat(&c, '}'))
                break;
            ntpu_errf(why, whylen, "the header dict is malformed");
            return -1;
        }
    }
    skip_ws(&c);
    if (c.p != c.end) {
        ntpu_errf(why, whylen, "junk after the header dict");
        return -1;
    }
    if (!have_descr || !have_fortran || !have_shape) {
        ntpu_errf(why, whylen, "the header lacks '%s'",
                  !have_descr     ? "descr"
                  : !have_fortran ? "fortran_order"
                                  : "shape");
        return -1;
    }
    return 0;
}

static int elem_from_descr(const char *d, ntpu_elem *e, char *why, size_t whylen)
{
    static const struct {
        const char *type;
        ntpu_elem elem;
    } types[] = {{"i1", NTPU_ELEM_INT8}, {"i4", NTPU_ELEM_INT32}, {"f4", NTPU_ELEM_FLOAT32}, {"u2", NTPU_ELEM_UINT16}};
    char order = d[0];
    const char *type = (order == '<' || order == '>' || order == '|' || order == '=') ? d + 1 : d;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (strcmp(type, types[i].type) != 0)
            continue;
        if (order == '>' && ntpu_elem_size(types[i].elem) > 1) {
            ntpu_errf(why, whylen, "big-endian data ('%s') is not supported; save it little-endian", d);
            return -1;
        }
        *e = types[i].elem;
        return 0;
    }
    /* NumPy's defaults (float64, int64) are the usual cause: say how to convert. */
    const char *hint = type[0] == 'f'                     ? "; save a.astype(numpy.float32)"
                       : type[0] == 'i' || type[0] == 'u' ? "; save a.astype(numpy.int8) for int8 inputs"
                                                          : "";
    ntpu_errf(why, whylen, "unsupported dtype '%s' (expected int8, int32, float32 or uint16%s)", d, hint);
    return -1;
}

/* ------------------------------------------------------------------ read */

/* A short read: the OS's reason (NTPU_ERR_FILE) or, at the end of the file, `truncated`
 * (NTPU_ERR_FORMAT), in why. */
static ntpu_status read_failed(FILE *f, const char *truncated, char *why, size_t whylen)
{
    if (ferror(f)) {
        ntpu_errf(why, whylen, "read error: %s", strerror(errno));
        return NTPU_ERR_FILE;
    }
    ntpu_errf(why, whylen, "%s", truncated);
    return NTPU_ERR_FORMAT;
}

/* The preamble and the header of an open .npy file, checked: *h and the element type. Leaves f at
 * the data. NTPU_OK, or the status with the reason in why. */
static ntpu_status read_header(FILE *f, npy_header *h, ntpu_elem *elem, char *why, size_t whylen)
{
    uint8_t pre[12];
    if (fread(pre, 1, 8, f) < 8 || memcmp(pre, npy_magic, sizeof npy_magic) != 0) {
        ntpu_errf(why, whylen, "not a .npy file (bad magic)");
        return NTPU_ERR_FORMAT;
    }
    unsigned major = pre[6], minor = pre[7];
    size_t hlen;
    if (major == 1 && minor == 0) {
        if (fread(pre + 8, 1, 2, f) != 2)
            return read_failed(f, "truncated header", why, whylen);
        hlen = ntpu_rd16(pre + 8);
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (fread(pre + 8, 1, 4, f) != 4)
            return read_failed(f, "truncated header", why, whylen);
        hlen = ntpu_rd32(pre + 8);
    } else {
        ntpu_errf(why, whylen, "unsupported .npy format version %u.%u", major, minor);
        return NTPU_ERR_FORMAT;
    }
    if (hlen > (1u << 24)) {
        ntpu_errf(why, whylen, "header of %zu bytes is implausibly long", hlen);
        return NTPU_ERR_FORMAT;
    }
    char *text = malloc(hlen + 1);
    if (!text) {
        ntpu_errf(why, whylen, "out of memory");
        return NTPU_ERR_NO_MEMORY;
    }
    ntpu_status st = NTPU_ERR_FORMAT;
    if (fread(text, 1, hlen, f) != hlen) {
        st = read_failed(f, "truncated header", why, whylen);
    } else {
        text[hlen] = 0;
        if (!parse_header(text, hlen, h, why, whylen) && !elem_from_descr(h->descr, elem, why, whylen))
            st = NTPU_OK;
    }
    free(text);
    if (st != NTPU_OK)
        return st;
    if (h->fortran) {
        ntpu_errf(why, whylen, "fortran_order is True; save a C-ordered array (numpy.ascontiguousarray)");
        return NTPU_ERR_FORMAT;
    }
    if (h->ndim < 1 || h->ndim > 2) {
        ntpu_errf(why, whylen, "%d-D arrays are not supported (only 1-D and 2-D)", h->ndim);
        return NTPU_ERR_FORMAT;
    }
    return NTPU_OK;
}

/* rows x cols elements of es bytes from f into a fresh buffer *out, in host byte order. NTPU_OK, or
 * the status with the reason in why. */
static ntpu_status read_data(FILE *f, unsigned long long rows, unsigned long long cols, size_t es, uint8_t **out,
                             char *why, size_t whylen)
{
    size_t count, bytes;
    if (ntpu_size_mul(rows, cols, &count) || ntpu_size_mul(count, es, &bytes)) {
        ntpu_errf(why, whylen, "shape (%llu, %llu) is more data than this build can address", rows, cols);
        return NTPU_ERR_FORMAT;
    }
    /* A header that claims more data than the file holds: say so before allocating it. */
    struct stat sb;
    long pos = ftell(f);
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && pos >= 0 && (uint64_t)sb.st_size - (uint64_t)pos < bytes) {
        ntpu_errf(why, whylen, "data is shorter than the shape says (%llu of %zu bytes)",
                  (unsigned long long)((uint64_t)sb.st_size - (uint64_t)pos), bytes);
        return NTPU_ERR_FORMAT;
    }
    uint8_t *data = malloc(bytes ? bytes : 1);
    if (!data) {
        ntpu_errf(why, whylen, "out of memory for %zu bytes of data", bytes);
        return NTPU_ERR_NO_MEMORY;
    }
    size_t got = fread(data, 1, bytes, f);
    if (got != bytes) {
        free(data);
        char truncated[96];
        snprintf(truncated, sizeof truncated, "data is shorter than the shape says (%zu of %zu bytes)", got, bytes);
        return read_failed(f, truncated, why, whylen);
    }
    /* Little-endian on disk; host order in memory. */
    for (size_t i = 0; es == 2 && i < count; i++) {
        uint16_t v = ntpu_rd16(data + 2 * i);
        memcpy(data + 2 * i, &v, 2);
    }
    for (size_t i = 0; es == 4 && i < count; i++) {
        uint32_t v = ntpu_rd32(data + 4 * i);
        memcpy(data + 4 * i, &v, 4);
    }
    *out = data;
    return NTPU_OK;
}

ntpu_status ntpu_npy_read(const char *path, ntpu_tensor *out)
{
    char *err = ntpu_thread_error(); /* a call on no device: its detail is the thread's (ntpu_last_error(NULL)) */
    const size_t errlen = NTPU_THREAD_ERRMSG_LEN;
    if (out)
        memset(out, 0, sizeof *out);
    if (!path || !out) {
        ntpu_errf(err, errlen, "ntpu_npy_read: NULL argument");
        return NTPU_ERR_INVALID_ARG;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        ntpu_errf(err, errlen, "%s: %s", path, strerror(errno));
        return NTPU_ERR_FILE;
    }
    char why[160] = "";
    npy_header h = {0};
    ntpu_elem elem = NTPU_ELEM_INT8;
    uint8_t *data = NULL;
    ntpu_status st = read_header(f, &h, &elem, why, sizeof why);
    unsigned long long rows = h.dims[0], cols = h.ndim == 2 ? h.dims[1] : 1;
    if (st == NTPU_OK)
        st = read_data(f, rows, cols, ntpu_elem_size(elem), &data, why, sizeof why);
    fclose(f);
    if (st != NTPU_OK) {
        ntpu_errf(err, errlen, "%s: %s", path, why);
        return st;
    }
    out->elem = elem;
    out->ndim = h.ndim;
    out->shape[0] = (size_t)rows;
    out->shape[1] = (size_t)cols;
    out->data = data;
    return NTPU_OK;
}

/* ------------------------------------------------------------------ write */

/* Header and data to fd. */
static int write_npy(int fd, const ntpu_tensor *t)
{
    char dict[160];
    if (t->ndim == 1)
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }", elem_descr(t->elem),
                 t->shape[0]);
    else
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }",
                 elem_descr(t->elem), t->shape[0], t->shape[1]);
    /* Pad with spaces and a newline so the data starts on a 64-byte boundary. */
    size_t dl = strlen(dict), pre = 10, total = (pre + dl + 1 + 63) / 64 * 64;
    uint8_t head[256];
    memcpy(head, npy_magic, 6);
    head[6] = 1;
    head[7] = 0;
    ntpu_wr16(head + 8, (uint32_t)(total - pre));
    memcpy(head + pre, dict, dl);
    memset(head + pre + dl, ' ', total - pre - dl - 1);
    head[total - 1] = '\n';
    if (ntpu_write_all(fd, head, total))
        return -1;
    size_t es = ntpu_elem_size(t->elem), count = t->shape[0] * t->shape[1];
    uint8_t buf[65536];
    const uint8_t *src = t->data;
    for (size_t i = 0; i < count;) {
        size_t k = 0;
        for (; i < count && k + es <= sizeof buf; i++, k += es) {
            if (es == 1) {
                buf[k] = src[i];
            } else if (es == 2) {
                uint16_t v;
                memcpy(&v, src + 2 * i, 2);
                ntpu_wr16(buf + k, v);
            } else {
                uint32_t v;
                memcpy(&v, src + 4 * i, 4);
                ntpu_wr32(buf + k, v);
            }
        }
        if (ntpu_write_all(fd, buf, k))
            return -1;
    }
    return 0;
}

ntpu_status ntpu_npy_write(const char *path, const ntpu_tensor *t)
{
    char *err = ntpu_thread_error(); /* as ntpu_npy_read */
    const size_t errlen = NTPU_THREAD_ERRMSG_LEN;
    if (!path || !t || (t->ndim != 1 && t->ndim != 2) || !elem_descr(t->elem) || (t->ndim == 1 && t->shape[1] != 1)) {
        ntpu_errf(err, errlen, "ntpu_npy_write: bad arguments (NULL, rank not 1 or 2, or unknown element type)");
        return NTPU_ERR_INVALID_ARG;
    }
    size_t es = ntpu_elem_size(t->elem);
    size_t count, bytes;
    if (ntpu_size_mul(t->shape[0], t->shape[1], &count) || ntpu_size_mul(count, es, &bytes) || (!t->data && count)) {
        ntpu_errf(err, errlen, "ntpu_npy_write: shape too large, or data NULL");
        return NTPU_ERR_INVALID_ARG;
    }
    ntpu_outfile o;
    ntpu_status st = ntpu_outfile_open(&o, path, err, errlen);
    if (st != NTPU_OK)
        return st;
    if (write_npy(o.fd, t)) {
        ntpu_errf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        ntpu_outfile_abort(&o);
        return NTPU_ERR_FILE;
    }
    return ntpu_outfile_commit(&o, err, errlen);
}
