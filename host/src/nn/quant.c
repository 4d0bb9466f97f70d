/* SPDX-License-Identifier: Apache-2.0 */
/* Post-training int8 quantization and int8 inference on the device (see
 * ntpu/nn.h). Symmetric scales, zero point 0: q = round(x / s), |q| <= 127.
 * This file: an MLP, resident in the device's memories; a conv net's copy is
 * quant_net.c's (its products through ntpu_matmul), reached from here.
 *
 * Device layout for a batch padded to bp rows, T(l) = ceil(sizes[l] / N):
 *   UB  x[l]   int8 activations (low byte of each lane) as T(l) tiles of bp rows
 *   WB  w[l]   int8 weight tiles, laid out as in training
 *   ACC z[l]   int32 accumulators, T(l+1) tiles of bp rows
 *       aux[l] three rows per output tile: int32 bias, Q31 multiplier, shift
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

struct ntpu_qmodel {
    ntpu_model *m;
    ntpu_device *dev;                 /* m's, kept for ntpu_qmodel_free: a copy may outlive its model */
    float in_scale[NTPU_MAX_LAYERS];  /* scale of layer l's input activations */
    float *w_scale[NTPU_MAX_LAYERS];  /* per output channel */
    int32_t *bias_q[NTPU_MAX_LAYERS]; /* last layer's biases, added on the host */
    uint32_t ub_x[NTPU_MAX_LAYERS], wb_w[NTPU_MAX_LAYERS], acc_z[NTPU_MAX_LAYERS], acc_aux[NTPU_MAX_LAYERS];
    /* What it keeps in the device's memories, to write again when it gets them back (from its model,
     * ntpu_matmul, ...): the int8 weight tiles and the bias / multiplier / shift rows of each layer. */
    uint16_t *tiles[NTPU_MAX_LAYERS];
    uint32_t *aux[NTPU_MAX_LAYERS];
    ntpu_qnet *net; /* a net's quantized copy (quant_net.c); the fields above are unused */
};

void ntpu_qmodel_free(ntpu_qmodel *q)
{
    if (!q)
        return;
    ntpu_release_memories(q->dev, q);
    ntpu_qnet_free(q->net);
    for (size_t l = 0; l < NTPU_MAX_LAYERS; l++) {
        free(q->w_scale[l]);
        free(q->bias_q[l]);
        free(q->tiles[l]);
        free(q->aux[l]);
    }
    free(q);
}

/* Makes the device's memories q's, writing its weights and aux rows when something else had them. */
static ntpu_status own_memories(ntpu_qmodel *q)
{
    const ntpu_model *m = q->m;
    int changed;
    ntpu_status st = ntpu_claim_memories(m->dev, q, NULL, &changed);
    for (size_t l = 0; l < m->layers && st == NTPU_OK && changed; l++) {
        const size_t ti = m->tiles[l], to = m->tiles[l + 1];
        st = ntpu_write_rows(m->dev, NTPU_MEM_WB, q->wb_w[l], (uint32_t)(ti * to * m->n), q->tiles[l]);
        if (st == NTPU_OK)
            st = ntpu_write_rows(m->dev, NTPU_MEM_ACC, q->acc_aux[l], (uint32_t)(3 * to), q->aux[l]);
        if (st != NTPU_OK) /* half written: the next call writes them all again */
            ntpu_release_memories(m->dev, q);
    }
    return st;
}

static int32_t sat_round(double v, double lim)
{
    v = nearbyint(v);
    return (int32_t)(v > lim ? lim : v < -lim ? -lim : v);
}

/* Largest activation at each layer's input over the calibration samples, from
 * a host fp32 forward pass of the master weights. */
