
# ---- Debian 12's own arm64 kernels (linux-image-arm64: 6.1, linux-image-6.12-arm64),
# booted from Debian's packages; tests/tests/debian_arm64.rs asserts on these lines. The
# initramfs holds the stock module built against each kernel's own headers
# (/lib/modules/kmod_enable_user-<uname -r>.ko), Debian's perf (linux-perf:arm64, with
# its shared libraries), pmu-demo, el0-probe and debian-block (tests/guest/*.rs) ----

MODULE=/lib/modules/kmod_enable_user-$(uname -r).ko
# The scenarios below `scenario_thread` test the CPU-wide grant: `load` passes
# MODE=cpu_wide=1 (common.sh); scenario_thread loads the per-thread default.
export PATH=/bin:/usr/bin
export LD_LIBRARY_PATH=/lib/aarch64-linux-gnu
# perf writes its own files nowhere else.
export HOME=/tmp

# Debian's perf and this kernel: versions and the PMU perf sees.
perf_line() {
	v=$(perf --version 2>&1 | head -n 1 | tr ' ' '_')
	pmus=$(ls /sys/bus/event_source/devices | grep -c -E '^armv8_')
	result perf version=$v pmus=$pmus paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
}

# perf stat -e instructions:u of `debian-block ITER [fork]` (the whole program, user
# space; with `fork` its child too): usage: perf_block TAG ITER [fork]
perf_block() {
	perf stat -x, -e instructions:u -o /tmp/perf.csv debian-block "$2" $3 2>/tmp/perf.err
	status=$?
	# -x, fields: count,unit,event,time running,percentage running,…: a count perf
	# scaled (running below 100%) is an estimate, not a count.
	count=$(awk -F, '$3 ~ /^instructions:u/ {print $1; exit}' /tmp/perf.csv)
	running=$(awk -F, '$3 ~ /^instructions:u/ {print $5; exit}' /tmp/perf.csv)
	sed "s/^/STDERR $1 /" /tmp/perf.err
	result perf-block tag=$1 iterations=$2 status=$status count=${count:-none} running=${running:-none}
}

# pmu-demo stat of a command, as `JSON <tag> …`, `STDERR <tag> …` and `RESULT demo
# tag=<tag> status=<exit status>`, in the environment perf gives the commands it runs
# (/tmp/perf.env: perf sets PATH, PREFIX, PERF_BUILDID_DIR, …, tools/perf/perf.c and
# tools/lib/subcmd/exec-cmd.c; the C library's start-up walks the environment, and its
# size moves the stack, so the same program retires a few more or fewer instructions
# in another one): usage: demo_stat TAG PMU-DEMO-STAT-ARGS… -- CMD…
demo_stat() {
	tag=$1
	shift
	rm -f /tmp/stat.json
	if [ -s /tmp/perf.env ]; then
		env -i $(cat /tmp/perf.env) pmu-demo stat --json -o /tmp/stat.json "$@" 2>/tmp/stat.err
	else
		pmu-demo stat --json -o /tmp/stat.json "$@" 2>/tmp/stat.err
	fi
	status=$?
	echo "JSON $tag $(tr -d '\n' </tmp/stat.json 2>/dev/null)"
	sed "s/^/STDERR $tag /" /tmp/stat.err
	result demo tag=$tag status=$status
}

# debian-block ITER COUNTER without perf: the direct read around the same block.
# usage: direct_block TAG ITER COUNTER
direct_block() {
	out=$(taskset -c 0 debian-block "$2" "$3" 2>/dev/null)
	status=$?
	result direct-block tag=$1 iterations=$2 counter=$3 status=$status $out
}

# el0-probe on CPU $2 (tests/guest/el0_probe.rs): usage: probe TAG CPU MODE [N]
probe() {
	tag=$1
	cpu=$2
	shift 2
	out=$(taskset -c "$cpu" el0-probe "$@" 2>/dev/null)
	status=$?
	result probe tag=$tag cpu=$cpu mode=$1 status=$status $out
}

