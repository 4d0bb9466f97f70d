/* SPDX-License-Identifier: Apache-2.0 */
/* IDX reader (the MNIST family's format): a big-endian header of magic
 * (0, 0, type, rank) and `rank` u32 dimensions, then the data. zlib's gz* calls
 * read plain and gzip'd files alike. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "internal.h"
#include "io/sizes.h"
#include "ntpu/data.h"

#define IDX_TYPE_UBYTE 0x08

/* Opens DIR/NAME or DIR/NAME.gz, whichever exists; path receives the name used. */
static gzFile open_either(const char *dir, const char *name, char *path, size_t pathlen)
{
    snprintf(path, pathlen, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(path, pathlen, "%s/%s.gz", dir, name);
        f = fopen(path, "rb");
    }
    if (!f)
        return NULL;
    fclose(f);
    return gzopen(path, "rb");
}

/* Reads an IDX file of unsigned bytes with the given rank. dims receives the
 * dimensions; *data a malloc'd array of their product. */
static ntpu_status read_idx(const char *dir, const char *name, unsigned rank, size_t limit, uint32_t dims[3],
                            uint8_t **data, char *err, size_t errlen)
{
    char path[4096];
    gzFile gz = open_either(dir, name, path, sizeof path);
    if (!gz)
        return ntpu_errst(err, errlen, NTPU_ERR_FILE, "%s/%s: no such file (nor %s.gz)", dir, name, name);
    ntpu_status st = NTPU_OK;
    uint8_t hdr[4 + 4 * 3];
    int got = gzread(gz, hdr, 4);
    if (got != 4 || hdr[0] != 0 || hdr[1] != 0) {
        st = ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: not an IDX file (bad magic)", path);
        goto out;
    }
    if (hdr[2] != IDX_TYPE_UBYTE || hdr[3] != rank) {
        st = ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: IDX type 0x%02x rank %u, expected unsigned bytes of rank %u",
                        path, hdr[2], hdr[3], rank);
        goto out;
    }
    if (gzread(gz, hdr + 4, 4 * rank) != (int)(4 * rank)) {
        st = ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: truncated header", path);
        goto out;
    }
    size_t total = 1;
    for (unsigned i = 0; i < rank; i++) {
        const uint8_t *p = hdr + 4 + 4 * i;
        dims[i] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (dims[i] == 0 || (i > 0 && dims[i] > 65536)) {
            st = ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: dimension %u is %u", path, i, dims[i]);
            goto out;
        }
    }
    if (limit && dims[0] > limit)
        dims[0] = (uint32_t)limit;
    for (unsigned i = 0; i < rank; i++)
        if (ntpu_size_mul(total, dims[i], &total)) {
            st = ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                            "%s: dimensions %u x %u x %u are more data than this build can address", path, dims[0],
                            rank > 1 ? dims[1] : 1, rank > 2 ? dims[2] : 1);
            goto out;
        }
    /* The buffer grows with the data read, so that a header that claims more than the file holds
     * (whose size a .gz does not tell) gives "truncated", not a huge allocation first. */
    size_t have = 0, cap = 0;
    uint8_t *buf = NULL;
    while (have < total) {
        if (have == cap) {
            size_t ncap = cap ? (cap > total / 2 ? total : 2 * cap) : (total < (1u << 24) ? total : (1u << 24));
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                st = ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "%s: out of memory for %zu bytes", path, ncap);
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        size_t want = cap - have > (1u << 30) ? (1u << 30) : cap - have;
        int n = gzread(gz, buf + have, (unsigned)want);
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    if (have != total) {
        int zerr;
        const char *msg = gzerror(gz, &zerr);
        size_t pl = strlen(path);
        if (zerr < 0 && !strncmp(msg, path, pl) && msg[pl] == ':') /* zlib puts the path in front */
            msg += pl + (msg[pl + 1] == ' ' ? 2 : 1);
        if (zerr < 0)
            st = ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: corrupt compressed data after %zu of %zu data bytes: %s",
                            path, have, total, msg);
        else
            st = ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: truncated: %zu of %zu data bytes", path, have, total);
        free(buf);
        goto out;
    }
    *data = buf;
out:
    gzclose(gz);
    return st;
}

ntpu_status ntpu_dataset_load(const char *dir, const char *split, size_t limit, ntpu_dataset *out)
{
    char *err = ntpu_thread_error(); /* a call on no device: its detail is the thread's (ntpu_last_error(NULL)) */
    const size_t errlen = NTPU_THREAD_ERRMSG_LEN;
    if (!out)
        return ntpu_errst(err, errlen, NTPU_ERR_INVALID_ARG, "no dataset to fill");
    memset(out, 0, sizeof *out);
    if (!dir || !split || (strcmp(split, "train") && strcmp(split, "test")))
        return ntpu_errst(err, errlen, NTPU_ERR_INVALID_ARG, "split must be \"train\" or \"test\"");
    const char *prefix = strcmp(split, "train") == 0 ? "train" : "t10k";
    char images_name[64], labels_name[64];
    snprintf(images_name, sizeof images_name, "%s-images-idx3-ubyte", prefix);
    snprintf(labels_name, sizeof labels_name, "%s-labels-idx1-ubyte", prefix);

    uint32_t idims[3], ldims[3];
    uint8_t *pixels = NULL, *labels = NULL;
    ntpu_status st = read_idx(dir, images_name, 3, limit, idims, &pixels, err, errlen);
    if (st == NTPU_OK)
        st = read_idx(dir, labels_name, 1, limit, ldims, &labels, err, errlen);
    if (st == NTPU_OK && idims[0] != ldims[0])
        st = ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s/%s: %u labels for %u images", dir, labels_name, ldims[0],
                        idims[0]);
    if (st != NTPU_OK) {
        free(pixels);
        free(labels);
        return st;
    }
    size_t count = idims[0], features = (size_t)idims[1] * idims[2], bytes = 0; /* read_idx checked count x features */
    if (ntpu_size_mul(count * features, sizeof(float), &bytes)) {
        free(pixels);
        free(labels);
        return ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                          "%s/%s: %zu images of %zu pixels are more floats than this build can address", dir,
                          images_name, count, features);
    }
    float *images = malloc(bytes);
    if (!images) {
        free(pixels);
        free(labels);
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "out of memory for %zu images", count);
    }
    for (size_t i = 0; i < count * features; i++)
        images[i] = (float)pixels[i] / 255.0f;
    free(pixels);
    unsigned classes = 0;
    for (size_t i = 0; i < count; i++)
        if (labels[i] + 1u > classes)
            classes = labels[i] + 1u;
    *out = (ntpu_dataset){.count = count,
                          .rows = idims[1],
                          .cols = idims[2],
                          .features = features,
                          .classes = classes,
                          .images = images,
                          .labels = labels};
    return NTPU_OK;
}

void ntpu_dataset_free(ntpu_dataset *ds)
{
    if (!ds)
        return;
    free(ds->images);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}
