/* SPDX-License-Identifier: Apache-2.0 */
/* Model descriptions (host/src/nn/arch.c): the issue's example SPEC with every
 * item's shapes, strides and padding, the implied flatten, canonical formatting
 * that parses back to the same arch, one exact one-line error for each kind of
 * malformed or ill-fitting SPEC, and the MLP forms (--layers, the dense path). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "ntpu/arch.h"
#include "ntpu/nn.h"

TestSuite(arch);

static ntpu_arch parse_ok(const char *spec, unsigned c, unsigned h, unsigned w)
{
    ntpu_arch a;
    char why[256] = "untouched";
    ntpu_status st = ntpu_arch_parse(spec, c, h, w, &a, why, sizeof why);
    cr_assert_eq(st, NTPU_OK, "%s on %ux%ux%u: %s", spec, c, h, w, why);
    cr_assert_str_eq(why, "");
    return a;
}

static void expect_shape(const ntpu_layer *l, ntpu_layer_kind kind, unsigned index, unsigned ic, unsigned ih,
                         unsigned iw, unsigned oc, unsigned oh, unsigned ow)
{
    cr_expect_eq(l->kind, kind, "kind %d, want %d", l->kind, kind);
    cr_expect_eq(l->index, index, "index %u, want %u", l->index, index);
    cr_expect(l->in_c == ic && l->in_h == ih && l->in_w == iw, "in %ux%ux%u, want %ux%ux%u", l->in_c, l->in_h, l->in_w,
              ic, ih, iw);
    cr_expect(l->out_c == oc && l->out_h == oh && l->out_w == ow, "out %ux%ux%u, want %ux%ux%u", l->out_c, l->out_h,
              l->out_w, oc, oh, ow);
}

Test(arch, the_issues_example)
{
    ntpu_arch a = parse_ok("conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10", 1, 28, 28);
    cr_assert_eq(a.n, 8); /* seven written items and the implied flatten */
    cr_expect(a.in_c == 1 && a.in_h == 28 && a.in_w == 28);
    expect_shape(&a.item[0], NTPU_LAYER_CONV, 0, 1, 28, 28, 16, 28, 28);
    cr_expect(a.item[0].out == 16 && a.item[0].k == 3 && a.item[0].stride == 1 && a.item[0].pad == 1);
    expect_shape(&a.item[1], NTPU_LAYER_RELU, 1, 16, 28, 28, 16, 28, 28);
    expect_shape(&a.item[2], NTPU_LAYER_MAXPOOL, 2, 16, 28, 28, 16, 14, 14);
    cr_expect(a.item[2].k == 2 && a.item[2].stride == 0 && a.item[2].pad == 0);
    expect_shape(&a.item[3], NTPU_LAYER_CONV, 3, 16, 14, 14, 32, 14, 14);
    expect_shape(&a.item[4], NTPU_LAYER_RELU, 4, 32, 14, 14, 32, 14, 14);
    expect_shape(&a.item[5], NTPU_LAYER_MAXPOOL, 5, 32, 14, 14, 32, 7, 7);
    expect_shape(&a.item[6], NTPU_LAYER_FLATTEN, 6, 32, 7, 7, 1568, 1, 1);
    cr_expect_eq(a.item[6].implied, 1);
    expect_shape(&a.item[7], NTPU_LAYER_FC, 6, 1568, 1, 1, 10, 1, 1);
    cr_expect_eq(a.item[7].out, 10);
    for (size_t i = 0; i < a.n; i++)
        cr_expect_eq(a.item[i].implied, i == 6, "item %zu implied %d", i, a.item[i].implied);
}

