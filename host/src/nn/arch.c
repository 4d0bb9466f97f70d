/* SPDX-License-Identifier: Apache-2.0 */
/* Model descriptions (ntpu/arch.h): a SPEC such as "conv16k3p1,relu,maxpool2,fc10"
 * into layer descriptors with every item's shapes, and back.
 *
 * Ranges: conv channels and fc outputs 1..65536; kernel sizes, pool windows and
 * strides 1..15; padding 0..K-1. The input and every item's output hold at most
 * 2^24 values a sample (the host keeps them per sample in memory). */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h" /* ntpu_one_line */
#include "ntpu/arch.h"
#include "ntpu/nn.h" /* NTPU_MAX_LAYERS */

#define MAX_COUNT 65536u        /* conv channels, fc outputs */
#define MAX_KERNEL 15u          /* kernel sizes, windows, strides */
#define MAX_VALUES (1ull << 24) /* values of one sample at any item */
#define ITEM_TEXT 40            /* characters of an item quoted in an error */
#define FORMS "conv<C>k<K>[s<S>][p<P>], relu, maxpool<K>, avgpool<K>, flatten or fc<N>"

/* The parser's place: the item being read and where the error goes. */
typedef struct parser {
    const char *text; /* the item as written (not NUL-terminated at its end) */
    size_t len;
    unsigned number; /* 1-based, as errors name it */
    char *why;
    size_t why_len;
} parser;

/* Writes "item N 'TEXT': reason" to why (the text cut to ITEM_TEXT characters; control
 * characters as '?', so the reason stays one line) and returns NTPU_ERR_INVALID_ARG. */
__attribute__((format(printf, 2, 3))) static ntpu_status item_error(const parser *p, const char *fmt, ...)
{
    if (!p->why || !p->why_len)
        return NTPU_ERR_INVALID_ARG;
    int at = snprintf(p->why, p->why_len, "item %u '%.*s%s': ", p->number, p->len < ITEM_TEXT ? (int)p->len : ITEM_TEXT,
                      p->text, p->len > ITEM_TEXT ? "..." : "");
    if (at >= 0 && (size_t)at < p->why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->why + at, p->why_len - (size_t)at, fmt, ap);
        va_end(ap);
    }
    ntpu_one_line(p->why);
    return NTPU_ERR_INVALID_ARG;
}

/* A reason that names no item. */
__attribute__((format(printf, 3, 4))) static ntpu_status spec_error(char *why, size_t why_len, const char *fmt, ...)
{
    if (why && why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
        ntpu_one_line(why);
    }
    return NTPU_ERR_INVALID_ARG;
}

/* The decimal number at *at (advanced past it), capped at UINT_MAX; -1 when no digit is there. */
static long long read_number(const char **at, const char *end)
{
    const char *s = *at;
    unsigned long long v = 0;
    if (s == end || *s < '0' || *s > '9')
        return -1;
    for (; s < end && *s >= '0' && *s <= '9'; s++)
        v = v > UINT_MAX ? v : v * 10 + (unsigned)(*s - '0');
    *at = s;
    return (long long)(v > UINT_MAX ? UINT_MAX : v);
}

/* The number after `what` (a prefix or letter) in lo..hi into *out. */
static ntpu_status read_value(const parser *p, const char **at, const char *end, const char *what, const char *name,
                              unsigned lo, unsigned hi, unsigned *out)
{
    const char *digits = *at;
    long long v = read_number(at, end);
    if (v < 0)
        return item_error(p, "no %s after '%s'", name, what);
    if (v < lo || v > hi)
        return item_error(p, "%s %.*s is not in %u..%u", name, (int)(*at - digits), digits, lo, hi);
    *out = (unsigned)v;
    return NTPU_OK;
}

static int starts_with(const char *at, const char *end, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(end - at) >= n && memcmp(at, word, n) == 0;
}

/* The text at..end that should not be there (cut as the item is), and where. */
static ntpu_status unexpected(const parser *p, const char *at, const char *end, const char *where)
{
    size_t n = (size_t)(end - at);
    return item_error(p, "unexpected '%.*s%s' %s", n < ITEM_TEXT ? (int)n : ITEM_TEXT, at, n > ITEM_TEXT ? "..." : "",
                      where);
}

