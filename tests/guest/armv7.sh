
# ---- armv7 scenarios: the ARMv7 multi-platform kernel on QEMU `-M raspi2b` (4 x
# Cortex-A7) and `-M virt -cpu cortex-a15`; tests/tests/kernel_armv7.rs asserts on them.
# The module is the stock flavour built with FLAVOUR=armv7 (/lib/modules/stock), the
# ARMv6 flavour built against the same kernel is /lib/modules/kmod_enable_user_armv6.ko ----

OTHER_FLAVOUR=/lib/modules/kmod_enable_user_armv6.ko

# The CPU's identity as the kernel tells it (/proc/cpuinfo), and whether perf owns the
# PMU (an arm_pmu device in sysfs: the board's device tree has a PMU node).
cpu_line() {
	part=$(awk -F': ' '/^CPU part/ {print $2; exit}' /proc/cpuinfo)
	arch=$(awk -F': ' '/^CPU architecture/ {print $2; exit}' /proc/cpuinfo)
	model=$(tr -d '\0' </proc/device-tree/model 2>/dev/null | tr ' ' '_')
	perf_pmu=$(ls /sys/bus/event_source/devices 2>/dev/null | grep -c -E '^armv7_|^arm_')
	result cpu part=$part architecture=$arch board=${model:-none} perf_pmu=$perf_pmu
}

# pmu-demo hazards (direct backend on 32-bit ARM): JSON and exit status.
hazards() {
	tag=$1
	pmu-demo hazards --json >/tmp/hazards.out 2>/tmp/hazards.err
	status=$?
	echo "JSON $tag $(tr -d '\n' </tmp/hazards.out)"
	sed "s/^/STDERR $tag /" /tmp/hazards.err
	result demo tag=$tag cpu=any backend=direct status=$status
}

# The kernel-entry sentinel over long regions: 20 000 000 loop iterations, 40 M PL0
# instructions, at least 40 ms of virtual time under icount shift=0; the kernel's timer
# (CONFIG_HZ=100) interrupts every run several times.
sentinel_demo() {
	tag=$1
	cpu=$2
	pmu-demo measure --backend direct --cpu "$cpu" --kernel loop --units 20000000 \
		--events instructions,cycles --runs 3 --warmup 1 --json >/tmp/demo.out 2>/tmp/demo.err
	status=$?
	echo "JSON $tag $(tr -d '\n' </tmp/demo.out)"
	sed "s/^/STDERR $tag /" /tmp/demo.err
	result demo tag=$tag cpu=$cpu backend=direct status=$status
}

# insmod of the ARMv6 flavour (SUNAVCR, for the ARM1176): refused on an ARMv7 CPU.
load_other_flavour() {
	insmod "$OTHER_FLAVOUR" $MODE 2>/tmp/insmod.err
	rc=$?
	msg=$(head -n 1 /tmp/insmod.err | sed 's/.*: //; s/ /_/g')
	result insmod tag=other-flavour rc=$rc loaded=$(module_loaded) error=${msg:-none}
}

# The whole story on one board: off before; the default (read-only) request refused on
# PMUv2 with the reason; bad input refused; loaded with the write opt-in; exact counts
# on every CPU; the hazards flagged; CPU hotplug (where the board has it); unloaded;
# off again; the other flavour refused; load/unload cycles without leaks.
scenario_board() {
	boot_line
	cpu_line
	ncpus=$(grep -c ^processor /proc/cpuinfo)
	demo before-cpu0 0 direct
	load default
	load bad-user-access user_access=1
	load bad-events el0_programming=1 events=0x100
	klog
	load programming el0_programming=1
	klog
	result layout text=$(tr ' ' '_' </sys/module/$NAME/parameters/layout)
	cpu=0
	while [ $cpu -lt "$ncpus" ]; do
		demo loaded-cpu$cpu $cpu direct
		cpu=$((cpu + 1))
	done
	# An event by the core's own name, any case, beside its number (INST_RETIRED 0x08).
	demo named-direct 0 direct --events inst_retired,r8
	sentinel_demo sentinel-long 0
	hazards hazards
	# pmu-demo took every CPU's PMU over (its counters disabled the module's): `regrant`
	# programs the module's counters and grants again on every online CPU.
	echo 1 >/sys/module/$NAME/parameters/regrant
	result regrant rc=$?
	klog
	# CPU hotplug: cpu1 offline (the module releases its counters and revokes the grant
	# there) and online again (arm_pmu resets the PMU, the module grants again).
	if echo 0 >/sys/devices/system/cpu/cpu1/online 2>/dev/null; then
		offline=1
		echo 1 >/sys/devices/system/cpu/cpu1/online
	else
		offline=0
	fi
	online=$(cat /sys/devices/system/cpu/cpu1/online 2>/dev/null)
	result hotplug offlined=$offline online=${online:-absent}
	klog
	if [ "$offline" = 1 ]; then
		demo replugged-cpu1 1 direct
	fi
	unload default
	klog
	demo after-cpu0 0 direct
	load_other_flavour
	klog
	stress_cycles 10 el0_programming=1
	finish
}

