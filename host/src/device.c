/* SPDX-License-Identifier: Apache-2.0 */
/* Device handles: device strings, the table of transports, open (reading the
 * ID block) and close. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Every device kind a device string can name (DESIGN.md section 2). */
static const struct {
    const char *name;
    ntpu_status (*open)(const char *opts, ntpu_transport *out, char *err, size_t errlen);
} kinds[] = {
    {"ref", ntpu_transport_ref_open},
    {"vsim", ntpu_transport_vsim_open},
    {"ftdi", ntpu_transport_ftdi_open},
    {"usb", ntpu_transport_usb_open},
};

/* The device string that NULL or "" stands for. */
static const char *default_device(void)
{
    const char *env = getenv("NTPU_DEVICE");
    return env && *env ? env : "vsim";
}

static const char *platform_name(unsigned p)
{
    switch (p) {
    case 0: return "golden model";
    case 1: return "RTL";
    }
    return "unknown";
}

/* The options every device kind accepts: faults=RATE and fault_seed=S put the
 * faulty transport (transport/transport_faulty.c) in front of the device; timeout_ms=T
 * sets how long the link waits for a reply (default NTPU_LINK_TIMEOUT_MS). */
typedef struct link_opts {
    double faults;
    uint64_t seed;
    unsigned timeout_ms;
} link_opts;

/* Takes the link options out of opts (edited in place). Returns 0, or -1 with
 * the reason in err. */
static int take_link_opts(char *opts, link_opts *o, char *err, size_t errlen)
{
    char *out = opts, *p = opts;
    while (*p) {
        char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *stop;
        if (!strncmp(p, "faults=", 7)) {
            o->faults = strtod(p + 7, &stop);
            if (stop == p + 7 || stop != p + len || !(o->faults >= 0.0 && o->faults <= 1.0)) {
                ntpu_errf(err, errlen, "option '%.*s' needs a probability in 0..1", (int)len, p);
                return -1;
            }
        } else if (!strncmp(p, "fault_seed=", 11)) {
            if (len == 11 || ntpu_parse_whole(p + 11, len - 11, UINT64_MAX, &o->seed)) {
                ntpu_errf(err, errlen, "option '%.*s' needs a whole number", (int)len, p);
                return -1;
            }
        } else if (!strncmp(p, "timeout_ms=", 11)) {
            uint64_t t = 0;
            if (len == 11 || ntpu_parse_whole(p + 11, len - 11, 3600000, &t) || t == 0) {
                ntpu_errf(err, errlen, "option '%.*s' needs a whole number of milliseconds, 1..3600000", (int)len, p);
                return -1;
            }
            o->timeout_ms = (unsigned)t;
        } else {
            if (out != opts)
                *out++ = ',';
            memmove(out, p, len);
            out += len;
        }
        p = end ? end + 1 : p + len;
    }
    *out = 0;
    return 0;
}