/* conv<C>k<K>[s<S>][p<P>], the text after "conv". */
static ntpu_status parse_conv(const parser *p, const char *at, const char *end, ntpu_layer *l)
{
    ntpu_status st = read_value(p, &at, end, "conv", "channel count", 1, MAX_COUNT, &l->out);
    if (st != NTPU_OK)
        return st;
    if (at == end || *at != 'k')
        return item_error(p, "no 'k' and kernel size after 'conv%u' (the form is conv<C>k<K>[s<S>][p<P>])", l->out);
    at++;
    if ((st = read_value(p, &at, end, "k", "kernel size", 1, MAX_KERNEL, &l->k)) != NTPU_OK)
        return st;
    l->stride = 1;
    if (at < end && *at == 's') {
        at++;
        if ((st = read_value(p, &at, end, "s", "stride", 1, MAX_KERNEL, &l->stride)) != NTPU_OK)
            return st;
    }
    if (at < end && *at == 'p') {
        at++;
        if ((st = read_value(p, &at, end, "p", "padding", 0, l->k - 1, &l->pad)) != NTPU_OK)
            return st;
    }
    if (at != end)
        return unexpected(p, at, end, "(the form is conv<C>k<K>[s<S>][p<P>], padding below the kernel size)");
    return NTPU_OK;
}

/* One item's text into *l: its kind and numbers (shapes come later). */
static ntpu_status parse_item(const parser *p, ntpu_layer *l)
{
    const char *at = p->text, *end = p->text + p->len;
    static const char *const pools[2] = {"maxpool", "avgpool"};
    memset(l, 0, sizeof *l);
    if (p->len == 0)
        return item_error(p, "empty (two commas, or a comma at an end)");
    if ((p->len == 4 && starts_with(at, end, "relu")) || (p->len == 7 && starts_with(at, end, "flatten"))) {
        l->kind = p->len == 4 ? NTPU_LAYER_RELU : NTPU_LAYER_FLATTEN;
        return NTPU_OK;
    }
    if (starts_with(at, end, "conv")) {
        l->kind = NTPU_LAYER_CONV;
        return parse_conv(p, at + 4, end, l);
    }
    for (int i = 0; i < 2; i++)
        if (starts_with(at, end, pools[i])) {
            l->kind = i ? NTPU_LAYER_AVGPOOL : NTPU_LAYER_MAXPOOL;
            at += 7;
            ntpu_status st = read_value(p, &at, end, pools[i], "window size", 1, MAX_KERNEL, &l->k);
            return st != NTPU_OK || at == end ? st : unexpected(p, at, end, "after the window size");
        }
    if (starts_with(at, end, "fc")) {
        l->kind = NTPU_LAYER_FC;
        at += 2;
        ntpu_status st = read_value(p, &at, end, "fc", "output count", 1, MAX_COUNT, &l->out);
        return st != NTPU_OK || at == end ? st : unexpected(p, at, end, "after the output count");
    }
    return item_error(p, "not a layer (the items are %s)", FORMS);
}

/* Shapes while parsing: the current tensor, whether it is still a C x H x W map (no
 * flatten or fc yet), and whether a conv or pool made it. */
typedef struct shape {
    unsigned c, h, w;
    int spatial, from_layer;
} shape;

/* The output shape of a conv or pool item l on s, or an error when it does not fit. */
static ntpu_status window_shape(const parser *p, ntpu_layer *l, shape *s)
{
    unsigned ph = s->h + 2 * l->pad, pw = s->w + 2 * l->pad;
    if (l->kind != NTPU_LAYER_CONV && (s->h < l->k || s->w < l->k))
        return item_error(p, "its input is %ux%u, smaller than the %ux%u window", s->h, s->w, l->k, l->k);
    if (ph < l->k || pw < l->k) {
        if (l->pad)
            return item_error(p, "its input is %ux%u (%ux%u padded), smaller than the %ux%u kernel", s->h, s->w, ph, pw,
                              l->k, l->k);
        return item_error(p, "its input is %ux%u, smaller than the %ux%u kernel", s->h, s->w, l->k, l->k);
    }
    if (l->kind == NTPU_LAYER_CONV) {
        s->c = l->out;
        s->h = (ph - l->k) / l->stride + 1;
        s->w = (pw - l->k) / l->stride + 1;
    } else {
        s->h /= l->k;
        s->w /= l->k;
    }
    s->from_layer = 1;
    return NTPU_OK;
}

