
# ---- arm64 scenarios (tests/tests/kernel_arm64.rs asserts on them) ----

# `pmu-demo hazards` on hardware events (perf_user_access=1): tag, events.
hazards_syscall_free() {
	pmu-demo hazards --json --events "$2" >"/tmp/$1.out" 2>"/tmp/$1.err"
	status=$?
	echo "JSON $1 $(tr -d '\n' <"/tmp/$1.out")"
	sed "s/^/STDERR $1 /" "/tmp/$1.err"
	result "$1" status=$status
}

# Interrupts CPU $1 has taken (its column of /proc/interrupts, every line).
cpu_interrupts() {
	awk -v col=$(($1 + 2)) 'NR > 1 && $col ~ /^[0-9]+$/ { s += $col } END { print s + 0 }' /proc/interrupts
}

# el0-probe on CPU $2 (tests/guest/el0_probe.rs): what the grant lets EL0 do.
# usage: probe TAG CPU MODE [N]
probe() {
	tag=$1
	cpu=$2
	shift 2
	out=$(taskset -c "$cpu" el0-probe "$@" 2>/dev/null)
	status=$?
	result probe tag=$tag cpu=$cpu mode=$1 status=$status $out
}

# pmu-guest region-check on CPU $2 (tests/guest/src/region_check.rs): the direct
# backend's syscall-free region (getpid flagged, quiet blocks clean or explained by
# /proc/interrupts, a preset counter's overflow) and its counter handles.
# usage: region_check TAG CPU [ARGS]
region_check() {
	tag=$1
	cpu=$2
	shift 2
	out=$(pmu-guest region-check --cpu "$cpu" "$@" 2>/tmp/region.err)
	status=$?
	sed "s/^/STDERR $tag /" /tmp/region.err
	result region tag=$tag cpu=$cpu status=$status $out
}

# Direct access off before loading; the default grant (read-only: the module's own
# counters readable, every write traps) on every CPU; off again after unloading; the
# write opt-in (el0_programming=1) with the direct backend programming the PMU itself,
# on every CPU and a CPU that came back online; the cycle counter alone; bad
# parameters; then the perf backend with and without kernel.perf_user_access.
scenario_access() {
	boot_line
	# The core by its MIDR and its own events (pmu-events), before any module.
	demo_list core-list 0
	demo before-cpu0 0 direct
	demo before-cpu1 1 direct
	probe before 0 cycles

	load default
	klog
	result layout text=$(tr ' ' ',' </sys/module/$NAME/parameters/layout) user_access=$(cat /sys/module/$NAME/parameters/user_access)
	# pmu-demo's direct backend on the module's counters (no EN: read-only).
	demo default-cpu0 0 direct
	demo default-cpu1 1 direct
	# The syscall-free region without a sentinel: getrusage for switches, no claim
	# about other kernel entries.
	region_check default-region 0 --rounds 200
	for c in 0 1; do
		probe default-read-$c $c read 5
		probe default-cycles-$c $c read 4
		probe default-pmccntr-$c $c cycles
		probe default-write-pmcr-$c $c write-pmcr
		probe default-write-type-$c $c write-type 5
	done
	unload default
	klog
	probe after-default-read 0 read 5
	probe after-default-cycles 0 read 4

	load programming el0_programming=1
	klog
	probe programming-write-pmcr 0 write-pmcr
	probe programming-write-type 0 write-type 0
	demo loaded-cpu0 0 direct
	demo loaded-cpu1 1 direct
	# An event by the core's own name, any case, beside its number (INST_RETIRED 0x08).
	demo named-direct 0 direct --events inst_retired,r8
	# Forced hazards, with the overflow one on a direct counter preset below its wrap.
	pmu-demo hazards --json >/tmp/hazards.out 2>/tmp/hazards.err
	status=$?
	echo "JSON hazards $(tr -d '\n' </tmp/hazards.out)"
	sed "s/^/STDERR hazards /" /tmp/hazards.err
	result hazards status=$status
	# The syscall-free region with the backend's own sentinel and overflow flags.
	region_check programming-region 0 --program --rounds 200

	echo 0 >/sys/devices/system/cpu/cpu1/online
	off=$?
	echo 1 >/sys/devices/system/cpu/cpu1/online
	result hotplug cpu=1 offline_rc=$off online_rc=$? online=$(cat /sys/devices/system/cpu/cpu1/online)
	klog
	demo hotplugged-cpu1 1 direct

	unload programming
	klog
	demo after-cpu0 0 direct
	demo after-cpu1 1 direct

	load cycle-counter events=
	result params user_access=$(cat /sys/module/$NAME/parameters/user_access) cycle_counter=$(cat /sys/module/$NAME/parameters/cycle_counter) layout=$(cat /sys/module/$NAME/parameters/layout)
	probe cycle-counter-cycles 0 read 5
	probe cycle-counter-pmccntr 0 cycles
	klog
	unload cycle-counter
	klog

	# The kernel-entry sentinel (sentinel=1): INST_RETIRED at EL1 only on the counter
	# below the module's event, read at EL0 across quiet blocks and getpid calls; the
	# interrupts CPU 0 took meanwhile explain every quiet block it flags.
	load sentinel sentinel=1
	klog
	result sentinel-layout text=$(tr ' ' ',' </sys/module/$NAME/parameters/layout)
	irqs_before=$(cpu_interrupts 0)
	probe sentinel 0 kernel-entry 3 1000
	result sentinel-interrupts cpu=0 delta=$(($(cpu_interrupts 0) - irqs_before))
	# The syscall-free region on the module's counters and sentinel.
	region_check sentinel-region 0 --rounds 500
	unload sentinel
	klog

	load bad-bits user_access=16
	load en-without-opt-in user_access=13
	load nothing user_access=0
	load bad-events events=0x8,zz
	load empty events= cycle_counter=0
	load chain events=0x1e
	klog

	sysctl -w kernel.perf_user_access=1 >/dev/null
	result sysctl perf_user_access=$(cat /proc/sys/kernel/perf_user_access)
	demo perf-user-access 0 perf
	demo named-perf 0 perf --events INST_RETIRED,r8
	# Forced hazards on hardware events read through their pages: the syscall-free evidence
	# (page locks + CPU, no getrusage) must flag the sleep and the migration, for one
	# event and for a group (the syscall-free region has a path of its own for one event).
	hazards_syscall_free hazards-syscall-free instructions
	hazards_syscall_free hazards-syscall-free-group instructions,cycles
	sysctl -w kernel.perf_user_access=0 >/dev/null
	result sysctl perf_user_access=$(cat /proc/sys/kernel/perf_user_access)
	demo perf-no-user-access 0 perf
	finish
}

