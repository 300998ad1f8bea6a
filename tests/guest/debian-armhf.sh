
# ---- Debian 12's own armhf kernel (linux-image-armmp), booted from Debian's package on
# `-M virt -cpu cortex-a15 -smp 2`; tests/tests/debian_armhf.rs asserts on these lines.
# The module is the ARMv7 flavour of the stock module built against the kernel's own
# headers (/lib/modules/kmod_enable_user-<uname -r>.ko); pmu-demo is the static ARMv7
# build of the armv7 runs ----

MODULE=/lib/modules/kmod_enable_user-$(uname -r).ko

# The CPU as the kernel tells it, and whether perf's ARMv7 PMU driver probed.
cpu_line() {
	part=$(awk -F': ' '/^CPU part/ {print $2; exit}' /proc/cpuinfo)
	arch=$(awk -F': ' '/^CPU architecture/ {print $2; exit}' /proc/cpuinfo)
	perf_pmu=$(ls /sys/bus/event_source/devices 2>/dev/null | grep -c -E '^armv7_|^arm_')
	result cpu part=$part architecture=$arch perf_pmu=$perf_pmu
}

# Off before; the default (read-only) request refused on PMUv2 with its reason; loaded
# with the write opt-in: exact counts on both CPUs and after CPU 1 went offline and came
# back; unloaded: off again.
scenario_armhf() {
	boot_line
	cpu_line
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
