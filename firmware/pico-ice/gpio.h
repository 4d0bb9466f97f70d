/* SPDX-License-Identifier: Apache-2.0 */
/* GPIO: pin functions, and software-driven pins through the SIO block. */
#ifndef NTPU_GPIO_H
#define NTPU_GPIO_H

#include <stdint.h>

#include "rp2040.h"

#define GPIO_FUNC_SPI 1u
#define GPIO_FUNC_SIO 5u

void gpio_init(void);
/* Hands pin n to a peripheral function (datasheet 2.19.2), input enabled, output not disabled. */
void gpio_set_function(uint32_t n, uint32_t func);
/* Pin n as a software output at level v, or as a software input with a pull-up or none. */
void gpio_output(uint32_t n, int v);
void gpio_input(uint32_t n, int pull_up);

static inline void gpio_put(uint32_t n, int v)
{
    if (v) {
        REG(SIO_GPIO_OUT_SET) = 1u << n;
    } else {
        REG(SIO_GPIO_OUT_CLR) = 1u << n;
    }
}

static inline int gpio_get(uint32_t n)
{
    return (int)((REG(SIO_GPIO_IN) >> n) & 1u);
}

#endif
