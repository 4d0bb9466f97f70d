/* SPDX-License-Identifier: Apache-2.0 */
/* The vector table (at 0x10000100, where boot2 jumps) and the reset handler: copy .data (with the
 * .ramfunc code) to SRAM, clear .bss, run main. The firmware polls and enables no interrupt, so every
 * exception lands in one handler that parks the core; a debugger sees where. */
#include <stddef.h>
#include <stdint.h>

extern uint32_t __data_start[], __data_end[], __data_load[], __bss_start[], __bss_end[], __stack_top[];
int main(void);
void ntpu_reset(void);

static void fault(void)
{
    for (;;) {
        __asm__ volatile("bkpt #0");
    }
}

/* 16 core exceptions and the RP2040's 26 interrupts. */
__attribute__((section(".vectors"), used)) static void (*const vectors[16 + 26])(void) = {
    [0] = (void (*)(void))__stack_top,
    [1] = ntpu_reset,
    [2 ... 16 + 25] = fault,
};

void ntpu_reset(void)
{
    for (uint32_t *s = __data_load, *d = __data_start; d < __data_end;) {
        *d++ = *s++;
    }
    for (uint32_t *d = __bss_start; d < __bss_end;) {
        *d++ = 0;
    }
    main();
    fault();
}

/* The compiler may call these for structure copies and clears even in a freestanding build. */
void *memcpy(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    while (n--) {
        *d++ = *s++;
    }
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    uint8_t *d = dst;
    while (n--) {
        *d++ = (uint8_t)c;
    }
    return dst;
}