static ntpu_status calibrate(ntpu_model *m, const float *x, size_t count, float *amax)
{
    size_t widest = 0;
    for (size_t l = 0; l <= m->layers; l++)
        widest = m->sizes[l] > widest ? m->sizes[l] : widest;
    float *a = malloc(widest * sizeof *a), *b = malloc(widest * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "quantize: out of memory");
    }
    for (size_t l = 0; l < m->layers; l++)
        amax[l] = 0.0f;
    for (size_t s = 0; s < count; s++) {
        memcpy(a, x + s * m->sizes[0], m->sizes[0] * sizeof *a);
        for (size_t l = 0; l < m->layers; l++) {
            const size_t in = m->sizes[l], out = m->sizes[l + 1];
            for (size_t k = 0; k < in; k++)
                amax[l] = fabsf(a[k]) > amax[l] ? fabsf(a[k]) : amax[l];
            for (size_t o = 0; o < out; o++)
                b[o] = m->b[l][o];
            for (size_t k = 0; k < in; k++)
                for (size_t o = 0; o < out; o++)
                    b[o] += a[k] * m->w[l][k * out + o];
            for (size_t o = 0; o < out; o++)
                a[o] = l + 1 < m->layers && b[o] < 0.0f ? 0.0f : b[o];
        }
    }
    free(a);
    free(b);
    return NTPU_OK;
}

/* Lays the quantized model out in the device's memories (into q, when given);
 * NTPU_ERR_UNSUPPORTED when it does not fit. */
static ntpu_status place(const ntpu_model *m, ntpu_qmodel *q)
{
    ntpu_device *dev = m->dev;
    const size_t bp = m->max_bp;
    size_t ub = 0, wb = 0, acc = 0;
    for (size_t l = 0; l < m->layers; l++) {
        const size_t xl = ub, wl = wb, zl = acc;
        ub += m->tiles[l] * bp;
        wb += m->tiles[l] * m->tiles[l + 1] * m->n;
        acc += m->tiles[l + 1] * bp;
        if (q) {
            q->ub_x[l] = (uint32_t)xl;
            q->wb_w[l] = (uint32_t)wl;
            q->acc_z[l] = (uint32_t)zl;
            q->acc_aux[l] = (uint32_t)acc;
        }
        acc += 3 * m->tiles[l + 1];
    }
    if (ub > dev->info.ub_rows || wb > dev->info.wb_rows || acc > dev->info.acc_rows)
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED,
                         "the quantized model does not fit the device's memories (it needs %zu UB, %zu WB and %zu "
                         "ACC rows for batches of %zu; the device has %u, %u and %u) and int8 inference is not "
                         "streamed",
                         ub, wb, acc, bp, (unsigned)dev->info.ub_rows, (unsigned)dev->info.wb_rows,
                         (unsigned)dev->info.acc_rows);
    return NTPU_OK;
}

ntpu_status ntpu_qmodel_check(ntpu_model *m)
{
    if (!m)
        return NTPU_ERR_INVALID_ARG;
    if (m->net)
        return ntpu_qnet_check(m);
    if (!(m->dev->info.dtypes & NTPU_DTYPE_INT8_BIT))
        return ntpu_fail(m->dev, NTPU_ERR_UNSUPPORTED, "int8 inference needs int8 matmuls");
    return place(m, NULL);
}

/* A net's quantized copy (quant_net.c) in a qmodel. */
static ntpu_status create_net(ntpu_model *m, const float *calib, size_t count, ntpu_qmodel **out)
{
    ntpu_qmodel *q = calloc(1, sizeof *q);
    if (!q)
        return ntpu_fail(m->dev, NTPU_ERR_NO_MEMORY, "quantize: out of memory");
    q->m = m;
    q->dev = m->dev;
    ntpu_status st = ntpu_qnet_create(m, calib, count, &q->net);
    if (st != NTPU_OK) {
        free(q);
        return st;
    }
    *out = q;
    return NTPU_OK;
}

