/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu tune's search space (tune_space.h). Each trial's values come from a splitmix64 stream seeded by
 * the study's seed and the trial's number, one draw per key in a fixed order whether the key was given or
 * not, so a trial's settings never depend on how many trials ran before it or on which keys another
 * study searched. */
#include "tune_space.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *const tune_key_names[TUNE_KEYS] = {"lr", "batch", "optimizer", "weight_decay", "momentum", "hidden"};
enum { K_LR, K_BATCH, K_OPT, K_WD, K_MOM, K_HIDDEN };

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int number(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end && isfinite(*v);
}

/* hidden widths "256-128": 0, or -1 */
static int widths(const char *s, unsigned *w, size_t *n)
{
    *n = 0;
    for (const char *p = s; *p;) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || v == 0 || v > 65536 || *n == TUNE_HIDDEN || (*end && *end != '-') || *p == '-')
            return -1;
        w[(*n)++] = (unsigned)v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return -1;
    }
    return *n ? 0 : -1;
}

/* One value of key k, as a list item: 0, or 1 after printing why. */
static int check_choice(const char *what, size_t k, const char *v)
{
    double d;
    unsigned w[TUNE_HIDDEN];
    size_t n;
    ntpu_optimizer o;
    int ok = k == K_OPT      ? ntpu_optimizer_parse(v, &o) == 0
             : k == K_HIDDEN ? widths(v, w, &n) == 0
             : k == K_BATCH  ? number(v, &d) && d >= 1 && d <= 4096 && d == floor(d)
                             : number(v, &d) && d >= 0 && (k != K_LR || d > 0);
    if (!ok)
        return fail("%s: %s=%s: '%s' is not %s", what, tune_key_names[k], v, v,
                    k == K_OPT      ? "sgd, momentum, adam or adamw"
                    : k == K_HIDDEN ? "hidden widths such as 256 or 256-128"
                    : k == K_BATCH  ? "a batch of 1..4096"
                                    : "a number of at least 0 (lr: above 0)");
    return 0;
}

