/* SPDX-License-Identifier: Apache-2.0 */
/* Stored command programs (protocol 1.4, ntpu/program.h): a recorded program
 * run with RUN gives bit for bit what sending its commands gives, on the golden
 * model and on the RTL; recording refuses what a program cannot hold; a command
 * the device rejects inside a program shows with its index; and the training
 * step with the device optimizer, which runs its device work as programs, ends
 * every step with the same bits as without them, sending far fewer frames. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ntpu/nn.h"
#include "ntpu/program.h"

#define NN_SEED 0x3243F6A8885A308Du
#include "nn_compare.h"

enum { ROWS = 24 };

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Operands for the small product below: UB rows 0.., WB rows 0.., a bias row at ACC 99. */
static void put_operands(ntpu_device *d, unsigned n)
{
    uint16_t v[64 * 64];
    for (unsigned i = 0; i < 64 * n; i++)
        v[i] = ntpu_bf16_from_f32((float)((int)(i * 37 % 23) - 11) * 0.125f);
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_UB, 0, 64, v), NTPU_OK);
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_WB, 0, 64, v), NTPU_OK);
    uint32_t bias[64];
    for (unsigned j = 0; j < n; j++)
        bias[j] = f32_bits(0.25f * (float)j - 1.0f);
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_ACC, 99, 1, bias), NTPU_OK);
}

/* A few commands of every kind a training step uses, writing ACC 200 .. and UB 300 ... */
static ntpu_status product(ntpu_device *d, unsigned n)
{
    ntpu_status st = NTPU_OK;
    for (unsigned k = 0; k < 3 && st == NTPU_OK; k++) {
        st = ntpu_load_w(d, k * n, k & 1);
        if (st == NTPU_OK)
            st = ntpu_matmul_tile(d, NTPU_DTYPE_BF16, k * ROWS, 100, ROWS, k > 0);
    }
    if (st == NTPU_OK)
        st = ntpu_vec_act(d, NTPU_ACT_BIAS | NTPU_ACT_RELU | NTPU_OUT_UB, 100, 300, ROWS, 99);
    if (st == NTPU_OK)
        st = ntpu_vec_act(d, NTPU_ACT_BIAS | NTPU_OUT_ACC, 100, 200, ROWS, 99);
    if (st == NTPU_OK)
        st = ntpu_load_w(d, 8 * n, 0);
    if (st == NTPU_OK)
        st = ntpu_matmul_tile_transpose_a(d, NTPU_DTYPE_BF16, 0, ROWS, 400, n, 0);
    if (st == NTPU_OK) {
        uint32_t one[64];
        for (unsigned j = 0; j < n; j++)
            one[j] = f32_bits((float)j);
        st = ntpu_write_rows(d, NTPU_MEM_ACC, 500, 1, one);
    }
    return st;
}

static void results(ntpu_device *d, uint32_t *acc, uint16_t *ub)
{
    cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_ACC, 200, ROWS, acc), NTPU_OK, "%s", ntpu_last_error(d));
    cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_ACC, 400, 8, acc + ROWS * 64), NTPU_OK);
    cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_ACC, 500, 1, acc + (ROWS + 8) * 64), NTPU_OK);
    cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_UB, 300, ROWS, ub), NTPU_OK);
}

