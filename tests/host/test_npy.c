/* SPDX-License-Identifier: Apache-2.0 */
/* .npy reading and writing (host/src/io/npy.c): round trips, files as NumPy 1.24
 * writes them, every kind of malformed file, and the no-half-written-file rule. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ntpu/ntpu.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/ntpu_npy_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

TestSuite(npy, .init = make_dir, .fini = remove_dir);

static const char *path_of(const char *name)
{
    static char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void write_bytes(const char *name, const void *buf, size_t n)
{
    FILE *f = fopen(path_of(name), "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
}

static size_t read_bytes(const char *name, uint8_t *buf, size_t cap)
{
    FILE *f = fopen(path_of(name), "rb");
    cr_assert_not_null(f);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* A .npy file of the given version with this header dict (padded like NumPy)
 * followed by data. */
static void make_npy(const char *name, int major, const char *dict, const void *data, size_t n)
{
    uint8_t buf[4096];
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (pre + dl + 1 + 63) / 64 * 64;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[7] = 0;
    size_t hl = total - pre;
    buf[8] = (uint8_t)hl;
    buf[9] = (uint8_t)(hl >> 8);
    if (major != 1)
        buf[10] = buf[11] = 0;
    memcpy(buf + pre, dict, dl);
    memset(buf + pre + dl, ' ', total - pre - dl - 1);
    buf[total - 1] = '\n';
    memcpy(buf + total, data, n);
    write_bytes(name, buf, total + n);
}

/* np.save("x.npy", np.array([[1, -2, 3], [-128, 127, 0]], dtype=np.int8)), NumPy 1.24. */
static const uint8_t numpy_i8[134] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63, 0x72,
    0x27, 0x3a, 0x20, 0x27, 0x7c, 0x69, 0x31, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74, 0x72, 0x61,
    0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73, 0x65, 0x2c, 0x20,
    0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x32, 0x2c, 0x20, 0x33, 0x29, 0x2c, 0x20,
    0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a, 0x01, 0xfe, 0x03, 0x80, 0x7f, 0x00};

Test(npy, reads_numpy_int8_file)
{
    write_bytes("a.npy", numpy_i8, sizeof numpy_i8);
    ntpu_tensor t;
    cr_assert_eq(ntpu_npy_read(path_of("a.npy"), &t), NTPU_OK, "%s", ntpu_last_error(NULL));
    cr_assert_eq(t.elem, NTPU_ELEM_INT8);
    cr_assert_eq(t.ndim, 2);
    cr_assert_eq(t.shape[0], 2);
    cr_assert_eq(t.shape[1], 3);
    const int8_t want[6] = {1, -2, 3, -128, 127, 0};
    cr_assert_arr_eq(t.data, want, sizeof want);
    ntpu_tensor_free(&t);
    cr_assert_null(t.data);
}

Test(npy, writes_exactly_what_numpy_writes)
{
    const int8_t v[6] = {1, -2, 3, -128, 127, 0};
    ntpu_tensor t = {NTPU_ELEM_INT8, 2, {2, 3}, (void *)v};
    cr_assert_eq(ntpu_npy_write(path_of("b.npy"), &t), NTPU_OK, "%s", ntpu_last_error(NULL));
    uint8_t got[512];
    size_t n = read_bytes("b.npy", got, sizeof got);
    cr_assert_eq(n, sizeof numpy_i8);
    cr_assert_arr_eq(got, numpy_i8, sizeof numpy_i8);
}