static int parse_item(const char *what, const char *item, tune_space *sp)
{
    const char *eq = strchr(item, '=');
    size_t k = 0;
    while (k < TUNE_KEYS && (!eq || strlen(tune_key_names[k]) != (size_t)(eq - item) ||
                             strncmp(item, tune_key_names[k], (size_t)(eq - item))))
        k++;
    if (k == TUNE_KEYS)
        return fail("%s: '%s' is not KEY=VALUES with KEY one of lr, batch, optimizer, weight_decay, momentum, hidden",
                    what, item);
    tune_range *r = &sp->key[k];
    if (r->given)
        return fail("%s: %s given twice", what, tune_key_names[k]);
    memset(r, 0, sizeof *r);
    r->given = 1;
    const char *v = eq + 1;
    if (!strncmp(v, "log:", 4) || !strncmp(v, "uniform:", 8)) {
        r->kind = v[0] == 'l' ? 1 : 2;
        char buf[96];
        snprintf(buf, sizeof buf, "%s", strchr(v, ':') + 1);
        char *colon = strchr(buf, ':');
        if (colon)
            *colon = 0;
        if (k == K_OPT || k == K_HIDDEN || k == K_BATCH)
            return fail("%s: %s takes a list of values (a,b,...), not the range '%s'", what, tune_key_names[k], v);
        if (!colon || !number(buf, &r->lo) || !number(colon + 1, &r->hi) || !(r->lo < r->hi) || r->lo < 0 ||
            (r->kind == 1 && r->lo <= 0))
            return fail("%s: %s: '%s' is not a range A:B with 0 %s A < B", what, tune_key_names[k], v,
                        r->kind == 1 ? "<" : "<=");
        return 0;
    }
    for (const char *p = v;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (r->n == TUNE_CHOICES || len == 0 || len >= sizeof r->choice[0])
            return fail("%s: %s: the values must be 1..%d, each 1..39 characters", what, tune_key_names[k],
                        TUNE_CHOICES);
        memcpy(r->choice[r->n], p, len);
        r->choice[r->n][len] = 0;
        if (check_choice(what, k, r->choice[r->n++]))
            return 1;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

int tune_space_parse(const char *what, const char *text, tune_space *sp)
{
    char item[512];
    for (const char *p = text; *p;) {
        if (*p == '#') { /* a comment, to the line's end */
            while (*p && *p != '\n')
                p++;
            continue;
        }
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            p++;
            continue;
        }
        size_t n = strcspn(p, " \t\r\n#");
        if (n >= sizeof item)
            return fail("%s: an item of more than %zu characters", what, sizeof item - 1);
        memcpy(item, p, n);
        item[n] = 0;
        if (parse_item(what, item, sp))
            return 1;
        p += n;
    }
    return 0;
}

static void draw(const tune_range *r, uint64_t u, char *out, size_t len)
{
    const double f = (double)(u >> 11) / 9007199254740992.0; /* [0, 1) */
    if (r->kind == 1)
        snprintf(out, len, "%.9g", (double)(float)exp(log(r->lo) + f * (log(r->hi) - log(r->lo))));
    else if (r->kind == 2)
        snprintf(out, len, "%.9g", (double)(float)(r->lo + f * (r->hi - r->lo)));
    else
        snprintf(out, len, "%s", r->choice[u % r->n]);
}

void tune_space_sample(const tune_space *sp, uint64_t study_seed, uint64_t t, tune_config *c)
{
    uint64_t s = study_seed * 0xD1B54A32D192ED03ull ^ (t + 1) * 0x9E3779B97F4A7C15ull;
    char v[TUNE_KEYS][48];
    for (size_t k = 0; k < TUNE_KEYS; k++) {
        const uint64_t u = mix(&s); /* drawn for every key: the others' values do not move with this one */
        v[k][0] = 0;
        if (sp->key[k].given)
            draw(&sp->key[k], u, v[k], sizeof v[k]);
    }
    memset(c, 0, sizeof *c);
    c->optimizer = NTPU_OPT_ADAM;
    if (v[K_OPT][0])
        ntpu_optimizer_parse(v[K_OPT], &c->optimizer);
    const ntpu_optim_config d = ntpu_optim_defaults(c->optimizer);
    c->lr = v[K_LR][0] ? strtof(v[K_LR], NULL) : d.lr;
    c->weight_decay = v[K_WD][0] ? strtof(v[K_WD], NULL) : d.weight_decay;
    c->momentum = v[K_MOM][0] ? strtof(v[K_MOM], NULL) : d.momentum;
    c->batch = v[K_BATCH][0] ? (unsigned)strtoul(v[K_BATCH], NULL, 10) : 64;
    if (!v[K_HIDDEN][0] || widths(v[K_HIDDEN], c->hidden, &c->n_hidden) != 0) {
        c->hidden[0] = 256;
        c->n_hidden = 1;
    }
}

void tune_space_format(const tune_space *sp, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t k = 0; k < TUNE_KEYS && at < len; k++) {
        const tune_range *r = &sp->key[k];
        if (!r->given)
            continue;
        at += (size_t)snprintf(buf + at, len - at, "%s%s=", at ? " " : "", tune_key_names[k]);
        if (r->kind && at < len)
            at +=
                (size_t)snprintf(buf + at, len - at, "%s:%.17g:%.17g", r->kind == 1 ? "log" : "uniform", r->lo, r->hi);
        for (size_t i = 0; !r->kind && i < r->n && at < len; i++)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "," : "", r->choice[i]);
    }
}

void tune_config_format(const tune_config *c, char *buf, size_t len)
{
    int at = snprintf(buf, len, "lr=%.9g batch=%u optimizer=%s weight_decay=%.9g momentum=%.9g hidden=", c->lr,
                      c->batch, ntpu_optimizer_name(c->optimizer), c->weight_decay, c->momentum);
    for (size_t i = 0; i < c->n_hidden && at > 0 && (size_t)at < len; i++)
        at += snprintf(buf + at, len - (size_t)at, "%s%u", i ? "-" : "", c->hidden[i]);
}