/* The product sent as commands on `spec`, and recorded and run twice on `spec` again. */
static void run_equals_commands(const char *spec)
{
    ntpu_device *a, *b;
    cr_assert_eq(ntpu_open(spec, &a), NTPU_OK, "%s", ntpu_last_error(a));
    cr_assert_eq(ntpu_open(spec, &b), NTPU_OK);
    ntpu_info info;
    ntpu_get_info(b, &info);
    cr_assert(info.features & NTPU_FEATURE_PROGRAM_BIT);
    cr_assert_geq(info.pm_rows, 64);
    unsigned n = info.rows;
    put_operands(a, n);
    put_operands(b, n);
    cr_assert_eq(product(a, n), NTPU_OK);

    ntpu_program *p;
    cr_assert_eq(ntpu_program_begin(b), NTPU_OK);
    ntpu_link_stats s0, s1;
    ntpu_get_link_stats(b, &s0);
    cr_assert_eq(product(b, n), NTPU_OK, "%s", ntpu_last_error(b));
    ntpu_get_link_stats(b, &s1);
    cr_assert_eq(s1.tx_frames, s0.tx_frames, "recording sends nothing");
    cr_assert_eq(ntpu_program_end(b, &p), NTPU_OK);
    cr_assert_eq(ntpu_program_commands(p), 11);
    cr_assert_gt(ntpu_program_rows(p), 0);
    cr_assert_eq(ntpu_program_upload(b, p, 17), NTPU_OK, "%s", ntpu_last_error(b));
    cr_assert_eq(ntpu_program_run(b, p), NTPU_OK);

    static uint32_t ra[(ROWS + 9) * 64], rb[(ROWS + 9) * 64];
    static uint16_t ua[ROWS * 64], ub[ROWS * 64];
    results(a, ra, ua);
    results(b, rb, ub);
    size_t na = (ROWS + 9) * n;
    cr_assert_eq(memcmp(ra, rb, na * 4), 0, "ACC after RUN equals ACC after the commands");
    cr_assert_eq(memcmp(ua, ub, ROWS * n * 2), 0, "UB too");
    int nonzero = 0;
    for (size_t i = 0; i < na; i++)
        nonzero |= ra[i] != 0;
    cr_assert(nonzero);
    /* again: a program is run as often as wanted */
    memset(rb, 0, sizeof rb);
    cr_assert_eq(ntpu_write_rows(b, NTPU_MEM_ACC, 200, ROWS, rb), NTPU_OK);
    cr_assert_eq(ntpu_program_run(b, p), NTPU_OK);
    results(b, rb, ub);
    cr_assert_eq(memcmp(ra, rb, na * 4), 0);
    ntpu_program_free(p);
    ntpu_close(a);
    ntpu_close(b);
}

Test(program, run_equals_commands_on_ref)
{
    run_equals_commands("ref");
}
Test(program, run_equals_commands_at_n3)
{
    run_equals_commands("ref:n=3");
}
Test(program, run_equals_commands_on_vsim, .timeout = 300)
{
    run_equals_commands("vsim");
}

Test(program, recording_refuses_what_needs_the_device)
{
    ntpu_device *d;
    cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
    ntpu_program *p = NULL;
    cr_assert_eq(ntpu_program_end(d, &p), NTPU_ERR_INVALID_ARG, "not recording");
    cr_assert_eq(ntpu_program_begin(d), NTPU_OK);
    cr_assert_eq(ntpu_program_begin(d), NTPU_ERR_INVALID_ARG, "already recording");
    uint32_t row[8] = {0};
    cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_ACC, 0, 1, row), NTPU_ERR_INVALID_ARG);
    cr_assert(strstr(ntpu_last_error(d), "program"), "%s", ntpu_last_error(d));
    cr_assert_eq(ntpu_fence(d), NTPU_ERR_INVALID_ARG, "%s", ntpu_last_error(d));
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_PM, 0, 1, row), NTPU_ERR_INVALID_ARG);
    cr_assert(strstr(ntpu_last_error(d), "program memory"), "%s", ntpu_last_error(d));
    ntpu_device_status ds;
    cr_assert_neq(ntpu_read_status(d, &ds), NTPU_OK);
    cr_assert_eq(ntpu_program_end(d, &p), NTPU_OK);
    cr_assert_eq(ntpu_program_commands(p), 0, "nothing went in");
    cr_assert_eq(ntpu_program_run(d, p), NTPU_ERR_INVALID_ARG, "not uploaded");
    /* after recording, the device works as before */
    cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_ACC, 0, 1, row), NTPU_OK, "%s", ntpu_last_error(d));
    cr_assert_eq(ntpu_fence(d), NTPU_OK);
    ntpu_program_free(p);
    ntpu_program_free(NULL);
    ntpu_close(d);
}

