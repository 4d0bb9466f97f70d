/* SPDX-License-Identifier: Apache-2.0 */
/* safetensors reading and atomic writing (format: see ntpu/safetensors.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "io/io.h"
#include "io/outfile.h"
#include "io/sizes.h"
#include "ntpu/safetensors.h"

#define ST_MAX_HEADER (100u << 20) /* the format's own limit on the JSON header */

static size_t dtype_size(const char *d)
{
    static const struct {
        const char *name;
        size_t size;
    } table[] = {
        {"F64", 8}, {"F32", 4}, {"BF16", 2}, {"F16", 2}, {"I64", 8}, {"I32", 4},  {"I16", 2},
        {"I8", 1},  {"U64", 8}, {"U32", 4},  {"U16", 2}, {"U8", 1},  {"BOOL", 1},
    };
    for (size_t i = 0; d && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(d, table[i].name) == 0)
            return table[i].size;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* *dup = the first name (in sorted order) that two of the n tensors share, or NULL: n log n, for files
 * of many tensors. 0, or -1 when out of memory. */
static int duplicate_name(const ntpu_st_tensor *t, size_t n, const char **dup)
{
    const char **names = malloc((n ? n : 1) * sizeof *names);
    if (!names)
        return -1;
    for (size_t i = 0; i < n; i++)
        names[i] = t[i].name;
    qsort(names, n, sizeof *names, by_name);
    *dup = NULL;
    for (size_t i = 1; i < n && !*dup; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            *dup = names[i];
    free(names);
    return 0;
}

ntpu_status ntpu_safetensors_write_err(const char *path, const ntpu_st_tensor *t, size_t n, const char *const *meta,
                                       char *err, size_t errlen)
{
    ntpu_outfile o;
    ntpu_status st = ntpu_safetensors_write_open(path, t, n, meta, &o, err, errlen);
    return st == NTPU_OK ? ntpu_outfile_commit(&o, err, errlen) : st;
}

ntpu_status ntpu_safetensors_write_open(const char *path, const ntpu_st_tensor *t, size_t n, const char *const *meta,
                                        ntpu_outfile *o, char *err, size_t errlen)
{
    if (!path || (n && !t))
        return ntpu_errst(err, errlen, NTPU_ERR_INVALID_ARG, "safetensors: no path or tensors");
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "safetensors: out of memory");
    ntpu_status st = NTPU_OK;
    if (meta && meta[0]) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        for (size_t i = 0; m && meta[i] && meta[i + 1]; i += 2)
            cJSON_AddStringToObject(m, meta[i], meta[i + 1]);
    }
    const char *dup = NULL;
    for (size_t i = 0; i < n && st == NTPU_OK; i++)
        if (!t[i].name || !t[i].name[0] || strcmp(t[i].name, "__metadata__") == 0)
            st = ntpu_errst(err, errlen, NTPU_ERR_INVALID_ARG, "safetensors: tensor %zu has an empty or reserved name",
                            i);
    if (st == NTPU_OK && duplicate_name(t, n, &dup))
        st = ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "safetensors: out of memory");
    else if (st == NTPU_OK && dup)
        st = ntpu_errst(err, errlen, NTPU_ERR_INVALID_ARG, "safetensors: two tensors are named %s", dup);
    size_t offset = 0;
    for (size_t i = 0; i < n && st == NTPU_OK; i++) {
        size_t es = dtype_size(t[i].dtype), count = 1, bytes = 0;
        int fits = t[i].rank <= NTPU_ST_MAX_RANK;
        for (unsigned r = 0; fits && r < t[i].rank; r++)
            fits = !ntpu_size_mul(count, t[i].shape[r], &count);
        fits = fits && !ntpu_size_mul(count, es, &bytes);
        if (!es || !fits || bytes != t[i].nbytes || (t[i].nbytes && !t[i].data))
            st = ntpu_errst(err, errlen, NTPU_ERR_INVALID_ARG, "safetensors: tensor %s: bad dtype, shape or size",
                            t[i].name);
        else if (ntpu_size_add(offset, t[i].nbytes, &bytes))
            st = ntpu_errst(err, errlen, NTPU_ERR_INVALID_ARG,
                            "safetensors: the tensors are more data than this build can address");
        else {
            cJSON *o = cJSON_AddObjectToObject(root, t[i].name);
            cJSON_AddStringToObject(o, "dtype", t[i].dtype);
            cJSON *shape = cJSON_AddArrayToObject(o, "shape");
            for (unsigned r = 0; r < t[i].rank; r++)
                cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[r]));
            cJSON *off = cJSON_AddArrayToObject(o, "data_offsets");
            cJSON_AddItemToArray(off, cJSON_CreateNumber((double)offset));
            cJSON_AddItemToArray(off, cJSON_CreateNumber((double)bytes));
            offset = bytes;
        }
    }
    char *json = st == NTPU_OK ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (st != NTPU_OK)
        return st;
    if (!json)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "safetensors: out of memory");

    /* Pad the header with spaces so the data starts 8-byte aligned. */
    size_t jlen = strlen(json), hlen = (jlen + 7) & ~(size_t)7;
    uint8_t prefix[8];
    for (int i = 0; i < 8; i++)
        prefix[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    if ((st = ntpu_outfile_open(o, path, err, errlen)) != NTPU_OK) {
        free(json);
        return st;
    }
    static const char spaces[8] = "        ";
    int bad = ntpu_write_all(o->fd, prefix, 8) || ntpu_write_all(o->fd, json, jlen) ||
              ntpu_write_all(o->fd, spaces, hlen - jlen);
    for (size_t i = 0; !bad && i < n; i++)
        bad = ntpu_write_all(o->fd, t[i].data, t[i].nbytes);
    free(json);
    if (bad) {
        st = ntpu_errst(err, errlen, NTPU_ERR_FILE, "%s: cannot write: %s", path, strerror(errno));
        ntpu_outfile_abort(o);
        return st;
    }
    return NTPU_OK;
}