Test(arch, strides_padding_and_floor_mode)
{
    /* OH = (H + 2P - K) / S + 1; pools keep H / K whole windows */
    ntpu_arch a = parse_ok("conv8k5s2p2,relu,conv4k3s2,avgpool3,fc7", 3, 28, 20);
    cr_assert_eq(a.n, 6);
    expect_shape(&a.item[0], NTPU_LAYER_CONV, 0, 3, 28, 20, 8, 14, 10);
    cr_expect(a.item[0].k == 5 && a.item[0].stride == 2 && a.item[0].pad == 2);
    expect_shape(&a.item[2], NTPU_LAYER_CONV, 2, 8, 14, 10, 4, 6, 4);
    expect_shape(&a.item[3], NTPU_LAYER_AVGPOOL, 3, 4, 6, 4, 4, 2, 1);
    expect_shape(&a.item[4], NTPU_LAYER_FLATTEN, 4, 4, 2, 1, 8, 1, 1);
    expect_shape(&a.item[5], NTPU_LAYER_FC, 4, 8, 1, 1, 7, 1, 1);
    /* a stride that leaves columns unread; a 1x1 conv output still flattens before its fc */
    a = parse_ok("conv2k4s3,maxpool3,fc2", 1, 10, 11);
    expect_shape(&a.item[0], NTPU_LAYER_CONV, 0, 1, 10, 11, 2, 3, 3);
    expect_shape(&a.item[1], NTPU_LAYER_MAXPOOL, 1, 2, 3, 3, 2, 1, 1);
    expect_shape(&a.item[2], NTPU_LAYER_FLATTEN, 2, 2, 1, 1, 2, 1, 1);
    cr_expect_eq(a.item[2].implied, 1);
    /* the largest kernel a padded input takes */
    a = parse_ok("conv1k7p1,fc1", 1, 5, 5);
    expect_shape(&a.item[0], NTPU_LAYER_CONV, 0, 1, 5, 5, 1, 1, 1);
}

Test(arch, written_flatten_and_vector_inputs)
{
    ntpu_arch a = parse_ok("flatten,fc16,relu,fc10", 1, 28, 28);
    cr_assert_eq(a.n, 4);
    expect_shape(&a.item[0], NTPU_LAYER_FLATTEN, 0, 1, 28, 28, 784, 1, 1);
    cr_expect_eq(a.item[0].implied, 0);
    expect_shape(&a.item[1], NTPU_LAYER_FC, 1, 784, 1, 1, 16, 1, 1);
    /* relu before the flatten keeps the map; the first fc flattens it */
    a = parse_ok("relu,fc10", 2, 3, 4);
    cr_assert_eq(a.n, 3);
    expect_shape(&a.item[1], NTPU_LAYER_FLATTEN, 1, 2, 3, 4, 24, 1, 1);
    /* a vector input (C x 1 x 1, no conv or pool before) needs no flatten */
    a = parse_ok("fc5,relu,fc3", 40, 1, 1);
    cr_assert_eq(a.n, 3);
    expect_shape(&a.item[0], NTPU_LAYER_FC, 0, 40, 1, 1, 5, 1, 1);
    /* only the first fc can imply a flatten */
    a = parse_ok("fc5,fc4,relu,fc3", 1, 2, 2);
    cr_assert_eq(a.n, 5);
    cr_expect_eq(a.item[0].kind, NTPU_LAYER_FLATTEN);
    for (size_t i = 1; i < a.n; i++)
        cr_expect_neq(a.item[i].kind, NTPU_LAYER_FLATTEN);
}

static void round_trip(const char *spec, const char *canonical, unsigned c, unsigned h, unsigned w)
{
    ntpu_arch a = parse_ok(spec, c, h, w), b;
    char buf[512];
    cr_assert_eq(ntpu_arch_format(&a, buf, sizeof buf), NTPU_OK);
    cr_expect_str_eq(buf, canonical);
    b = parse_ok(buf, c, h, w);
    cr_expect_eq(memcmp(&a, &b, sizeof a), 0, "%s: parse(format(a)) != a", spec);
}