ntpu_status ntpu_qmodel_create(ntpu_model *m, const float *calib, size_t count, ntpu_qmodel **out)
{
    if (!m || !out || !calib || count == 0)
        return m ? ntpu_fail(m->dev, NTPU_ERR_INVALID_ARG, "quantize: no calibration samples") : NTPU_ERR_INVALID_ARG;
    ntpu_device *dev = m->dev;
    ntpu_status cst = ntpu_qmodel_check(m);
    if (cst != NTPU_OK)
        return cst;
    /* the device optimizer's weights, which the host's pass below (a net's too) reads */
    ntpu_status fst = ntpu_model_fetch(m);
    if (fst != NTPU_OK)
        return fst;
    if (m->net)
        return create_net(m, calib, count, out);
    const size_t n = m->n, L = m->layers;
    ntpu_qmodel *q = calloc(1, sizeof *q);
    if (!q)
        return ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "quantize: out of memory");
    q->m = m;
    q->dev = dev;
    ntpu_status st = place(m, q);
    float amax[NTPU_MAX_LAYERS];
    if (st == NTPU_OK)
        st = calibrate(m, calib, count, amax);
    for (size_t l = 0; l < L && st == NTPU_OK; l++)
        q->in_scale[l] = amax[l] > 0.0f ? amax[l] / 127.0f : 1.0f;

    for (size_t l = 0; l < L && st == NTPU_OK; l++) {
        const size_t in = m->sizes[l], outn = m->sizes[l + 1], ti = m->tiles[l], to = m->tiles[l + 1];
        const int last = l + 1 == L;
        float *ws = q->w_scale[l] = calloc(outn, sizeof *ws);
        uint16_t *tiles = q->tiles[l] = calloc(ti * to * n * n, sizeof *tiles);
        uint32_t *aux = q->aux[l] = calloc(3 * to * n, sizeof *aux);
        if (last)
            q->bias_q[l] = calloc(outn, sizeof *q->bias_q[l]);
        if (!ws || !tiles || !aux || (last && !q->bias_q[l])) {
            st = ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "quantize: out of memory");
            break;
        }
        for (size_t o = 0; o < outn; o++) {
            float mx = 0.0f;
            for (size_t k = 0; k < in; k++)
                mx = fabsf(m->w[l][k * outn + o]) > mx ? fabsf(m->w[l][k * outn + o]) : mx;
            ws[o] = mx > 0.0f ? mx / 127.0f : 1.0f;
        }
        for (size_t kt = 0; kt < ti; kt++)
            for (size_t nt = 0; nt < to; nt++)
                for (size_t i = 0; i < n; i++)
                    for (size_t j = 0; j < n; j++) {
                        size_t k = kt * n + i, o = nt * n + j;
                        int32_t v = k < in && o < outn ? sat_round(m->w[l][k * outn + o] / ws[o], 127) : 0;
                        tiles[((kt * to + nt) * n + i) * n + j] = (uint16_t)(v & 0xFF);
                    }
        /* aux rows per output tile: bias in the accumulator's scale, and the
         * multiplier and shift taking accumulator units to the next input's. */
        for (size_t o = 0; o < to * n; o++) {
            size_t nt = o / n, lane = o % n;
            double acc_scale = o < outn ? (double)q->in_scale[l] * ws[o] : 1.0;
            int32_t bq = o < outn ? sat_round(m->b[l][o] / acc_scale, 2147483647.0) : 0;
            int32_t mult = 0;
            int shift = 0;
            if (!last && o < outn) {
                double ratio = acc_scale / q->in_scale[l + 1];
                if (ratio >= 1.0)
                    ratio = 0.99999999; /* saturates instead; never seen with max calibration */
                ntpu_quantize_multiplier(ratio, &mult, &shift);
            }
            aux[(3 * nt + 0) * n + lane] = (uint32_t)bq;
            aux[(3 * nt + 1) * n + lane] = (uint32_t)mult;
            aux[(3 * nt + 2) * n + lane] = (uint32_t)shift;
            if (last && o < outn)
                q->bias_q[l][o] = bq;
        }
    }
    if (st == NTPU_OK)
        st = own_memories(q); /* the model saves its device state first (evict), then the rows go out */
    if (st != NTPU_OK) {
        ntpu_qmodel_free(q);
        return st;
    }
    *out = q;
    return NTPU_OK;
}

