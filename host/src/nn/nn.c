/* SPDX-License-Identifier: Apache-2.0 */
/* Multilayer perceptron training on the device (see ntpu/nn.h and
 * docs/training.md). The host plans where every tensor lives in the device's
 * memories, streams the commands of each step, and keeps the fp32 master
 * weights and optimizer state. A model whose tensors do not fit is streamed
 * instead (nn_stream.c): the same results, more link traffic.
 *
 * Device layout, for a batch padded to bp rows (a multiple of N) and T(l) =
 * ceil(sizes[l] / N) lane tiles:
 *   UB  x[l]  layer l's input, as T(l) tiles of bp rows: UB[x + t*bp + b] = X[b][t*N ..]
 *       g[l]  bf16 dZ of layer l (l >= 1), same layout over T(l+1): the dX operand
 *   WB  w[l]  weight tiles, nt-major: tile (kt, nt) at w + (nt*T(l) + kt)*N, row i = W[kt*N + i][nt*N ..],
 *             so an output tile's column block is T(l)*N contiguous rows, as the device
 *             optimizer's master rows in ACC (nn_internal.h) from which ACT refreshes it
 *       g[l]  bf16 dZ of layer l as weight tiles: WB[g + nt*bp + b] = dZ[b][nt*N ..]
 *   ACC z[l]  pre-activations, then logits (last layer), then dZ: T(l+1) tiles of bp rows
 *       b[l], db[l]  biases and their gradients, one row per output tile
 *       dw[l] weight gradients: ACC[dw + nt*T(l)*N + k][lane] = dW[k][nt*N + lane]
 *       (with the device optimizer one output tile at a time, see nn_internal.h)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"
#include "ntpu/program.h"
#include "numerics_internal.h"

float ntpu_uniform_pm1(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 23) - 1.0);
}

static void *grow_scratch(ntpu_model *m, size_t bytes)
{
    if (bytes > m->scratch_bytes) {
        void *p = realloc(m->scratch, bytes);
        if (!p)
            return NULL;
        m->scratch = p;
        m->scratch_bytes = bytes;
    }
    return m->scratch;
}

static void drop_programs(ntpu_model *m)
{
    ntpu_program_free(m->prog_fwd);
    ntpu_program_free(m->prog_bwd);
    m->prog_fwd = m->prog_bwd = NULL;
    m->prog_bp = 0;
}

void ntpu_model_free(ntpu_model *m)
{
    if (!m)
        return;
    ntpu_net_free(m);
    ntpu_release_memories(m->dev, m);
    drop_programs(m);
    for (size_t l = 0; l < NTPU_MAX_LAYERS; l++) {
        free(m->w[l]);
        free(m->b[l]);
        free(m->ws1[l]);
        free(m->ws2[l]);
        free(m->bs1[l]);
        free(m->bs2[l]);
        free(m->gw[l]);
        free(m->gb[l]);
    }
    ntpu_stream_free(m);
    free(m->scratch);
    free(m);
}

/* The device optimizer runs Adam or AdamW (OPTIM ADAM, moments in OS). */
static int dev_adam(const ntpu_model *m)
{
    return m->devopt && (m->opt.kind == NTPU_OPT_ADAM || m->opt.kind == NTPU_OPT_ADAMW);
}

/* Places every tensor in the device's memories; NTPU_ERR_UNSUPPORTED, with the
 * reason in m->why, when one does not fit. */
static ntpu_status plan(ntpu_model *m)
{
    ntpu_device *dev = m->dev;
    const size_t n = m->n, bp = m->max_bp, L = m->layers;
    const size_t mom = m->devopt && m->opt.kind == NTPU_OPT_MOMENTUM;
    const int adam = dev_adam(m);
    size_t ub = 0, wb = 0, acc = 0, os = 0, dw_max = 0;
    for (size_t l = 0; l < L; l++) {
        size_t ti = m->tiles[l], to = m->tiles[l + 1];
        m->ub_x[l] = (uint32_t)ub;
        ub += ti * bp;
        m->ub_g[l] = (uint32_t)ub;
        ub += l > 0 ? to * bp : 0;
        m->wb_w[l] = (uint32_t)wb;
        wb += ti * to * n;
        m->wb_g[l] = (uint32_t)wb;
        wb += to * bp;
        m->acc_z[l] = (uint32_t)acc;
        acc += to * bp;
        m->acc_b[l] = (uint32_t)acc;
        acc += to * (1 + mom);
        m->acc_db[l] = (uint32_t)acc;
        acc += to;
        if (m->devopt) {
            m->acc_mw[l] = (uint32_t)acc;
            acc += to * (1 + mom) * ti * n;
            dw_max = ti * n > dw_max ? ti * n : dw_max;
        } else {
            m->acc_dw[l] = (uint32_t)acc;
            acc += to * ti * n;
        }
    }
    if (m->devopt) {
        for (size_t l = 0; l < L; l++)
            m->acc_dw[l] = (uint32_t)acc;
        acc += dw_max;
        m->acc_k = (uint32_t)acc;
        acc += adam ? NTPU_ADAM_AUX_ROWS : 3;
    }
    for (size_t l = 0; l < L && adam; l++) {
        m->os_w[l] = (uint32_t)os;
        os += 2 * (size_t)m->tiles[l + 1] * m->tiles[l] * n;
        m->os_b[l] = (uint32_t)os;
        os += 2 * (size_t)m->tiles[l + 1];
    }
    const struct {
        const char *name;
        size_t need, have;
    } mem[] = {{"UB", ub, dev->info.ub_rows},
               {"WB", wb, dev->info.wb_rows},
               {"ACC", acc, dev->info.acc_rows},
               {"OS", os, dev->info.os_rows}};
    for (size_t i = 0; i < 4; i++)
        if (mem[i].need > mem[i].have) {
            snprintf(m->why, sizeof m->why, "needs %zu %s rows for batches of %zu, the device has %zu", mem[i].need,
                     mem[i].name, m->max_batch, mem[i].have);
            return NTPU_ERR_UNSUPPORTED;
        }
    return NTPU_OK;
}

/* Decides where the optimizer runs (m->opt.device asks for the device, which
 * needs OPTIM and room in ACC, and for Adam / AdamW feature ADAM and room in OS;
 * else devopt_why says why not)
 * and plans the resident layout for it: plan()'s status. */
static ntpu_status place(ntpu_model *m)
{
    drop_programs(m); /* recorded for the old layout */
    m->devopt = 0;
    if (m->opt.device) {
        const char *no = NULL;
        for (size_t l = 0; l < m->layers; l++)
            if ((size_t)m->tiles[l] * m->n > 65535)
                no = "a layer has more than 65535 input rows, more than one OPTIM covers";
        if (!(m->dev->info.features & NTPU_FEATURE_OPTIM_BIT))
            no = "the device has no OPTIM (protocol 1.3, vector unit)";
        else if ((m->opt.kind == NTPU_OPT_ADAM || m->opt.kind == NTPU_OPT_ADAMW) &&
                 !(m->dev->info.features & NTPU_FEATURE_ADAM_BIT))
            no = "Adam and AdamW need the device's ADAM (protocol 1.4: divide, square root, OS memory)";
        if (no)
            snprintf(m->devopt_why, sizeof m->devopt_why, "%s", no);
        m->devopt = !no;
        if (m->devopt && plan(m) != NTPU_OK) {
            snprintf(m->devopt_why, sizeof m->devopt_why, "with its optimizer state the model %.120s", m->why);
            m->devopt = 0;
        }
    }
    return plan(m);
}