Test(arch, format_is_canonical_and_parses_back)
{
    round_trip("conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10",
               "conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10", 1, 28, 28);
    round_trip("conv8k3s1p0,relu,fc10", "conv8k3,relu,fc10", 1, 28, 28); /* defaults left out */
    round_trip("conv8k5s2,avgpool2,flatten,fc10", "conv8k5s2,avgpool2,flatten,fc10", 1, 28, 28);
    round_trip("conv008k03s02p001,fc010", "conv8k3s2p1,fc10", 1, 28, 28);
    round_trip("fc256,relu,fc10", "fc256,relu,fc10", 784, 1, 1);
    round_trip("conv65536k1,fc65536", "conv65536k1,fc65536", 1, 16, 16);

    ntpu_arch a = parse_ok("conv16k3p1,relu,fc10", 1, 28, 28);
    char small[12];
    cr_expect_eq(ntpu_arch_format(&a, small, sizeof small), NTPU_ERR_INVALID_ARG);
    cr_expect_str_eq(small, "");
    cr_expect_eq(ntpu_arch_format(NULL, small, sizeof small), NTPU_ERR_INVALID_ARG);
    char exact[21];
    cr_expect_eq(ntpu_arch_format(&a, exact, sizeof exact), NTPU_OK);
    cr_expect_str_eq(exact, "conv16k3p1,relu,fc10");
}

static void expect_error(const char *spec, unsigned c, unsigned h, unsigned w, const char *want)
{
    ntpu_arch a;
    memset(&a, 0x5a, sizeof a);
    char why[256];
    cr_assert_eq(ntpu_arch_parse(spec, c, h, w, &a, why, sizeof why), NTPU_ERR_INVALID_ARG, "%s parsed", spec);
    cr_expect_str_eq(why, want);
    cr_expect_null(strchr(why, '\n'));
    cr_expect_eq(a.n, 0);
    /* no reason asked for: the same status */
    cr_expect_eq(ntpu_arch_parse(spec, c, h, w, &a, NULL, 0), NTPU_ERR_INVALID_ARG);
}

Test(arch, malformed_items)
{
    expect_error("relu,conv16k,fc10", 1, 28, 28, "item 2 'conv16k': no kernel size after 'k'");
    expect_error("conv,fc10", 1, 28, 28, "item 1 'conv': no channel count after 'conv'");
    expect_error("conv16,fc10", 1, 28, 28,
                 "item 1 'conv16': no 'k' and kernel size after 'conv16' (the form is conv<C>k<K>[s<S>][p<P>])");
    expect_error("conv16k3s,fc10", 1, 28, 28, "item 1 'conv16k3s': no stride after 's'");
    expect_error("conv16k3p,fc10", 1, 28, 28, "item 1 'conv16k3p': no padding after 'p'");
    expect_error("conv16k3p1s2,fc10", 1, 28, 28,
                 "item 1 'conv16k3p1s2': unexpected 's2' (the form is conv<C>k<K>[s<S>][p<P>], padding below the "
                 "kernel size)");
    expect_error("conv16k3q,fc10", 1, 28, 28,
                 "item 1 'conv16k3q': unexpected 'q' (the form is conv<C>k<K>[s<S>][p<P>], padding below the "
                 "kernel size)");
    expect_error("fc", 1, 28, 28, "item 1 'fc': no output count after 'fc'");
    expect_error("fc10x", 1, 28, 28, "item 1 'fc10x': unexpected 'x' after the output count");
    expect_error("maxpool,fc10", 1, 28, 28, "item 1 'maxpool': no window size after 'maxpool'");
    expect_error("avgpool2x2,fc10", 1, 28, 28, "item 1 'avgpool2x2': unexpected 'x2' after the window size");
    expect_error("relu2,fc10", 1, 28, 28,
                 "item 1 'relu2': not a layer (the items are conv<C>k<K>[s<S>][p<P>], relu, maxpool<K>, avgpool<K>, "
                 "flatten or fc<N>)");
    expect_error("FC10", 1, 28, 28,
                 "item 1 'FC10': not a layer (the items are conv<C>k<K>[s<S>][p<P>], relu, maxpool<K>, avgpool<K>, "
                 "flatten or fc<N>)");
    expect_error("relu, fc10", 1, 28, 28,
                 "item 2 ' fc10': not a layer (the items are conv<C>k<K>[s<S>][p<P>], relu, maxpool<K>, avgpool<K>, "
                 "flatten or fc<N>)");
    expect_error("fc10,", 1, 28, 28, "item 2 '': empty (two commas, or a comma at an end)");
    expect_error("relu,,fc10", 1, 28, 28, "item 2 '': empty (two commas, or a comma at an end)");
    expect_error(",fc10", 1, 28, 28, "item 1 '': empty (two commas, or a comma at an end)");
    expect_error("", 1, 28, 28,
                 "the SPEC is empty (the items are conv<C>k<K>[s<S>][p<P>], relu, maxpool<K>, avgpool<K>, flatten or "
                 "fc<N>, comma separated)");
    /* control characters stay out of the one line; long items are cut */
    expect_error("fc1\n0", 1, 28, 28, "item 1 'fc1?0': unexpected '?0' after the output count");
    expect_error("relu,conv16k3xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx,fc10", 1, 28, 28,
                 "item 2 'conv16k3xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...': unexpected "
                 "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' (the form is conv<C>k<K>[s<S>][p<P>], padding "
                 "below the kernel size)");
}