# Entries of the PSCI power-down idle state on every CPU (the boot's device tree has
# one: tests/src/lib.rs `arm64_idle_dtb`). QEMU's CPU_SUSPEND returns instead of
# powering down, so cpuidle counts them as `rejected`; cpu_pm_enter() and cpu_pm_exit()
# ran around each all the same (and arm_pmu's CPU_PM_EXIT handler reset the PMU).
idle_usage() {
	cat /sys/devices/system/cpu/cpu*/cpuidle/state1/usage \
		/sys/devices/system/cpu/cpu*/cpuidle/state1/rejected 2>/dev/null | awk '{n += $1} END {print n + 0}'
}

# `perf stat -a -e cycles:u,instructions:u -I 100` (what an administrator runs) started
# before the module is loaded and stopped after it is unloaded; meanwhile: idle, insmod,
# a direct read, CPU 1 offline and online, idle, rmmod, idle. Every interval line goes
# to the console as a PERFSTAT line.
perf_wide() {
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
	idle_before=$(idle_usage)
	sleep 0.5
	load wide
	klog
	layout=$(tr ' ' ',' </sys/module/$NAME/parameters/layout 2>/dev/null)
	result wide-layout text=${layout:-none}
	sleep 0.3
	demo wide-cpu0 0 direct
	echo 0 >/sys/devices/system/cpu/cpu1/online
	off=$?
	sleep 0.3
	echo 1 >/sys/devices/system/cpu/cpu1/online
	result wide-hotplug cpu=1 offline_rc=$off online_rc=$? online=$(cat /sys/devices/system/cpu/cpu1/online)
	sleep 0.5
	unload wide
	klog
	sleep 0.5
	result wide-idle driver=$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null) entries=$(($(idle_usage) - idle_before))
	kill -INT $perf_pid
	wait $perf_pid
	result wide-perf status=$? intervals=$(grep -c -E '^ *[0-9]+\.[0-9]+,' /tmp/wide.csv)
	sed 's/^/PERFSTAT /' /tmp/wide.csv
	sed 's/^/STDERR wide-perf /' /tmp/wide.err
}

# perf's group of six r08:u events ({...}: validated against the PMU's counter mask as
# one, drivers/perf/arm_pmu.c validate_group) around `debian-block 10000`: six counted
# lines with the whole counter mask, none once the module took two counters out of it.
group6() {
	perf stat -x, -e '{r08:u,r08:u,r08:u,r08:u,r08:u,r08:u}' -o /tmp/group6.csv \
		debian-block 10000 >/dev/null 2>/tmp/group6.err
	st=$?
	result group6 tag=$1 status=$st counted=$(grep -c -E '^[0-9]+,' /tmp/group6.csv)
	sed "s/^/GROUP6 $1 /" /tmp/group6.csv
}