# The module next to perf and after idle (booted with PSCI idle states in the device
# tree): a perf session keeps exact counts across loads and unloads; the grant survives
# CPU PM exits (arm_pmu resets the PMU on each); perf revokes it and `regrant` puts it
# back; a CPU offline at unload keeps no grant.
scenario_grant() {
	boot_line
	idle_usage() {
		# Entries of the power-down state on every CPU: QEMU's CPU_SUSPEND returns
		# instead of powering down, so cpuidle counts them as `rejected`; cpu_pm_enter()
		# and cpu_pm_exit() ran around each all the same.
		cat /sys/devices/system/cpu/cpu*/cpuidle/state1/usage \
			/sys/devices/system/cpu/cpu*/cpuidle/state1/rejected 2>/dev/null | awk '{n += $1} END {print n + 0}'
	}
	result cpuidle driver=$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null) state1=$(cat /sys/devices/system/cpu/cpu0/cpuidle/state1/name 2>/dev/null) usage_before=$(idle_usage)

	# perf counts 1000 iterations of the loop on CPU 0 (one-instruction reads through
	# its page) while the module is loaded and unloaded on CPU 1, as often as fits.
	sysctl -w kernel.perf_user_access=1 >/dev/null
	rm -f /tmp/across.done /tmp/across.err
	(
		# Start once pmu-demo has printed its progress line: its events are open and
		# it is measuring (the runs come right after that line).
		while [ ! -s /tmp/across.err ]; do sleep 0.01; done
		cycles=0
		refused=0
		while [ ! -e /tmp/across.done ]; do
			if taskset -c 1 insmod "$MODULE" $MODE 2>/dev/null; then
				taskset -c 1 rmmod "$NAME" && cycles=$((cycles + 1))
			else
				refused=$((refused + 1))
			fi
		done
		echo $cycles >/tmp/across.cycles
		echo $refused >/tmp/across.refused
	) &
	loader=$!
	pmu-demo measure --backend perf --cpu 0 --kernel loop --units 1000 \
		--events instructions --runs 60000 --warmup 2 --json \
		>/tmp/across.out 2>/tmp/across.err
	status=$?
	touch /tmp/across.done
	wait $loader
	echo "JSON perf-across $(json_without_runs /tmp/across.out)"
	sed 's/^/STDERR perf-across /' /tmp/across.err | head -n 5
	result demo tag=perf-across cpu=0 backend=perf status=$status
	result perf-across status=$status load_unload_cycles=$(cat /tmp/across.cycles) refused=$(cat /tmp/across.refused) loaded=$(module_loaded)
	sysctl -w kernel.perf_user_access=0 >/dev/null
	klog_quiet
	# Why the loads were refused (kmod_enable_user_owners.c), once.
	grep -m 1 'perf has promised counters' /tmp/klog | sed 's/^/PROMISED /'

	# A CPU-wide perf event on CPU 0 (as `perf stat -a` or the watchdog) read every 1 ms
	# while the module is loaded and unloaded: a CPU-wide event is not scheduled out
	# around the module's CPU-hotplug callback, so a counter reset would hit it.
	rm -f /tmp/wide.done /tmp/wide.out
	(
		while [ ! -s /tmp/wide.started ]; do sleep 0.01; done
		cycles=0
		while [ ! -e /tmp/wide.done ]; do
			taskset -c 1 insmod "$MODULE" $MODE && taskset -c 1 rmmod "$NAME" && cycles=$((cycles + 1))
		done
		echo $cycles >/tmp/wide.cycles
	) &
	loader=$!
	echo 1 >/tmp/wide.started
	taskset -c 1 el0-probe cpu-wide 0 1500 >/tmp/wide.out 2>&1
	status=$?
	touch /tmp/wide.done
	wait $loader
	result cpu-wide status=$status load_unload_cycles=$(cat /tmp/wide.cycles) $(cat /tmp/wide.out)
	klog_quiet

	load default
	klog
	# Let the CPUs idle (every idle entry resets the PMU on CPU_PM_EXIT), then read.
	sleep 1
	probe idle-read-0 0 read 5
	probe idle-cycles-1 1 read 4
	result cpu_pm regrants=$(cut -d' ' -f1 /sys/module/$NAME/parameters/cpu_pm_regrants) failures=$(cut -d' ' -f2 /sys/module/$NAME/parameters/cpu_pm_regrants) usage_after=$(idle_usage)

	# perf on CPU 0 (read() path): while it runs, its armv8pmu_start() writes
	# PMUSERENR_EL0 = 0 there at every start of the PMU (each enable of its events), and
	# no idle on the busy CPU puts it back. `regrant`, written from CPU 1, re-applies it
	# (logged) — until perf's next start. Once perf is done, the grant holds again.
	pmu-demo measure --backend perf --cpu 0 --kernel loop --units 1000 \
		--events instructions,cycles --runs 20000 --warmup 2 --json \
		>/tmp/perf0.out 2>/tmp/perf0.err &
	perf0=$!
	sleep 0.2
	perf_running=0
	kill -0 $perf0 2>/dev/null && perf_running=1
	probe revoked-read-0 0 read 5
	taskset -c 1 sh -c "echo 1 >/sys/module/$NAME/parameters/regrant"
	rc=$?
	kill -0 $perf0 2>/dev/null || perf_running=0
	result regrant-during-perf rc=$rc perf_running=$perf_running
	wait $perf0
	klog
	echo 1 >/sys/module/$NAME/parameters/regrant
	result regrant rc=$?
	klog
	probe regranted-read-0 0 read 5

	# Unload with CPU 1 offline: its grant went with it, and it comes back without one.
	echo 0 >/sys/devices/system/cpu/cpu1/online
	unload default
	echo 1 >/sys/devices/system/cpu/cpu1/online
	klog
	probe after-offline-unload-1 1 read 5
	probe after-unload-0 0 read 5

	# cpus=0: CPU 1 gets neither a grant nor a keeper (both flavours, one C file).
	load cpus cpus=0
	klog
	probe cpus-read-0 0 read 5
	probe cpus-read-1 1 read 5
	unload cpus
	klog
	finish
}