struct ntpu_safetensors {
    uint8_t *file;
    size_t size;
    ntpu_st_tensor *tensors;
    size_t count;
    cJSON *header;
};

void ntpu_safetensors_free(ntpu_safetensors *st)
{
    if (!st)
        return;
    cJSON_Delete(st->header);
    free(st->tensors);
    free(st->file);
    free(st);
}

/* A JSON number that is a whole number from 0 to 2^53 (beyond, a double has gaps). */
static int whole(const cJSON *d)
{
    return cJSON_IsNumber(d) && d->valuedouble >= 0 && d->valuedouble <= 9007199254740992.0 &&
           d->valuedouble == floor(d->valuedouble);
}

static ntpu_status parse(ntpu_safetensors *st, const char *path, char *err, size_t errlen)
{
    if (st->size < 8)
        return ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: truncated: no header length", path);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | st->file[i];
    if (hlen > ST_MAX_HEADER || hlen > st->size - 8)
        return ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                          "%s: truncated or corrupt: header of %llu bytes in a %zu-byte file", path,
                          (unsigned long long)hlen, st->size);
    st->header = cJSON_ParseWithLength((const char *)st->file + 8, (size_t)hlen);
    if (!cJSON_IsObject(st->header))
        return ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: header is not a JSON object", path);
    const uint8_t *data = st->file + 8 + hlen;
    size_t data_size = st->size - 8 - (size_t)hlen;
    st->tensors = calloc((size_t)cJSON_GetArraySize(st->header) + 1, sizeof *st->tensors);
    if (!st->tensors)
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "%s: out of memory", path);
    const cJSON *item;
    cJSON_ArrayForEach(item, st->header)
    {
        if (strcmp(item->string, "__metadata__") == 0)
            continue;
        ntpu_st_tensor *t = &st->tensors[st->count];
        const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
        const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
        size_t es = cJSON_IsString(dtype) ? dtype_size(dtype->valuestring) : 0;
        if (!es || !cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > NTPU_ST_MAX_RANK || !cJSON_IsArray(offs) ||
            cJSON_GetArraySize(offs) != 2)
            return ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: tensor %s: bad dtype, shape or data_offsets", path,
                              item->string);
        size_t count = 1;
        t->rank = 0;
        const cJSON *d;
        cJSON_ArrayForEach(d, shape)
        {
            /* a whole number, and the product within the data: no fraction, no overflow */
            if (!whole(d) || (d->valuedouble > 0 && (double)count > (double)data_size / d->valuedouble))
                return ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: tensor %s: bad shape", path, item->string);
            t->shape[t->rank++] = (size_t)d->valuedouble;
            count *= (size_t)d->valuedouble;
        }
        const cJSON *bj = cJSON_GetArrayItem(offs, 0), *ej = cJSON_GetArrayItem(offs, 1);
        if (!whole(bj) || !whole(ej))
            return ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: tensor %s: data_offsets are not two whole numbers",
                              path, item->string);
        double b = bj->valuedouble, e = ej->valuedouble;
        size_t bytes = 0;
        if (!(e >= b && e <= (double)data_size) || ntpu_size_mul(count, es, &bytes) || (size_t)(e - b) != bytes)
            return ntpu_errst(err, errlen, NTPU_ERR_FORMAT,
                              "%s: tensor %s: data range [%.0f, %.0f) outside the %zu data bytes "
                              "or not matching its shape (file truncated?)",
                              path, item->string, b, e, data_size);
        t->name = item->string;
        t->dtype = dtype->valuestring;
        t->data = data + (size_t)b;
        t->nbytes = (size_t)(e - b);
        st->count++;
    }
    const char *dup;
    if (duplicate_name(st->tensors, st->count, &dup))
        return ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "%s: out of memory", path);
    return dup ? ntpu_errst(err, errlen, NTPU_ERR_FORMAT, "%s: tensor %s appears twice", path, dup) : NTPU_OK;
}