/* Reads the ID block and checks that this library can drive the device. */
static ntpu_status read_id(ntpu_device *dev)
{
    uint8_t op = NTPU_OP_INFO, id[NTPU_ID_BYTES];
    uint64_t ticket;
    ntpu_status st = ntpu_link_command(&dev->link, &op, 1, NTPU_ID_BYTES, id, &ticket);
    if (st == NTPU_OK)
        st = ntpu_link_wait(&dev->link, ticket);
    if (st != NTPU_OK)
        return st;
    ntpu_info *in = &dev->info;
    if (ntpu_rd32(id + NTPU_ID_OFF_MAGIC) != NTPU_ID_MAGIC)
        return ntpu_fail(dev, NTPU_ERR_IO, "the device's ID block lacks the NTPU magic");
    in->version_major = id[NTPU_ID_OFF_VERSION_MAJOR];
    in->version_minor = id[NTPU_ID_OFF_VERSION_MINOR];
    in->rows = id[NTPU_ID_OFF_ROWS];
    in->cols = id[NTPU_ID_OFF_COLS];
    in->dtypes = id[NTPU_ID_OFF_DTYPES];
    in->features = id[NTPU_ID_OFF_FEATURES];
    in->max_payload = ntpu_rd16(id + NTPU_ID_OFF_MAX_PAYLOAD);
    /* A link without flow control sends no frame its FIFO could not hold. */
    unsigned cap = dev->link.tp.ops->max_payload_cap;
    if (cap && in->max_payload > cap)
        in->max_payload = cap;
    in->ub_rows = ntpu_rd32(id + NTPU_ID_OFF_UB_ROWS);
    in->wb_rows = ntpu_rd32(id + NTPU_ID_OFF_WB_ROWS);
    in->acc_rows = ntpu_rd32(id + NTPU_ID_OFF_ACC_ROWS);
    in->clock_hz = ntpu_rd32(id + NTPU_ID_OFF_CLOCK_HZ);
    in->platform = id[NTPU_ID_OFF_PLATFORM];
    in->platform_name = platform_name(in->platform);
    in->pm_rows = ntpu_rd32(id + NTPU_ID_OFF_PM_ROWS); /* 0 from a 1.3 device (link.c) */
    if (!(in->features & NTPU_FEATURE_PROGRAM_BIT) || in->pm_rows > 65536)
        in->pm_rows = 0;
    in->os_rows = ntpu_rd32(id + NTPU_ID_OFF_OS_ROWS); /* 0 from a 1.3 device */
    if (!(in->features & NTPU_FEATURE_ADAM_BIT) || in->os_rows > 65536)
        in->os_rows = 0;
    if (in->version_major != NTPU_VERSION_MAJOR)
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "the device speaks protocol %u.%u; this library speaks %u.x",
                         in->version_major, in->version_minor, NTPU_VERSION_MAJOR);
    unsigned n = in->rows;
    /* The tiling assumes a square array, and every address must fit the u16 fields. */
    if (n < 2 || in->cols != n)
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "unsupported array shape %ux%u", in->rows, in->cols);
    if (in->ub_rows == 0 || in->ub_rows > 65536 || in->acc_rows == 0 || in->acc_rows > 65536 || in->wb_rows < n ||
        in->wb_rows > 65536 || in->os_rows > 65536)
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "unsupported memory sizes: UB %u, WB %u, ACC %u, OS %u rows",
                         (unsigned)in->ub_rows, (unsigned)in->wb_rows, (unsigned)in->acc_rows, (unsigned)in->os_rows);
    /* The longest fixed reply (COUNTERS) and one row each way must fit a frame. */
    if (in->max_payload < 1 + NTPU_COUNTERS_BYTES || in->max_payload < 1 + 4 * n ||
        in->max_payload < NTPU_LEN_MEM_HDR + 2 * n)
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "max_payload %u is too small", in->max_payload);
    dev->n = n;
    dev->link.max_payload = in->max_payload;
    return NTPU_OK;
}

static ntpu_status open_kind(ntpu_device *dev, char *kind);

ntpu_status ntpu_open(const char *device, ntpu_device **out)
{
    if (!out)
        return ntpu_fail(NULL, NTPU_ERR_INVALID_ARG, "ntpu_open: out is NULL");
    *out = NULL;
    ntpu_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return ntpu_fail(NULL, NTPU_ERR_NO_MEMORY, "ntpu_open: out of memory for the device handle");
    *out = dev;
    if (!device || !*device)
        device = default_device();
    size_t len = strlen(device);
    if (len > NTPU_DEVICE_STRING_MAX)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "device string is longer than %d characters",
                         NTPU_DEVICE_STRING_MAX);
    /* info.device keeps what fits (a long vsim:trace= path is cut, with "..." at the end). */
    const size_t cap = sizeof dev->info.device;
    memcpy(dev->info.device, device, len < cap ? len + 1 : cap);
    if (len >= cap)
        memcpy(dev->info.device + cap - 4, "...", 4);

    char *kind = strdup(device);
    if (!kind)
        return ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "out of memory");
    ntpu_status st = open_kind(dev, kind);
    free(kind);
    return st;
}