ntpu_status ntpu_qmodel_predict(ntpu_qmodel *q, const float *x, size_t batch, float *logits)
{
    if (!q)
        return NTPU_ERR_INVALID_ARG;
    ntpu_model *m = q->m;
    ntpu_device *dev = m->dev;
    if (!x || !logits || batch == 0 || batch > m->max_batch)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "int8 predict: batch of 1..%zu samples and buffers", m->max_batch);
    if (q->net)
        return ntpu_qnet_predict(q->net, x, batch, logits);
    ntpu_status ost = own_memories(q);
    if (ost != NTPU_OK)
        return ost;
    const size_t n = m->n, L = m->layers, bp = ntpu_round_up(batch, n), in = m->sizes[0], t0 = m->tiles[0];
    const size_t classes = m->sizes[L], tl = m->tiles[L];
    size_t words = t0 * bp * n > tl * bp * n * 2 ? t0 * bp * n : tl * bp * n * 2;
    uint16_t *rows = calloc(words, sizeof *rows);
    if (!rows)
        return ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "int8 predict: out of memory");
    for (size_t t = 0; t < t0; t++)
        for (size_t b = 0; b < batch; b++)
            for (size_t j = 0; j < n && t * n + j < in; j++)
                rows[(t * bp + b) * n + j] = (uint16_t)(sat_round(x[b * in + t * n + j] / q->in_scale[0], 127) & 0xFF);
    ntpu_status st = ntpu_write_rows(dev, NTPU_MEM_UB, q->ub_x[0], (uint32_t)(t0 * bp), rows);
    for (size_t l = 0; l < L && st == NTPU_OK; l++) {
        const size_t ti = m->tiles[l], to = m->tiles[l + 1];
        for (size_t nt = 0; nt < to && st == NTPU_OK; nt++) {
            for (size_t kt = 0; kt < ti && st == NTPU_OK; kt++) {
                st = ntpu_load_w(dev, (uint32_t)(q->wb_w[l] + (kt * to + nt) * n), 0);
                if (st == NTPU_OK)
                    st = ntpu_matmul_tile(dev, NTPU_DTYPE_INT8, (uint32_t)(q->ub_x[l] + kt * bp),
                                          (uint32_t)(q->acc_z[l] + nt * bp), (uint32_t)bp, kt > 0);
            }
            if (st == NTPU_OK && l + 1 < L)
                st = ntpu_vec_act(dev, NTPU_ACT_BIAS | NTPU_ACT_RELU | NTPU_OUT_INT8, (uint32_t)(q->acc_z[l] + nt * bp),
                                  (uint32_t)(q->ub_x[l + 1] + nt * bp), (uint32_t)bp,
                                  (uint32_t)(q->acc_aux[l] + 3 * nt));
        }
    }
    uint32_t *acc = (uint32_t *)rows;
    if (st == NTPU_OK)
        st = ntpu_read_rows(dev, NTPU_MEM_ACC, q->acc_z[L - 1], (uint32_t)(tl * bp), acc);
    if (st == NTPU_OK)
        for (size_t b = 0; b < batch; b++)
            for (size_t c = 0; c < classes; c++) {
                int64_t v = (int64_t)(int32_t)acc[((c / n) * bp + b) * n + c % n] + q->bias_q[L - 1][c];
                logits[b * classes + c] = (float)((double)v * q->in_scale[L - 1] * q->w_scale[L - 1][c]);
            }
    free(rows);
    return st;
}

ntpu_status ntpu_qmodel_evaluate(ntpu_qmodel *q, const float *x, const uint8_t *labels, size_t count, double *accuracy)
{
    if (!q || !x || !labels || count == 0)
        return q ? ntpu_fail(q->m->dev, NTPU_ERR_INVALID_ARG, "int8 evaluate: no samples") : NTPU_ERR_INVALID_ARG;
    const size_t mb = q->m->max_batch, classes = ntpu_model_classes(q->m), in = ntpu_model_inputs(q->m);
    ntpu_status lst = ntpu_check_labels(q->m, labels, count, "int8 evaluate");
    if (lst != NTPU_OK)
        return lst;
    float *logits = malloc(mb * classes * sizeof *logits);
    if (!logits)
        return ntpu_fail(q->m->dev, NTPU_ERR_NO_MEMORY, "int8 evaluate: out of memory");
    size_t correct = 0;
    ntpu_status st = NTPU_OK;
    for (size_t at = 0; at < count && st == NTPU_OK; at += mb) {
        size_t b = count - at < mb ? count - at : mb;
        st = ntpu_qmodel_predict(q, x + at * in, b, logits);
        for (size_t s = 0; st == NTPU_OK && s < b; s++) {
            size_t arg = 0;
            for (size_t c = 1; c < classes; c++)
                if (logits[s * classes + c] > logits[s * classes + arg])
                    arg = c;
            correct += arg == labels[at + s];
        }
    }
    free(logits);
    if (st == NTPU_OK && accuracy)
        *accuracy = (double)correct / (double)count;
    return st;
}
