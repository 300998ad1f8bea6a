#!/bin/sh
# Boots the image under QEMU TCG: the cargo runner (`cargo run --release` in this folder;
# arguments after `--` go to QEMU, e.g. `-- -append selftest=panic`).
#
# Exit status (src/exit.rs): 33 = every scenario passed or was skipped, 35 = a scenario
# failed, 37 = panic or unexpected exception. Anything else is a failure too: 0 after a
# triple fault (-no-reboot), 124 from timeout, 1 when QEMU itself failed.
#
# PVH boot of the ELF64 image (-kernel). -icount shift=0 makes the TSC advance one tick
# per instruction (exact counts); without it TCG's TSC is host time. No -nographic: it
# would make SeaBIOS print its banner on the same serial port.
#
# Environment: QEMU (binary, default qemu-system-x86_64), QEMU_CPU (default qemu64; max,
# Skylake-Client-v1, … work too), QEMU_TIMEOUT (seconds, default 60).
set -eu
kernel="$1"
shift
exec timeout "${QEMU_TIMEOUT:-60}" "${QEMU:-qemu-system-x86_64}" \
    -accel tcg -M q35 -cpu "${QEMU_CPU:-qemu64}" -m 128M \
    -display none -monitor none -serial stdio -nic none -no-reboot \
    -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
    -icount shift=0,align=off,sleep=off \
    -kernel "$kernel" "$@"