/* The name of the first setting of o that the optimizers cannot run with, or NULL: one rule for a new
 * model and a loaded checkpoint (a NaN lr trains to NaN; Adam divides by sqrt(v) + eps, and v can be 0). */
const char *ntpu_optim_bad_setting(const ntpu_optim_config *o)
{
    const int adam = o->kind == NTPU_OPT_ADAM || o->kind == NTPU_OPT_ADAMW;
    const struct {
        const char *name;
        float v;
        int ok;
    } f[] = {{"lr", o->lr, 1},
             {"momentum", o->momentum, 1},
             {"beta1", o->beta1, !adam || o->beta1 < 1.0f},
             {"beta2", o->beta2, !adam || o->beta2 < 1.0f},
             {"eps", o->eps, !adam || o->eps > 0.0f},
             {"weight_decay", o->weight_decay, 1},
             {"gamma", o->gamma, 1}};
    if ((unsigned)o->kind > NTPU_OPT_ADAMW)
        return "optimizer";
    if ((unsigned)o->schedule > NTPU_LR_COSINE)
        return "schedule";
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!isfinite(f[i].v) || f[i].v < 0.0f || !f[i].ok)
            return f[i].name;
    return NULL;
}

ntpu_status ntpu_model_check_setup(ntpu_device *dev, size_t max_batch, const ntpu_optim_config *opt)
{
    if (!opt || max_batch == 0 || max_batch > 65535)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "model: need a batch of 1..65535 and an optimizer");
    const char *bad = ntpu_optim_bad_setting(opt);
    if (bad)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "model: the optimizer's %s is out of range", bad);
    /* Without the vector unit or TRANSPOSE_A the library does that work on the host
     * (fallback/vector_host.c, fallback/transpose_host.c). */
    if (!(dev->info.dtypes & NTPU_DTYPE_BF16_BIT) || !(dev->info.features & NTPU_FEATURE_TRANSPOSE_BIT))
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED,
                         "training needs bf16 and transposed weights (protocol 1.1); "
                         "this device lacks them");
    return NTPU_OK;
}

ntpu_status ntpu_model_alloc(ntpu_device *dev, const unsigned *sizes, size_t n_sizes, size_t max_batch,
                             const ntpu_optim_config *opt, ntpu_model **out)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (!out || !sizes || !opt || n_sizes < 2 || n_sizes > NTPU_MAX_LAYERS + 1 || max_batch == 0 || max_batch > 65535)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG,
                         "model: need 2..%d layer sizes, a batch of 1..65535 and an "
                         "optimizer",
                         NTPU_MAX_LAYERS + 1);
    for (size_t i = 0; i < n_sizes; i++)
        if (sizes[i] == 0 || sizes[i] > 65536)
            return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "model: layer size %u out of range", sizes[i]);
    if ((st = ntpu_model_check_setup(dev, max_batch, opt)) != NTPU_OK)
        return st;
    ntpu_model *m = calloc(1, sizeof *m);
    if (!m)
        return ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    m->dev = dev;
    m->n = dev->n;
    m->layers = n_sizes - 1;
    m->max_batch = max_batch;
    m->max_bp = ntpu_round_up(max_batch, m->n);
    m->opt = *opt;
    for (size_t i = 0; i < n_sizes; i++) {
        m->sizes[i] = sizes[i];
        m->tiles[i] = (unsigned)((sizes[i] + m->n - 1) / m->n);
    }
    ntpu_arch_from_sizes(sizes, n_sizes, &m->arch); /* the sizes were checked above: it cannot fail */
    if (place(m) != NTPU_OK) {
        m->devopt = 0;
        snprintf(m->devopt_why, sizeof m->devopt_why, "the model is streamed");
        m->streamed = 1;
        if ((st = ntpu_stream_alloc(m)) != NTPU_OK) {
            ntpu_model_free(m);
            return st;
        }
    }
    unsigned slots = ntpu_optimizer_slots(opt->kind);
    for (size_t l = 0; l < m->layers; l++) {
        size_t nw = (size_t)sizes[l] * sizes[l + 1], nb = sizes[l + 1];
        int bad = !(m->w[l] = calloc(nw, 4)) || !(m->b[l] = calloc(nb, 4)) || !(m->gw[l] = calloc(nw, 4)) ||
                  !(m->gb[l] = calloc(nb, 4));
        if (!bad && slots >= 1)
            bad = !(m->ws1[l] = calloc(nw, 4)) || !(m->bs1[l] = calloc(nb, 4));
        if (!bad && slots >= 2)
            bad = !(m->ws2[l] = calloc(nw, 4)) || !(m->bs2[l] = calloc(nb, 4));
        if (bad) {
            ntpu_model_free(m);
            return ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "model: out of memory for layer %zu", l);
        }
    }
    *out = m;
    return NTPU_OK;
}

/* Device Adam: layer l's moments m and v (ws1, ws2, bs1, bs2) to OS (layout in
 * nn_internal.h), padding zero; rows: scratch for them. */
static ntpu_status sync_moments(ntpu_model *m, size_t l, float *rows)
{
    const size_t n = m->n, in = m->sizes[l], out = m->sizes[l + 1], ti = m->tiles[l], to = m->tiles[l + 1];
    for (size_t nt = 0; nt < to; nt++)
        for (size_t s = 0; s < 2; s++) {
            const float *src = s ? m->ws2[l] : m->ws1[l];
            for (size_t k = 0; k < ti * n; k++)
                for (size_t j = 0; j < n; j++) {
                    size_t o = nt * n + j;
                    rows[((nt * 2 + s) * ti * n + k) * n + j] = k < in && o < out ? src[k * out + o] : 0.0f;
                }
        }
    ntpu_status st = ntpu_write_rows(m->dev, NTPU_MEM_OS, m->os_w[l], (uint32_t)(2 * to * ti * n), rows);
    if (st != NTPU_OK)
        return st;
    for (size_t o = 0; o < to * n; o++) {
        rows[o] = o < out ? m->bs1[l][o] : 0.0f;
        rows[to * n + o] = o < out ? m->bs2[l][o] : 0.0f;
    }
    return ntpu_write_rows(m->dev, NTPU_MEM_OS, m->os_b[l], (uint32_t)(2 * to), rows);
}

/* Device optimizer: layer l's fp32 master weights, momentum and bias momentum
 * to ACC (layout in nn_internal.h), padding zero; with Adam the moments to OS. */
static ntpu_status sync_master(ntpu_model *m, size_t l)
{
    const size_t n = m->n, in = m->sizes[l], out = m->sizes[l + 1], ti = m->tiles[l], to = m->tiles[l + 1];
    const size_t mom = m->opt.kind == NTPU_OPT_MOMENTUM, blk = (1 + mom) * ti * n;
    float *rows = grow_scratch(m, (dev_adam(m) ? 2 : 1) * to * ti * n * n * 4 * (1 + mom));
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    for (size_t nt = 0; nt < to; nt++)
        for (size_t s = 0; s <= mom; s++) {
            const float *src = s ? m->ws1[l] : m->w[l];
            for (size_t k = 0; k < ti * n; k++)
                for (size_t j = 0; j < n; j++) {
                    size_t o = nt * n + j;
                    rows[(nt * blk + s * ti * n + k) * n + j] = k < in && o < out ? src[k * out + o] : 0.0f;
                }
        }
    ntpu_status st = ntpu_write_rows(m->dev, NTPU_MEM_ACC, m->acc_mw[l], (uint32_t)(to * blk), rows);
    if (st == NTPU_OK && dev_adam(m))
        return sync_moments(m, l, rows);
    if (st != NTPU_OK || !mom)
        return st;
    for (size_t o = 0; o < to * n; o++)
        rows[o] = o < out ? m->bs1[l][o] : 0.0f;
    return ntpu_write_rows(m->dev, NTPU_MEM_ACC, m->acc_b[l] + (uint32_t)to, (uint32_t)to, rows);
}