# An event the module's layout lacks (L1D_CACHE_REFILL, 0x03) under the read-only
# grant: refused, naming the layout and the parameter that would add it.
missing_event_demo() {
	tag=$1
	pmu-demo measure --backend direct --cpu 0 --kernel loop --units 1000 \
		--events instructions,r3 --runs 1 --warmup 0 --json >/tmp/demo.out 2>/tmp/demo.err
	status=$?
	sed "s/^/STDERR $tag /" /tmp/demo.err
	result demo tag=$tag cpu=0 backend=direct status=$status
}

# pmu-demo stat --backend direct on CPU 0 of a command whose PL0 instructions grow by
# an exact 2 per loop iteration: pmu-demo measure of the loop kernel, $2 iterations in
# each of 2 uncalibrated runs (under the read-only grant the inner demo only reads, as
# the outer one does). usage: stat_loop TAG UNITS
stat_loop() {
	tag=$1
	rm -f /tmp/stat.json
	pmu-demo stat --json -o /tmp/stat.json --backend direct --cpu 0 -e instructions,cycles -- \
		pmu-demo measure --backend direct --cpu 0 --kernel loop --units "$2" \
		--events instructions --runs 2 --warmup 0 --no-calibrate --json \
		>/dev/null 2>/tmp/stat.err
	status=$?
	echo "JSON $tag $(tr -d '\n' </tmp/stat.json 2>/dev/null)"
	sed "s/^/STDERR $tag /" /tmp/stat.err
	result demo tag=$tag cpu=0 backend=direct units=$2 status=$status
}

# PMUv3 seen from AArch32 (QEMU's 32-bit `max` CPU): the default, read-only grant,
# which pmu-demo's ARMv7 backend reads on both CPUs without programming anything; an
# event outside the layout refused; with el0_programming=1 it programs and counts
# exactly.
scenario_pmuv3() {
	boot_line
	cpu_line
	load default
	klog
	result layout text=$(tr ' ' '_' </sys/module/$NAME/parameters/layout)
	demo readonly-cpu0 0 direct
	demo readonly-cpu1 1 direct
	missing_event_demo readonly-missing
	# 2 x 1000 and 2 x (2^31 - 1) iterations: the second is 2^33 - 4 loop instructions,
	# two wraps of every 32-bit counter, 8.6 s of virtual time under icount shift=0
	# (about 14 s of a 2-core host's), read in 50 ms sub-regions and summed.
	stat_loop stat-short 1000
	stat_loop stat-wrap 2147483647
	unload default
	klog
	load programming el0_programming=1
	klog
	demo loaded-cpu1 1 direct
	unload programming
	klog
	finish
}

# A CPU without a PMU (QEMU -cpu cortex-a15,pmu=off): the module refuses to load.
scenario_nopmu() {
	boot_line
	cpu_line
	load nopmu el0_programming=1
	klog
	finish
}

main() {
	case "$scenario" in
	board) scenario_board ;;
	nopmu) scenario_nopmu ;;
	pmuv3) scenario_pmuv3 ;;
	*)
		result error unknown_scenario=${scenario:-none}
		finish
		;;
	esac
}
