/* SPDX-License-Identifier: Apache-2.0 */
/* ntpu: the nanoTPU command-line tool (DESIGN.md section 3 is its contract).
 *
 *   ntpu [-d DEV] [--json] <command> [args]      (options may also follow the command)
 *
 * Every command takes -d DEV, --json and --help; an error is one line on stderr,
 * "ntpu: <reason>", and exit status 1. To add a command, write a function
 * `int cmd_x(common *cm, int argc, char **argv)` (in its own file for a big one,
 * declared in cli.h) and add a row to `commands` at the bottom. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* ------------------------------------------------------------------ info */

static const char info_help[] =
    "usage: ntpu info [-d DEV] [--json]\n"
    "\n"
    "Shows the device's identity and configuration: protocol version, array size,\n"
    "dtypes, features, buffer sizes, largest frame and clock.\n"
    "\n"
    "  -d, --device DEV  ref[:n=N,ub=R,wb=R,acc=R,os=R,pm=R,payload=B,novec=1,notra=1], vsim[:trace=FILE],\n"
    "                    vsim:rtl, vsim:board=icebreaker|ulx3s[,config=C,ber=P,drop=P,seed=N,trace=FILE],\n"
    "                    ftdi[:serial=S,board=icebreaker|ulx3s], usb[:serial=S]\n"
    "                    (default: $NTPU_DEVICE, else vsim)\n"
    "  --json            one JSON object on stdout\n";

static int cmd_info(common *cm, int argc, char **argv)
{
    char *pos[1];
    int npos;
    if (parse_args(argc, argv, cm, NULL, 0, pos, 0, &npos))
        return 1;
    if (cm->help) {
        fputs(info_help, stdout);
        return 0;
    }
    ntpu_device *dev = open_device(cm->device);
    if (!dev)
        return 1;
    ntpu_info in;
    ntpu_get_info(dev, &in);
    ntpu_close(dev);
    int i8 = !!(in.dtypes & NTPU_DTYPE_INT8_BIT), b16 = !!(in.dtypes & NTPU_DTYPE_BF16_BIT);
    static const struct {
        unsigned bit;
        const char *json, *text;
    } feats[] = {
        {NTPU_FEATURE_TRANSPOSE_BIT, "transpose", "transposed weight load"},
        {NTPU_FEATURE_TRANSPOSE_A_BIT, "transpose_a", "transposed activation stream"},
        {NTPU_FEATURE_VECTOR_BIT, "vector", "vector unit"},
        {NTPU_FEATURE_OPTIM_BIT, "optim", "on-device optimizer"},
        {NTPU_FEATURE_PROGRAM_BIT, "program", "stored programs"},
        {NTPU_FEATURE_ADAM_BIT, "adam", "on-device Adam"},
    };
    char fjson[128] = "", ftext[128] = "";
    for (size_t k = 0; k < sizeof feats / sizeof feats[0]; k++)
        if (in.features & feats[k].bit) {
            snprintf(fjson + strlen(fjson), sizeof fjson - strlen(fjson), "%s\"%s\"", *fjson ? "," : "", feats[k].json);
            snprintf(ftext + strlen(ftext), sizeof ftext - strlen(ftext), "%s%s", *ftext ? ", " : "", feats[k].text);
        }
    if (cm->json) {
        printf("{\"device\":");
        json_str(stdout, in.device);
        printf(",\"platform\":");
        json_str(stdout, in.platform_name);
        printf(",\"platform_id\":%u,\"version\":\"%u.%u\",\"rows\":%u,\"cols\":%u,\"dtypes\":[%s%s%s],"
               "\"features\":[%s],\"ub_rows\":%" PRIu32 ",\"wb_rows\":%" PRIu32 ",\"acc_rows\":%" PRIu32
               ",\"pm_rows\":%" PRIu32 ",\"os_rows\":%" PRIu32 ",\"max_payload\":%u,\"clock_hz\":%" PRIu32 "}\n",
               in.platform, in.version_major, in.version_minor, in.rows, in.cols, i8 ? "\"int8\"" : "",
               i8 && b16 ? "," : "", b16 ? "\"bf16\"" : "", fjson, in.ub_rows, in.wb_rows, in.acc_rows, in.pm_rows,
               in.os_rows, in.max_payload, in.clock_hz);
        return 0;
    }
    char b1[32], b2[32];
    printf("device       %s\n", in.device);
    printf("platform     %s\n", in.platform_name);
    printf("protocol     %u.%u\n", in.version_major, in.version_minor);
    printf("array        %u x %u\n", in.rows, in.cols);
    printf("dtypes       %s%s%s\n", i8 ? "int8" : "", i8 && b16 ? ", " : "", b16 ? "bf16" : "");
    printf("features     %s\n", *ftext ? ftext : "-");
    printf("UB           %s rows x %u lanes x 16 bit (%s)\n", grouped(in.ub_rows, b1, sizeof b1), in.cols,
           bytes_str((uint64_t)in.ub_rows * in.cols * 2, b2, sizeof b2));
    printf("WB           %s rows x %u lanes x 16 bit (%s)\n", grouped(in.wb_rows, b1, sizeof b1), in.cols,
           bytes_str((uint64_t)in.wb_rows * in.cols * 2, b2, sizeof b2));
    printf("ACC          %s rows x %u lanes x 32 bit (%s)\n", grouped(in.acc_rows, b1, sizeof b1), in.cols,
           bytes_str((uint64_t)in.acc_rows * in.cols * 4, b2, sizeof b2));
    if (in.pm_rows)
        printf("PM           %s rows x %u bytes (%s)\n", grouped(in.pm_rows, b1, sizeof b1), 2 * in.cols,
               bytes_str((uint64_t)in.pm_rows * in.cols * 2, b2, sizeof b2));
    if (in.os_rows)
        printf("OS           %s rows x %u lanes x 32 bit (%s)\n", grouped(in.os_rows, b1, sizeof b1), in.cols,
               bytes_str((uint64_t)in.os_rows * in.cols * 4, b2, sizeof b2));
    printf("max payload  %u bytes per frame\n", in.max_payload);
    if (in.clock_hz)
        printf("clock        %.3f MHz\n", in.clock_hz / 1e6);
    else
        printf("clock        - (simulation)\n");
    return 0;
}