/* Device Adam: layer l's m and v from OS into ws1, ws2, bs1, bs2. */
static ntpu_status fetch_moments(ntpu_model *m, size_t l)
{
    const size_t n = m->n, in = m->sizes[l], out = m->sizes[l + 1], ti = m->tiles[l], to = m->tiles[l + 1];
    float *rows = grow_scratch(m, 2 * to * ti * n * n * 4);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    ntpu_status st = ntpu_read_rows(m->dev, NTPU_MEM_OS, m->os_w[l], (uint32_t)(2 * to * ti * n), rows);
    if (st != NTPU_OK)
        return st;
    for (size_t nt = 0; nt < to; nt++) {
        size_t lanes = out - nt * n < n ? out - nt * n : n;
        for (size_t s = 0; s < 2; s++)
            for (size_t k = 0; k < in; k++)
                memcpy(&(s ? m->ws2[l] : m->ws1[l])[k * out + nt * n], &rows[((nt * 2 + s) * ti * n + k) * n],
                       lanes * 4);
    }
    if ((st = ntpu_read_rows(m->dev, NTPU_MEM_OS, m->os_b[l], (uint32_t)(2 * to), rows)) != NTPU_OK)
        return st;
    memcpy(m->bs1[l], rows, out * 4);
    memcpy(m->bs2[l], rows + to * n, out * 4);
    return NTPU_OK;
}

ntpu_status ntpu_model_fetch(ntpu_model *m)
{
    if (!m)
        return NTPU_ERR_INVALID_ARG;
    if (!m->devopt || !m->dev_ahead)
        return NTPU_OK;
    if (m->net)
        return ntpu_net_devopt_fetch(m);
    const size_t n = m->n, mom = m->opt.kind == NTPU_OPT_MOMENTUM;
    for (size_t l = 0; l < m->layers; l++) {
        const size_t in = m->sizes[l], out = m->sizes[l + 1], ti = m->tiles[l], to = m->tiles[l + 1];
        const size_t blk = (1 + mom) * ti * n;
        float *rows = grow_scratch(m, to * blk * n * 4);
        if (!rows)
            return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
        ntpu_status st = ntpu_read_rows(m->dev, NTPU_MEM_ACC, m->acc_mw[l], (uint32_t)(to * blk), rows);
        if (st != NTPU_OK)
            return st;
        for (size_t nt = 0; nt < to; nt++) {
            size_t lanes = out - nt * n < n ? out - nt * n : n;
            for (size_t s = 0; s <= mom; s++)
                for (size_t k = 0; k < in; k++)
                    memcpy(&(s ? m->ws1[l] : m->w[l])[k * out + nt * n], &rows[(nt * blk + s * ti * n + k) * n],
                           lanes * 4);
        }
        if ((st = ntpu_read_rows(m->dev, NTPU_MEM_ACC, m->acc_b[l], (uint32_t)(to * (1 + mom)), rows)) != NTPU_OK)
            return st;
        memcpy(m->b[l], rows, out * 4);
        if (mom)
            memcpy(m->bs1[l], rows + to * n, out * 4);
        if (dev_adam(m) && (st = fetch_moments(m, l)) != NTPU_OK)
            return st;
    }
    m->dev_ahead = 0;
    return NTPU_OK;
}

ntpu_status ntpu_model_set_device_optimizer(ntpu_model *m, int on)
{
    if (!m)
        return NTPU_ERR_INVALID_ARG;
    ntpu_status st = ntpu_model_fetch(m);
    if (st != NTPU_OK)
        return st;
    m->opt.device = on != 0;
    if (m->net)
        return ntpu_net_replan(m);
    if (m->streamed)
        return NTPU_OK;             /* devopt stays 0, devopt_why says why */
    if ((st = place(m)) != NTPU_OK) /* it was resident: the plain layout fits */
        return ntpu_fail(m->dev, st, "model: %s", m->why);
    return ntpu_model_sync(m);
}

ntpu_status ntpu_model_check_device_optimizer(const ntpu_model *m)
{
    if (!m)
        return NTPU_ERR_INVALID_ARG;
    if (m->devopt)
        return NTPU_OK;
    if (!m->opt.device)
        return ntpu_fail(m->dev, NTPU_ERR_UNSUPPORTED,
                         "the optimizer was not asked to run on the device "
                         "(ntpu_optim_config.device is 0)");
    return ntpu_fail(m->dev, NTPU_ERR_UNSUPPORTED, "%s", m->devopt_why);
}

/* Rows k0 .. k1-1 of layer l's weights, rounded to bf16, into its WB tiles:
 * row k of output tile nt at tiles[(nt * T(l) * N + k) * N]. A weight row's
 * whole tiles in one call: its values side by side, which AVX-512 rounds
 * two tiles at a time. */
static void weight_rows_to_tiles(const ntpu_model *m, size_t l, size_t k0, size_t k1, uint16_t *tiles)
{
    const size_t n = m->n, in = m->sizes[l], out = m->sizes[l + 1], ti = m->tiles[l], to = m->tiles[l + 1];
    const size_t whole = out / n, real = k1 < in ? k1 : in;
    for (size_t k = k0; k < real && whole; k++)
        ntpu_bf16_from_f32_groups(tiles + k * n, ti * n * n, &m->w[l][k * out], n, whole, n);
    for (size_t k = k0; k < k1; k++)
        for (size_t nt = k < in ? whole : 0; nt < to; nt++) {
            uint16_t *dst = tiles + (nt * ti * n + k) * n;
            for (size_t j = 0, o = nt * n; j < n; j++, o++)
                dst[j] = k < in && o < out ? ntpu_bf16_from_f32(m->w[l][k * out + o]) : 0;
        }
}

/* Weights per block of rows that nn.c takes through the cache at once. */
#define ROW_BLOCK 4096u

/* Rows of layer l in a block of about ROW_BLOCK weights: five arrays of them stay in L2. */
static size_t block_rows(const ntpu_model *m, size_t l)
{
    const size_t out = m->sizes[l + 1];
    return out < ROW_BLOCK ? ROW_BLOCK / out : 1;
}

/* The bytes of layer l's bf16 tiles and fp32 bias rows (write_layer's buffer). */
static size_t layer_bytes(const ntpu_model *m, size_t l)
{
    const size_t n = m->n, ti = m->tiles[l], to = m->tiles[l + 1];
    return ti * to * n * n * 2 + to * n * 4;
}

/* Writes layer l's weight tiles (tiles, filled by weight_row_to_tiles) and its
 * biases (converted into the rows after the tiles) to WB and ACC. */
static ntpu_status write_layer(ntpu_model *m, size_t l, uint16_t *tiles)
{
    const size_t n = m->n, out = m->sizes[l + 1], ti = m->tiles[l], to = m->tiles[l + 1];
    ntpu_status st = ntpu_write_rows(m->dev, NTPU_MEM_WB, m->wb_w[l], (uint32_t)(ti * to * n), tiles);
    if (st != NTPU_OK)
        return st;
    uint32_t *brow = (uint32_t *)(tiles + ti * to * n * n);
    for (size_t o = 0; o < to * n; o++) {
        float v = o < out ? m->b[l][o] : 0.0f;
        memcpy(&brow[o], &v, 4);
    }
    return ntpu_write_rows(m->dev, NTPU_MEM_ACC, m->acc_b[l], (uint32_t)to, brow);
}

