/* SPDX-License-Identifier: Apache-2.0 */
/* Vectors for the ntpu_fp32_add_pipe bench: the same set as the ntpu_fp32_add bench (special
 * cases, ties, carries, overflow, the 2^-126 boundary, random pairs and bf16 products against
 * ntpu_mac_bf16), since the pipelined adder must agree with the combinational one bit for bit. */
#include "../ntpu_fp32_add/gen.c"
