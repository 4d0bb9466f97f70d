/* SPDX-License-Identifier: Apache-2.0 */
/* The same frames as ntpu_link_rx, for its bench with LINK_W = 4 (sources.f). */
#include "../ntpu_link_rx/gen.c"