Test(npy, version_2_and_3_headers)
{
    const float f[3] = {1.5f, -0.0f, 3e38f};
    make_npy("v2.npy", 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f, sizeof f);
    const int32_t i[4] = {1, -1, INT32_MAX, INT32_MIN};
    make_npy("v3.npy", 3, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", i, sizeof i);
    ntpu_tensor t;
    cr_assert_eq(ntpu_npy_read(path_of("v2.npy"), &t), NTPU_OK, "%s", ntpu_last_error(NULL));
    cr_assert_eq(t.elem, NTPU_ELEM_FLOAT32);
    cr_assert_eq(t.ndim, 1);
    cr_assert_eq(t.shape[0], 3);
    cr_assert_eq(t.shape[1], 1);
    cr_assert_arr_eq(t.data, f, sizeof f); /* bit for bit, -0 included */
    ntpu_tensor_free(&t);
    cr_assert_eq(ntpu_npy_read(path_of("v3.npy"), &t), NTPU_OK, "%s", ntpu_last_error(NULL));
    cr_assert_eq(t.elem, NTPU_ELEM_INT32);
    cr_assert_arr_eq(t.data, i, sizeof i);
    ntpu_tensor_free(&t);
}

Test(npy, accepts_header_variations)
{
    /* Other key order, double quotes, no trailing comma, Python 2 longs, '<i1'. */
    const int8_t v[2] = {5, -5};
    make_npy("h1.npy", 1, "{\"shape\": (1L, 2L), \"fortran_order\": False, \"descr\": \"<i1\"}", v, 2);
    ntpu_tensor t;
    cr_assert_eq(ntpu_npy_read(path_of("h1.npy"), &t), NTPU_OK, "%s", ntpu_last_error(NULL));
    cr_assert_eq(t.shape[0], 1);
    cr_assert_eq(t.shape[1], 2);
    cr_assert_arr_eq(t.data, v, 2);
    ntpu_tensor_free(&t);
}

Test(npy, round_trip_every_element_type)
{
    const ntpu_elem elems[] = {NTPU_ELEM_INT8, NTPU_ELEM_INT32, NTPU_ELEM_FLOAT32, NTPU_ELEM_UINT16};
    for (size_t e = 0; e < 4; e++) {
        for (int nd = 1; nd <= 2; nd++) {
            size_t rows = 37, cols = nd == 2 ? 23 : 1, es = ntpu_elem_size(elems[e]);
            uint8_t *data = malloc(rows * cols * es);
            for (size_t i = 0; i < rows * cols * es; i++)
                data[i] = (uint8_t)(i * 131 + e);
            ntpu_tensor t = {elems[e], nd, {rows, cols}, data}, r;
            cr_assert_eq(ntpu_npy_write(path_of("rt.npy"), &t), NTPU_OK, "%s", ntpu_last_error(NULL));
            cr_assert_eq(ntpu_npy_read(path_of("rt.npy"), &r), NTPU_OK, "%s", ntpu_last_error(NULL));
            cr_assert_eq(r.elem, elems[e]);
            cr_assert_eq(r.ndim, nd);
            cr_assert_eq(r.shape[0], rows);
            cr_assert_eq(r.shape[1], cols);
            cr_assert_arr_eq(r.data, data, rows * cols * es);
            ntpu_tensor_free(&r);
            free(data);
        }
    }
}

Test(npy, empty_array)
{
    ntpu_tensor t = {NTPU_ELEM_FLOAT32, 2, {0, 4}, NULL}, r;
    cr_assert_eq(ntpu_npy_write(path_of("e.npy"), &t), NTPU_OK, "%s", ntpu_last_error(NULL));
    cr_assert_eq(ntpu_npy_read(path_of("e.npy"), &r), NTPU_OK, "%s", ntpu_last_error(NULL));
    cr_assert_eq(r.shape[0], 0);
    cr_assert_eq(r.shape[1], 4);
    ntpu_tensor_free(&r);
}

/* Reading `name` fails with st and a message containing `what`. */
static void expect_bad(const char *name, ntpu_status st, const char *what)
{
    ntpu_tensor t;
    memset(&t, 0xAB, sizeof t);
    cr_assert_eq(ntpu_npy_read(path_of(name), &t), st, "%s: %s", name, ntpu_last_error(NULL));
    cr_assert_null(t.data, "%s: output not zeroed", name);
    const char *err = ntpu_last_error(NULL); /* a call on no device: the thread's text */
    cr_assert_not_null(strstr(err, what), "%s: message '%s' lacks '%s'", name, err, what);
    cr_assert_not_null(strstr(err, name), "%s: message '%s' lacks the file name", name, err);
}

Test(npy, malformed_files)
{
    const uint8_t d[16] = {0};
    write_bytes("magic.npy", "\x93NUMPX\x01\x00\x10\x00{}", 12);
    expect_bad("magic.npy", NTPU_ERR_FORMAT, "bad magic");
    write_bytes("tiny.npy", "\x93NU", 3);
    expect_bad("tiny.npy", NTPU_ERR_FORMAT, "bad magic");
    write_bytes("ver.npy", "\x93NUMPY\x04\x00\x10\x00", 10);
    expect_bad("ver.npy", NTPU_ERR_FORMAT, "version 4.0");
    write_bytes("trunc.npy", numpy_i8, 60);
    expect_bad("trunc.npy", NTPU_ERR_FORMAT, "truncated");
    write_bytes("short.npy", numpy_i8, sizeof numpy_i8 - 1);
    expect_bad("short.npy", NTPU_ERR_FORMAT, "shorter than the shape");
    make_npy("fortran.npy", 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2), }", d, 16);
    expect_bad("fortran.npy", NTPU_ERR_FORMAT, "fortran_order");
    make_npy("big.npy", 1, "{'descr': '>i4', 'fortran_order': False, 'shape': (2, 2), }", d, 16);
    expect_bad("big.npy", NTPU_ERR_FORMAT, "big-endian");
    make_npy("f8.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", d, 16);
    expect_bad("f8.npy", NTPU_ERR_FORMAT,
               "unsupported dtype '<f8' (expected int8, int32, float32 or uint16; save "
               "a.astype(numpy.float32))");
    make_npy("i8.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", d, 16);
    expect_bad("i8.npy", NTPU_ERR_FORMAT, "uint16; save a.astype(numpy.int8) for int8 inputs)");
    make_npy("struct.npy", 1, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }", d, 16);
    expect_bad("struct.npy", NTPU_ERR_FORMAT, "descr");
    make_npy("rank3.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2, 2), }", d, 16);
    expect_bad("rank3.npy", NTPU_ERR_FORMAT, "3-D");
    make_npy("rank0.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }", d, 16);
    expect_bad("rank0.npy", NTPU_ERR_FORMAT, "0-D");
    make_npy("nokey.npy", 1, "{'descr': '<i4', 'shape': (2, 2), }", d, 16);
    expect_bad("nokey.npy", NTPU_ERR_FORMAT, "fortran_order");
    make_npy("extra.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'x': 1}", d, 16);
    expect_bad("extra.npy", NTPU_ERR_FORMAT, "'x'");
    make_npy("notdict.npy", 1, "('descr', '<i4')", d, 16);
    expect_bad("notdict.npy", NTPU_ERR_FORMAT, "not a dict");
    make_npy("junk.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), } x", d, 16);
    expect_bad("junk.npy", NTPU_ERR_FORMAT, "junk");
    make_npy("shape.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2), }", d, 16);
    expect_bad("shape.npy", NTPU_ERR_FORMAT, "shape");
    make_npy("bool.npy", 1, "{'descr': '<i4', 'fortran_order': 0, 'shape': (2,), }", d, 16);
    expect_bad("bool.npy", NTPU_ERR_FORMAT, "True or False");
    expect_bad("missing.npy", NTPU_ERR_FILE, "No such file");
}