Test(arch, values_out_of_range)
{
    expect_error("conv0k3,fc10", 1, 28, 28, "item 1 'conv0k3': channel count 0 is not in 1..65536");
    expect_error("conv65537k3,fc10", 1, 28, 28, "item 1 'conv65537k3': channel count 65537 is not in 1..65536");
    expect_error("conv99999999999999999999k3,fc10", 1, 28, 28,
                 "item 1 'conv99999999999999999999k3': channel count 99999999999999999999 is not in 1..65536");
    expect_error("conv8k0,fc10", 1, 28, 28, "item 1 'conv8k0': kernel size 0 is not in 1..15");
    expect_error("conv8k16,fc10", 1, 28, 28, "item 1 'conv8k16': kernel size 16 is not in 1..15");
    expect_error("conv8k3s0,fc10", 1, 28, 28, "item 1 'conv8k3s0': stride 0 is not in 1..15");
    expect_error("conv8k3s16,fc10", 1, 28, 28, "item 1 'conv8k3s16': stride 16 is not in 1..15");
    expect_error("conv8k3p3,fc10", 1, 28, 28, "item 1 'conv8k3p3': padding 3 is not in 0..2");
    expect_error("conv8k1p1,fc10", 1, 28, 28, "item 1 'conv8k1p1': padding 1 is not in 0..0");
    expect_error("maxpool0,fc10", 1, 28, 28, "item 1 'maxpool0': window size 0 is not in 1..15");
    expect_error("avgpool16,fc10", 1, 28, 28, "item 1 'avgpool16': window size 16 is not in 1..15");
    expect_error("fc0", 1, 28, 28, "item 1 'fc0': output count 0 is not in 1..65536");
    expect_error("fc65537", 1, 28, 28, "item 1 'fc65537': output count 65537 is not in 1..65536");
    expect_error("conv65536k1,fc10", 1, 28, 28,
                 "item 1 'conv65536k1': its output 65536x28x28 has more than 16777216 values a sample");
    expect_error("fc10", 0, 28, 28, "the input shape 0x28x28 is not 1 to 16777216 values");
    expect_error("fc10", 1, 4097, 4097, "the input shape 1x4097x4097 is not 1 to 16777216 values");
    expect_error("fc10", 65536, 65536, 65536, "the input shape 65536x65536x65536 is not 1 to 16777216 values");
}