/* Item l's shapes from the tensor s before it; s becomes its output. */
static ntpu_status item_shape(const parser *p, ntpu_layer *l, shape *s)
{
    l->in_c = s->c, l->in_h = s->h, l->in_w = s->w;
    int needs_map = l->kind == NTPU_LAYER_CONV || l->kind == NTPU_LAYER_MAXPOOL || l->kind == NTPU_LAYER_AVGPOOL ||
                    l->kind == NTPU_LAYER_FLATTEN;
    if (needs_map && !s->spatial)
        return item_error(p, "after a flatten or fc only fc and relu can follow");
    ntpu_status st = NTPU_OK;
    if (l->kind == NTPU_LAYER_CONV || l->kind == NTPU_LAYER_MAXPOOL || l->kind == NTPU_LAYER_AVGPOOL)
        st = window_shape(p, l, s);
    else if (l->kind == NTPU_LAYER_FLATTEN || l->kind == NTPU_LAYER_FC) {
        s->c = l->kind == NTPU_LAYER_FC ? l->out : s->c * s->h * s->w;
        s->h = s->w = 1;
        s->spatial = 0;
    }
    if (st != NTPU_OK)
        return st;
    if ((uint64_t)s->c * s->h * s->w > MAX_VALUES)
        return item_error(p, "its output %ux%ux%u has more than %llu values a sample", s->c, s->h, s->w,
                          (unsigned long long)MAX_VALUES);
    l->out_c = s->c, l->out_h = s->h, l->out_w = s->w;
    return NTPU_OK;
}

/* Appends l (at most NTPU_MAX_ITEMS items), first the flatten an fc implies: before the first fc
 * whose input is still a map with H x W > 1 or made by a conv or pool. */
static ntpu_status add_item(const parser *p, ntpu_arch *a, ntpu_layer *l, shape *s)
{
    if (l->kind == NTPU_LAYER_FC && s->spatial && (s->h * s->w > 1 || s->from_layer)) {
        ntpu_layer flat = {.kind = NTPU_LAYER_FLATTEN, .implied = 1, .index = l->index};
        if (a->n == NTPU_MAX_ITEMS)
            return item_error(p, "more than %d items (an implied flatten included)", NTPU_MAX_ITEMS);
        item_shape(p, &flat, s); /* a reorder: it fits whatever its input */
        a->item[a->n++] = flat;
    }
    if (a->n == NTPU_MAX_ITEMS)
        return item_error(p, "more than %d items (an implied flatten included)", NTPU_MAX_ITEMS);
    ntpu_status st = item_shape(p, l, s);
    if (st == NTPU_OK)
        a->item[a->n++] = *l;
    return st;
}

static ntpu_status parse_items(const char *spec, ntpu_arch *a, char *why, size_t why_len)
{
    shape s = {a->in_c, a->in_h, a->in_w, 1, 0};
    parser p = {.why = why, .why_len = why_len};
    for (const char *at = spec;; at += p.len + 1) {
        const char *comma = strchr(at, ',');
        p.text = at;
        p.len = comma ? (size_t)(comma - at) : strlen(at);
        p.number++;
        ntpu_layer l;
        ntpu_status st = parse_item(&p, &l);
        l.index = p.number - 1;
        if (st != NTPU_OK || (st = add_item(&p, a, &l, &s)) != NTPU_OK)
            return st;
        if (!comma)
            break;
    }
    if (a->item[a->n - 1].kind != NTPU_LAYER_FC)
        return spec_error(why, why_len, "the last item must be fc<N> (the logits), not '%.*s'", (int)p.len, p.text);
    return NTPU_OK;
}

ntpu_status ntpu_arch_parse(const char *spec, unsigned in_c, unsigned in_h, unsigned in_w, ntpu_arch *out, char *why,
                            size_t why_len)
{
    if (!out)
        return spec_error(why, why_len, "no place for the arch");
    memset(out, 0, sizeof *out);
    if (!spec || !*spec)
        return spec_error(why, why_len, "the SPEC is empty (the items are %s, comma separated)", FORMS);
    if (!in_c || !in_h || !in_w || (uint64_t)in_c * in_h * in_w > MAX_VALUES)
        return spec_error(why, why_len, "the input shape %ux%ux%u is not 1 to %llu values", in_c, in_h, in_w,
                          (unsigned long long)MAX_VALUES);
    out->in_c = in_c, out->in_h = in_h, out->in_w = in_w;
    ntpu_status st = parse_items(spec, out, why, why_len);
    if (st != NTPU_OK) {
        memset(out, 0, sizeof *out);
        return st;
    }
    if (why && why_len)
        why[0] = 0;
    return NTPU_OK;
}

