/* SPDX-License-Identifier: Apache-2.0 */
#include "gpio.h"

void gpio_init(void)
{
    rp2040_unreset(RESET_IO_BANK0 | RESET_PADS_BANK0);
}

void gpio_set_function(uint32_t n, uint32_t func)
{
    uint32_t pad = REG(PADS_GPIO(n));
    REG(PADS_GPIO(n)) = (pad & ~PADS_OD) | PADS_IE;
    REG(GPIO_CTRL(n)) = func;
}

void gpio_output(uint32_t n, int v)
{
    gpio_put(n, v); /* the level first, so the pin never glitches to the other one */
    REG(SIO_GPIO_OE_SET) = 1u << n;
    gpio_set_function(n, GPIO_FUNC_SIO);
}

void gpio_input(uint32_t n, int pull_up)
{
    REG(SIO_GPIO_OE_CLR) = 1u << n;
    gpio_set_function(n, GPIO_FUNC_SIO);
    uint32_t pad = REG(PADS_GPIO(n)) & ~(PADS_PUE | PADS_PDE);
    REG(PADS_GPIO(n)) = pad | (pull_up ? PADS_PUE : 0u);
}