/* ntpu_open for the string "kind[:options]" (modified in place). */
static ntpu_status open_kind(ntpu_device *dev, char *kind)
{
    char *colon = strchr(kind, ':');
    const char *opts = NULL;
    if (colon) {
        *colon = 0;
        opts = colon + 1;
    }
    size_t k = 0, nk = sizeof kinds / sizeof kinds[0];
    while (k < nk && strcmp(kinds[k].name, kind) != 0)
        k++;
    if (k == nk)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "unknown device '%s' (expected ref, vsim, ftdi or usb)", kind);

    link_opts lo = {0.0, 1, NTPU_LINK_TIMEOUT_MS};
    if (opts && take_link_opts(colon + 1, &lo, dev->err, sizeof dev->err))
        return NTPU_ERR_INVALID_ARG;
    if (opts && !*opts)
        opts = NULL;
    ntpu_transport tp = {0};
    ntpu_status st = kinds[k].open(opts, &tp, dev->err, sizeof dev->err);
    if (st != NTPU_OK)
        return st;
    if (lo.faults > 0.0 && (st = ntpu_transport_faulty_wrap(tp, lo.faults, lo.seed, &tp, dev->err, sizeof dev->err))) {
        tp.ops->close(tp.ctx);
        return st;
    }
    /* Until the ID block says otherwise, accept any frame the LEN field can describe. */
    st = ntpu_link_init(&dev->link, tp, 65535, dev->err);
    dev->link.timeout_ms = lo.timeout_ms;
    if (st == NTPU_OK && !tp.ops->starts_in_sync)
        st = ntpu_link_resync(&dev->link);
    if (st == NTPU_OK)
        st = read_id(dev);
    if (st != NTPU_OK) {
        /* A board that is reachable but silent is almost always one without the design on it. */
        if (st == NTPU_ERR_TIMEOUT && !tp.ops->starts_in_sync) {
            size_t used = strlen(dev->err);
            if (used + 1 < sizeof dev->err)
                snprintf(dev->err + used, sizeof dev->err - used,
                         "; is the board configured with the nanoTPU bitstream (see docs/boards.md)?");
        }
        ntpu_link_free(&dev->link);
        return st;
    }
    dev->ok = 1;
    return NTPU_OK;
}

void ntpu_close(ntpu_device *dev)
{
    if (!dev)
        return;
    if (dev->ok)
        ntpu_link_free(&dev->link);
    free(dev);
}

const char *ntpu_last_error(const ntpu_device *dev)
{
    return dev ? dev->err : ntpu_thread_error();
}

ntpu_status ntpu_check_dev(ntpu_device *dev)
{
    if (!dev)
        return NTPU_ERR_INVALID_ARG;
    if (!dev->ok)
        return NTPU_ERR_NO_DEVICE; /* err still holds why open failed */
    return NTPU_OK;
}

int ntpu_parse_whole(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    if (!s)
        return -1;
    if (!len)
        len = strlen(s);
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        const uint64_t d = (uint64_t)(s[i] - '0');
        if (s[i] < '0' || s[i] > '9' || d > max || v > (max - d) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (!len)
        return -1;
    *out = v;
    return 0;
}

ntpu_status ntpu_claim_memories(ntpu_device *dev, void *who, ntpu_status (*evict)(void *owner), int *changed)
{
    if (changed)
        *changed = !who || dev->mem_owner != who;
    if (who && dev->mem_owner == who)
        return NTPU_OK;
    if (dev->mem_owner && dev->mem_evict) {
        ntpu_status st = dev->mem_evict(dev->mem_owner); /* the owner stays when it could not save its state */
        if (st != NTPU_OK)
            return st;
    }
    dev->mem_owner = who;
    dev->mem_evict = who ? evict : NULL;
    return NTPU_OK;
}

void ntpu_release_memories(ntpu_device *dev, const void *who)
{
    if (dev && who && dev->mem_owner == who) {
        dev->mem_owner = NULL;
        dev->mem_evict = NULL;
    }
}

ntpu_status ntpu_get_info(const ntpu_device *dev, ntpu_info *out)
{
    if (!dev || !out)
        return NTPU_ERR_INVALID_ARG;
    if (!dev->ok)
        return NTPU_ERR_NO_DEVICE;
    *out = dev->info;
    return NTPU_OK;
}

uint32_t ntpu_mem_rows(const ntpu_device *dev, unsigned mem)
{
    switch (mem) {
    case NTPU_MEM_UB: return dev->info.ub_rows;
    case NTPU_MEM_WB: return dev->info.wb_rows;
    case NTPU_MEM_ACC: return dev->info.acc_rows;
    case NTPU_MEM_PM: return dev->info.pm_rows;
    case NTPU_MEM_OS: return dev->info.os_rows;
    }
    return 0;
}

size_t ntpu_row_bytes(const ntpu_device *dev, unsigned mem)
{
    return (size_t)dev->n * (mem == NTPU_MEM_ACC || mem == NTPU_MEM_OS ? 4u : 2u);
}