# A CPU without a PMU (QEMU -cpu max,pmu=off): the module refuses to load.
scenario_nopmu() {
	boot_line
	load nopmu
	klog
	finish
}

# 50 load/unload cycles on 4 CPUs, loading twice, unloading while pmu-demo reads.
scenario_stress() {
	boot_line
	stress_cycles 50

	load while-reading el0_programming=1
	pmu-demo measure --backend direct --cpu 1 --kernel loop --units 100000 \
		--events instructions,cycles --runs 5000 --warmup 2 --json \
		>/tmp/reader.out 2>/tmp/reader.err &
	reader=$!
	sleep 0.3
	running=0
	kill -0 $reader 2>/dev/null && running=1
	unload while-reading
	wait $reader
	status=$?
	sed 's/^/STDERR reader /' /tmp/reader.err | head -n 5
	result reader running_at_unload=$running status=$status
	klog
	demo after-stress 0 direct
	finish
}

# The stock flavour's per-thread grant (its default: this kernel has
# CONFIG_PREEMPT_NOTIFIERS through CONFIG_KVM, xtask/kernel/arm64.config) under kmemleak:
# a granted thread reads exactly, 1000 open/GRANT/close cycles and 300 grants ended by
# another thread, by the thread itself and by a process's exit (tests/guest/
# thread_grant.rs `ends`), rmmod; then what kmemleak finds (the module's objects and the
# kernel's, tests/guest/kmemleak.awk; a task reference the module kept would leave a
# task_struct per grant).
scenario_thread_leak() {
	boot_line
	mount -t debugfs debugfs /sys/kernel/debug
	boot_leaks=$(kmemleak_scan)
	echo clear >$KMEMLEAK
	load_default_mode thread-leak
	klog
	result thread-device mode=$(stat -c %a /dev/kmod_enable_user 2>/dev/null || echo none)
	inst=$(layout_counter 0x8)
	thread-grant exact "$inst" 10000
	thread-grant exact "$inst" 20000
	thread-grant cycles 1000
	thread-grant ends 300 "$inst"
	unload thread-leak
	# A thread that runs where the module runs no counters (cpus=0: none on CPU 1).
	load_default_mode thread-gap cpus=0
	thread-grant gap "$inst" 10000
	pmu-guest library-grant --cpu 0 --iterations 1000 --gap-cpu 1 2>/tmp/library-grant.err
	result library-grant-exit status=$?
	sed 's/^/STDERR library-grant /' /tmp/library-grant.err
	unload thread-gap
	klog_quiet
	kmemleak_leaks
	result thread-leak kmemleak_boot=$boot_leaks kmemleak_module=$leaks kmemleak_other=$other
	finish
}

