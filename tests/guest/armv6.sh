
# ---- armv6 scenarios: the ARM1176 Raspberry Pis in QEMU (`-M raspi0`, `-M raspi1ap`);
# tests/tests/raspi.rs asserts on them ----

# The CPU's identity, as the kernel and the MIDR (through /proc/cpuinfo) tell it.
cpu_line() {
	part=$(awk -F': ' '/^CPU part/ {print $2; exit}' /proc/cpuinfo)
	arch=$(awk -F': ' '/^CPU architecture/ {print $2; exit}' /proc/cpuinfo)
	model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo | tr ' ' '_')
	board=$(tr -d '\0' </proc/device-tree/model | tr ' ' '_')
	result cpu part=$part architecture=$arch model=$model board=$board
}

# The default load grants nothing (the ARM1176's only grant, SUNAVCR.V, programs too:
# refused, EOPNOTSUPP). With el0_programming=1: QEMU's ARM1176 has no working SUNAVCR
# (its c15 is a dummy that reads 0): the module writes SUNAVCR.V, reads it back, and must
# refuse to load (-EIO). pmu-demo's direct backend says "not enabled" before and after,
# and does not crash.
scenario_raspi() {
	boot_line
	cpu_line
	demo before 0 direct
	load default
	load programming el0_programming=1
	klog
	demo after 0 direct
	finish
}

main() {
	case "$scenario" in
	raspi) scenario_raspi ;;
	*)
		result error unknown_scenario=$scenario
		finish
		;;
	esac
}
