
# ---- ARMv6 (ARM1176 under QEMU -M raspi1ap) scenario of the stock-kernel module ----
# (xtask/src/stock_module.rs `armv6_qemu` asserts on it.) QEMU's ARM1176 model has a dummy
# c15 that reads 0 at PL1 (shared/notes/qemu-facts.md), so SUNAVCR.V cannot stick there:
# the module must refuse with EIO, name the value it read back, and stay unloaded.
scenario_stock_refused() {
	boot_line
	result cpu part=$(sed -n 's/^CPU part[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	load default
	klog
	finish
}

main() {
	case "$scenario" in
	stock-refused) scenario_stock_refused ;;
	*)
		result error unknown_scenario=${scenario:-none}
		poweroff -f
		;;
	esac
}