/* ------------------------------------------------------------------ matmul */

static const char matmul_help[] =
    "usage: ntpu matmul [-d DEV] [--json] --dtype int8|bf16 A.npy B.npy -o C.npy\n"
    "\n"
    "C = A.B on the device, for any shapes (M x K).(K x N); the library tiles it.\n"
    "  int8: A, B int8 -> C int32 (exact, wrapping like NumPy's int32 matmul)\n"
    "  bf16: A, B float32, rounded to bf16 (nearest even) on the way in -> C float32;\n"
    "        uint16 inputs are taken as raw bf16 bit patterns\n"
    "A 1-D A is one row, a 1-D B one column (as numpy.matmul); C then drops that axis.\n"
    "Prints one line with the device's counters: cycles, MACs and array utilization. The MACs are\n"
    "the array's: K and N padded to multiples of its size, so more than M*K*N when they are not.\n"
    "\n"
    "  --dtype T         int8 or bf16 (default: from A's element type)\n"
    "  -o, --output F    where to write C (.npy)\n"
    "  -d, --device DEV  the device (default: $NTPU_DEVICE, else vsim)\n"
    "  --json            one JSON object on stdout instead of the line\n";

static const char *elem_name(ntpu_elem e)
{
    switch (e) {
    case NTPU_ELEM_INT8: return "int8";
    case NTPU_ELEM_INT32: return "int32";
    case NTPU_ELEM_FLOAT32: return "float32";
    case NTPU_ELEM_UINT16: return "uint16";
    }
    return "?";
}

static void shape_str(const ntpu_tensor *t, char *buf, size_t len)
{
    if (t->ndim == 1)
        snprintf(buf, len, "(%zu,)", t->shape[0]);
    else
        snprintf(buf, len, "(%zu, %zu)", t->shape[0], t->shape[1]);
}

/* Raw bf16 copy of a float32 or uint16 tensor's data (NULL if out of memory). */
static uint16_t *to_bf16(const ntpu_tensor *t)
{
    size_t count = t->shape[0] * t->shape[1];
    uint16_t *h = malloc(count * 2 + 1);
    for (size_t i = 0; h && i < count; i++)
        h[i] = t->elem == NTPU_ELEM_UINT16 ? ((const uint16_t *)t->data)[i]
                                           : ntpu_bf16_from_f32(((const float *)t->data)[i]);
    return h;
}

