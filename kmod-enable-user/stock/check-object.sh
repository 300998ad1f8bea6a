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
#   6. relocations: only the types the kernel's module loader applies (Linux 6.12
#      arch/arm64/kernel/module.c apply_relocate_add(), arch/arm/kernel/module.c
#      apply_relocate(); 32-bit ARM takes REL sections only), so no GOT- or TLS-relative
#      ones; sections the loader does not load (.debug_*) are not looked at;
#   7. arm64: x18 is never named (the shadow call stack's pointer, CONFIG_SHADOW_CALL_STACK;
#      the Makefile builds with -Zfixed-x18);
#   8. arm64: no computed branch (`br` through any register but x16/x17, the registers
#      of veneers and indirect tail calls): the object has no jump tables, whose targets
#      would need `bti j`;
#   9. arm64, when KERNEL_CONFIG has CONFIG_ARM64_BTI_KERNEL=y: the object is marked BTI
#      (GNU property note), and every function that can be entered by an indirect
#      branch starts with a landing pad (bti c / bti jc / paciasp / pacibsp, Arm ARM
#      D8.4 "Branch Target Identification"): the global ones, which the C glue or a
#      function pointer may call, and every one whose address a relocation other than a
#      direct call (CALL26/JUMP26) takes. A kernel with BTI enforced at EL1 would
#      otherwise take a Branch Target exception.
#
# usage: check-object.sh arm64|arm|armv7 OBJECT [KERNEL_CONFIG]   exit status 0 only when all pass
# (arm: the ARMv6 flavour's object; armv7: the ARMv7 flavour's, the same 32-bit checks)
set -u
flavour=$1
arch=$1
[ "$arch" = armv7 ] && arch=arm
obj=$2
kconfig=${3:-}
if [ -n "$kconfig" ] && [ ! -r "$kconfig" ]; then
	echo "check-object: kernel configuration '$kconfig' not readable" >&2
	exit 2
fi
case $flavour in
arm64)
	prefix=aarch64-linux-gnu-
	machine=AArch64
	exports="kmod_eu_arm64_configure kmod_eu_arm64_apply kmod_eu_arm64_restore kmod_eu_arm64_access_names kmod_eu_arm64_grant_words kmod_eu_arm64_withhold kmod_eu_arm64_thread_in kmod_eu_arm64_thread_out kmod_eu_arm64_thread_regrant"
	# V/Q/D/S/H/B registers of FP/AdvSIMD, Z/P registers of SVE.
	fp_regs='[vqdshbz][0-9]{1,2}|p[0-9]{1,2}'
	# What apply_relocate_add() handles (arch/arm64/kernel/module.c, Linux 6.12).
	relocs="R_AARCH64_NONE R_AARCH64_ABS64 R_AARCH64_ABS32 R_AARCH64_ABS16 R_AARCH64_PREL64 R_AARCH64_PREL32 R_AARCH64_PREL16 R_AARCH64_MOVW_UABS_G0_NC R_AARCH64_MOVW_UABS_G0 R_AARCH64_MOVW_UABS_G1_NC R_AARCH64_MOVW_UABS_G1 R_AARCH64_MOVW_UABS_G2_NC R_AARCH64_MOVW_UABS_G2 R_AARCH64_MOVW_UABS_G3 R_AARCH64_MOVW_SABS_G0 R_AARCH64_MOVW_SABS_G1 R_AARCH64_MOVW_SABS_G2 R_AARCH64_MOVW_PREL_G0_NC R_AARCH64_MOVW_PREL_G0 R_AARCH64_MOVW_PREL_G1_NC R_AARCH64_MOVW_PREL_G1 R_AARCH64_MOVW_PREL_G2_NC R_AARCH64_MOVW_PREL_G2 R_AARCH64_MOVW_PREL_G3 R_AARCH64_LD_PREL_LO19 R_AARCH64_ADR_PREL_LO21 R_AARCH64_ADR_PREL_PG_HI21_NC R_AARCH64_ADR_PREL_PG_HI21 R_AARCH64_ADD_ABS_LO12_NC R_AARCH64_LDST8_ABS_LO12_NC R_AARCH64_LDST16_ABS_LO12_NC R_AARCH64_LDST32_ABS_LO12_NC R_AARCH64_LDST64_ABS_LO12_NC R_AARCH64_LDST128_ABS_LO12_NC R_AARCH64_TSTBR14 R_AARCH64_CONDBR19 R_AARCH64_JUMP26 R_AARCH64_CALL26"
	;;
