#!/bin/busybox sh
# /init of the kernel end-to-end runs, common part (`cargo xtask` appends
# tests/guest/<arch>.sh and a call to `main`). The scenario comes from `scenario=` on the
# kernel command line. Output: `RESULT <scenario> key=value …` lines (parsed by tests/),
# `KLOG <line>` for kernel log lines, `JSON <tag> <pmu-demo --json output on one line>`
# and `STDERR <tag> <line>`; then `RESULT done` and power-off.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

# Which flavour of the module the scenarios load (`flavour=` on the kernel command line):
# `stock` is the build for kernels without CONFIG_RUST (kmod-enable-user/stock: C glue +
# Rust object), anything else the Rust-for-Linux module. Both are kmod_enable_user.ko
# and must behave the same: the same assertions run against each.
case "${flavour:-rust}" in
stock) MODULE=/lib/modules/stock/kmod_enable_user.ko ;;
*) MODULE=/lib/modules/kmod_enable_user.ko ;;
esac
NAME=kmod_enable_user
# The grant the scenarios load: `cpu_wide=1`, the CPU-wide grant they test, for the stock
# flavour (its per-thread default needs CONFIG_PREEMPT_NOTIFIERS, which the armv6/armv7
# test kernels and Debian's armmp kernels lack: there it refuses to load without
# cpu_wide=1; the per-thread scenarios load the default with `load_default_mode`); the
# Rust-for-Linux flavour is CPU-wide only and has no such parameter.
case "${flavour:-rust}" in
stock) MODE=cpu_wide=1 ;;
*) MODE= ;;
esac

result() {
	echo "RESULT $*"
}

# Kernel log lines that mean trouble: warnings, oopses, bugs, lockups, corruption.
TROUBLE='WARNING:|BUG:|kernel BUG|Oops|[Cc]all [Tt]race|Unable to handle|refcount_t|list_(add|del) corruption|INFO: task|sleeping function called|scheduling while atomic|Kernel panic'
trouble_total=0

# Prints the kernel log since the last call as KLOG lines and clears it, counting the
# trouble lines (reported by `finish`).
klog() {
	dmesg -c >/tmp/klog
	trouble_now=$(grep -c -E "$TROUBLE" /tmp/klog)
	trouble_total=$((trouble_total + trouble_now))
	sed 's/^\[[ 0-9.]*\] //; s/^/KLOG /' /tmp/klog
}

# Like klog, without printing (the boot log, the 50 cycles).
klog_quiet() {
	dmesg -c >/tmp/klog
	trouble_now=$(grep -c -E "$TROUBLE" /tmp/klog)
	trouble_total=$((trouble_total + trouble_now))
	grep -E "$TROUBLE" /tmp/klog | sed 's/^/TROUBLE /'
}

# module_loaded: 1 when the module is in /proc/modules.
module_loaded() {
	if grep -q "^$NAME " /proc/modules; then echo 1; else echo 0; fi
}

# The counter the module's layout gives an event (`5=0x8 31=0x11`, `4=0x8:k` for the
# sentinel): usage: layout_counter 0x8 | 0x8:k
layout_counter() {
	tr ' ' '\n' </sys/module/$NAME/parameters/layout | awk -F= -v ev="$1" '$2 == ev {print $1; exit}'
}

# Hotplug states the module left behind (0 after unload).
hotplug_states() {
	grep -c "$NAME" /sys/devices/system/cpu/hotplug/states
}

# insmod ($MODE first) with its exit status and first error line as a RESULT line.
# usage: load TAG [module parameters…]
load() {
	tag=$1
	shift
	# shellcheck disable=SC2086 # MODE is empty or one word
	insmod "$MODULE" $MODE "$@" 2>/tmp/insmod.err
	rc=$?
	msg=$(head -n 1 /tmp/insmod.err | sed 's/.*: //; s/ /_/g')
	result insmod tag=$tag rc=$rc loaded=$(module_loaded) error=${msg:-none}
}

# `load` without $MODE: the module's own default grant (per-thread on arm64 kernels with
# CONFIG_PREEMPT_NOTIFIERS; refused elsewhere). usage: load_default_mode TAG [parameters…]
load_default_mode() {
	mode_saved=$MODE
	MODE=
	load "$@"
	MODE=$mode_saved
}

unload() {
	tag=$1
	rmmod "$NAME" 2>/tmp/rmmod.err
	rc=$?
	result rmmod tag=$tag rc=$rc loaded=$(module_loaded) states=$(hotplug_states)
}

