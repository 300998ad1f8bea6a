#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR MIT
#
# Checks the Rust object of kmod-enable-user/stock before Kbuild links it:
#
#   1. ELF machine of the kernel's architecture (AArch64 / ARM);
#   2. every function the C glue calls is defined and global;
#   3. undefined symbols: only those on the allow-list (the glue's panic function; even
#      that one is reported, since a panic path the optimizer could not remove is a
#      finding worth seeing);
#   4. no floating-point/SIMD register anywhere in the code (the kernel does not save
#      them around module code: kernel_neon_begin() would be needed);
#   5. 32-bit ARM: the soft-float ABI of the kernel;
#   6. no GOT-relative relocation (the module loaders do not resolve them).
#
# usage: check-object.sh arm64|arm OBJECT          exit status 0 only when all pass
set -u
arch=$1
obj=$2
case $arch in
arm64)
	prefix=aarch64-linux-gnu-
	machine=AArch64
	exports="kmod_eu_arm64_configure kmod_eu_arm64_apply kmod_eu_arm64_restore kmod_eu_arm64_access_names kmod_eu_arm64_grant_words"
	# V/Q/D/S/H/B registers of FP/AdvSIMD, Z/P registers of SVE.
	fp_regs='[vqdshbz][0-9]{1,2}|p[0-9]{1,2}'
	;;
arm)
	prefix=arm-linux-gnueabi-
	machine=ARM
	exports="kmod_eu_armv6_is_arm1176 kmod_eu_armv6_part_number kmod_eu_armv6_enable kmod_eu_armv6_disable"
	# VFP/NEON registers, and the VFP coprocessors cp10/cp11 (objdump: p10, p11).
	fp_regs='[sdq][0-9]{1,2}|p1[01]'
	;;
*)
	echo "check-object: unknown arch '$arch' (arm64 or arm)" >&2
	exit 2
	;;
esac
# The glue's panic function, and the memory functions every kernel exports to modules
# (arm64: arch/arm64/lib/memcpy.S, memset.S; arm: arch/arm/kernel/armksyms.c), which
# the compiler calls for struct copies it does not inline (no SIMD registers here).
allowed_undefined="kmod_enable_user_rust_panic memcpy memmove memset"
# Tools: the cross binutils, or the native ones where they are the same architecture.
tool() {
	if command -v "$prefix$1" >/dev/null 2>&1; then echo "$prefix$1"; else echo "$1"; fi
}
NM=$(tool nm)
OBJDUMP=$(tool objdump)
READELF=$(tool readelf)
fail=0

# usage: verdict WHAT FOUND NONE: FOUND (lines) non-empty fails the check, reported
# under WHAT with its first ten lines; empty prints NONE.
verdict() {
	if [ -n "$2" ]; then
		echo "check-object: $1:" >&2
		printf '%s\n' "$2" | head -n 10 >&2
		fail=1
	else
		echo "check-object: $3"
	fi
}

got=$($READELF -h "$obj" | sed -n 's/^ *Machine: *//p')
if [ "$got" = "$machine" ]; then
	echo "check-object: $obj: ELF machine $got"
else
	echo "check-object: $obj: ELF machine '$got', expected $machine" >&2
	fail=1
fi

defined=$($NM -g --defined-only "$obj" | awk '{print $3}')
missing=
for f in $exports; do
	printf '%s\n' "$defined" | grep -qx "$f" || missing="$missing $f"
done
if [ -z "$missing" ]; then
	echo "check-object: exports: $(echo $exports | wc -w)/$(echo $exports | wc -w) ($exports)"
else
	echo "check-object: exports missing:$missing" >&2
	fail=1
fi

undefined=$($NM -u "$obj" | awk '{print $2}')
bad=
for s in $undefined; do
	case " $allowed_undefined " in
	*" $s "*) ;;
	*) bad="$bad $s" ;;
	esac
done
if [ -n "$bad" ]; then
	echo "check-object: undefined symbols outside the allow-list ($allowed_undefined):$bad" >&2
	echo "check-object: the kernel would refuse the module (unknown symbol); keep the Rust code free of them" >&2
	fail=1
else
	echo "check-object: undefined symbols: ${undefined:-none} (allowed: $allowed_undefined)"
fi

# Instruction operands only: drop the address column, branch targets ("d4 <sym+0x..>")
# and comments, then look for FP/SIMD register names as whole words.
fp=$($OBJDUMP -d --no-show-raw-insn "$obj" |
	sed -n 's/^ *[0-9a-f]*:[[:space:]]*//p' |
	sed -E 's/[0-9a-f]+ <[^>]*>//g; s/(\/\/|@|;).*//' |
	grep -E "(^|[^[:alnum:]_.#])($fp_regs)([^[:alnum:]_]|$)")
verdict "FP/SIMD registers used (not allowed in kernel code)" "$fp" "FP/SIMD registers: none"

# 32-bit ARM: the object's float ABI must be the kernel's (soft: no FP arguments in VFP
# registers), or the linker refuses to mix them.
if [ "$arch" = arm ]; then
	if $READELF -A "$obj" | grep -q 'Tag_ABI_VFP_args: VFP registers'; then
		echo "check-object: hard-float ABI (Tag_ABI_VFP_args: VFP registers); the kernel is soft-float" >&2
		fail=1
	else
		echo "check-object: float ABI: soft (no Tag_ABI_VFP_args: VFP registers)"
	fi
fi

gotrel=$($READELF -rW "$obj" | grep -i 'GOT')
verdict "GOT-relative relocations (not resolved by the module loader)" "$gotrel" "GOT relocations: none"
exit $fail