/* The command line of ntpu matmul. */
typedef struct matmul_opts {
    const char *dtype_arg;       /* "int8", "bf16", or NULL: from A's element type */
    const char *out_path;        /* C.npy */
    const char *a_path, *b_path; /* A.npy, B.npy */
} matmul_opts;

/* The command line into *o: 0, 1 after printing an error, or -1 after printing the help. */
static int matmul_args(common *cm, int argc, char **argv, matmul_opts *o)
{
    *o = (matmul_opts){0};
    const option opts[] = {{"--dtype", 0, &o->dtype_arg, NULL}, {"--output", 'o', &o->out_path, NULL}};
    char *pos[2];
    int npos;
    if (parse_args(argc, argv, cm, opts, 2, pos, 2, &npos))
        return 1;
    if (cm->help) {
        fputs(matmul_help, stdout);
        return -1;
    }
    if (npos != 2)
        return fail("matmul needs two input files, A.npy and B.npy (see --help)");
    if (!o->out_path)
        return fail("matmul needs -o C.npy (see --help)");
    if (o->dtype_arg && strcmp(o->dtype_arg, "int8") && strcmp(o->dtype_arg, "bf16"))
        return fail("unknown --dtype '%s' (expected int8 or bf16)", o->dtype_arg);
    o->a_path = pos[0];
    o->b_path = pos[1];
    return 0;
}

/* Reads A and B and picks the dtype (--dtype's, else from A's element type), checked against their
 * element types. 0, or 1 after printing the error. */
static int matmul_read(const matmul_opts *o, ntpu_tensor *A, ntpu_tensor *B, ntpu_dtype *dtype)
{
    if (ntpu_npy_read(o->a_path, A) || ntpu_npy_read(o->b_path, B))
        return fail("%s", ntpu_last_error(NULL));
    *dtype = o->dtype_arg ? (strcmp(o->dtype_arg, "bf16") ? NTPU_DTYPE_INT8 : NTPU_DTYPE_BF16)
                          : (A->elem == NTPU_ELEM_INT8 ? NTPU_DTYPE_INT8 : NTPU_DTYPE_BF16);
    const ntpu_tensor *in[2] = {A, B};
    const char *path[2] = {o->a_path, o->b_path};
    for (int i = 0; i < 2; i++) {
        ntpu_elem e = in[i]->elem;
        int good = *dtype == NTPU_DTYPE_INT8 ? e == NTPU_ELEM_INT8 : (e == NTPU_ELEM_FLOAT32 || e == NTPU_ELEM_UINT16);
        if (!good && !o->dtype_arg) /* the dtype came from A: say what the inputs may be */
            return fail("%s holds %s; matmul takes int8 inputs (int8 matmul) or float32 / uint16 bf16 bits (bf16)",
                        path[i], elem_name(e));
        if (!good)
            return fail("%s holds %s; --dtype %s needs %s", path[i], elem_name(e), dtype_name(*dtype),
                        *dtype == NTPU_DTYPE_INT8 ? "int8" : "float32 (or uint16 bf16 bits)");
    }
    return 0;
}

/* The product's sizes (M x K).(K x N) and C, allocated, by numpy.matmul's rules for 1-D operands.
 * 0, or 1 after printing the error. */
static int matmul_shape(const ntpu_tensor *A, const ntpu_tensor *B, ntpu_dtype dtype, size_t mkn[3], ntpu_tensor *C)
{
    size_t M = A->ndim == 1 ? 1 : A->shape[0], K = A->ndim == 1 ? A->shape[0] : A->shape[1];
    size_t KB = B->shape[0], N = B->ndim == 1 ? 1 : B->shape[1];
    char sa[48], sb[48];
    shape_str(A, sa, sizeof sa);
    shape_str(B, sb, sizeof sb);
    if (K != KB)
        return fail("shapes %s and %s do not match: A has %zu columns, B has %zu rows", sa, sb, K, KB);
    if (M == 0 || K == 0 || N == 0)
        return fail("shapes %s and %s: empty matrices are not supported", sa, sb);
    C->elem = dtype == NTPU_DTYPE_INT8 ? NTPU_ELEM_INT32 : NTPU_ELEM_FLOAT32;
    C->ndim = A->ndim == 1 || B->ndim == 1 ? (A->ndim == 1 && B->ndim == 1 ? 0 : 1) : 2;
    if (C->ndim == 0)
        return fail("both inputs are 1-D: a dot product gives a scalar, which .npy output here does not support");
    C->shape[0] = A->ndim == 1 ? N : M;
    C->shape[1] = C->ndim == 1 ? 1 : N;
    C->data = M <= SIZE_MAX / 4 / N ? malloc(M * N * 4) : NULL;
    if (!C->data)
        return fail("out of memory for C (%zu x %zu)", M, N);
    mkn[0] = M;
    mkn[1] = K;
    mkn[2] = N;
    return 0;
}