/* Writes the host's weights (and, with the device optimizer, its fp32 state) to the device. */
static ntpu_status upload(ntpu_model *m)
{
    for (size_t l = 0; l < m->layers; l++) {
        uint16_t *tiles = grow_scratch(m, layer_bytes(m, l));
        if (!tiles)
            return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
        const size_t rows = m->tiles[l] * m->n, step = block_rows(m, l);
        for (size_t k = 0; k < rows; k += step)
            weight_rows_to_tiles(m, l, k, k + step < rows ? k + step : rows, tiles);
        ntpu_status st = write_layer(m, l, tiles);
        if (st == NTPU_OK && m->devopt)
            st = sync_master(m, l);
        if (st != NTPU_OK)
            return st;
    }
    m->k_valid = 0;
    m->dev_ahead = 0;
    return NTPU_OK;
}

static ntpu_status evict(void *m)
{
    return ntpu_model_fetch(m);
}

/* Before m's work on the device: when something else used the memories since m last did (its
 * quantized copy, ntpu_matmul, another model), they are m's again, with its weights written anew.
 * A streamed model keeps nothing there between calls. */
static ntpu_status own_memories(ntpu_model *m)
{
    int changed;
    ntpu_status st = m->streamed ? NTPU_OK : ntpu_claim_memories(m->dev, m, evict, &changed);
    if (st == NTPU_OK && !m->streamed && changed && (st = upload(m)) != NTPU_OK)
        ntpu_release_memories(m->dev, m); /* half written: the next call writes it all again */
    return st;
}

ntpu_status ntpu_model_sync(ntpu_model *m)
{
    if (!m)
        return NTPU_ERR_INVALID_ARG;
    if (m->net)
        return ntpu_net_sync(m);
    if (m->streamed)
        return ntpu_stream_sync(m);
    ntpu_status st = ntpu_claim_memories(m->dev, m, evict, NULL);
    if (st == NTPU_OK && (st = upload(m)) != NTPU_OK)
        ntpu_release_memories(m->dev, m);
    return st;
}

ntpu_status ntpu_model_create(ntpu_device *dev, const unsigned *sizes, size_t n_sizes, size_t max_batch, uint64_t seed,
                              const ntpu_optim_config *opt, ntpu_model **out)
{
    ntpu_model *m;
    ntpu_status st = ntpu_model_alloc(dev, sizes, n_sizes, max_batch, opt, &m);
    if (st != NTPU_OK)
        return st;
    uint64_t s = seed;
    for (size_t l = 0; l < m->layers; l++) {
        float bound = 1.0f / sqrtf((float)sizes[l]);
        for (size_t i = 0; i < (size_t)sizes[l] * sizes[l + 1]; i++)
            m->w[l][i] = bound * ntpu_uniform_pm1(&s);
        for (size_t i = 0; i < sizes[l + 1]; i++)
            m->b[l][i] = bound * ntpu_uniform_pm1(&s);
    }
    if ((st = ntpu_model_sync(m)) != NTPU_OK) {
        ntpu_model_free(m);
        return st;
    }
    *out = m;
    return NTPU_OK;
}

/* ------------------------------------------------------------------ models of any arch */

/* NTPU_OK when a is what ntpu_arch_parse makes of its own SPEC and input shape (a caller may
 * have filled it in by hand); spec gets that SPEC. */
static ntpu_status check_arch(ntpu_device *dev, const ntpu_arch *a, char *spec, size_t len)
{
    ntpu_arch again;
    char why[256];
    if (ntpu_arch_format(a, spec, len) != NTPU_OK)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "model: the arch has no SPEC (no items, or an unknown kind)");
    if (ntpu_arch_parse(spec, a->in_c, a->in_h, a->in_w, &again, why, sizeof why) != NTPU_OK)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "model: %s", why);
    if (again.n != a->n || memcmp(again.item, a->item, a->n * sizeof *a->item) != 0)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG,
                         "model: the arch's items are not what ntpu_arch_parse makes of '%s' (shapes, implied flatten)",
                         spec);
    return NTPU_OK;
}

ntpu_status ntpu_model_create_arch(ntpu_device *dev, const ntpu_arch *arch, size_t max_batch, uint64_t seed,
                                   const ntpu_optim_config *opt, ntpu_model **out)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (!arch || !out)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "model: no arch, or no place for the model");
    char spec[NTPU_MAX_ITEMS * 24];
    if ((st = check_arch(dev, arch, spec, sizeof spec)) != NTPU_OK)
        return st;
    unsigned sizes[NTPU_MAX_LAYERS + 1];
    size_t n_sizes;
    if (!ntpu_arch_is_mlp(arch, sizes, &n_sizes))
        return ntpu_net_create(dev, arch, max_batch, seed, opt, out);
    /* The dense path, bit for bit ntpu_model_create; the arch as written (a flatten, the input's shape). */
    if ((st = ntpu_model_create(dev, sizes, n_sizes, max_batch, seed, opt, out)) == NTPU_OK)
        (*out)->arch = *arch;
    return st;
}

const ntpu_arch *ntpu_model_arch(const ntpu_model *m)
{
    return m ? &m->arch : NULL;
}

ntpu_status ntpu_model_check_resident(const ntpu_model *m)
{
    if (!m)
        return NTPU_ERR_INVALID_ARG;
    return m->streamed ? ntpu_fail(m->dev, NTPU_ERR_UNSUPPORTED, "%s", m->why) : NTPU_OK;
}

void ntpu_model_get_view(ntpu_model *m, ntpu_model_view *v)
{
    memset(v, 0, sizeof *v);
    if (!m)
        return;
    v->n_layers = m->layers;
    v->sizes = m->sizes;
    for (size_t l = 0; l < m->layers; l++) {
        v->weights[l] = m->w[l];
        v->biases[l] = m->b[l];
        v->w_state1[l] = m->ws1[l];
        v->w_state2[l] = m->ws2[l];
        v->b_state1[l] = m->bs1[l];
        v->b_state2[l] = m->bs2[l];
        v->grad_w[l] = m->gw[l];
        v->grad_b[l] = m->gb[l];
    }
    v->opt = &m->opt;
    v->step = &m->step;
}

/* Writes a batch (rounded to bf16, padded to bp rows and whole tiles) to UB. */
static ntpu_status upload_input(ntpu_model *m, const float *x, size_t batch, size_t bp)
{
    const size_t n = m->n, in = m->sizes[0], ti = m->tiles[0];
    uint16_t *rows = grow_scratch(m, ti * bp * n * 2);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    for (size_t b = 0; b < bp; b++) { /* sample b's whole k-tiles in one call */
        const size_t whole = b < batch ? in / n : 0;
        ntpu_bf16_from_f32_groups(rows + b * n, bp * n, &x[b * in], n, whole, n);
        for (size_t t = whole; t < ti; t++) {
            uint16_t *dst = rows + (t * bp + b) * n;
            for (size_t j = 0, k = t * n; j < n; j++, k++)
                dst[j] = b < batch && k < in ? ntpu_bf16_from_f32(x[b * in + k]) : 0;
        }
    }
    return ntpu_write_rows(m->dev, NTPU_MEM_UB, m->ub_x[0], (uint32_t)(ti * bp), rows);
}