Test(npy, bad_arguments)
{
    ntpu_tensor t;
    cr_assert_eq(ntpu_npy_read(NULL, &t), NTPU_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(ntpu_last_error(NULL), "NULL argument"), "%s", ntpu_last_error(NULL));
    cr_assert_eq(ntpu_npy_read(path_of("x"), NULL), NTPU_ERR_INVALID_ARG);
    int32_t v = 0;
    ntpu_tensor bad_rank = {NTPU_ELEM_INT32, 3, {1, 1}, &v};
    cr_assert_eq(ntpu_npy_write(path_of("x.npy"), &bad_rank), NTPU_ERR_INVALID_ARG);
    ntpu_tensor bad_elem = {(ntpu_elem)9, 1, {1, 1}, &v};
    cr_assert_eq(ntpu_npy_write(path_of("x.npy"), &bad_elem), NTPU_ERR_INVALID_ARG);
    ntpu_tensor no_data = {NTPU_ELEM_INT32, 1, {4, 1}, NULL};
    cr_assert_eq(ntpu_npy_write(path_of("x.npy"), &no_data), NTPU_ERR_INVALID_ARG);
    cr_assert_eq(access(path_of("x.npy"), F_OK), -1);
    ntpu_tensor_free(NULL);
}

/* Count directory entries other than . and .. */
static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(npy, writes_atomically)
{
    int32_t v[4] = {1, 2, 3, 4};
    ntpu_tensor t = {NTPU_ELEM_INT32, 2, {2, 2}, v}, r;
    cr_assert_eq(ntpu_npy_write(path_of("c.npy"), &t), NTPU_OK, "%s", ntpu_last_error(NULL));
    v[0] = 42;
    cr_assert_eq(ntpu_npy_write(path_of("c.npy"), &t), NTPU_OK, "%s", ntpu_last_error(NULL));
    cr_assert_eq(entries(), 1, "a temporary file was left behind");
    cr_assert_eq(ntpu_npy_read(path_of("c.npy"), &r), NTPU_OK, "%s", ntpu_last_error(NULL));
    cr_assert_eq(((int32_t *)r.data)[0], 42);
    ntpu_tensor_free(&r);
    /* A directory that does not exist: an error and no file anywhere. */
    cr_assert_eq(ntpu_npy_write(path_of("nodir/c.npy"), &t), NTPU_ERR_FILE);
    cr_assert_not_null(strstr(ntpu_last_error(NULL), "nodir/c.npy"), "%s", ntpu_last_error(NULL));
    /* Renaming over a directory fails after the data is written: the temporary goes away. */
    cr_assert_eq(mkdir(path_of("isdir.npy"), 0755), 0);
    cr_assert_eq(ntpu_npy_write(path_of("isdir.npy"), &t), NTPU_ERR_FILE);
    cr_assert_eq(entries(), 2, "a temporary file was left behind");
    rmdir(path_of("isdir.npy"));
}