# `cargo xtask bench`: read-path costs in user-space instructions (pmu-guest
# read-costs, then the libperf harnesses when the initramfs has them), with
# kernel.perf_user_access=1, then the direct backend after loading the module.
scenario_bench() {
	boot_line
	sysctl -w kernel.perf_user_access=1 >/dev/null
	result sysctl perf_user_access=$(cat /proc/sys/kernel/perf_user_access)
	pmu-guest read-costs 2>/tmp/bench.err
	result bench-run tag=perf status=$?
	sed 's/^/STDERR perf /' /tmp/bench.err
	# One libperf harness per build (-O2, the Makefile's default), named by its tag.
	for run in libperf-bench:libperf libperf-bench-default:libperf-default; do
		bin=${run%%:*} tag=${run#*:}
		[ -x "/bin/$bin" ] || continue
		"$bin" "$tag" 2>"/tmp/$tag.err"
		result bench-run tag="$tag" status=$?
		sed "s/^/STDERR $tag /" "/tmp/$tag.err"
	done
	load bench el0_programming=1
	pmu-guest read-costs --direct 2>/tmp/bench.err
	result bench-run tag=direct status=$?
	sed 's/^/STDERR direct /' /tmp/bench.err
	unload bench
	finish
}

# The Raspberry Pi 3 in QEMU (`-M raspi3b`, tests/tests/raspi.rs): the same kernel with
# the board's device tree; direct access off, on after loading (two of the four
# Cortex-A53s), off after unloading.
scenario_raspi() {
	boot_line
	result board model=$(tr -d '\0' </proc/device-tree/model | tr ' ' '_')
	demo before-cpu0 0 direct
	# The board enters the kernel at EL2 and the test kernel has CONFIG_KVM (as a
	# distribution's arm64 kernel does): a host where KVM may run guests, where the
	# default load is refused (kmod-enable-user/README.md, "KVM hosts").
	load default
	klog
	load kvm-host kvm_hosts=1
	klog
	demo loaded-cpu0 0 direct
	demo loaded-cpu3 3 direct
	# What a Pi owner sees (quoted in the README's Raspberry Pi section).
	pmu-demo measure --backend direct --cpu 0 --kernel loop --units 1000 \
		--events instructions,cycles 2>&1 | sed 's/^/HUMAN /'
	unload kvm-host
	klog
	demo after-cpu0 0 direct
	finish
}

# pmu-demo's messages on a kernel with a working PMU (tests/tests/kernel_arm64.rs
# `demo_messages`): the reason per event in `list`, a group too big for the counters
# refused before any work, the same events multiplexed, and a module grant that perf
# revoked. Tagged pmu-demo runs print `JSON <tag> …`, `STDERR <tag> …` and
# `RESULT demo tag=<tag> status=<exit status>` (as `demo` in common.sh).
msg_run() {
	tag=$1
	shift
	pmu-demo "$@" >"/tmp/$tag.out" 2>"/tmp/$tag.err"
	status=$?
	echo "JSON $tag $(tr -d '\n' <"/tmp/$tag.out")"
	sed "s/^/STDERR $tag /" "/tmp/$tag.err"
	result demo tag=$tag status=$status
}

scenario_demo_msgs() {
	boot_line
	msg_run list list --json
	# 8 events: 4 x instructions and 4 x cycles; QEMU -cpu max has 6 event counters
	# and the cycle counter, so at most 7 fit at once.
	eight=instructions,cycles,instructions,cycles,instructions,cycles,instructions,cycles
	msg_run too-many measure --backend perf --cpu 0 --kernel loop --units 1000 \
		--events $eight --runs 5 --warmup 1 --json
	msg_run multiplex measure --backend perf --multiplex --cpu 0 --kernel loop \
		--units 1000000 --events $eight --runs 10 --warmup 1 --json
	# pmu-demo stat of the same 8 events on a command with a child
	# (tests/guest/debian_block.rs `fork`): rotated over two runs per group with
	# --repeat, multiplexed without. Without address-space randomization: where the
	# stack starts changes a few alignment-dependent instructions of a program's
	# start-up from one run to the next (measured: 421187 or 421191 for the same run).
	# CPU 1 offline meanwhile: under icount QEMU's INST_RETIRED is the instruction count
	# of all vCPUs (docs/qemu.md), so whatever CPU 1 ran while the command was at EL0 on
	# CPU 0 was counted too (measured once: 421791 and 423936 for two runs).
	aslr=$(cat /proc/sys/kernel/randomize_va_space)
	echo 0 >/proc/sys/kernel/randomize_va_space
	echo 0 >/sys/devices/system/cpu/cpu1/online
	off=$?
	result stat-cpus offline_rc=$off online=$(cat /sys/devices/system/cpu/online)
	msg_run stat-rotate stat --json -o - --repeat 2 -e $eight -- \
		taskset -c 0 debian-block 100000 fork
	msg_run stat-mux stat --json -o - -e $eight -- \
		taskset -c 0 debian-block 3000000 fork
	# The report as a person reads it (stderr: STDERR stat-human lines).
	msg_run stat-human stat -e instructions:u,cycles:u -- debian-block 100000 fork
	echo 1 >/sys/devices/system/cpu/cpu1/online
	result stat-cpus-after online_rc=$? online=$(cat /sys/devices/system/cpu/online)
	echo "$aslr" >/proc/sys/kernel/randomize_va_space

	# The module's grant, then perf on CPU 0, then the direct backend again. Loaded with
	# today's default grant; el0_programming=1 is the opt-in of newer versions of the
	# module (an unknown parameter is ignored: kernel/module/main.c
	# unknown_module_param_cb).
	load grant el0_programming=1
	klog
	demo granted-cpu0 0 direct
	demo perf-on-cpu0 0 perf
	demo revoked-cpu0 0 direct
	# The module's INST_RETIRED counter (PMEVCNTR5_EL0) read raw after perf's session:
	# it traps or counts the probe's block, never a silent 0.
	probe revoked-raw 0 read 5
	demo untouched-cpu1 1 direct
	msg_run revoked-hazards hazards --json
	# A measurement interrupted on the way: the direct reader on CPU 1 is stopped, a perf
	# session runs on CPU 1 (revoking the grant there), the reader continues: its next
	# region finds the grant gone, and the runs measured before are still reported.
	pmu-demo measure --backend direct --cpu 1 --kernel loop --units 1000000 \
		--events instructions --runs 5000 --warmup 0 --no-calibrate --json \
		>/tmp/interrupted.out 2>/tmp/interrupted.err &
	reader=$!
	sleep 0.3
	kill -STOP $reader
	demo perf-on-cpu1 1 perf
	kill -CONT $reader
	wait $reader
	status=$?
	echo "JSON interrupted $(tr -d '\n' </tmp/interrupted.out)"
	sed 's/^/STDERR interrupted /' /tmp/interrupted.err
	result demo tag=interrupted status=$status
	if [ -e /sys/module/$NAME/parameters/regrant ]; then
		echo 1 >/sys/module/$NAME/parameters/regrant
		result regrant rc=$?
		demo regranted-cpu0 0 direct
	fi
	unload grant
	load reloaded el0_programming=1
	demo reloaded-cpu0 0 direct
	unload reloaded
	finish
}

# Multiplexed events read through their pages (tests/guest/src/multiplex_now.rs):
# 12 rotated `instructions` events next to a pinned reference, on 5 free counters.
scenario_multiplex() {
	boot_line
	# arm64 perf hands out user reads only with this (drivers/perf/arm_pmuv3.c).
	sysctl -w kernel.perf_user_access=1 >/dev/null
	taskset -c 0 pmu-guest multiplex-now 12 20000000 >/tmp/mux.out 2>/tmp/mux.err
	result multiplex status=$?
	sed 's/^/STDERR multiplex /' /tmp/mux.err
	sed 's/^/RESULT mux /' /tmp/mux.out
	finish
}

# Two core PMUs over two CPU sets (QEMU's device tree with two arm,cortex-*-pmu
# nodes, tests/src/lib.rs `arm64_big_little_dtb`): what the kernel registered, then
# `pmu-guest hybrid` (tests/guest/src/hybrid.rs) counts a generic event on both.
scenario_hybrid() {
	dmesg | grep -E "hw perfevents|armv8-pmu|pmu" | sed 's/^\[[ 0-9.]*\] //; s/^/PMULOG /'
	boot_line
	for dir in /sys/bus/event_source/devices/armv8*; do
		result hybrid-sysfs pmu=$(basename "$dir") type=$(cat "$dir/type") cpus=$(cat "$dir/cpus")
	done
	echo 1 >/proc/sys/kernel/perf_user_access
	result hybrid-sysctl perf_user_access=$(cat /proc/sys/kernel/perf_user_access)
	pmu-guest hybrid --units 1000 2>/tmp/hybrid.err
	result hybrid-run status=$?
	sed 's/^/STDERR hybrid /' /tmp/hybrid.err
	# The front door on the same machine: pmu-linux's Meter opens `instructions` on
	# both PMUs (pmu-linux/examples/count.rs), on a CPU of each cluster.
	for cpu in 0 2; do
		ex_run hybrid-count-$cpu-1000 taskset -c $cpu count 1000
		ex_run hybrid-count-$cpu-2000 taskset -c $cpu count 2000
	done
	# Without user access every region goes through read().
	echo 0 >/proc/sys/kernel/perf_user_access
	pmu-guest hybrid --units 1000 --tag hybrid-off --only-pinned 2>/tmp/hybrid.err
	result hybrid-off-run status=$?
	sed 's/^/STDERR hybrid-off /' /tmp/hybrid.err
	finish
}

# The libraries' examples as a user runs them (tests/tests/kernel_arm64.rs
# `examples_run_in_the_guest`): pmu-linux's `count` (the front door) and pmu-criterion's
# bench. With kernel.perf_user_access=1 the meter reads through perf's pages; with 0 and
# no module it falls back to read() and refuses to give a count; with 0 and the module's
# read-only grant it picks the direct backend. Each run prints `OUT <tag> …`,
# `STDERR <tag> …` and `RESULT example tag=<tag> status=<exit status>`.
ex_run() {
	tag=$1
	shift
	"$@" >"/tmp/$tag.out" 2>"/tmp/$tag.err"
	status=$?
	sed "s/^/OUT $tag /" "/tmp/$tag.out"
	sed "s/^/STDERR $tag /" "/tmp/$tag.err"
	result example tag=$tag status=$status
}

scenario_examples() {
	boot_line
	sysctl -w kernel.perf_user_access=1 >/dev/null
	ex_run count-1000 taskset -c 0 count 1000
	ex_run count-2000 taskset -c 0 count 2000
	ex_run count-1000-again taskset -c 0 count 1000
	CRITERION_HOME=/tmp/criterion ex_run bench taskset -c 0 pmu-criterion-bench --bench
	sysctl -w kernel.perf_user_access=0 >/dev/null
	ex_run count-no-access taskset -c 0 count 1000
	load granted
	ex_run count-granted-1000 taskset -c 0 count 1000
	ex_run count-granted-2000 taskset -c 0 count 2000
	unload granted
	finish
}

# `cargo xtask hazards` (xtask/src/reports/hazards.rs): pmu-guest hazard-stats on the perf
# backend (kernel.perf_user_access=1), on the direct backend under the module's read-only
# grant with its kernel-only sentinel (sentinel=1), and the direct backend programming a
# counter itself (el0_programming=1) for the preset overflow. `hazards_injections=` and
# `hazards_quiet=` on the kernel command line scale the run (default 1000 and 10 000).
hazard_stats() {
	tag=$1
	shift
	pmu-guest hazard-stats --injections "${hazards_injections:-1000}" "$@" 2>/tmp/hazards.err
	result hazards-run tag="$tag" status=$?
	sed "s/^/STDERR $tag /" /tmp/hazards.err
}

scenario_hazards() {
	boot_line
	sysctl -w kernel.perf_user_access=1 >/dev/null
	result sysctl perf_user_access=$(cat /proc/sys/kernel/perf_user_access)
	sed 's/^/INTERRUPTS /' /proc/interrupts
	hazard_stats perf --backend perf --quiet "${hazards_quiet:-10000}"
	load hazards-direct sentinel=1
	hazard_stats direct --backend direct --quiet "${hazards_quiet:-10000}"
	unload hazards-direct
	load hazards-programmed el0_programming=1
	hazard_stats direct-programmed --backend direct-programmed --only overflow --quiet 0
	unload hazards-programmed
	finish
}

# `pmu-guest sentinel-check` (tests/guest/src/sentinel_check.rs) under `taskset -c 0`,
# its line as a RESULT.
# usage: sentinel_run TAG PROGRAM ARGS…
sentinel_run() {
	tag=$1
	shift
	out=$(taskset -c 0 "$@" 2>"/tmp/$tag.err")
	status=$?
	sed "s/^/STDERR $tag /" "/tmp/$tag.err"
	result sentinel tag=$tag status=$status $out
}

# The perf backend's kernel-entry sentinel: getpid and first-touch regions (all must be
# flagged), quiet regions (each flag explained by /proc/interrupts or a switch), the
# user's counts with and without it, pmu-demo's Meter line; as a user at paranoid 2
# (off, with the reason, and the measurement still made); without user reads (off).
scenario_sentinel() {
	boot_line
	sysctl -w kernel.perf_user_access=1 >/dev/null
	result sentinel-env paranoid=$(cat /proc/sys/kernel/perf_event_paranoid) uid=$(id -u)
	sentinel_run getpid pmu-guest sentinel-check getpid 1000
	sentinel_run fault pmu-guest sentinel-check fault 1000
	sentinel_run quiet pmu-guest sentinel-check quiet 1000
	sentinel_run compare pmu-guest sentinel-check compare 100
	demo sentinel-meter 0 perf
	demo sentinel-meter-off 0 perf --no-kernel-sentinel
	sysctl -w kernel.perf_event_paranoid=2 >/dev/null
	sentinel_run user-paranoid2 pmu-guest sentinel-check getpid 100 as-nobody
	sentinel_run root-paranoid2 pmu-guest sentinel-check getpid 100
	sysctl -w kernel.perf_user_access=0 >/dev/null
	sentinel_run no-user-reads pmu-guest sentinel-check getpid 100
	finish
}

# The module next to the perf people run (issue 25): perf's own bookkeeping decides
# which counters are perf's; the module's counters never read frozen.
# 1. `perf stat -a -e cycles` (every level; perf puts it on PMCCNTR_EL0) held on both
#    CPUs while loading with the defaults: the load succeeds and logs what perf holds.
# 2. `perf stat -a -e cycles:u,instructions:u` held on CPU 1 (read every 1 ms from CPU 0)
#    across insmod, rmmod, insmod, CPU 1 offline and online, rmmod: no step near 2^31
#    (a counter reset under perf shows as one, drivers/perf/arm_pmu.c
#    `armpmu_event_update`).
# 3. A perf_user_access session on CPU 1 (pmu-demo's perf backend), then EL0 reads of
#    the module's counter there: counting (10000 instructions seen) or trapped (revoked,
#    SIGILL): never readable and still (perf's `armv8pmu_stop` clears PMCR_EL0.E when its
#    last event leaves a CPU).
perf_stat_start() {
	rm -f /tmp/perf-stat.open /tmp/perf-stat.stop /tmp/perf-stat.out
	taskset -c "$1" el0-probe perf-stat "$2" 100000 "$3" >/tmp/perf-stat.out 2>&1 &
	perf_stat_pid=$!
	while [ ! -e /tmp/perf-stat.open ] && kill -0 $perf_stat_pid 2>/dev/null; do sleep 0.01; done
}
perf_stat_stop() {
	touch /tmp/perf-stat.stop
	wait $perf_stat_pid
	result perf-stat tag=$1 status=$? $(cat /tmp/perf-stat.out)
}
scenario_coexist() {
	boot_line
	perf_stat_start 0 0,1 cycles
	load beside-perf-stat-a
	klog
	result layout text=$(tr ' ' ',' </sys/module/$NAME/parameters/layout 2>/dev/null)
	probe beside-perf-read-0 0 read 5
	probe beside-perf-read-1 1 read 5
	unload beside-perf-stat-a
	perf_stat_stop cycles-a
	klog

	perf_stat_start 0 1 cycles:u,instructions:u
	load across-1
	sleep 0.1
	unload across-1
	load across-2
	sleep 0.1
	echo 0 >/sys/devices/system/cpu/cpu1/online
	result offline cpu=1 online=$(cat /sys/devices/system/cpu/cpu1/online)
	sleep 0.1
	echo 1 >/sys/devices/system/cpu/cpu1/online
	sleep 0.1
	unload across-2
	perf_stat_stop user-across
	klog

	load rdpmc-session
	sysctl -w kernel.perf_user_access=1 >/dev/null
	taskset -c 1 pmu-demo measure --backend perf --cpu 1 --kernel loop --units 1000 \
		--events instructions --runs 20 --warmup 2 --json >/tmp/rdpmc.out 2>/tmp/rdpmc.err
	result demo tag=rdpmc-session cpu=1 backend=perf status=$?
	# Still perf_user_access=1: writing 0 would revoke every CPU's PMUSERENR_EL0
	# (armv8pmu_proc_user_access_handler), hiding what the session left behind: perf's
	# ER|CR for its task, and PMCR_EL0.E as its last event left it.
	probe after-rdpmc-1 1 read 5
	sysctl -w kernel.perf_user_access=0 >/dev/null
	echo 1 >/sys/module/$NAME/parameters/regrant
	result regrant rc=$?
	probe after-rdpmc-regrant-1 1 read 5
	unload rdpmc-session
	klog
	finish
}

main() {
	case "$scenario" in
	coexist) scenario_coexist ;;
	sentinel) scenario_sentinel ;;
	multiplex) scenario_multiplex ;;
	demo-msgs) scenario_demo_msgs ;;
	examples) scenario_examples ;;
	raspi) scenario_raspi ;;
	bench) scenario_bench ;;
	hazards) scenario_hazards ;;
	access) scenario_access ;;
	grant) scenario_grant ;;
	nopmu) scenario_nopmu ;;
	stress) scenario_stress ;;
	thread-leak) scenario_thread_leak ;;
	hybrid) scenario_hybrid ;;
	*)
		result error unknown_scenario=${scenario:-none}
		poweroff -f
		;;
	esac
}