/* Forward pass of every layer; the last layer's logits (with bias) stay in ACC. */
static ntpu_status forward(ntpu_model *m, size_t bp)
{
    ntpu_device *dev = m->dev;
    const size_t n = m->n;
    ntpu_status st = NTPU_OK;
    for (size_t l = 0; l < m->layers && st == NTPU_OK; l++) {
        const size_t ti = m->tiles[l], to = m->tiles[l + 1];
        const int last = l + 1 == m->layers;
        /* Two output tiles at a time, their MATMULs interleaved k-tile by k-tile: each sum still
         * runs k ascending, and a golden model can read each block of X once for both. */
        for (size_t nt0 = 0; nt0 < to && st == NTPU_OK; nt0 += 2) {
            const size_t nt1 = nt0 + 2 < to ? nt0 + 2 : to;
            for (size_t kt = 0; kt < ti && st == NTPU_OK; kt++)
                for (size_t nt = nt0; nt < nt1 && st == NTPU_OK; nt++) {
                    st = ntpu_load_w(dev, (uint32_t)(m->wb_w[l] + (nt * ti + kt) * n), 0);
                    if (st == NTPU_OK)
                        st = ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, (uint32_t)(m->ub_x[l] + kt * bp),
                                              (uint32_t)(m->acc_z[l] + nt * bp), (uint32_t)bp, kt > 0);
                }
            for (size_t nt = nt0; nt < nt1 && st == NTPU_OK; nt++)
                st = last ? ntpu_vec_act(dev, NTPU_ACT_BIAS | NTPU_OUT_ACC, (uint32_t)(m->acc_z[l] + nt * bp),
                                         (uint32_t)(m->acc_z[l] + nt * bp), (uint32_t)bp, m->acc_b[l] + (uint32_t)nt)
                          : ntpu_vec_act(dev, NTPU_ACT_BIAS | NTPU_ACT_RELU | NTPU_OUT_UB,
                                         (uint32_t)(m->acc_z[l] + nt * bp), (uint32_t)(m->ub_x[l + 1] + nt * bp),
                                         (uint32_t)bp, m->acc_b[l] + (uint32_t)nt);
        }
    }
    return st;
}

/* Reads the logits of the last layer into logits (batch x classes). */
static ntpu_status read_logits(ntpu_model *m, size_t batch, size_t bp, float *logits)
{
    const size_t n = m->n, L = m->layers, to = m->tiles[L], classes = m->sizes[L];
    uint32_t *rows = grow_scratch(m, to * bp * n * 4);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    ntpu_status st = ntpu_read_rows(m->dev, NTPU_MEM_ACC, m->acc_z[L - 1], (uint32_t)(to * bp), rows);
    if (st != NTPU_OK)
        return st;
    for (size_t b = 0; b < batch; b++)
        for (size_t c = 0; c < classes; c++)
            memcpy(&logits[b * classes + c], &rows[((c / n) * bp + b) * n + c % n], 4);
    return NTPU_OK;
}

void ntpu_softmax_xent_part(const float *logits, const uint8_t *labels, size_t count, size_t batch, size_t classes,
                            float *grad, float *total, size_t *correct)
{
    for (size_t b = 0; b < count; b++) {
        const float *z = logits + b * classes;
        size_t arg = 0;
        for (size_t c = 1; c < classes; c++)
            if (z[c] > z[arg])
                arg = c;
        float mx = z[arg], sum = 0.0f;
        for (size_t c = 0; c < classes; c++)
            sum += expf(z[c] - mx);
        *total += logf(sum) + mx - z[labels[b]];
        *correct += arg == labels[b];
        for (size_t c = 0; c < classes; c++)
            grad[b * classes + c] = (expf(z[c] - mx) / sum - (c == labels[b] ? 1.0f : 0.0f)) / (float)batch;
    }
}

void ntpu_softmax_xent(const float *logits, const uint8_t *labels, size_t batch, size_t classes, float *grad,
                       float *loss, size_t *correct)
{
    float total = 0.0f;
    *correct = 0;
    ntpu_softmax_xent_part(logits, labels, batch, batch, classes, grad, &total, correct);
    *loss = total / (float)batch;
}

/* The forward pass of either path, to the logits (batch x classes) on the host. */
static ntpu_status forward_logits(ntpu_model *m, const float *x, size_t batch, size_t bp, float *logits)
{
    if (m->streamed)
        return ntpu_stream_forward(m, x, batch, bp, logits);
    /* the forward program, when the training steps have recorded and uploaded it for this bp */
    const int prog = m->prog_fits && m->prog_bp == bp && m->prog_pm_writes == m->dev->pm_writes;
    ntpu_status st = upload_input(m, x, batch, bp);
    if (st == NTPU_OK)
        st = prog ? ntpu_program_run(m->dev, m->prog_fwd) : forward(m, bp);
    if (st == NTPU_OK)
        st = read_logits(m, batch, bp, logits);
    return st;
}

static ntpu_status check_batch(ntpu_model *m, const float *x, size_t batch)
{
    if (!m)
        return NTPU_ERR_INVALID_ARG;
    if (!x || batch == 0 || batch > m->max_batch)
        return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "batch of %zu samples: need 1..%zu and data", batch,
                         m->max_batch);
    return NTPU_OK;
}

ntpu_status ntpu_model_predict(ntpu_model *m, const float *x, size_t batch, float *logits)
{
    if (m && m->net)
        return ntpu_net_predict(m, x, batch, logits);
    ntpu_status st = check_batch(m, x, batch);
    if (st != NTPU_OK)
        return st;
    if (!logits)
        return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "predict: logits is NULL");
    if ((st = own_memories(m)) != NTPU_OK)
        return st;
    return forward_logits(m, x, batch, ntpu_round_up(batch, m->n), logits);
}

/* Backward pass: dZ of the last layer is in ACC at z[L-1]; leaves dW and db of
 * every layer in ACC (read_gradients takes them to the host), or with the device
 * optimizer updates the weights. */
