# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/cli/*_fakeusb.sh: builds a USB transport against a fake libusb and runs it, twice: with
# AddressSanitizer and UndefinedBehaviorSanitizer, and with ThreadSanitizer for the transport's event thread.
# Not a test itself (tests/run.sh runs tests/cli/*.sh only).

# fakeusb_run EXTRA_CFLAGS SOURCES...: exits 0 if both builds pass, 1 otherwise.
fakeusb_run() {
  local extra=$1; shift
  local B=${BUILD:-build} CC=${CC:-gcc} T rc=0 san name
  T=$(mktemp -d)
  trap 'rm -rf "$T"' EXIT
  local flags="-std=c11 -Wall -Wextra -Wpedantic -Werror -O1 -g -fno-omit-frame-pointer -D_POSIX_C_SOURCE=200809L
               -Ihost/include -Ihost/src -Isim/ref -I/usr/include/libusb-1.0 $extra"
  # No -lusb-1.0: every libusb symbol comes from the fake. The rest of the library comes from the archive.
  local libs="$B/libntpu.a -lstdc++ -lunicorn -lcjson -lz -lm -lpthread"
  for san in "address,undefined -fno-sanitize-recover=all" thread; do
    name=${san%% *}
    # shellcheck disable=SC2086 # the flag lists are meant to split into words
    if ! $CC $flags -fsanitize=$san "$@" $libs -o "$T/fake-$name" 2> "$T/cc.log"; then
      echo "FAIL building with -fsanitize=$san:"; sed 's/^/     /' "$T/cc.log" | head -20; rc=1; continue
    fi
    echo "== -fsanitize=$name"
    # The programs bound themselves with alarm(); timeout is a second guard.
    TSAN_OPTIONS="halt_on_error=1" timeout 300 "$T/fake-$name" || rc=1
  done
  exit $rc
}