Test(program, upload_needs_the_feature_and_room)
{
    ntpu_device *d, *e;
    cr_assert_eq(ntpu_open("ref:pm=0", &d), NTPU_OK);
    ntpu_info info;
    ntpu_get_info(d, &info);
    cr_assert_eq(info.features & NTPU_FEATURE_PROGRAM_BIT, 0);
    cr_assert_eq(info.pm_rows, 0);
    put_operands(d, info.rows);
    ntpu_program *p;
    cr_assert_eq(ntpu_program_begin(d), NTPU_OK);
    cr_assert_eq(product(d, info.rows), NTPU_OK);
    cr_assert_eq(ntpu_program_end(d, &p), NTPU_OK);
    cr_assert_eq(ntpu_program_upload(d, p, 0), NTPU_ERR_UNSUPPORTED);
    uint16_t row[8] = {0};
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_PM, 0, 1, row), NTPU_ERR_INVALID_ARG, "no PM: nothing sent");
    cr_assert_eq(ntpu_open("ref:pm=2", &e), NTPU_OK);
    cr_assert_eq(ntpu_program_upload(e, p, 0), NTPU_ERR_INVALID_ARG, "recorded on another device");
    ntpu_program_free(p);
    cr_assert_eq(ntpu_program_begin(e), NTPU_OK);
    cr_assert_eq(product(e, info.rows), NTPU_OK);
    cr_assert_eq(ntpu_program_end(e, &p), NTPU_OK);
    cr_assert_eq(ntpu_program_upload(e, p, 0), NTPU_ERR_UNSUPPORTED, "2 rows are too few");
    cr_assert(strstr(ntpu_last_error(e), "does not fit"), "%s", ntpu_last_error(e));
    ntpu_program_free(p);
    ntpu_close(d);
    ntpu_close(e);
}

