/* SPDX-License-Identifier: Apache-2.0 */
/* The host optimizer's step applied to a tensor in pieces (as the MLP's
 * training step does, a block of weight rows at a time, nn.c) gives the bits
 * of ntpu_optim_update on the whole tensor: every optimizer, pieces of every
 * size around the eight-lane blocks, several steps. */
#include <criterion/criterion.h>
#include <string.h>

#include "nn/nn_internal.h"
#include "ntpu/optim.h"

enum { LEN = 203 };

static uint64_t seed = 0x243F6A8885A308D3ull;

static float rnd(float scale)
{
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return ((float)(seed >> 40) / (float)(1u << 24) - 0.5f) * scale;
}

/* p, g, s1 and s2 of LEN values, as training leaves them. */
typedef struct tensors {
    float p[LEN], g[LEN], s1[LEN], s2[LEN];
} tensors;

static void fill(tensors *t)
{
    for (size_t i = 0; i < LEN; i++) {
        t->p[i] = rnd(2.0f);
        t->g[i] = i % 17 == 0 ? 0.0f : rnd(0.01f);
        t->s1[i] = rnd(0.001f);
        t->s2[i] = rnd(1e-6f) + 1e-6f;
    }
}

Test(optim_step, pieces_give_the_bits_of_the_whole)
{
    for (int kind = NTPU_OPT_SGD; kind <= NTPU_OPT_ADAMW; kind++)
        for (size_t piece = 1; piece <= 19; piece += 3) {
            ntpu_optim_config c = ntpu_optim_defaults((ntpu_optimizer)kind);
            c.weight_decay = 0.01f;
            tensors whole, parts;
            fill(&whole);
            parts = whole;
            for (uint64_t t = 0; t < 3; t++) {
                ntpu_optim_update(&c, t, whole.p, whole.g, whole.s1, whole.s2, LEN);
                ntpu_optim_step s;
                ntpu_optim_step_init(&s, &c, t);
                for (size_t at = 0; at < LEN; at += piece) {
                    size_t cnt = LEN - at < piece ? LEN - at : piece;
                    ntpu_optim_step_apply(&s, parts.p + at, parts.g + at, parts.s1 + at, parts.s2 + at, cnt);
                }
            }
            cr_assert(memcmp(&whole, &parts, sizeof whole) == 0, "%s, pieces of %zu",
                      ntpu_optimizer_name((ntpu_optimizer)kind), piece);
        }
}