# Waits (at most 30 s) until the file $1 is not empty: perf has opened its events once
# it wrote its first interval, a command once it wrote its marker.
wait_for() {
	n=0
	while [ ! -s "$1" ] && [ $n -lt 600 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	echo $n
}

# What the module may take from perf (kmod_enable_user_owners.c): it takes nothing perf
# handed out or promised, refuses before it changes anything, and gives back what it
# took (the counter mask: group6). Each step's perf output goes to the console.
owners() {
	group6 before
	# A task-bound perf stat with six pinned :u events (as many r08 as perf places:
	# the six event counters; PMCCNTR_EL0 counts only cycles) of a command: its events
	# hold counters only while the command runs. The command stops itself (SIGSTOP)
	# for the load, so its events are on no counter and in no used_mask (a running one
	# would be refused through used_mask, the previous check): the load refuses from
	# perf's contexts alone. Then it runs to the end: all six count throughout.
	rm -f /tmp/pinned.go /tmp/pinned.stop
	perf stat -x, -e r08:uD,r08:uD,r08:uD,r08:uD,r08:uD,r08:uD -o /tmp/pinned.csv -- \
		sh -c 'echo $$ >/tmp/pinned.go; kill -STOP $$; while [ ! -e /tmp/pinned.stop ]; do :; done' \
		2>/tmp/pinned.err &
	pinned=$!
	waited=$(wait_for /tmp/pinned.go)
	target=$(cat /tmp/pinned.go)
	n=0
	while ! grep -q '^State:.*T' /proc/$target/status 2>/dev/null && [ $n -lt 200 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	result pinned-started waited=$waited stopped=$(grep -c '^State:.*T' /proc/$target/status)
	load pinned
	klog
	kill -CONT $target
	sleep 0.3
	touch /tmp/pinned.stop
	wait $pinned
	result pinned-perf status=$? counted=$(grep -c -E '^[0-9]+,' /tmp/pinned.csv)
	sed 's/^/PINNED /' /tmp/pinned.csv
	sed 's/^/STDERR pinned /' /tmp/pinned.err
	group6 after-refused

	# perf stat -a with six r08:u events on the six event counters, the layout's among
	# them: the load refuses before it changes anything.
	rm -f /tmp/held.csv
	perf stat -a -x, -e r08:u,r08:u,r08:u,r08:u,r08:u,r08:u -I 100 -o /tmp/held.csv 2>/tmp/held.err &
	held=$!
	result held-started waited=$(wait_for /tmp/held.csv)
	load held
	klog
	kill -INT $held
	wait $held
	result held-perf status=$? intervals=$(grep -c -E '^ *[0-9]+\.[0-9]+,' /tmp/held.csv)
	sed 's/^/HELD /' /tmp/held.csv

	# Counter pressure beside the module: the same perf stat -a after the load gets the
	# counters left (six events multiplexed on them: scaled counts, no jump); `regrant`
	# meanwhile logs perf's used_mask on both CPUs (never a layout counter); once perf is
	# done the module's counts are exact again.
	load pressure
	klog
	rm -f /tmp/pressure.csv
	perf stat -a -x, -e r08:u,r08:u,r08:u,r08:u,r08:u,r08:u -I 100 -o /tmp/pressure.csv 2>/tmp/pressure.err &
	pressure=$!
	result pressure-started waited=$(wait_for /tmp/pressure.csv)
	sleep 0.5
	echo 1 >/sys/module/$NAME/parameters/regrant
	result pressure-regrant rc=$?
	klog
	sleep 0.5
	kill -INT $pressure
	wait $pressure
	result pressure-perf status=$? intervals=$(grep -c -E '^ *[0-9]+\.[0-9]+,' /tmp/pressure.csv)
	sed 's/^/PRESSURE /' /tmp/pressure.csv
	echo 1 >/sys/module/$NAME/parameters/regrant
	demo pressure-after-cpu0 0 direct
	group6 loaded
	unload pressure
	klog
	group6 after-unload

	# Keeper eviction: a pinned CPU-wide group opened before the load but enabled after
	# it (perf stat -D: disabled for 1.5 s) is older than the keeper, so when perf
	# enables it it is scheduled first and takes the four counters left (core.c
	# merge_sched_in: the keeper no longer fits, ERROR). The load needs take_from_perf=1
	# (those events wait). `regrant` then finds no room for the keeper and withdraws the
	# grant instead of giving it over a PMU perf will stop; after perf, the CPUs' idle
	# exits count failures and reads say "not enabled"; `regrant` puts the keeper back
	# and the counts are exact again.
	rm -f /tmp/evict.err
	perf stat -a -D 1500 -x, -e r08:uD,r08:uD,r08:uD,r08:uD -o /tmp/evict.csv -- sleep 4 2>/tmp/evict.err &
	evict=$!
	result evict-started waited=$(wait_for /tmp/evict.err)
	load evict take_from_perf=1
	klog
	n=0
	while ! grep -q 'Events enabled' /tmp/evict.err && [ $n -lt 200 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	sleep 0.3
	echo 1 >/sys/module/$NAME/parameters/regrant 2>/dev/null
	result evict-regrant rc=$? enabled_waited=$n
	klog
	wait $evict
	result evict-perf status=$?
	sed 's/^/EVICT /' /tmp/evict.csv
	before=$(cut -d' ' -f2 /sys/module/$NAME/parameters/cpu_pm_regrants)
	sleep 1
	result evict-idle failures_before=$before failures_after=$(cut -d' ' -f2 /sys/module/$NAME/parameters/cpu_pm_regrants)
	demo evict-after-cpu0 0 direct
	echo 1 >/sys/module/$NAME/parameters/regrant
	result evict-regrant-after rc=$?
	demo evict-back-cpu0 0 direct
	unload evict
	klog

	# cpus=0: CPU 1 gets neither a grant nor a keeper.
	load cpus cpus=0
	klog
	demo cpus-cpu0 0 direct
	demo cpus-cpu1 1 direct
	unload cpus
	klog
}

# pmu-linux under the module's default, per-thread grant (kmod_enable_user_uapi.h):
# pmu-demo's direct measurement is exact and says which grant it got; a thread without
# the grant is flagged, not killed (pmu-guest library-grant); then beside `perf record -a
# -F 1000`, whose overflow interrupts clear PMUSERENR_EL0 (drivers/perf/arm_pmuv3.c
# armv8pmu_start), a loop of direct measurements on CPU 0: none killed, each exact or
# refused with its reason, the re-grants counted.
# perf records for 30 s of virtual time beside at most THREAD_LIB_MEASURE measurements:
# under -icount shift=0 a busy vCPU's virtual time advances 1 ns per instruction, so
# measuring back to back for all 30 s would be thousands of `pmu-demo measure` runs
# (each a process start-up and 14 regions): minutes of TCG and megabytes of console.
# perf's remaining seconds pass idle (sleep=off: virtual time jumps).
# Each region is THREAD_LIB_UNITS iterations of the two-instruction loop: 0.2 ms of
# virtual time beside perf's overflow every millisecond or so of a busy CPU, so about
# one region in three sees its grant taken and re-granted (with 1000 iterations, 2 us,
# the whole run counted 0 to 3 re-grants and the test failed one time in three).
# Measured on Debian 12's 6.1 with 150 measurements (88 ms of the host's time each): 147
# held a re-granted run, 265 re-grants in 750 runs. With 30 the test's "re-grants > 0"
# fails only if 30 in a row have none: a chance below 10^-20.
THREAD_LIB_RECORD_S=30
THREAD_LIB_MEASURE=30
THREAD_LIB_UNITS=100000
thread_grant_lib() {
	# The module's own default (per-thread), not the scenarios' MODE (common.sh).
	mode=$MODE
	MODE=
	load thread-lib
	MODE=$mode
	cpu_wide=$(cat /sys/module/$NAME/parameters/cpu_wide 2>/dev/null || echo none)
	dev=0
	[ -c /dev/kmod_enable_user ] && dev=1
	result thread-lib-mode cpu_wide=$cpu_wide device=$dev
	demo thread-lib-cpu0 0 direct
	demo_list thread-lib-list 0
	# pmu-demo stat --backend direct counts another process: under counters that
	# follow the demo's thread it refuses instead of printing the demo's own count.
	demo_stat stat-thread-follow --backend direct --cpu 0 -e instructions -- debian-block 10000
	pmu-guest library-grant --cpu 0 --iterations 1000 2>/tmp/library-grant.err
	result library-grant-exit status=$?
	sed 's/^/STDERR library-grant /' /tmp/library-grant.err
	rm -f /tmp/perf.data
	perf record -a -F 1000 -o /tmp/perf.data -- sleep $THREAD_LIB_RECORD_S >/tmp/record.log 2>&1 &
	rec=$!
	waited=$(wait_for /tmp/perf.data)
	i=0
	DEMO_UNITS=$THREAD_LIB_UNITS
	while kill -0 $rec 2>/dev/null && [ $i -lt $THREAD_LIB_MEASURE ]; do
		demo under-record-$i 0 direct
		i=$((i + 1))
	done
	DEMO_UNITS=
	wait $rec
	rc=$?
	result record status=$rc waited=$waited measured=$i
	sed 's/^/STDERR record /' /tmp/record.log
	klog
	unload thread-lib
	klog
}

# On one Debian kernel, -cpu max -smp 2: the module's default load and exact counts;
# Debian's perf and the direct read agree on the same block to the instruction; perf
# stat -a across insmod, CPU offline/online, idle and rmmod shows no jump; after a
# perf_user_access session the direct reads either count or say why, never a clean 0.
scenario_debian() {
	boot_line
	perf_line

	probe before-read 0 read 5
	demo_list list-before 0
	load default
	klog
	# The default grant is read-only: a PMCR_EL0 write traps.
	probe default-write-pmcr 0 write-pmcr
	result layout text=$(tr ' ' ',' </sys/module/$NAME/parameters/layout)
	inst=$(layout_counter 0x8)
	demo default-cpu0 0 direct
	demo default-cpu1 1 direct
	# On CPU 1: listing opens perf's hardware events, which revokes the grant on the CPU
	# it runs on (until that CPU's next idle exit or hotplug), and CPU 0's grant is
	# still needed below.
	demo_list list-default 1
	# The same block counted two ways: directly (module loaded, no perf event on the
	# CPU) and by Debian's perf (the module's counters untouched by it: perf allocates
	# from counter 0 upwards).
	# Without address-space randomization: where the stack starts changes a few
	# alignment-dependent instructions of the program's start-up from one run to the
	# next (measured here: 27575 or 27579 for the same run of debian-block), never the
	# block itself; perf counts the whole program.
	# CPU 1 offline meanwhile: under icount QEMU's INST_RETIRED is the global
	# instruction count of all vCPUs (docs/qemu.md), so whatever CPU 1 executed while
	# the program ran at EL0 on CPU 0 was counted too (measured once on 6.12: 52946
	# instead of 47581 for the same run).
	aslr=$(cat /proc/sys/kernel/randomize_va_space)
	echo 0 >/proc/sys/kernel/randomize_va_space
	echo 0 >/sys/devices/system/cpu/cpu1/online
	off=$?
	result block-cpus offline_rc=$off online=$(cat /sys/devices/system/cpu/online)
	for iter in 10000 20000; do
		direct_block direct-$iter $iter "${inst:-0}"
	done
	# pmu-demo stat --backend direct: CPU 0's counters around the block (before perf
	# opens hardware events on CPU 0, which takes the grant away there), the README's
	# "count your own program" line under the module's default grant.
	demo_stat stat-direct --backend direct --cpu 0 -e instructions,cycles -- debian-block 10000
	for iter in 10000 20000; do
		perf_block perf-$iter-a $iter
		perf_block perf-$iter-b $iter
	done
	# The same program counted by pmu-demo stat (perf backend, inherited events), with
	# a child in the fork form, against Debian's perf stat; the command's exit status
	# passes through.
	perf stat -x, -o /dev/null -e instructions:u env >/tmp/perf.env 2>/dev/null
	result perf-env vars=$(wc -l </tmp/perf.env)
	perf_block perf-fork-a 10000 fork
	perf_block perf-fork-b 10000 fork
	perf_block perf-threads-a 10000 threads
	perf_block perf-threads-b 10000 threads
	for iter in 10000 20000; do
		demo_stat stat-$iter -e instructions:u -- debian-block $iter
	done
	demo_stat stat-fork -e instructions:u -- debian-block 10000 fork
	demo_stat stat-threads -e instructions:u -- debian-block 10000 threads
	demo_stat stat-repeat -e instructions:u,cycles:u --repeat 2 -- debian-block 10000 fork
	demo_stat stat-exit3 -e instructions:u -- sh -c 'exit 3'
	demo_stat stat-killed -e instructions:u -- sh -c 'kill -9 $$'
	demo_stat stat-missing -e instructions:u -- /nonexistent/command
	echo 1 >/sys/devices/system/cpu/cpu1/online
	result block-cpus-after online_rc=$? online=$(cat /sys/devices/system/cpu/online)
	echo "$aslr" >/proc/sys/kernel/randomize_va_space
	klog
	# After perf's task-bound sessions on this CPU: the direct read counts or traps.
	probe after-perf-stat-read 0 read "${inst:-0}"
	unload default
	klog

	perf_wide
	owners

	# A perf session with user-readable events (kernel.perf_user_access=1: pmu-demo's
	# perf backend reads its counters with one instruction), then the module's direct
	# reads on the same CPU.
	load pua
	klog
	inst=$(layout_counter 0x8)
	sysctl -w kernel.perf_user_access=1 >/dev/null
	demo pua-session 0 perf
	# Still with perf_user_access=1, as the session left it: perf's last event left
	# CPU 0 (armpmu_disable -> armv8pmu_stop clears PMCR_EL0.E, drivers/perf/arm_pmu.c
	# and arm_pmuv3.c), and PMUSERENR_EL0 may still hold the ER|CR perf gave the session.
	demo pua-after-cpu0 0 direct
	probe pua-after-read 0 read "${inst:-0}"
	sysctl -w kernel.perf_user_access=0 >/dev/null
	klog
	unload pua
	klog
	thread_grant_lib
	finish
}

# Booted at EL2 (-M virt,virtualization=on -cpu max: Linux runs with VHE): the module's
# kernel-entry sentinel (sentinel=1) filters U|P|NSH there; its counts and the
# direct backend's exact counts as at EL1.
scenario_vhe() {
	vhe=$(dmesg | grep -c 'Virtualization Host Extensions')
	el2=$(dmesg | grep -c 'started at EL2')
	boot_line
	result el2 vhe_lines=$vhe el2_lines=$el2
	# KVM may run guests here: refused unless kvm_hosts=1, which logs what guests get.
	load kvm-refused sentinel=1
	klog
	load sentinel sentinel=1 kvm_hosts=1
	klog
	result sentinel-layout text=$(tr ' ' ',' </sys/module/$NAME/parameters/layout)
	sentinel=$(layout_counter 0x8:k)
	irqs_before=$(awk -v col=2 'NR > 1 && $col ~ /^[0-9]+$/ { s += $col } END { print s + 0 }' /proc/interrupts)
	probe sentinel 0 kernel-entry "${sentinel:-0}" 1000
	irqs_after=$(awk -v col=2 'NR > 1 && $col ~ /^[0-9]+$/ { s += $col } END { print s + 0 }' /proc/interrupts)
	result sentinel-interrupts cpu=0 delta=$((irqs_after - irqs_before))
	demo vhe-cpu0 0 direct
	demo vhe-cpu1 1 direct
	unload sentinel
	klog
	kvm_guest
	finish
}

# A KVM guest with KVM's vPMU (kvm-pmu, tests/guest/kvm_pmu.rs, on CPU 1) before the
# module, across its default load (refused: KVM may run guests) and its opt-in load
# (kvm_hosts=1) while a VM runs, then a VM created with the module loaded and kept
# running across rmmod. A kept VM runs its guest once a second; each of its lines
# carries the phase written to /tmp/kvm-phase before it.
KVM_ITER=1000
kvm_phase() {
	echo "$1" >/tmp/kvm-phase
	# Two runs of a kept VM in this phase at least.
	sleep 3
}
# usage: kvm_kept_end PID LOG TAG: stops a kept VM and prints its lines.
kvm_kept_end() {
	kill "$1"
	wait "$1"
	result kvm-kept tag=$3 status=$? lines=$(grep -c . "$2")
	cat "$2"
}
kvm_guest() {
	rm -f /tmp/kvm-phase
	result kvm dev_kvm=$(test -c /dev/kvm && echo 1 || echo 0)
	taskset -c 1 kvm-pmu fresh-before $KVM_ITER 1
	taskset -c 1 kvm-pmu kept $KVM_ITER 0 >/tmp/kvm-kept.log 2>&1 &
	kept=$!
	kvm_phase before
	load kvm-default
	klog
	kvm_phase default-refused
	load kvm-opt-in-busy kvm_hosts=1
	klog
	kvm_phase opt-in-refused
	kvm_kept_end "$kept" /tmp/kvm-kept.log kept
	load kvm-opt-in kvm_hosts=1
	klog
	echo loaded >/tmp/kvm-phase
	taskset -c 1 kvm-pmu fresh-loaded $KVM_ITER 1
	taskset -c 1 kvm-pmu kept-loaded $KVM_ITER 0 >/tmp/kvm-kept2.log 2>&1 &
	kept=$!
	kvm_phase loaded
	unload kvm-opt-in
	klog
	kvm_phase unloaded
	kvm_kept_end "$kept" /tmp/kvm-kept2.log kept-loaded
	taskset -c 1 kvm-pmu fresh-after $KVM_ITER 1
	klog
}

# At EL2 (VHE, or nVHE with kvm-arm.mode=nvhe: the kernel at EL1, KVM's hypervisor at
# EL2): the KVM guest's counters across the module.
scenario_kvm() {
	el2=$(dmesg | grep -c 'started at EL2')
	nvhe=$(dmesg | grep -c 'Hyp mode initialized successfully')
	vhe=$(dmesg | grep -c 'VHE mode initialized successfully')
	boot_line
	result el2 el2_lines=$el2 nvhe_kvm_lines=$nvhe vhe_kvm_lines=$vhe
	kvm_guest
	finish
}

# CPU 1 off (1) or on (0) for the exact counts: under icount QEMU's INST_RETIRED is the
# count of every vCPU (docs/qemu.md). usage: cpu1 0|1
cpu1() {
	echo "$1" >/sys/devices/system/cpu/cpu1/online
	result cpu1 want=$1 rc=$? online=$(cat /sys/devices/system/cpu/online)
}

# perf stat -e instructions:k,context-switches of `thread-grant bench` on CPU 0 (CPU 1
# off): the kernel's instructions per switch of a two-thread ping-pong, both threads
# granted or neither (the device opened either way). The figure is bimodal from run to
# run, about 150 per switch apart in both configurations (6.1 and 6.12: the whole run
# lands on one path of the scheduler's or the other), so each configuration runs
# THREAD_BENCH_RUNS times and its minimum is its figure; the spread is printed.
# usage: thread_bench TAG granted|plain [RUNS]
THREAD_BENCH_RUNS=3
thread_bench() {
	n=${3:-$THREAD_BENCH_RUNS}
	runs=
	r=0
	while [ $r -lt "$n" ]; do
		perf stat -x, -e instructions:k,context-switches -o /tmp/bench.csv \
			thread-grant bench "$inst" 100 8000 "$2" >/tmp/bench.out 2>/tmp/bench.err
		status=$?
		k=$(awk -F, '$3 ~ /^instructions:k/ {print $1; exit}' /tmp/bench.csv)
		sw=$(awk -F, '$3 ~ /^context-switches/ {print $1; exit}' /tmp/bench.csv)
		sed "s/^/STDERR $1 /" /tmp/bench.err
		cat /tmp/bench.out
		per=$(awk -v k="$k" -v sw="$sw" 'BEGIN { if (sw > 0) printf "%.1f", k / sw; else print "none" }')
		result thread-bench tag=$1 run=$r status=$status instructions_k=${k:-none} switches=${sw:-none} per_switch=$per
		runs="$runs $per"
		r=$((r + 1))
	done
	min=$(echo $runs | tr ' ' '\n' | awk '$1 != "none" && (m == "" || $1 < m) { m = $1 } END { print (m == "" ? "none" : m) }')
	max=$(echo $runs | tr ' ' '\n' | awk '$1 != "none" && (m == "" || $1 > m) { m = $1 } END { print (m == "" ? "none" : m) }')
	result thread-bench-min tag=$1 runs=$n min=$min max=$max
	eval "bench_$(echo "$1" | tr '-' '_')=$min"
}

# The per-thread grant, the default on a kernel with preempt notifiers (Debian's arm64
# kernels, through KVM): who may open the device; a granted thread's exact reads, the
# traps of everybody else; bad input; two granted threads on one CPU and a migration;
# REGRANT after perf; the cost per context switch; 1000 grants; rmmod with a file open.
scenario_thread() {
	boot_line
	perf_line
	load_default_mode thread group=1000
	klog
	inst=$(layout_counter 0x8)
	result thread-device mode=$(stat -c %a /dev/kmod_enable_user 2>/dev/null || echo none)
	thread-grant access 1000
	cpu1 0
	thread-grant exact "$inst" 10000
	thread-grant exact "$inst" 20000
	thread-grant pingpong "$inst" 1000 200
	# A first run without a grant (the first perf stat of a boot counts more, measured:
	# about 150 per switch on 6.1): printed as the spread, not compared.
	thread_bench warm-up plain 1
	thread_bench follow-plain plain
	thread_bench follow-granted granted
	cpu1 1
	thread-grant trap "$inst"
	thread-grant bad "$inst"
	thread-grant migrate "$inst" 1000 4
	thread-grant regrant "$inst"
	slab_before=$(awk '$1 == "kmalloc-512" {print $2}' /proc/slabinfo 2>/dev/null)
	thread-grant cycles 1000
	slab_after=$(awk '$1 == "kmalloc-512" {print $2}' /proc/slabinfo 2>/dev/null)
	result thread-slab cache=kmalloc-512 active_before=${slab_before:-none} active_after=${slab_after:-none}
	# The grant's end without its thread's close: a dead thread's file closed by
	# another, a live one's closed under it, a process that exits granted.
	thread-grant exits "$inst"
	unload thread
	klog
	load_default_mode nofollow follow=0
	klog
	cpu1 0
	thread-grant pingpong "$inst" 1000 200
	thread_bench nofollow-plain plain
	thread_bench nofollow-granted granted
	cpu1 1
	unload nofollow
	# What a granted thread adds to each switch (kernel instructions, exact under icount).
	result thread-switch-cost warm_up=$bench_warm_up plain=$bench_follow_plain granted_follow=$bench_follow_granted plain_nofollow_load=$bench_nofollow_plain granted_nofollow=$bench_nofollow_granted \
		added_follow=$(awk -v a="$bench_follow_granted" -v b="$bench_follow_plain" 'BEGIN { printf "%.1f", a - b }') \
		added_nofollow=$(awk -v a="$bench_nofollow_granted" -v b="$bench_nofollow_plain" 'BEGIN { printf "%.1f", a - b }')
	load_default_mode rmmod
	thread-grant rmmod "$inst"
	result thread-unloaded loaded=$(module_loaded) states=$(hotplug_states)
	klog
	finish
}

main() {
	case "$scenario" in
	debian) scenario_debian ;;
	thread) scenario_thread ;;
	vhe) scenario_vhe ;;
	kvm) scenario_kvm ;;
	*)
		result error unknown_scenario=${scenario:-none}
		finish
		;;
	esac
}
