#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The readers (.npy, IDX, safetensors) and writers refuse sizes a build cannot address, in one line
# (host/src/io/sizes.h): tests/cli/size_limits.c built as the library is, and again as a 32-bit build
# would check (NTPU_SIZE_LIMIT = 2^32 - 1: a real -m32 build needs 32-bit cJSON, which Debian ships only
# for a foreign i386 architecture). Both under ASan and UBSan.
set -eu
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SRCS="host/src/io/npy.c host/src/io/idx.c host/src/io/safetensors.c host/src/io/outfile.c host/src/status.c"
FLAGS="-std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all
       -D_POSIX_C_SOURCE=200809L -Ihost/include -Ihost/src"
rc=0
for limit in "" "-DNTPU_SIZE_LIMIT=0xFFFFFFFFu"; do
  ${CC:-gcc} $FLAGS $limit $SRCS tests/cli/size_limits.c -lcjson -lz -lm -o "$T/size_limits"
  mkdir -p "$T/run"; rm -rf "$T/run"/*
  "$T/size_limits" "$T/run" || rc=1
done
[ "$rc" = 0 ] && echo "PASS size_limits" || { echo "FAIL size_limits"; exit 1; }
