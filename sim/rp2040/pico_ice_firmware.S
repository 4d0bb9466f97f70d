/* SPDX-License-Identifier: Apache-2.0 */
/* The pico-ice firmware image (make firmware), linked into the library for vsim:board=pico-ice.
 * NTPU_PICO_ICE_FIRMWARE_BIN names the .bin (the Makefile passes it). */
    .section .rodata
    .balign 4
    .global ntpu_pico_ice_firmware
    .hidden ntpu_pico_ice_firmware
    .global ntpu_pico_ice_firmware_end
    .hidden ntpu_pico_ice_firmware_end
ntpu_pico_ice_firmware:
    .incbin NTPU_PICO_ICE_FIRMWARE_BIN
ntpu_pico_ice_firmware_end:
    .section .note.GNU-stack, "", %progbits