ntpu_status ntpu_safetensors_read_err(const char *path, ntpu_safetensors **out, char *err, size_t errlen)
{
    if (!out)
        return ntpu_errst(err, errlen, NTPU_ERR_INVALID_ARG, "safetensors: nowhere to put the result");
    *out = NULL;
    if (!path)
        return ntpu_errst(err, errlen, NTPU_ERR_INVALID_ARG, "safetensors: no path");
    FILE *f = fopen(path, "rb");
    if (!f)
        return ntpu_errst(err, errlen, NTPU_ERR_FILE, "%s: %s", path, strerror(errno));
    ntpu_safetensors *st = calloc(1, sizeof *st);
    ntpu_status s = NTPU_OK;
    long size = -1;
    struct stat sb;
    if (!st)
        s = ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "%s: out of memory", path);
    else if (fstat(fileno(f), &sb) != 0)
        s = ntpu_errst(err, errlen, NTPU_ERR_FILE, "%s: cannot read: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode)) /* a directory opens, and seeks to LONG_MAX */
        s = ntpu_errst(err, errlen, NTPU_ERR_FILE, "%s: not a file%s", path,
                       S_ISDIR(sb.st_mode) ? " (a directory)" : "");
    else if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        s = ntpu_errst(err, errlen, NTPU_ERR_FILE, "%s: cannot read: %s", path, strerror(errno));
    else if (!(st->file = malloc((size_t)size + 1)))
        s = ntpu_errst(err, errlen, NTPU_ERR_NO_MEMORY, "%s: out of memory", path);
    else if (fread(st->file, 1, (size_t)size, f) != (size_t)size)
        s = ntpu_errst(err, errlen, NTPU_ERR_FILE, "%s: read error", path);
    fclose(f);
    if (s == NTPU_OK) {
        st->size = (size_t)size;
        s = parse(st, path, err, errlen);
    }
    if (s != NTPU_OK) {
        ntpu_safetensors_free(st);
        return s;
    }
    *out = st;
    return NTPU_OK;
}

/* The public calls: made on no device, their detail is the thread's (ntpu_last_error(NULL)). */
ntpu_status ntpu_safetensors_write(const char *path, const ntpu_st_tensor *t, size_t n, const char *const *meta)
{
    return ntpu_safetensors_write_err(path, t, n, meta, ntpu_thread_error(), NTPU_THREAD_ERRMSG_LEN);
}

ntpu_status ntpu_safetensors_read(const char *path, ntpu_safetensors **out)
{
    return ntpu_safetensors_read_err(path, out, ntpu_thread_error(), NTPU_THREAD_ERRMSG_LEN);
}

const ntpu_st_tensor *ntpu_safetensors_find(const ntpu_safetensors *st, const char *name)
{
    for (size_t i = 0; st && name && i < st->count; i++)
        if (strcmp(st->tensors[i].name, name) == 0)
            return &st->tensors[i];
    return NULL;
}

size_t ntpu_safetensors_count(const ntpu_safetensors *st)
{
    return st ? st->count : 0;
}

const ntpu_st_tensor *ntpu_safetensors_at(const ntpu_safetensors *st, size_t i)
{
    return st && i < st->count ? &st->tensors[i] : NULL;
}

const char *ntpu_safetensors_meta(const ntpu_safetensors *st, const char *key)
{
    if (!st || !key)
        return NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(st->header, "__metadata__");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
