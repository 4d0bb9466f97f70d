/* SPDX-License-Identifier: Apache-2.0 */
/* The same replies as ntpu_link_tx, for its bench with LINK_W = 4 (sources.f). */
#include "../ntpu_link_tx/gen.c"
