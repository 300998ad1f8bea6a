
# ---- x86_64 scenarios (tests/tests/kernel_x86_64.rs asserts on them) ----

POLICY=/sys/bus/event_source/devices/cpu/rdpmc

# Without perf's rdpmc policy (no x86 PMU driver under TCG) the module refuses to load
# (ENODEV) unless asked for CR4.PCE by name (cr4_pce_until_switch=1). With it, rdpmc from
# ring 3 faults with #GP (SIGSEGV, 139) before, #UD (SIGILL, 132: the PCE check passed,
# TCG has no counter) in the process that loaded the module, #GP again in the next process.
scenario_pce() {
	boot_line
	if [ -e $POLICY ]; then policy=present; else policy=absent; fi
	result policy file=$policy

	load default
	klog

	taskset -c 0 pce-probe
	result pce_probe mode=no-module status=$?
	taskset -c 0 pce-probe $MODULE cr4_pce_until_switch=1
	result pce_probe mode=same-process status=$? loaded=$(module_loaded)
	klog
	taskset -c 0 pce-probe
	result pce_probe mode=next-process status=$?
	unload pce
	klog
	taskset -c 0 pce-probe
	result pce_probe mode=unloaded status=$?
	finish
}

# file_sum FILE: its checksum, or "absent".
file_sum() {
	if [ -e "$1" ]; then md5sum "$1" | cut -d ' ' -f 1; else echo absent; fi
}

# rdpmc_policy= writes only perf's policy file: /sys/bus/event_source/devices/<pmu>/rdpmc
# on sysfs. Every other path is refused (EINVAL) and left as it was; a PMU without the
# file is ENOENT; a file of that name on another file system (a tmpfs over the directory)
# is refused too, given or found by default. The kernel log after each load, so that the
# test can tell whose line is whose.
scenario_policy_path() {
	boot_line
	mkdir -p /etc
	[ -e /etc/passwd ] || echo 'root:x:0:0:root:/root:/bin/sh' >/etc/passwd
	echo 1 >/tmp/rdpmc
	passwd_before=$(file_sum /etc/passwd)
	stand_in_before=$(file_sum /tmp/rdpmc)

	load passwd rdpmc_policy=/etc/passwd
	klog
	load stand-in rdpmc_policy=/tmp/rdpmc
	klog
	load traversal rdpmc_policy=/sys/bus/event_source/devices/cpu/../../../../../tmp/rdpmc
	klog
	load dotdot rdpmc_policy=/sys/bus/event_source/devices/../rdpmc
	klog
	load empty-pmu rdpmc_policy=/sys/bus/event_source/devices//rdpmc
	klog
	load not-rdpmc rdpmc_policy=/sys/bus/event_source/devices/software/type
	klog
	load no-file rdpmc_policy=/sys/bus/event_source/devices/software/rdpmc
	klog
	load both rdpmc_policy=/sys/bus/event_source/devices/cpu/rdpmc cr4_pce_until_switch=1
	klog

	# A tmpfs over the PMU directory: the right path, the wrong file system.
	mount -t tmpfs tmpfs /sys/bus/event_source/devices
	mkdir /sys/bus/event_source/devices/cpu
	echo 1 >/sys/bus/event_source/devices/cpu/rdpmc
	load fake-default
	klog
	load fake-given rdpmc_policy=/sys/bus/event_source/devices/cpu/rdpmc
	klog
	load fake-cr4 cr4_pce_until_switch=1
	klog
	result policy_file when=fake value=$(cat /sys/bus/event_source/devices/cpu/rdpmc)
	umount /sys/bus/event_source/devices
	klog

	result files passwd_same=$([ "$(file_sum /etc/passwd)" = "$passwd_before" ] && echo 1 || echo 0) \
		stand_in_same=$([ "$(file_sum /tmp/rdpmc)" = "$stand_in_before" ] && echo 1 || echo 0) \
		stand_in=$(cat /tmp/rdpmc) loaded=$(module_loaded)
	finish
}

# 50 load/unload cycles on 4 CPUs and loading twice.
scenario_stress() {
	boot_line
	stress_cycles 50 cr4_pce_until_switch=1
	finish
}

main() {
	case "$scenario" in
	pce) scenario_pce ;;
	policy_path) scenario_policy_path ;;
	stress) scenario_stress ;;
	*)
		result error unknown_scenario=${scenario:-none}
		poweroff -f
		;;
	esac
}