static ntpu_status backward(ntpu_model *m, size_t bp)
{
    ntpu_device *dev = m->dev;
    const size_t n = m->n;
    const int adam = dev_adam(m), decoupled = m->opt.kind == NTPU_OPT_ADAMW;
    ntpu_status st = NTPU_OK;
    for (size_t l = m->layers; l-- > 0 && st == NTPU_OK;) {
        const size_t ti = m->tiles[l], to = m->tiles[l + 1];
        for (size_t nt = 0; nt < to && st == NTPU_OK; nt++) {
            uint32_t z = (uint32_t)(m->acc_z[l] + nt * bp);
            st = ntpu_vec_colsum(dev, z, m->acc_db[l] + (uint32_t)nt, (uint32_t)bp, 0);
            if (st == NTPU_OK)
                st = ntpu_vec_act(dev, NTPU_OUT_WB, z, (uint32_t)(m->wb_g[l] + nt * bp), (uint32_t)bp, 0);
            if (st == NTPU_OK && l > 0)
                st = ntpu_vec_act(dev, NTPU_OUT_UB, z, (uint32_t)(m->ub_g[l] + nt * bp), (uint32_t)bp, 0);
        }
        /* dW = Xᵀ·dZ: batch blocks ascending, X streamed transposed from its k-tiles;
         * two output tiles interleaved as in forward() where each has its own dW.
         * The device optimizer takes each output tile's dW as soon as it is summed. */
        const unsigned oflags = m->opt.kind == NTPU_OPT_MOMENTUM ? NTPU_OPTIM_MOMENTUM : 0;
        const size_t blk = (1 + (oflags != 0)) * ti * n, ways = m->devopt ? 1 : 2;
        for (size_t nt0 = 0; nt0 < to && st == NTPU_OK; nt0 += ways) {
            const size_t nt1 = nt0 + ways < to ? nt0 + ways : to;
            for (size_t j = 0; j < bp / n && st == NTPU_OK; j++)
                for (size_t nt = nt0; nt < nt1 && st == NTPU_OK; nt++) {
                    st = ntpu_load_w(dev, (uint32_t)(m->wb_g[l] + nt * bp + j * n), 0);
                    if (st == NTPU_OK)
                        st = ntpu_matmul_tile_transpose_a(
                            dev, NTPU_DTYPE_BF16, (uint32_t)(m->ub_x[l] + j * n), (uint32_t)bp,
                            (uint32_t)(m->acc_dw[l] + (m->devopt ? 0 : nt * ti * n)), (uint32_t)(ti * n), j > 0);
                }
            const uint32_t dw = (uint32_t)m->acc_dw[l]; /* the device optimizer's: one output tile (nt0) */
            if (st == NTPU_OK && adam)
                st = ntpu_vec_optim_adam(dev, decoupled, (uint32_t)(m->acc_mw[l] + nt0 * blk), dw, (uint32_t)(ti * n),
                                         m->acc_k, (uint32_t)(m->os_w[l] + nt0 * 2 * ti * n));
            else if (st == NTPU_OK && m->devopt)
                st =
                    ntpu_vec_optim(dev, oflags, (uint32_t)(m->acc_mw[l] + nt0 * blk), dw, (uint32_t)(ti * n), m->acc_k);
        }
        if (st == NTPU_OK && adam)
            st = ntpu_vec_optim_adam(dev, decoupled, m->acc_b[l], m->acc_db[l], (uint32_t)to, m->acc_k, m->os_b[l]);
        else if (st == NTPU_OK && m->devopt)
            st = ntpu_vec_optim(dev, oflags, m->acc_b[l], m->acc_db[l], (uint32_t)to, m->acc_k);
        /* dX = dZ·Wᵀ (weights loaded transposed), then ReLU backward against the
         * forward activation, which is this layer's input. */
        if (l > 0)
            for (size_t it = 0; it < ti && st == NTPU_OK; it++) {
                uint32_t z = (uint32_t)(m->acc_z[l - 1] + it * bp);
                for (size_t ot = 0; ot < to && st == NTPU_OK; ot++) {
                    st = ntpu_load_w(dev, (uint32_t)(m->wb_w[l] + (ot * ti + it) * n), 1);
                    if (st == NTPU_OK)
                        st = ntpu_matmul_tile(dev, NTPU_DTYPE_BF16, (uint32_t)(m->ub_g[l] + ot * bp), z, (uint32_t)bp,
                                              ot > 0);
                }
                if (st == NTPU_OK)
                    st = ntpu_vec_relu_grad(dev, NTPU_OUT_ACC, z, z, (uint32_t)bp, (uint32_t)(m->ub_x[l] + it * bp));
            }
        /* Device optimizer: the updated weights, rounded to bf16, where the next
         * forward pass loads them; only now, as dX above used the old ones. */
        for (size_t nt = 0; nt < to && st == NTPU_OK && m->devopt; nt++)
            st = ntpu_vec_act(dev, NTPU_OUT_WB, (uint32_t)(m->acc_mw[l] + nt * blk),
                              (uint32_t)(m->wb_w[l] + nt * ti * n), (uint32_t)(ti * n), 0);
    }
    return st;
}

/* rows rows of count values each (dst row r at dst + r * count) from output
 * tiles of `lanes` lanes: tile g's rows are consecutive at src + g * src_stride
 * (the last tile may be short). Tile by tile, so the reads run in order; a
 * constant-size copy for N = 8 (inlined). */
static void gather_rows(float *dst, size_t rows, size_t count, const uint32_t *src, size_t src_stride, size_t lanes)
{
    for (size_t at = 0; at < count; at += lanes, src += src_stride) {
        const size_t w = count - at < lanes ? count - at : lanes;
        if (w == 8)
            for (size_t r = 0; r < rows; r++)
                memcpy(dst + r * count + at, src + r * 8, 32);
        else
            for (size_t r = 0; r < rows; r++)
                memcpy(dst + r * count + at, src + r * lanes, w * 4);
    }
}

/* The words read_gradients keeps for layer l: its dW rows, then its db rows. */
static size_t grad_words(const ntpu_model *m, size_t l)
{
    const size_t n = m->n, ti = m->tiles[l], to = m->tiles[l + 1];
    return (to * ti * n + to) * n;
}

/* The host optimizer's inputs: every layer's dW and db rows, read back from ACC
 * into scratch (*grads, layer after layer, grad_words each), followed by room
 * for the largest layer's write_layer buffer. All are read before the host
 * changes anything. */
static ntpu_status read_gradients(ntpu_model *m, uint32_t **grads)
{
    const size_t n = m->n;
    size_t words = 0, tiles = 0;
    for (size_t l = 0; l < m->layers; l++) {
        words += grad_words(m, l);
        tiles = layer_bytes(m, l) > tiles ? layer_bytes(m, l) : tiles;
    }
    uint32_t *rows = grow_scratch(m, words * 4 + tiles);
    if (!(*grads = rows))
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    ntpu_status st = NTPU_OK;
    for (size_t l = 0; l < m->layers && st == NTPU_OK; rows += grad_words(m, l), l++) {
        const size_t ti = m->tiles[l], to = m->tiles[l + 1];
        st = ntpu_read_rows(m->dev, NTPU_MEM_ACC, m->acc_dw[l], (uint32_t)(to * ti * n), rows);
        if (st == NTPU_OK)
            st = ntpu_read_rows(m->dev, NTPU_MEM_ACC, m->acc_db[l], (uint32_t)to, rows + to * ti * n * n);
    }
    return st;
}

static float *slot_row(float *slot, size_t at)
{
    return slot ? slot + at : NULL; /* SGD has no slots */
}

/* Rows k0 .. k1-1 of layer l, while they are in cache: dW rows gathered from
 * their output tiles' ACC rows (dw) into gw, the optimizer step on them (one
 * call: its set-up is not free), and the new rows rounded into their bf16 tiles. */
static void update_weight_rows(ntpu_model *m, size_t l, size_t k0, size_t k1, const uint32_t *dw,
                               const ntpu_optim_step *os, uint16_t *tiles)
{
    const size_t n = m->n, in = m->sizes[l], out = m->sizes[l + 1], ti = m->tiles[l];
    const size_t real = k1 < in ? k1 : in; /* rows past `in` pad the last k-tile */
    if (k0 < real) {
        gather_rows(&m->gw[l][k0 * out], real - k0, out, dw + k0 * n, ti * n * n, n);
        const size_t at = k0 * out;
        ntpu_optim_step_apply(os, &m->w[l][at], &m->gw[l][at], slot_row(m->ws1[l], at), slot_row(m->ws2[l], at),
                              (real - k0) * out);
    }
    weight_rows_to_tiles(m, l, k0, k1, tiles);
}

/* The host optimizer's step on the gradients read_gradients left at grads,
 * layer by layer, each written to the device as soon as it is updated. The
 * host's weights are all updated even when a write fails (as before: the
 * device's copy is then written again by the next ntpu_model_sync). */
