# SPDX-License-Identifier: Apache-2.0
# `make firmware`: the pico-ice's RP2040 firmware (firmware/pico-ice/, docs/firmware.md), bare metal,
# built with Debian's gcc-arm-none-eabi and no C library, into build/firmware/pico-ice/ntpu-pico-ice.uf2.
# boot2 is assembled on its own, padded to 252 bytes and stamped with its CRC by build/tools/uf2, and
# placed at the start of flash by the main link; build/tools/uf2 then packs the flash image as UF2 and
# checks it. `make flash-firmware` copies the UF2 to a mounted RPI-RP2 drive.

FW_DIR := firmware/pico-ice
FW_BUILD := $(BUILD)/firmware/pico-ice
FW_CC := arm-none-eabi-gcc
FW_OBJCOPY := arm-none-eabi-objcopy
# No loop may become a memcpy call: memcpy itself is one of those loops (startup.c).
FW_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Os -mcpu=cortex-m0plus -mthumb -ffreestanding -nostdlib \
             -fno-tree-loop-distribute-patterns -ffunction-sections -fdata-sections -g -MMD -MP
FW_SRCS := $(sort $(wildcard $(FW_DIR)/*.c))
FW_OBJS := $(FW_SRCS:$(FW_DIR)/%.c=$(FW_BUILD)/obj/%.o)
FW_UF2 := $(FW_BUILD)/ntpu-pico-ice.uf2
UF2_TOOL := $(BUILD)/tools/uf2
UF2_TOOL_SRCS := tools/uf2/uf2.c tools/uf2/uf2_main.c

.PHONY: firmware
firmware: deps-firmware $(FW_UF2) ## the pico-ice firmware: build/firmware/pico-ice/ntpu-pico-ice.uf2 (and .elf, .bin), checked
	@$(UF2_TOOL) check $(FW_UF2)

# Only what the firmware build needs, so `make firmware` does not wait for the whole of `make deps`.
.PHONY: deps-firmware
deps-firmware:
	$(call apt_install,firmware,gcc-arm-none-eabi)

$(UF2_TOOL): $(UF2_TOOL_SRCS) tools/uf2/uf2.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) -O2 -g $(UF2_TOOL_SRCS) -o $@

$(FW_BUILD)/obj/%.o: $(FW_DIR)/%.c | deps-firmware
	@mkdir -p $(dir $@)
	$(FW_CC) $(FW_CFLAGS) -c $< -o $@

$(FW_BUILD)/boot2.elf: $(FW_DIR)/boot2.S $(FW_DIR)/boot2.ld | deps-firmware
	@mkdir -p $(dir $@)
	$(FW_CC) -mcpu=cortex-m0plus -mthumb -nostdlib -Wl,--no-warn-rwx-segments -T $(FW_DIR)/boot2.ld $< -o $@

# 252 bytes at most; the tool refuses more, pads with zeros and appends the CRC.
$(FW_BUILD)/boot2.bin: $(FW_BUILD)/boot2.elf $(UF2_TOOL)
	$(FW_OBJCOPY) -O binary $< $@.raw
	$(UF2_TOOL) boot2 $@.raw $@

$(FW_BUILD)/obj/boot2_image.o: $(FW_DIR)/boot2_image.S $(FW_BUILD)/boot2.bin
	@mkdir -p $(dir $@)
	$(FW_CC) -mcpu=cortex-m0plus -mthumb -DBOOT2_IMAGE='"$(FW_BUILD)/boot2.bin"' -c $< -o $@

$(FW_BUILD)/ntpu-pico-ice.elf: $(FW_OBJS) $(FW_BUILD)/obj/boot2_image.o $(FW_DIR)/link.ld
	$(FW_CC) $(FW_CFLAGS) -T $(FW_DIR)/link.ld -Wl,--gc-sections -Wl,--no-warn-rwx-segments \
	  -Wl,-Map=$(FW_BUILD)/ntpu-pico-ice.map $(filter %.o,$^) -lgcc -o $@

$(FW_BUILD)/ntpu-pico-ice.bin: $(FW_BUILD)/ntpu-pico-ice.elf
	$(FW_OBJCOPY) -O binary $< $@

$(FW_UF2): $(FW_BUILD)/ntpu-pico-ice.bin $(UF2_TOOL)
	$(UF2_TOOL) pack $< $@.tmp && mv $@.tmp $@

# The RPI-RP2 drive the boot ROM presents (hold BOOTSEL while plugging the board in): $(RPI_RP2_DIR)
# when set, else the first mount named RPI-RP2 under /media or /run/media. A missing drive stops make
# with one line ($(error), not a failing shell command, which would add make's own second line).
RPI_RP2_FOUND = $(or $(RPI_RP2_DIR),$(firstword $(shell find /media /run/media -maxdepth 3 -type d -name RPI-RP2 2>/dev/null)))

.PHONY: flash-firmware
flash-firmware: firmware ## copy the pico-ice firmware to a mounted RPI-RP2 drive (RPI_RP2_DIR=... to name it)
	$(if $(wildcard $(RPI_RP2_FOUND)/INFO_UF2.TXT),,$(error make flash-firmware: no RPI-RP2 drive mounted (hold BOOTSEL while plugging in the pico-ice, or set RPI_RP2_DIR)))
	@cp $(FW_UF2) "$(RPI_RP2_FOUND)/" && sync && echo "make flash-firmware: $(FW_UF2) copied to $(RPI_RP2_FOUND); the board restarts into it"