arm | armv7)
	prefix=arm-linux-gnueabi-
	machine=ARM
	exports="kmod_eu_armv6_is_arm1176 kmod_eu_armv6_part_number kmod_eu_armv6_enable kmod_eu_armv6_disable"
	[ "$flavour" = armv7 ] && exports="kmod_eu_armv7_configure kmod_eu_armv7_apply kmod_eu_armv7_restore kmod_eu_armv7_access_names kmod_eu_armv7_grant_words"
	# VFP/NEON registers, and the VFP coprocessors cp10/cp11 (objdump: p10, p11).
	fp_regs='[sdq][0-9]{1,2}|p1[01]'
	# What apply_relocate() handles (arch/arm/kernel/module.c, Linux 6.12).
	relocs="R_ARM_NONE R_ARM_ABS32 R_ARM_TARGET1 R_ARM_PC24 R_ARM_CALL R_ARM_JUMP24 R_ARM_V4BX R_ARM_PREL31 R_ARM_REL32 R_ARM_MOVW_ABS_NC R_ARM_MOVT_ABS R_ARM_MOVW_PREL_NC R_ARM_MOVT_PREL R_ARM_ALU_PC_G0_NC R_ARM_ALU_PC_G1_NC R_ARM_LDR_PC_G2 R_ARM_THM_CALL R_ARM_THM_JUMP24 R_ARM_THM_MOVW_ABS_NC R_ARM_THM_MOVT_ABS R_ARM_THM_MOVW_PREL_NC R_ARM_THM_MOVT_PREL"
	;;
*)
	echo "check-object: unknown arch '$flavour' (arm64, arm or armv7)" >&2
	exit 2
	;;
esac
# The glue's panic function, and the memory functions every kernel exports to modules
# (arm64: arch/arm64/lib/memcpy.S, memset.S; arm: arch/arm/kernel/armksyms.c), which
# the compiler calls for struct copies it does not inline (no SIMD registers here).
allowed_undefined="kmod_enable_user_rust_panic memcpy memmove memset"
# The ARMv7 object (LLVM, EABI): struct copies it does not inline call the run-time ABI's
# __aeabi_memcpy* (ARM IHI 0043 "Run-time ABI", 4.3.4), which the kernel (built by gcc)
# neither has nor exports; the glue defines them over memcpy (kmod_enable_user_glue.c).
[ "$flavour" = armv7 ] && allowed_undefined="$allowed_undefined __aeabi_memcpy __aeabi_memcpy4 __aeabi_memcpy8"
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

# Instructions without the address column, branch targets ("d4 <sym+0x..>") and
# comments: "mnemonic operands".
insns=$($OBJDUMP -d --no-show-raw-insn "$obj" |
	sed -n 's/^ *[0-9a-f]*:[[:space:]]*//p' |
	sed -E 's/[0-9a-f]+ <[^>]*>//g; s/(\/\/|@|;).*//')
fp=$(printf '%s\n' "$insns" | grep -E "(^|[^[:alnum:]_.#])($fp_regs)([^[:alnum:]_]|$)")
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