Test(arch, items_that_do_not_fit)
{
    expect_error("conv8k3,relu,maxpool2,relu,maxpool2,fc10", 1, 4, 4,
                 "item 5 'maxpool2': its input is 1x1, smaller than the 2x2 window");
    expect_error("maxpool3,fc10", 1, 28, 2, "item 1 'maxpool3': its input is 28x2, smaller than the 3x3 window");
    expect_error("conv8k7,fc10", 1, 5, 5, "item 1 'conv8k7': its input is 5x5, smaller than the 7x7 kernel");
    expect_error("conv8k9p1,fc10", 1, 5, 5,
                 "item 1 'conv8k9p1': its input is 5x5 (7x7 padded), smaller than the 9x9 kernel");
    expect_error("fc16,relu,conv8k3,fc10", 1, 28, 28,
                 "item 3 'conv8k3': after a flatten or fc only fc and relu can follow");
    expect_error("flatten,maxpool2,fc10", 1, 28, 28,
                 "item 2 'maxpool2': after a flatten or fc only fc and relu can follow");
    expect_error("flatten,flatten,fc10", 1, 28, 28,
                 "item 2 'flatten': after a flatten or fc only fc and relu can follow");
    expect_error("fc10,avgpool2,fc10", 8, 1, 1, "item 2 'avgpool2': after a flatten or fc only fc and relu can follow");
    expect_error("conv8k3,relu", 1, 28, 28, "the last item must be fc<N> (the logits), not 'relu'");
    expect_error("fc10,relu", 1, 28, 28, "the last item must be fc<N> (the logits), not 'relu'");
    expect_error("conv8k3", 1, 28, 28, "the last item must be fc<N> (the logits), not 'conv8k3'");
}

/* n relu items and a last fc10: n + 1 written items. */
static const char *relus_then_fc(size_t n)
{
    static char spec[512];
    spec[0] = 0;
    for (size_t i = 0; i < n; i++)
        strcat(spec, "relu,");
    strcat(spec, "fc10");
    return spec;
}

Test(arch, at_most_32_items_with_the_implied_flatten)
{
    ntpu_arch a = parse_ok(relus_then_fc(NTPU_MAX_ITEMS - 1), 10, 1, 1);
    cr_expect_eq(a.n, NTPU_MAX_ITEMS);
    a = parse_ok(relus_then_fc(NTPU_MAX_ITEMS - 2), 1, 2, 2); /* 31 written, the flatten 32nd */
    cr_expect_eq(a.n, NTPU_MAX_ITEMS);
    expect_error(relus_then_fc(NTPU_MAX_ITEMS), 10, 1, 1,
                 "item 33 'fc10': more than 32 items (an implied flatten included)");
    expect_error(relus_then_fc(NTPU_MAX_ITEMS - 1), 1, 2, 2,
                 "item 32 'fc10': more than 32 items (an implied flatten included)");
}

Test(arch, from_sizes_is_what_layers_means)
{
    const unsigned sizes[] = {784, 256, 10};
    ntpu_arch a;
    cr_assert_eq(ntpu_arch_from_sizes(sizes, 3, &a), NTPU_OK);
    cr_assert_eq(a.n, 3);
    cr_expect(a.in_c == 784 && a.in_h == 1 && a.in_w == 1);
    expect_shape(&a.item[0], NTPU_LAYER_FC, 0, 784, 1, 1, 256, 1, 1);
    expect_shape(&a.item[1], NTPU_LAYER_RELU, 1, 256, 1, 1, 256, 1, 1);
    expect_shape(&a.item[2], NTPU_LAYER_FC, 2, 256, 1, 1, 10, 1, 1);
    char buf[64];
    cr_assert_eq(ntpu_arch_format(&a, buf, sizeof buf), NTPU_OK);
    cr_expect_str_eq(buf, "fc256,relu,fc10");
    ntpu_arch b = parse_ok(buf, 784, 1, 1);
    cr_expect_eq(memcmp(&a, &b, sizeof a), 0);

    const unsigned deep[NTPU_MAX_LAYERS + 1] = {65536, 2, 3, 4, 5, 6, 7, 8, 65536};
    cr_assert_eq(ntpu_arch_from_sizes(deep, NTPU_MAX_LAYERS + 1, &a), NTPU_OK);
    cr_expect_eq(a.n, 2 * NTPU_MAX_LAYERS - 1);
    const unsigned zero[] = {784, 0, 10}, big[] = {784, 65537, 10};
    cr_expect_eq(ntpu_arch_from_sizes(sizes, 1, &a), NTPU_ERR_INVALID_ARG);
    cr_expect_eq(ntpu_arch_from_sizes(deep, NTPU_MAX_LAYERS + 2, &a), NTPU_ERR_INVALID_ARG);
    cr_expect_eq(ntpu_arch_from_sizes(zero, 3, &a), NTPU_ERR_INVALID_ARG);
    cr_expect_eq(ntpu_arch_from_sizes(big, 3, &a), NTPU_ERR_INVALID_ARG);
    cr_expect_eq(ntpu_arch_from_sizes(NULL, 3, &a), NTPU_ERR_INVALID_ARG);
}