/* Item l as written, defaults left out, at buf + *at (advanced); 0, or -1 when it does not fit. */
static int format_item(const ntpu_layer *l, char *buf, size_t len, size_t *at)
{
    char t[64];
    switch (l->kind) {
    case NTPU_LAYER_CONV:
        snprintf(t, sizeof t, "conv%uk%u", l->out, l->k);
        if (l->stride != 1)
            snprintf(t + strlen(t), sizeof t - strlen(t), "s%u", l->stride);
        if (l->pad)
            snprintf(t + strlen(t), sizeof t - strlen(t), "p%u", l->pad);
        break;
    case NTPU_LAYER_RELU: strcpy(t, "relu"); break;
    case NTPU_LAYER_MAXPOOL: snprintf(t, sizeof t, "maxpool%u", l->k); break;
    case NTPU_LAYER_AVGPOOL: snprintf(t, sizeof t, "avgpool%u", l->k); break;
    case NTPU_LAYER_FLATTEN: strcpy(t, "flatten"); break;
    case NTPU_LAYER_FC: snprintf(t, sizeof t, "fc%u", l->out); break;
    default: return -1;
    }
    int n = snprintf(buf + *at, len - *at, "%s%s", *at ? "," : "", t);
    if (n < 0 || (size_t)n >= len - *at)
        return -1;
    *at += (size_t)n;
    return 0;
}

ntpu_status ntpu_arch_format(const ntpu_arch *a, char *buf, size_t len)
{
    if (!buf || !len)
        return NTPU_ERR_INVALID_ARG;
    buf[0] = 0;
    if (!a || a->n == 0 || a->n > NTPU_MAX_ITEMS)
        return NTPU_ERR_INVALID_ARG;
    size_t at = 0;
    for (size_t i = 0; i < a->n; i++)
        if (!a->item[i].implied && format_item(&a->item[i], buf, len, &at)) {
            buf[0] = 0;
            return NTPU_ERR_INVALID_ARG;
        }
    return NTPU_OK;
}

ntpu_status ntpu_arch_from_sizes(const unsigned *sizes, size_t n_sizes, ntpu_arch *out)
{
    if (!out)
        return NTPU_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!sizes || n_sizes < 2 || n_sizes > NTPU_MAX_LAYERS + 1)
        return NTPU_ERR_INVALID_ARG;
    char spec[NTPU_MAX_LAYERS * 16];
    size_t at = 0;
    for (size_t i = 0; i < n_sizes; i++)
        if (sizes[i] == 0 || sizes[i] > MAX_COUNT)
            return NTPU_ERR_INVALID_ARG;
    for (size_t i = 1; i < n_sizes; i++)
        at += (size_t)snprintf(spec + at, sizeof spec - at, "%sfc%u", i > 1 ? ",relu," : "", sizes[i]);
    /* The input is a vector of sizes[0] features (C x 1 x 1, as after a flatten): no flatten is implied. */
    return ntpu_arch_parse(spec, sizes[0], 1, 1, out, NULL, 0);
}

int ntpu_arch_is_mlp(const ntpu_arch *a, unsigned *sizes, size_t *n_sizes)
{
    if (!a || a->n == 0 || a->n > NTPU_MAX_ITEMS)
        return 0;
    size_t i = a->item[0].kind == NTPU_LAYER_FLATTEN, n = 0;
    unsigned s[NTPU_MAX_LAYERS + 1];
    if (i >= a->n)
        return 0;
    s[n++] = a->item[i].in_c * a->item[i].in_h * a->item[i].in_w;
    for (; i < a->n; i++) {
        /* fc at even places from the first, relu between */
        int want_fc = (i - (a->item[0].kind == NTPU_LAYER_FLATTEN)) % 2 == 0;
        if (a->item[i].kind != (want_fc ? NTPU_LAYER_FC : NTPU_LAYER_RELU))
            return 0;
        if (want_fc) {
            if (n == NTPU_MAX_LAYERS + 1)
                return 0; /* deeper than the dense path goes */
            s[n++] = a->item[i].out;
        }
    }
    for (size_t j = 0; j < n; j++)
        if (s[j] == 0 || s[j] > MAX_COUNT)
            return 0;
    if (a->item[a->n - 1].kind != NTPU_LAYER_FC)
        return 0;
    if (sizes)
        memcpy(sizes, s, n * sizeof *s);
    if (n_sizes)
        *n_sizes = n;
    return 1;
}