/* C = A.B on the device, C to the output file, and the counters' line (or JSON object). 0, or 1
 * after printing the error. */
static int matmul_on_device(const common *cm, const matmul_opts *o, ntpu_dtype dtype, const ntpu_tensor *A,
                            const ntpu_tensor *B, ntpu_tensor *C, const size_t mkn[3])
{
    const size_t M = mkn[0], K = mkn[1], N = mkn[2];
    void *abuf = NULL, *bbuf = NULL;
    int rc = 1;
    ntpu_device *dev = open_device(cm->device);
    if (!dev)
        return 1;
    ntpu_info info;
    ntpu_counters c0, c1;
    ntpu_link_stats l0, l1;
    ntpu_status st = ntpu_read_counters(dev, &c0, 1);
    ntpu_get_link_stats(dev, &l0);
    double t0 = now_s();
    if (st == NTPU_OK) {
        if (dtype == NTPU_DTYPE_INT8) {
            st = ntpu_matmul(dev, dtype, A->data, B->data, C->data, M, K, N);
        } else if (A->elem == NTPU_ELEM_FLOAT32 && B->elem == NTPU_ELEM_FLOAT32) {
            st = ntpu_matmul(dev, dtype, A->data, B->data, C->data, M, K, N);
        } else {
            abuf = to_bf16(A);
            bbuf = to_bf16(B);
            st = abuf && bbuf ? ntpu_matmul_bf16(dev, abuf, bbuf, C->data, M, K, N) : NTPU_ERR_NO_MEMORY;
        }
    }
    double secs = now_s() - t0;
    if (st == NTPU_OK)
        st = ntpu_read_counters(dev, &c1, 0);
    if (st != NTPU_OK) {
        fail("matmul on %s failed: %s", ntpu_get_info(dev, &info) == NTPU_OK ? info.device : "the device",
             ntpu_last_error(dev)[0] ? ntpu_last_error(dev) : ntpu_status_str(st));
        goto out;
    }
    ntpu_get_link_stats(dev, &l1);
    if (ntpu_npy_write(o->out_path, C)) {
        fail("%s", ntpu_last_error(NULL));
        goto out;
    }
    ntpu_get_info(dev, &info);
    double util = ntpu_counters_utilization(dev, &c1);
    uint64_t tx = l1.tx_bytes - l0.tx_bytes, rx = l1.rx_bytes - l0.rx_bytes;
    if (cm->json) {
        printf("{\"device\":");
        json_str(stdout, info.device);
        printf(",\"dtype\":\"%s\",\"m\":%zu,\"k\":%zu,\"n\":%zu,\"output\":", dtype_name(dtype), M, K, N);
        json_str(stdout, o->out_path);
        printf(",\"cycles\":%" PRIu64 ",\"macs\":%" PRIu64 ",\"utilization\":%.6f,\"seconds\":%.6f,"
               "\"link_tx_bytes\":%" PRIu64 ",\"link_rx_bytes\":%" PRIu64 ",\"link_recoveries\":%" PRIu64
               ",\"link_retransmits\":%" PRIu64 "}\n",
               c1.cycles, c1.macs, util, secs, tx, rx, l1.recoveries - l0.recoveries, l1.retransmits - l0.retransmits);
    } else {
        char b1[32], b2[32];
        printf("%s (%zux%zu).(%zux%zu) -> %s on %s: %s cycles, %s MACs, array utilization %.1f%%\n", dtype_name(dtype),
               M, K, K, N, o->out_path, info.device, grouped(c1.cycles, b1, sizeof b1), grouped(c1.macs, b2, sizeof b2),
               100.0 * util);
    }
    rc = 0;
out:
    ntpu_close(dev);
    free(abuf);
    free(bbuf);
    return rc;
}