static void expect_mlp(const char *spec, unsigned c, unsigned h, unsigned w, const unsigned *want, size_t n_want)
{
    ntpu_arch a = parse_ok(spec, c, h, w);
    unsigned sizes[NTPU_MAX_LAYERS + 1];
    size_t n = 0;
    cr_assert_eq(ntpu_arch_is_mlp(&a, sizes, &n), 1, "%s is not an MLP", spec);
    cr_assert_eq(n, n_want, "%s: %zu sizes", spec, n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(sizes[i], want[i], "%s: size %zu is %u, want %u", spec, i, sizes[i], want[i]);
    cr_expect_eq(ntpu_arch_is_mlp(&a, NULL, NULL), 1);
}

static void expect_not_mlp(const char *spec, unsigned c, unsigned h, unsigned w)
{
    ntpu_arch a = parse_ok(spec, c, h, w);
    unsigned sizes[NTPU_MAX_LAYERS + 1] = {0};
    size_t n = 99;
    cr_expect_eq(ntpu_arch_is_mlp(&a, sizes, &n), 0, "%s is an MLP", spec);
    cr_expect_eq(n, 99);
}

Test(arch, is_mlp_finds_the_dense_path)
{
    expect_mlp("fc16,relu,fc10", 1, 28, 28, (const unsigned[]){784, 16, 10}, 3); /* implied flatten */
    expect_mlp("flatten,fc16,relu,fc10", 1, 28, 28, (const unsigned[]){784, 16, 10}, 3);
    expect_mlp("fc256,relu,fc10", 784, 1, 1, (const unsigned[]){784, 256, 10}, 3);
    expect_mlp("fc10", 3, 4, 5, (const unsigned[]){60, 10}, 2);
    expect_mlp("fc2,relu,fc3,relu,fc4,relu,fc5,relu,fc6,relu,fc7,relu,fc8,relu,fc9", 1, 1, 1,
               (const unsigned[]){1, 2, 3, 4, 5, 6, 7, 8, 9}, 9);
    const unsigned sizes[] = {784, 32, 16, 10};
    ntpu_arch a;
    cr_assert_eq(ntpu_arch_from_sizes(sizes, 4, &a), NTPU_OK);
    unsigned got[NTPU_MAX_LAYERS + 1];
    size_t n;
    cr_assert_eq(ntpu_arch_is_mlp(&a, got, &n), 1);
    cr_expect(n == 4 && memcmp(got, sizes, sizeof sizes) == 0);

    expect_not_mlp("conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10", 1, 28, 28);
    expect_not_mlp("conv4k1,fc10", 784, 1, 1);
    expect_not_mlp("fc16,fc10", 1, 28, 28); /* no relu between */
    expect_not_mlp("relu,fc10", 1, 28, 28); /* relu on the input */
    expect_not_mlp("fc16,relu,relu,fc10", 1, 28, 28);
    expect_not_mlp("maxpool2,fc10", 1, 28, 28);
    expect_not_mlp("fc10", 1, 300, 300); /* 90000 inputs: more than the dense path takes */
    expect_not_mlp("fc2,relu,fc3,relu,fc4,relu,fc5,relu,fc6,relu,fc7,relu,fc8,relu,fc9,relu,fc10", 1, 1, 1);
    cr_expect_eq(ntpu_arch_is_mlp(NULL, NULL, NULL), 0);
}

/* ntpu_model_create_arch sends an MLP arch down the dense path: the same weights as
 * ntpu_model_create of its sizes, the arch kept as written. */
Test(arch, create_arch_of_an_mlp_is_create_of_its_sizes)
{
    ntpu_device *d;
    cr_assert_eq(ntpu_open("ref", &d), NTPU_OK);
    ntpu_optim_config opt = ntpu_optim_defaults(NTPU_OPT_ADAM);
    const unsigned sizes[] = {784, 16, 10};
    ntpu_model *a, *b;
    cr_assert_eq(ntpu_model_create(d, sizes, 3, 8, 7, &opt, &a), NTPU_OK, "%s", ntpu_last_error(d));
    ntpu_arch want;
    cr_assert_eq(ntpu_arch_from_sizes(sizes, 3, &want), NTPU_OK);
    cr_expect_eq(memcmp(ntpu_model_arch(a), &want, sizeof want), 0, "ntpu_model_create's arch is not from_sizes");

    ntpu_arch arch = parse_ok("flatten,fc16,relu,fc10", 1, 28, 28);
    cr_assert_eq(ntpu_model_create_arch(d, &arch, 8, 7, &opt, &b), NTPU_OK, "%s", ntpu_last_error(d));
    cr_expect_eq(memcmp(ntpu_model_arch(b), &arch, sizeof arch), 0, "the written arch was not kept");
    ntpu_model_view va, vb;
    ntpu_model_get_view(a, &va);
    ntpu_model_get_view(b, &vb);
    cr_assert_eq(vb.n_layers, 2);
    for (size_t l = 0; l < 2; l++) {
        cr_expect_eq(memcmp(va.weights[l], vb.weights[l], (size_t)sizes[l] * sizes[l + 1] * 4), 0, "layer %zu", l);
        cr_expect_eq(memcmp(va.biases[l], vb.biases[l], sizes[l + 1] * 4), 0, "layer %zu", l);
    }
    ntpu_model_free(a);
    ntpu_model_free(b);
    cr_expect_null(ntpu_model_arch(NULL));

    /* an arch filled in by hand must be one the parser makes */
    ntpu_arch bad = parse_ok("fc16,relu,fc10", 1, 28, 28);
    bad.item[1].out_c = 17;
    ntpu_model *m = NULL;
    cr_expect_eq(ntpu_model_create_arch(d, &bad, 8, 7, &opt, &m), NTPU_ERR_INVALID_ARG);
    cr_expect_str_eq(ntpu_last_error(d), "model: the arch's items are not what ntpu_arch_parse makes of "
                                         "'fc16,relu,fc10' (shapes, implied flatten)");
    bad = parse_ok("fc16,relu,fc10", 1, 28, 28);
    bad.in_h = 0;
    cr_expect_eq(ntpu_model_create_arch(d, &bad, 8, 7, &opt, &m), NTPU_ERR_INVALID_ARG);
    cr_expect_str_eq(ntpu_last_error(d), "model: the input shape 1x0x28 is not 1 to 16777216 values");
    bad.n = 0;
    cr_expect_eq(ntpu_model_create_arch(d, &bad, 8, 7, &opt, &m), NTPU_ERR_INVALID_ARG);
    cr_expect_eq(ntpu_model_create_arch(d, NULL, 8, 7, &opt, &m), NTPU_ERR_INVALID_ARG);
    cr_expect_null(m);
    ntpu_close(d);
}
