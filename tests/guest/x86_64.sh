
# ---- x86_64 scenarios (tests/tests/kernel_x86_64.rs asserts on them) ----

POLICY=/sys/bus/event_source/devices/cpu/rdpmc

# CR4.PCE without perf's rdpmc policy (no x86 PMU driver under TCG): rdpmc from ring 3
# faults with #GP (SIGSEGV, 139) before, #UD (SIGILL, 132: the PCE check passed, TCG has
# no counter) in the process that loaded the module, #GP again in the next process.
# Then the policy-file path, on a stand-in file.
scenario_pce() {
	boot_line
	if [ -e $POLICY ]; then policy=present; else policy=absent; fi
	result policy file=$policy

	taskset -c 0 pce-probe
	result pce_probe mode=no-module status=$?
	taskset -c 0 pce-probe $MODULE
	result pce_probe mode=same-process status=$? loaded=$(module_loaded)
	klog
	taskset -c 0 pce-probe
	result pce_probe mode=next-process status=$?
	unload pce
	klog
	taskset -c 0 pce-probe
	result pce_probe mode=unloaded status=$?

	echo 1 >/tmp/rdpmc
	load policy rdpmc_policy=/tmp/rdpmc
	result policy_file when=loaded value=$(cat /tmp/rdpmc)
	klog
	unload policy
	result policy_file when=unloaded value=$(cat /tmp/rdpmc)
	klog
	finish
}

# 50 load/unload cycles on 4 CPUs and loading twice.
scenario_stress() {
	boot_line
	stress_cycles 50
	finish
}

main() {
	case "$scenario" in
	pce) scenario_pce ;;
	stress) scenario_stress ;;
	*)
		result error unknown_scenario=${scenario:-none}
		poweroff -f
		;;
	esac
}
