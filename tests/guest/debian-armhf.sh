
# ---- Debian 12's own armhf kernel (linux-image-armmp), booted from Debian's package on
# `-M virt -cpu cortex-a15 -smp 2`; tests/tests/debian_armhf.rs asserts on these lines.
# The module is the ARMv7 flavour of the stock module built against the kernel's own
# headers (/lib/modules/kmod_enable_user-<uname -r>.ko); pmu-demo is the static ARMv7
# build of the armv7 runs; Debian's perf (linux-perf:armhf, with its shared libraries)
# beside them ----

MODULE=/lib/modules/kmod_enable_user-$(uname -r).ko
export PATH=/bin:/usr/bin
# Debian's perf for armhf (linux-perf:armhf, dynamically linked) finds its libraries here.
export LD_LIBRARY_PATH=/lib/arm-linux-gnueabihf
# perf writes its own files nowhere else.
export HOME=/tmp

# The CPU as the kernel tells it, and whether perf's ARMv7 PMU driver probed.
cpu_line() {
	part=$(awk -F': ' '/^CPU part/ {print $2; exit}' /proc/cpuinfo)
	arch=$(awk -F': ' '/^CPU architecture/ {print $2; exit}' /proc/cpuinfo)
	perf_pmu=$(ls /sys/bus/event_source/devices 2>/dev/null | grep -c -E '^armv7_|^arm_')
	result cpu part=$part architecture=$arch perf_pmu=$perf_pmu
}

# Debian's perf: its version, and `perf stat -e instructions:u` of a command, whose
# count is perf's word on whether a CPU PMU is there (`<not supported>` when none
# registered: the event cannot be opened).
perf_line() {
	v=$(perf --version 2>&1 | head -n 1 | tr ' ' '_')
	perf stat -x, -e instructions:u -o /tmp/perf.csv true 2>/tmp/perf.err
	status=$?
	count=$(awk -F, '$3 ~ /^instructions:u/ {print $1; exit}' /tmp/perf.csv | tr -d '<>' | tr ' ' '_')
	sed 's/^/STDERR perf /' /tmp/perf.err
	result perf version=$v status=$status count=${count:-none}
}

# Off before; the default (read-only) request refused on PMUv2 with its reason; loaded
# with the write opt-in: exact counts on both CPUs and after CPU 1 went offline and came
# back; unloaded: off again.
scenario_armhf() {
	boot_line
	cpu_line
	perf_line
	demo before-cpu0 0 direct
	load default
	klog
	load programming el0_programming=1
	klog
	result layout text=$(tr ' ' '_' </sys/module/$NAME/parameters/layout)
	demo loaded-cpu0 0 direct
	demo loaded-cpu1 1 direct
	# pmu-demo stat on 32-bit ARM: the direct backend, the only one there (CPU 0's
	# counters around the command); the command's exit status passes through.
	pmu-demo stat --json -o /tmp/stat.json --cpu 0 -e instructions,cycles -- \
		sh -c 'exit 3' 2>/tmp/stat.err
	status=$?
	echo "JSON stat-armhf $(tr -d '\n' </tmp/stat.json 2>/dev/null)"
	sed 's/^/STDERR stat-armhf /' /tmp/stat.err
	result demo tag=stat-armhf status=$status
	echo 0 >/sys/devices/system/cpu/cpu1/online
	off=$?
	echo 1 >/sys/devices/system/cpu/cpu1/online
	result hotplug offline_rc=$off online_rc=$? online=$(cat /sys/devices/system/cpu/cpu1/online)
	klog
	demo replugged-cpu1 1 direct
	unload programming
	klog
	demo after-cpu0 0 direct
	finish
}

main() {
	case "$scenario" in
	armhf) scenario_armhf ;;
	*)
		result error unknown_scenario=${scenario:-none}
		finish
		;;
	esac
}