static ntpu_status update_and_upload(ntpu_model *m, const uint32_t *grads)
{
    const size_t n = m->n;
    size_t words = 0;
    for (size_t l = 0; l < m->layers; l++)
        words += grad_words(m, l);
    uint16_t *tiles = (uint16_t *)(grads + words);
    ntpu_optim_step os;
    ntpu_optim_step_init(&os, &m->opt, m->step);
    ntpu_status st = ntpu_claim_memories(m->dev, m, evict, NULL);
    for (size_t l = 0; l < m->layers; grads += grad_words(m, l), l++) {
        const size_t out = m->sizes[l + 1], ti = m->tiles[l], to = m->tiles[l + 1];
        const size_t step = block_rows(m, l);
        for (size_t k = 0; k < ti * n; k += step)
            update_weight_rows(m, l, k, k + step < ti * n ? k + step : ti * n, grads, &os, tiles);
        memcpy(m->gb[l], grads + to * ti * n * n, out * 4); /* db rows: the lanes in order */
        ntpu_optim_step_apply(&os, m->b[l], m->gb[l], m->bs1[l], m->bs2[l], out);
        if (st == NTPU_OK)
            st = write_layer(m, l, tiles);
    }
    m->k_valid = 0;
    m->dev_ahead = 0;
    if (st != NTPU_OK)
        ntpu_release_memories(m->dev, m);
    return st;
}

/* Records one pass (forward or backward) into *out. NTPU_OK also when the
 * recording fails on something a program cannot hold (then *out is NULL). */
static ntpu_status record(ntpu_model *m, size_t bp, int back, ntpu_program **out)
{
    *out = NULL;
    ntpu_status st = ntpu_program_begin(m->dev);
    if (st != NTPU_OK)
        return st;
    ntpu_status pass = back ? backward(m, bp) : forward(m, bp);
    st = ntpu_program_end(m->dev, out);
    if (st == NTPU_OK && pass != NTPU_OK) {
        ntpu_program_free(*out);
        *out = NULL;
    }
    return st;
}

/* Decides whether this step runs its device work as programs (*use), recording
 * and uploading them when the padded batch or PM changed. Without PROGRAM, or
 * when they do not fit PM, the step sends the same commands itself. */
static ntpu_status prepare_programs(ntpu_model *m, size_t bp, int *use)
{
    ntpu_device *dev = m->dev;
    *use = 0;
    if (m->streamed || !(dev->info.features & NTPU_FEATURE_PROGRAM_BIT) || dev->info.pm_rows == 0)
        return NTPU_OK;
    ntpu_status st;
    if (m->prog_bp != bp) {
        drop_programs(m);
        m->prog_bp = bp;
        if ((st = record(m, bp, 0, &m->prog_fwd)) != NTPU_OK || (st = record(m, bp, 1, &m->prog_bwd)) != NTPU_OK)
            return st;
        uint32_t fr = ntpu_program_rows(m->prog_fwd), br = ntpu_program_rows(m->prog_bwd);
        m->prog_fits =
            m->prog_fwd && m->prog_bwd && (uint64_t)fr + br <= dev->info.pm_rows && fr <= 65535 && br <= 65535;
        m->prog_pm_writes = dev->pm_writes - 1; /* not uploaded yet */
    }
    if (!m->prog_fits)
        return NTPU_OK;
    if (m->prog_pm_writes != dev->pm_writes) {
        if ((st = ntpu_program_upload(dev, m->prog_fwd, 0)) != NTPU_OK ||
            (st = ntpu_program_upload(dev, m->prog_bwd, ntpu_program_rows(m->prog_fwd))) != NTPU_OK)
            return st;
        m->prog_pm_writes = dev->pm_writes;
    }
    *use = 1;
    return NTPU_OK;
}

/* Device optimizer: lr (of this step's schedule), wd and mu, one value per lane,
 * to the ACC rows OPTIM reads; for Adam the nine NTPU_ADAM_K_* constants,
 * computed in fp32 exactly as ntpu_optim_update computes them; only when they
 * change. */
ntpu_status ntpu_model_write_optim_consts(ntpu_model *m)
{
    const float lr = ntpu_optim_lr(&m->opt, m->step), wd = m->opt.weight_decay;
    const float b1 = m->opt.beta1, b2 = m->opt.beta2;
    float v[NTPU_ADAM_CONSTS] = {lr, wd, m->opt.momentum};
    size_t k = 3;
    if (dev_adam(m)) {
        v[NTPU_ADAM_K_WD] = m->opt.kind == NTPU_OPT_ADAMW ? 1.0f - lr * wd : wd;
        v[NTPU_ADAM_K_B1] = b1;
        v[NTPU_ADAM_K_1MB1] = 1.0f - b1;
        v[NTPU_ADAM_K_B2] = b2;
        v[NTPU_ADAM_K_1MB2] = 1.0f - b2;
        v[NTPU_ADAM_K_C1] = 1.0f - powf(b1, (float)(m->step + 1));
        v[NTPU_ADAM_K_C2] = 1.0f - powf(b2, (float)(m->step + 1));
        v[NTPU_ADAM_K_EPS] = m->opt.eps;
        k = NTPU_ADAM_CONSTS;
    }
    uint32_t bits[NTPU_ADAM_CONSTS] = {0};
    memcpy(bits, v, k * 4);
    /* only the rows from the first to the last that changed: with a fixed lr, Adam's C1 and C2 */
    size_t lo = 0, hi = k;
    if (m->k_valid && m->k_rows == k) {
        while (lo < hi && bits[lo] == m->k_bits[lo])
            lo++;
        while (hi > lo && bits[hi - 1] == m->k_bits[hi - 1])
            hi--;
        if (lo == hi)
            return NTPU_OK;
    }
    const size_t n = m->n;
    uint32_t *rows = grow_scratch(m, (hi - lo) * n * 4);
    if (!rows)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "model: out of memory");
    for (size_t i = lo; i < hi; i++)
        for (size_t j = 0; j < n; j++)
            rows[(i - lo) * n + j] = bits[i];
    ntpu_status st = ntpu_write_rows(m->dev, NTPU_MEM_ACC, m->acc_k + (uint32_t)lo, (uint32_t)(hi - lo), rows);
    if (st == NTPU_OK) {
        memcpy(m->k_bits, bits, sizeof bits);
        m->k_rows = (unsigned)k;
        m->k_valid = 1;
    }
    return st;
}

/* An MLP's forward pass, loss and backward pass for batch samples whose loss's gradient is divided by
 * `divisor` (the whole step's samples; batch for a plain step): the samples' summed loss added to *total
 * and their hits to *correct in sample order; the gradients in gw and gb (streamed), or in ACC and, unless
 * the device optimizer has used them already, read to *grads (read_gradients' layout). */