static int cmd_matmul(common *cm, int argc, char **argv)
{
    matmul_opts o;
    int rc = matmul_args(cm, argc, argv, &o);
    if (rc)
        return rc > 0;
    ntpu_tensor A = {0}, B = {0}, C = {0};
    ntpu_dtype dtype = NTPU_DTYPE_INT8;
    size_t mkn[3] = {0};
    rc = matmul_read(&o, &A, &B, &dtype) || matmul_shape(&A, &B, dtype, mkn, &C) ||
         matmul_on_device(cm, &o, dtype, &A, &B, &C, mkn);
    ntpu_tensor_free(&A);
    ntpu_tensor_free(&B);
    ntpu_tensor_free(&C);
    return rc;
}

/* ------------------------------------------------------------------ main */

static const struct command {
    const char *name;
    const char *summary;
    int (*run)(common *cm, int argc, char **argv);
} commands[] = {
    {"info", "device identity and configuration", cmd_info},
    {"matmul", "C = A.B on the device, from and to .npy files", cmd_matmul},
    {"train", "train a model (--layers MLP, --arch SPEC) on an IDX dataset (Fashion-MNIST by default)", cmd_train},
    {"eval", "evaluate a checkpoint; --int8 runs quantized inference", cmd_eval},
    {"bench", "benchmark table: cycles, utilization, simulator speed, link traffic", cmd_bench},
    {"selftest", "short on-device check: ID block, link, memories, matmuls vs ref", cmd_selftest},
    {"tune", "hyperparameter search: random or ASHA over the -d devices, a journal to resume from", cmd_tune},
    {"flash", "load a bitstream into a pico-ice's FPGA over USB (-d usb FILE.bin)", cmd_flash},
};

static void usage(FILE *f)
{
    fputs("usage: ntpu [-d DEV] [--json] <command> [args]\n       ntpu --version\n\ncommands:\n", f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "devices: ref[:n=N,...] (golden model), vsim[:trace=FILE] (Verilator RTL), vsim:rtl (rtl/ alone),\n"
          "         vsim:board=icebreaker|ulx3s[,config=C,...] (a board top behind a bit-level UART),\n"
          "         ftdi[:serial=S,board=icebreaker|ulx3s], usb[:serial=S] (boards);\n"
          "         default $NTPU_DEVICE, else vsim; any of them also takes\n"
          "         faults=RATE[,fault_seed=S] (flip and drop link bytes) and timeout_ms=T;\n"
          "         'ntpu train' takes -d more than once (data parallel, also across mpirun's ranks)\n"
          "'ntpu <command> --help' describes a command.\n",
          f);
}

int main(int argc, char **argv)
{
    common cm = {0};
    int i = 1;
    /* Options before the command. */
    while (i < argc && argv[i][0] == '-') {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("ntpu %s (libntpu, device protocol %u.%u)\n", NTPU_LIB_VERSION, NTPU_VERSION_MAJOR,
                   NTPU_VERSION_MINOR);
            return 0;
        } else if (!strcmp(a, "--json")) {
            cm.json = 1;
        } else if (!strcmp(a, "-d") || !strcmp(a, "--device") || !strncmp(a, "--device=", 9) || !strncmp(a, "-d", 2)) {
            const int joined = a[1] == 'd' ? a[2] != 0 : a[8] == '=';
            if (!joined && ++i >= argc)
                return fail("option '%s' needs a value", a);
            if (cm.n_devices >= NTPU_MAX_DEVICES)
                return fail("-d given more than %d times", NTPU_MAX_DEVICES);
            cm.devices[cm.n_devices++] = !joined ? argv[i] : a[1] == 'd' ? a + 2 : a + 9;
            cm.device = cm.devices[0];
        } else {
            return fail("unknown option '%s' (try 'ntpu --help')", a);
        }
        i++;
    }
    if (i >= argc)
        return fail("no command given (try 'ntpu --help')");
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (!strcmp(argv[i], commands[k].name)) {
            int rc = commands[k].run(&cm, argc - i - 1, argv + i + 1);
            errno = 0; /* a full disk under > out.json must not pass as success */
            if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
                rc = fail("cannot write the output%s%s", errno ? ": " : "", errno ? strerror(errno) : "");
            return rc;
        }
    return fail("unknown command '%s' (try 'ntpu --help')", argv[i]);
}