# pmu-demo measure with the contract of userspace-demo: JSON on stdout, exit status 3
# when direct access is not enabled.
# usage: demo TAG CPU BACKEND [more pmu-demo arguments…]
demo() {
	tag=$1
	cpu=$2
	backend=$3
	shift 3
	pmu-demo measure --backend "$backend" --cpu "$cpu" --kernel loop --units "${DEMO_UNITS:-1000}" \
		--events instructions,cycles --runs 5 --warmup 2 --json "$@" \
		>/tmp/demo.out 2>/tmp/demo.err
	status=$?
	echo "JSON $tag $(tr -d '\n' </tmp/demo.out)"
	sed "s/^/STDERR $tag /" /tmp/demo.err
	result demo tag=$tag cpu=$cpu backend=$backend status=$status
}

# pmu-demo measure's --json output in file $1 on one line, as `demo` prints it, but with
# each result's per-run records ("runs": [...], serde_json's two-space layout) replaced
# by their number, "runs_omitted": N: a long measurement's records are megabytes of
# console (60 000 runs: 18 MB, 20 s of TCG serial output) that no test reads.
json_without_runs() {
	awk '
		skip && /^      \]/ { skip = 0; sub(/^      \]/, ""); printf "\"runs_omitted\": %d%s", n, $0; next }
		skip { if ($0 ~ /^        \{/) n++; next }
		/^      "runs": \[$/ { skip = 1; n = 0; next }
		{ printf "%s", $0 }
	' "$1"
}

# `pmu-demo list --json` on CPU $2: `JSON <tag> …`, `STDERR <tag> …` and
# `RESULT demo tag=<tag> cpu=<cpu> status=<exit status>`. usage: demo_list TAG CPU
demo_list() {
	taskset -c "$2" pmu-demo list --json >/tmp/list.out 2>/tmp/list.err
	status=$?
	echo "JSON $1 $(tr -d '\n' </tmp/list.out)"
	sed "s/^/STDERR $1 /" /tmp/list.err
	result demo tag=$1 cpu=$2 status=$status
}

boot_line() {
	klog_quiet
	result boot scenario=$scenario arch=$(uname -m) kernel=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)
	# Which file the scenario loads: the stock build says so in its description.
	result module flavour=${flavour:-rust} path=$MODULE stock_marker=$(grep -c "stock-kernel flavour" "$MODULE")
}

KMEMLEAK=/sys/kernel/debug/kmemleak

# Unreferenced objects kmemleak finds now. It reports an object only once it is older
# than 5 s, so wait that long (virtual time) first; two scans, as its documentation
# advises. Prints the count; the report stays readable in $KMEMLEAK.
kmemleak_scan() {
	sleep 6
	echo scan >$KMEMLEAK
	echo scan >$KMEMLEAK
	grep -c "unreferenced object" $KMEMLEAK
}

# What kmemleak finds after the cycles, sorted by /lib/kmemleak.awk (tests/guest/
# kmemleak.awk): `leaks` counts the objects allocated through module load/unload or
# hotplug paths (the module's), `other` the rest (this kernel's own: kmemleak's false
# positives, e.g. an execve's creds in flight during the scan). The report goes to the
# console as KMEMLEAK lines.
kmemleak_leaks() {
	kmemleak_scan >/dev/null
	cat $KMEMLEAK >/tmp/kmemleak.report
	sed 's/^/KMEMLEAK /' /tmp/kmemleak.report | head -n 80
	# Sets `module` and `other`.
	eval "$(awk -f /lib/kmemleak.awk /tmp/kmemleak.report)"
	leaks=$module
}

# N load/unload cycles, then load twice: no failure, no state left, no leak
# (kmemleak), nothing in the log.
# usage: stress_cycles N [module parameters…]
stress_cycles() {
	cycles=$1
	shift
	mount -t debugfs debugfs /sys/kernel/debug
	# Whatever boot left unreferenced is not ours: scan, then forget it.
	boot_leaks=$(kmemleak_scan)
	echo clear >$KMEMLEAK
	slab_before=$(awk '/^Slab:/ {print $2}' /proc/meminfo)
	load_fail=0
	unload_fail=0
	i=0
	while [ $i -lt "$cycles" ]; do
		# shellcheck disable=SC2086 # MODE is empty or one word
		insmod "$MODULE" $MODE "$@" || load_fail=$((load_fail + 1))
		rmmod "$NAME" || unload_fail=$((unload_fail + 1))
		i=$((i + 1))
	done
	lines=$(dmesg | grep -c "$NAME")
	klog_quiet
	kmemleak_leaks
	slab_after=$(awk '/^Slab:/ {print $2}' /proc/meminfo)
	result cycles n=$cycles load_failures=$load_fail unload_failures=$unload_fail loaded=$(module_loaded) states=$(hotplug_states) log_lines=$lines kmemleak_boot=$boot_leaks kmemleak_module=$leaks kmemleak_other=$other slab_kb_before=$slab_before slab_kb_after=$slab_after

	load twice-first "$@"
	load twice-second "$@"
	unload twice
	klog
}

finish() {
	klog
	result kernel_log trouble=$trouble_total
	result done scenario=$scenario
	poweroff -f
}
