
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
	# The per-thread default needs CONFIG_PREEMPT_NOTIFIERS, which armmp lacks: refused
	# with its reason; the loads below pass cpu_wide=1 (MODE, common.sh).
	load_default_mode per-thread el0_programming=1
	klog
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

# The same kernel booted with a PMU node in its device tree (tests/src/lib.rs
# `arm32_pmu_dtb`: `arm,cortex-a15-pmu` on QEMU's PPI 7), so perf's ARMv7 driver owns the
# PMU as on a real board: `perf stat -a -e cycles:u,instructions:u -I 100` (what an
# administrator runs) started before the module is loaded and stopped after it is
# unloaded; meanwhile insmod (el0_programming=1: PMUv2 has no other grant), CPU 1 offline
# and online, rmmod. No pmu-demo meanwhile: under EN it programs counters itself. Every
# interval line goes to the console as a PERFSTAT line. Then a perf session of its own on
# CPU 0 with the module loaded, and pmu-demo's direct reads there. First, a load beside
# a stopped task-bound perf stat is refused.
scenario_armhf_perf() {
	boot_line
	cpu_line
	perf_line
	# A task-bound perf stat whose command stops itself (SIGSTOP) for the load: its
	# events are on no counter and in no used_mask, only in perf's task context. The
	# ARMv7 flavour walks perf's contexts as arm64's does (kmod_enable_user_owners.c)
	# and refuses before it changes anything; then the command runs and perf counts it.
	rm -f /tmp/pinned.go
	perf stat -x, -e instructions:u -o /tmp/pinned.csv -- \
		sh -c 'echo $$ >/tmp/pinned.go; kill -STOP $$; i=0; while [ $i -lt 2000 ]; do i=$((i + 1)); done' \
		2>/tmp/pinned.err &
	pinned=$!
	n=0
	while [ ! -s /tmp/pinned.go ] && [ $n -lt 600 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	target=$(cat /tmp/pinned.go)
	while ! grep -q '^State:.*T' /proc/$target/status 2>/dev/null && [ $n -lt 600 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	result pinned-started waited=$n stopped=$(grep -c '^State:.*T' /proc/$target/status)
	load pinned el0_programming=1
	klog
	kill -CONT $target
	wait $pinned
	result pinned-perf status=$? counted=$(grep -c -E '^[0-9]+,' /tmp/pinned.csv)
	sed 's/^/STDERR pinned /' /tmp/pinned.err

	rm -f /tmp/wide.csv
	perf stat -a -e cycles:u,instructions:u -I 100 -x, -o /tmp/wide.csv 2>/tmp/wide.err &
	perf_pid=$!
	# perf has opened its events once it wrote its first interval.
	n=0
	while [ ! -s /tmp/wide.csv ] && [ $n -lt 500 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	result wide-started waited=$n
	sleep 0.5
	load wide el0_programming=1
	klog
	result wide-layout text=$(tr ' ' ',' </sys/module/$NAME/parameters/layout 2>/dev/null)
	sleep 0.5
	echo 0 >/sys/devices/system/cpu/cpu1/online
	off=$?
	sleep 0.3
	echo 1 >/sys/devices/system/cpu/cpu1/online
	result wide-hotplug cpu=1 offline_rc=$off online_rc=$? online=$(cat /sys/devices/system/cpu/cpu1/online)
	sleep 0.5
	klog
	unload wide
	klog
	sleep 0.5
	kill -INT $perf_pid
	wait $perf_pid
	result wide-perf status=$? intervals=$(grep -c -E '^ *[0-9]+\.[0-9]+,' /tmp/wide.csv)
	sed 's/^/PERFSTAT /' /tmp/wide.csv
	sed 's/^/STDERR wide-perf /' /tmp/wide.err

	# A perf session on CPU 0 (its events on counters perf may still hand out), then
	# pmu-demo's direct reads there: they count exactly or refuse, never a clean 0.
	load session el0_programming=1
	klog
	taskset -c 0 perf stat -x, -o /tmp/session.csv -e cycles:u,instructions:u -- sh -c 'i=0; while [ $i -lt 2000 ]; do i=$((i + 1)); done' 2>/tmp/session.err
	result perf-session status=$? counted=$(grep -c -E '^[0-9]+,' /tmp/session.csv)
	sed 's/^/STDERR perf-session /' /tmp/session.err
	demo session-after-cpu0 0 direct
	unload session
	klog
	finish
}

main() {
	# The kernel booted CPU 0 alone (maxcpus=1: tests/tests/debian_armhf.rs says why);
	# CPU 1 comes online before anything else runs.
	echo 1 >/sys/devices/system/cpu/cpu1/online
	result cpu1 online_rc=$? online=$(cat /sys/devices/system/cpu/online)
	case "$scenario" in
	armhf) scenario_armhf ;;
	armhf_perf) scenario_armhf_perf ;;
	*)
		result error unknown_scenario=${scenario:-none}
		finish
		;;
	esac
}