# 32-bit ARM: every function in the kernel's instruction set. The module loader refuses a
# call between ARM and Thumb code in either direction ("unsupported interworking call",
# arch/arm/kernel/module.c apply_relocate(), Linux 6.12), and the C glue is compiled in
# the kernel's: Thumb-2 with CONFIG_THUMB2_KERNEL=y, ARM otherwise. A Thumb function's
# symbol value has bit 0 set (ELF for the Arm Architecture, "Symbol values").
if [ "$arch" = arm ]; then
	if [ -n "$kconfig" ] && grep -q '^CONFIG_THUMB2_KERNEL=y$' "$kconfig"; then
		want_set=Thumb
	else
		want_set=ARM
	fi
	wrong_set=$($READELF -sW "$obj" | awk -v want="$want_set" '
		$4 == "FUNC" && $7 != "UND" {
			thumb = substr($2, length($2)) ~ /[13579bdf]/
			if ((want == "Thumb") != thumb) print "  " $8
		}' | sort -u)
	verdict "functions not in the kernel's instruction set ($want_set${kconfig:+, from $kconfig})" "$wrong_set" \
		"instruction set: $want_set, as the kernel's (no ARM/Thumb interworking call)"
fi

# Relocations of the sections the loader loads: "SECTION TYPE SYMBOL ADDEND" per line.
# readelf -rW: "Relocation section '.rela.text.f' at offset …", then "offset info type
# symvalue symname [+ addend]" (REL: no addend).
relocations=$($READELF -rW "$obj" | awk '
	/^Relocation section / { sec = $3; gsub(/\047/, "", sec); next }
	sec == "" || sec ~ /^\.rela?\.debug/ { next }
	$3 ~ /^R_/ {
		sym = (NF >= 5) ? $5 : "-"
		add = "0"
		for (i = 6; i <= NF; i++) if ($i == "+" || $i == "-") { add = ($i == "-" ? "-" : "") $(i + 1); break }
		print sec, $3, sym, add
	}')
unhandled=$(printf '%s\n' "$relocations" | awk -v ok="$relocs" '
	BEGIN { n = split(ok, a, " "); for (i = 1; i <= n; i++) allowed[a[i]] = 1 }
	NF >= 2 && !($2 in allowed) { print "  " $2 " in " $1 " (" $3 ")" }' | sort -u)
verdict "relocations the module loader does not apply (arch/$arch/kernel/module.c)" "$unhandled" \
	"relocations: $(printf '%s\n' "$relocations" | awk 'NF >= 2 { print $2 }' | sort -u | tr '\n' ' ')(all applied by the module loader)"
if [ "$arch" = arm ]; then
	rela=$(printf '%s\n' "$relocations" | awk '$1 ~ /^\.rela\./ { print "  " $1 }' | sort -u)
	verdict "RELA sections (32-bit ARM's loader applies REL only)" "$rela" "relocation sections: REL only"
fi

if [ "$arch" = arm64 ]; then
	x18=$(printf '%s\n' "$insns" | grep -E "(^|[^[:alnum:]_])[xw]18([^[:alnum:]_]|$)")
	verdict "x18 used (the shadow call stack pointer with CONFIG_SHADOW_CALL_STACK; build with -Zfixed-x18)" "$x18" "x18: never used"

	computed=$(printf '%s\n' "$insns" | grep -E '^br(aaz|abz|aa|ab)?[[:space:]]' | grep -vE '^br(aaz|abz|aa|ab)?[[:space:]]+x1[67]([^0-9]|$)')
	verdict "computed branches (jump tables: their targets need bti j; build with -Cjump-tables=no)" "$computed" "computed branches: none (no jump tables)"

	if [ -n "$kconfig" ] && grep -q '^CONFIG_ARM64_BTI_KERNEL=y$' "$kconfig"; then
		if $READELF -nW "$obj" | grep -q 'AArch64 feature:.*BTI'; then
			echo "check-object: GNU property note: BTI"
		else
			echo "check-object: no BTI in the GNU property note (built without -Zbranch-protection=bti; the kernel has CONFIG_ARM64_BTI_KERNEL=y)" >&2
			fail=1
		fi
		# Functions: "SECTION VALUE NAME BIND" (readelf -sW joined with the section names
		# of readelf -SW); their first instructions from objdump ("<name>:" then the
		# first instruction line).
		functions=$( ($READELF -SW "$obj"; echo '@@symbols'; $READELF -sW "$obj") | awk '
			/^@@symbols/ { syms = 1; next }
			!syms && /^ *\[ *[0-9]+\]/ { line = $0; sub(/^ *\[ */, "", line); split(line, f, /[] \t]+/); name[f[1]] = f[2]; next }
			syms && $4 == "FUNC" && $7 ~ /^[0-9]+$/ { v = $2; sub(/^0+/, "", v); print name[$7], (v == "" ? "0" : v), $8, $5 }')
		entries=$($OBJDUMP -d --no-show-raw-insn "$obj" | awk '
			/^[0-9a-f]+ <.*>:$/ { fn = $2; sub(/^</, "", fn); sub(/>:$/, "", fn); want = 1; next }
			want && /^ *[0-9a-f]+:/ { sub(/^ *[0-9a-f]+:[ \t]*/, ""); print fn, $1, $2; want = 0 }')
		# Indirect entries: global functions, and functions named by a relocation other
		# than a direct call (or the unwind tables' references), by their symbol or as
		# SECTION + offset.
		missing=$( (printf '%s\n' "$functions"; echo '@@relocs'; printf '%s\n' "$relocations"; echo '@@entries'; printf '%s\n' "$entries") | awk '
			/^@@relocs/ { part = 1; next }
			/^@@entries/ { part = 2; next }
			part == 0 && NF == 4 {
				at[$1 " " $2] = $3; isfunc[$3] = 1
				if ($4 == "GLOBAL" || $4 == "WEAK") { need[$3] = "global" }
				next
			}
			part == 1 && NF == 4 && $2 != "R_AARCH64_CALL26" && $2 != "R_AARCH64_JUMP26" && $1 != ".rela.eh_frame" {
				add = $4; sub(/^0+/, "", add); if (add == "") add = "0"
				f = ($3 in isfunc) ? $3 : at[$3 " " add]
				if (f != "" && !(f in need)) need[f] = "address taken in " $1
				next
			}
			part == 2 { first[$1] = $2 " " $3 }
			END {
				for (f in need) {
					insn = first[f]
					if (insn !~ /^(bti (c|jc)|paciasp|pacibsp)/) print "  " f " (" need[f] "): starts with \"" insn "\""
				}
			}' | sort)
		verdict "functions without a BTI landing pad (CONFIG_ARM64_BTI_KERNEL=y; build with -Zbranch-protection=bti)" "$missing" \
			"BTI landing pads: every global or address-taken function starts with one ($(printf '%s\n' "$functions" | grep -c .) functions)"
	else
		echo "check-object: BTI: not checked (${kconfig:-no kernel configuration given}${kconfig:+: no CONFIG_ARM64_BTI_KERNEL=y})"
	fi
fi
exit $fail