/* A RUN whose program the device rejects: the error names the command. */
static void device_error_names_the_command(const char *spec)
{
    ntpu_device *d;
    cr_assert_eq(ntpu_open(spec, &d), NTPU_OK);
    ntpu_info info;
    ntpu_get_info(d, &info);
    unsigned n = info.rows;
    ntpu_program *p;
    cr_assert_eq(ntpu_program_begin(d), NTPU_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(ntpu_load_w(d, 0, 0), NTPU_OK);
    cr_assert_eq(ntpu_program_end(d, &p), NTPU_OK);
    cr_assert_eq(ntpu_program_upload(d, p, 5), NTPU_OK);
    /* PM rewritten behind the program's back: LOAD_W, LOAD_W, then opcode 0x7F */
    uint8_t bytes[3 * 2 * 64] = {0};
    const uint8_t lw[6] = {4, 0, NTPU_OP_LOAD_W, 0, 0, 0};
    memcpy(bytes, lw, 6);
    memcpy(bytes + 6, lw, 6);
    bytes[12] = 1;
    bytes[14] = 0x7F;
    uint16_t lanes[3 * 64];
    for (unsigned i = 0; i < 3 * n; i++)
        lanes[i] = (uint16_t)(bytes[2 * i] | bytes[2 * i + 1] << 8);
    cr_assert_eq(ntpu_write_rows(d, NTPU_MEM_PM, 5, ntpu_program_rows(p), lanes), NTPU_OK);
    cr_assert_eq(ntpu_program_run(d, p), NTPU_OK, "queued");
    cr_assert_eq(ntpu_fence(d), NTPU_ERR_DEVICE);
    cr_assert(strstr(ntpu_last_error(d), "ERR_OPCODE") && strstr(ntpu_last_error(d), "RUN") &&
                  strstr(ntpu_last_error(d), "at command 2 of the program"),
              "%s", ntpu_last_error(d));
    /* the device goes on */
    uint16_t back[3 * 64];
    cr_assert_eq(ntpu_read_rows(d, NTPU_MEM_PM, 5, 3, back), NTPU_OK);
    cr_assert_eq(memcmp(back, lanes, 3 * n * 2), 0, "PM reads back");
    ntpu_device_status ds;
    cr_assert_eq(ntpu_read_status(d, &ds), NTPU_OK);
    cr_assert_eq(ds.last_error, NTPU_DEV_ERR_OPCODE);
    ntpu_program_free(p);
    ntpu_close(d);
}

Test(program, device_error_names_the_command_on_ref)
{
    device_error_names_the_command("ref");
}
Test(program, device_error_names_the_command_on_vsim, .timeout = 300)
{
    device_error_names_the_command("vsim");
}

/* Training with the device optimizer: `spec` (programs, when it has them)
 * against `base` (never). Same losses and weights every step; frames per step
 * say whether programs ran. `base` is the same device without PM. */
enum { IN = 30, HID = 20, CLASSES = 7, BATCH = 12, STEPS = 4 };

static void train_same(const char *base, const char *spec, int expect_programs)
{
    static const unsigned sizes[] = {IN, HID, CLASSES};
    ntpu_device *da, *db;
    cr_assert_eq(ntpu_open(base, &da), NTPU_OK);
    cr_assert_eq(ntpu_open(spec, &db), NTPU_OK, "%s", ntpu_last_error(db));
    ntpu_optim_config o = ntpu_optim_defaults(NTPU_OPT_MOMENTUM);
    o.lr = 0.05f;
    o.device = 1;
    o.schedule = NTPU_LR_STEP; /* the constants change after 2 steps */
    o.step_size = 2;
    o.gamma = 0.5f;
    ntpu_model *ma, *mb;
    cr_assert_eq(ntpu_model_create(da, sizes, 3, BATCH, 3, &o, &ma), NTPU_OK, "%s", ntpu_last_error(da));
    cr_assert_eq(ntpu_model_create(db, sizes, 3, BATCH, 3, &o, &mb), NTPU_OK, "%s", ntpu_last_error(db));
    cr_assert(ntpu_model_check_device_optimizer(ma) == NTPU_OK && ntpu_model_check_device_optimizer(mb) == NTPU_OK);
    static float x[BATCH * IN];
    static uint8_t y[BATCH];
    uint64_t frames_a = 0, frames_b = 0;
    for (int s = 0; s < STEPS; s++) {
        size_t batch = s == 2 ? BATCH - 5 : BATCH; /* another padded batch: other programs */
        fill_data(x, y, batch, IN, CLASSES);
        if (s == 3) { /* PM overwritten behind the model's back: it uploads again */
            uint16_t junk[64 * 4];
            memset(junk, 0xEE, sizeof junk);
            ntpu_info info;
            ntpu_get_info(db, &info);
            if (info.pm_rows >= 4)
                cr_assert_eq(ntpu_write_rows(db, NTPU_MEM_PM, 0, 4, junk), NTPU_OK);
        }
        ntpu_link_stats a0, a1, b0, b1;
        ntpu_get_link_stats(da, &a0);
        ntpu_get_link_stats(db, &b0);
        ntpu_step_result ra, rb;
        cr_assert_eq(ntpu_model_train_step(ma, x, y, batch, &ra), NTPU_OK, "%s", ntpu_last_error(da));
        cr_assert_eq(ntpu_model_train_step(mb, x, y, batch, &rb), NTPU_OK, "%s", ntpu_last_error(db));
        ntpu_get_link_stats(da, &a1);
        ntpu_get_link_stats(db, &b1);
        frames_a += a1.tx_frames - a0.tx_frames;
        frames_b += b1.tx_frames - b0.tx_frames;
        uint32_t la, lb;
        memcpy(&la, &ra.loss, 4);
        memcpy(&lb, &rb.loss, 4);
        cr_assert_eq(la, lb, "step %d: loss %.9g vs %.9g", s, (double)ra.loss, (double)rb.loss);
        cr_assert_eq(ra.correct, rb.correct);
    }
    cr_assert_eq(ntpu_model_fetch(ma), NTPU_OK);
    cr_assert_eq(ntpu_model_fetch(mb), NTPU_OK, "%s", ntpu_last_error(db));
    assert_same_view(ma, mb, 0);
    ntpu_link_stats ls;
    ntpu_get_link_stats(db, &ls);
    if (strstr(spec, "faults="))
        cr_assert_gt(ls.recoveries, 0, "the faulty link had faults to recover from");
    if (expect_programs)
        cr_assert_lt(frames_b * 5, frames_a, "programs: %llu frames vs %llu", (unsigned long long)frames_b,
                     (unsigned long long)frames_a);
    else
        cr_assert_eq(frames_b, frames_a, "no programs: the same frames");
    ntpu_model_free(ma);
    ntpu_model_free(mb);
    ntpu_close(da);
    ntpu_close(db);
}

Test(program, training_with_programs_on_ref_is_bit_identical)
{
    train_same("ref:pm=0", "ref", 1);
}
Test(program, training_with_programs_at_n2_is_bit_identical)
{
    train_same("ref:n=2,pm=0", "ref:n=2", 1);
}
Test(program, training_with_programs_on_vsim_is_bit_identical, .timeout = 600)
{
    train_same("ref:pm=0", "vsim", 1);
}
Test(program, training_without_room_in_pm_falls_back)
{
    train_same("ref:pm=0", "ref:pm=3", 0);
}
/* Lost and corrupted bytes both ways: a RUN that ran is never sent again (its reply may be lost), one
 * that did not is; reads are repeated only while no RUN could have changed their rows. */
Test(program, training_with_programs_over_a_faulty_link_is_bit_identical)
{
    train_same("ref:pm=0,payload=516", "ref:payload=516,faults=0.0003,fault_seed=11,timeout_ms=50", 1);
}