static ntpu_status mlp_backprop(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch, size_t divisor,
                                float *total, size_t *correct, uint32_t **grads)
{
    ntpu_status st = check_batch(m, x, batch);
    if (st != NTPU_OK)
        return st;
    const size_t L = m->layers, classes = m->sizes[L], n = m->n, to = m->tiles[L];
    if (!labels)
        return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "train: labels is NULL");
    if ((st = ntpu_check_labels(m, labels, batch, "train")) != NTPU_OK || (st = own_memories(m)) != NTPU_OK)
        return st;
    size_t bp = ntpu_round_up(batch, n);
    float *logits = malloc(batch * classes * 2 * sizeof *logits);
    if (!logits)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "train: out of memory");
    float *grad = logits + batch * classes;
    int prog = 0;
    st = prepare_programs(m, bp, &prog);
    if (st == NTPU_OK)
        st = forward_logits(m, x, batch, bp, logits);
    if (st == NTPU_OK)
        ntpu_softmax_xent_part(logits, labels, batch, divisor, classes, grad, total, correct);
    if (st == NTPU_OK && m->streamed) {
        st = ntpu_stream_backward(m, grad, batch, bp);
    } else if (st == NTPU_OK) {
        uint32_t *rows = grow_scratch(m, to * bp * n * 4);
        if (!rows)
            st = ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "train: out of memory");
        else {
            memset(rows, 0, to * bp * n * 4);
            for (size_t b = 0; b < batch; b++)
                for (size_t c = 0; c < classes; c++)
                    memcpy(&rows[((c / n) * bp + b) * n + c % n], &grad[b * classes + c], 4);
            st = ntpu_write_rows(m->dev, NTPU_MEM_ACC, m->acc_z[L - 1], (uint32_t)(to * bp), rows);
        }
        if (st == NTPU_OK && m->devopt)
            st = ntpu_model_write_optim_consts(m);
        if (st == NTPU_OK)
            st = prog ? ntpu_program_run(m->dev, m->prog_bwd) : backward(m, bp);
        if (st == NTPU_OK && !m->devopt)
            st = read_gradients(m, grads); /* the device optimizer has used them already */
    }
    free(logits);
    return st;
}

ntpu_status ntpu_model_train_step(ntpu_model *m, const float *x, const uint8_t *labels, size_t batch,
                                  ntpu_step_result *res)
{
    if (m && m->net)
        return ntpu_net_train_step(m, x, labels, batch, res);
    float total = 0.0f;
    ntpu_step_result r = {0};
    uint32_t *grads = NULL;
    ntpu_status st = mlp_backprop(m, x, labels, batch, batch, &total, &r.correct, &grads);
    if (st != NTPU_OK)
        return st;
    r.loss = total / (float)batch;
    if (m->devopt) {
        m->step++;
        m->dev_ahead = 1;
        if (res)
            *res = r;
        return NTPU_OK;
    }
    const size_t L = m->layers;
    if (m->streamed) /* its gradients are in gw and gb already */
        for (size_t l = 0; l < L; l++) {
            ntpu_optim_update(&m->opt, m->step, m->w[l], m->gw[l], m->ws1[l], m->ws2[l],
                              (size_t)m->sizes[l] * m->sizes[l + 1]);
            ntpu_optim_update(&m->opt, m->step, m->b[l], m->gb[l], m->bs1[l], m->bs2[l], m->sizes[l + 1]);
        }
    else
        st = update_and_upload(m, grads);
    m->step++;
    if (res)
        *res = r;
    return m->streamed ? ntpu_model_sync(m) : st;
}

ntpu_status ntpu_model_grad(ntpu_model *m, const float *x, const uint8_t *labels, size_t count, size_t divisor,
                            float *total, size_t *correct)
{
    if (!m)
        return NTPU_ERR_INVALID_ARG;
    if (m->devopt)
        return ntpu_fail(m->dev, NTPU_ERR_UNSUPPORTED,
                         "train: the gradient alone is not kept with the device optimizer");
    if (m->net)
        return ntpu_net_grad(m, x, labels, count, divisor, total, correct);
    uint32_t *grads = NULL;
    ntpu_status st = mlp_backprop(m, x, labels, count, divisor, total, correct, &grads);
    if (st != NTPU_OK || m->streamed) /* a streamed model's gradients are in gw and gb already */
        return st;
    for (size_t l = 0; l < m->layers; grads += grad_words(m, l), l++) {
        const size_t n = m->n, out = m->sizes[l + 1], ti = m->tiles[l], to = m->tiles[l + 1];
        gather_rows(m->gw[l], m->sizes[l], out, grads, ti * n * n, n);
        memcpy(m->gb[l], grads + to * ti * n * n, out * 4); /* db rows: the lanes in order */
    }
    return NTPU_OK;
}

size_t ntpu_model_params(ntpu_model *m, ntpu_param_ref *out)
{
    size_t k = 0;
    if (m->net) {
        for (size_t i = 0; i < m->arch.n; i++) {
            ntpu_net_param *p = &m->param[i];
            if (!p->w)
                continue;
            out[k++] = (ntpu_param_ref){p->w, p->gw, p->ws1, p->ws2, p->nw};
            out[k++] = (ntpu_param_ref){p->b, p->gb, p->bs1, p->bs2, p->nb};
        }
        return k;
    }
    for (size_t l = 0; l < m->layers; l++) {
        out[k++] = (ntpu_param_ref){m->w[l], m->gw[l], m->ws1[l], m->ws2[l], (size_t)m->sizes[l] * m->sizes[l + 1]};
        out[k++] = (ntpu_param_ref){m->b[l], m->gb[l], m->bs1[l], m->bs2[l], m->sizes[l + 1]};
    }
    return k;
}

ntpu_status ntpu_model_apply_grad(ntpu_model *m)
{
    ntpu_param_ref p[2 * NTPU_MAX_ITEMS];
    const size_t np = ntpu_model_params(m, p);
    ntpu_optim_step os;
    ntpu_optim_step_init(&os, &m->opt, m->step);
    for (size_t i = 0; i < np; i++)
        ntpu_optim_step_apply(&os, p[i].w, p[i].g, p[i].s1, p[i].s2, p[i].n);
    m->step++;
    m->k_valid = 0;
    return ntpu_model_sync(m);
}

ntpu_status ntpu_check_labels(const ntpu_model *m, const uint8_t *labels, size_t count, const char *what)
{
    const size_t classes = ntpu_model_classes(m);
    for (size_t i = 0; i < count; i++)
        if (labels[i] >= classes)
            return ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "%s: label %u of sample %zu is not below %zu", what,
                             labels[i], i, classes);
    return NTPU_OK;
}

ntpu_status ntpu_model_eval_batch(ntpu_model *m, const float *x, const uint8_t *labels, size_t b, float *scratch,
                                  float *loss, size_t *correct)
{
    const size_t classes = ntpu_model_classes(m);
    ntpu_status st = ntpu_model_predict(m, x, b, scratch);
    if (st == NTPU_OK)
        ntpu_softmax_xent(scratch, labels, b, classes, scratch + b * classes, loss, correct);
    return st;
}

ntpu_status ntpu_model_evaluate(ntpu_model *m, const float *x, const uint8_t *labels, size_t count, double *accuracy,
                                double *loss)
{
    if (!m || !x || !labels || count == 0)
        return m ? ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "evaluate: no samples") : NTPU_ERR_INVALID_ARG;
    const size_t classes = ntpu_model_classes(m), in = ntpu_model_inputs(m);
    ntpu_status lst = ntpu_check_labels(m, labels, count, "evaluate");
    if (lst != NTPU_OK)
        return lst;
    float *scratch = malloc(m->max_batch * classes * 2 * sizeof *scratch);
    if (!scratch)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "evaluate: out of memory");
    double total_loss = 0;
    size_t correct = 0;
    ntpu_status st = NTPU_OK;
    for (size_t at = 0; at < count && st == NTPU_OK; at += m->max_batch) {
        size_t b = count - at < m->max_batch ? count - at : m->max_batch, ok;
        float l;
        if ((st = ntpu_model_eval_batch(m, x + at * in, labels + at, b, scratch, &l, &ok)) == NTPU_OK) {
            total_loss += (double)l * (double)b;
            correct += ok;
        }
    }
    free(scratch);
    if (st == NTPU_OK) {
        if (accuracy)
            *accuracy = (double)correct / (double)count;
        if (loss)
            *loss = total_loss / (double)count;
    }
    return st;
}
