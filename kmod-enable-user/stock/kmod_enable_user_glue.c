// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * kmod_enable_user, stock-kernel flavour: what module loading needs, in C, around the
 * register logic in Rust (rust/src/lib.rs over pmu-armv8 / pmu-armv6), for kernels
 * built without CONFIG_RUST (every distribution kernel; 32-bit ARM has no kernel Rust
 * at all in Linux 6.12).
 *
 * - arm64: the same behaviour, parameters and log lines as the Rust-for-Linux module
 *   (../kmod_enable_user.rs): on every online CPU, and on every CPU that comes online
 *   later (a CPU-hotplug state), zero the counters EL0 is about to read and set
 *   PMUSERENR_EL0 to `user_access` (default EN|CR|ER); `cycle_counter=1` also starts
 *   the cycle counter for EL0. Each CPU's previous state is restored when it goes
 *   offline and on unload. -ENODEV without PMUv3, -EINVAL for a bad `user_access`.
 * - 32-bit ARM: ARM1176 only (Raspberry Pi 1 / Zero): set SUNAVCR.V (seed 004), read it
 *   back, refuse with -EIO when it did not stick (QEMU's ARM1176 c15 is a dummy that
 *   reads 0), write the previous value back on unload. -ENODEV on any other core.
 *
 * Security: once loaded, any process can read the counters, a timing side channel.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/preempt.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/smp.h>

#ifdef CONFIG_ARM
#include <asm/cputype.h>
#endif

#include "kmod_enable_user_stock.h"

MODULE_LICENSE("Dual MIT/GPL");
MODULE_AUTHOR("PMU workspace contributors");

void __noreturn kmod_enable_user_rust_panic(void)
{
	panic(KBUILD_MODNAME ": panic in the Rust object\n");
}

#if defined(CONFIG_ARM64)

MODULE_DESCRIPTION("Lets user space read the PMU counters directly (arm64: PMUSERENR_EL0); stock-kernel flavour: C glue + Rust object");

static unsigned int user_access = 13;	/* EN | CR | ER */
module_param(user_access, uint, 0444);
MODULE_PARM_DESC(user_access, "PMUSERENR_EL0 bits to set on every CPU: EN=1 (all), SW=2 (software increment), CR=4 (cycle counter), ER=8 (event counters); default 13 = EN|CR|ER");

static bool cycle_counter;
module_param(cycle_counter, bool, 0444);
MODULE_PARM_DESC(cycle_counter, "Also start the cycle counter for EL0 (PMCR_EL0.E and LC, PMCNTENSET_EL0.C, PMCCFILTR_EL0 = EL0 only); default 0");

/* PMCNTENSET_EL0.C, the cycle counter's enable bit (for the log). */
#define CNTEN_C (1ULL << 31)
/* PMCCFILTR_EL0.P: what the cycle counter filter is set to (EL0 only), for the log. */
#define PMCCFILTR_P (1ULL << 31)

/* One slot per possible CPU number, touched only by that CPU's hotplug callbacks. */
static struct kmod_eu_cpu *slots;
static enum cpuhp_state hp_state;
/*
 * True while the hotplug state is being installed: a CPU without PMUv3 then fails the
 * load; later it only skips that CPU (failing would block the CPU coming online).
 */
static bool installing;

static void apply_on_cpu(void *info)
{
	kmod_eu_arm64_apply(info);
}

static void restore_on_cpu(void *info)
{
	kmod_eu_arm64_restore(info);
}

static int kmod_eu_cpu_online(unsigned int cpu)
{
	struct kmod_eu_cpu *st;
	int ret;

	if (!slots || cpu >= nr_cpu_ids)
		return 0;
	st = &slots[cpu];
	*st = (struct kmod_eu_cpu){
		.user_access = user_access,
		.cycle_counter = cycle_counter,
	};
	/* On this CPU (the callback runs there), with interrupts off. */
	ret = smp_call_function_single(cpu, apply_on_cpu, st, 1);
	if (ret) {
		pr_err("cpu%u: cannot run on the CPU (%pe)\n", cpu, ERR_PTR(ret));
		return ret;
	}
	if (!st->applied) {
		if (READ_ONCE(installing)) {
			pr_err("cpu%u: no PMUv3 (ID_AA64DFR0_EL1.PMUVer=0x%x): refusing to load\n",
			       cpu, st->pmuver);
			return -ENODEV;
		}
		pr_warn("cpu%u: came online without PMUv3 (ID_AA64DFR0_EL1.PMUVer=0x%x): left unchanged\n",
			cpu, st->pmuver);
		return 0;
	}
	pr_info("cpu%u: PMUSERENR_EL0 0x%llx -> 0x%llx (%s), zeroed %s\n", cpu,
		st->old_userenr, st->new_userenr,
		kmod_eu_arm64_access_names(st->new_userenr),
		kmod_eu_arm64_zeroed_names(st->zeroed));
	if (st->cycle_counter)
		pr_info("cpu%u: cycle counter on: PMCR_EL0 0x%llx -> 0x%llx (E, LC), PMCNTENSET_EL0.C %u -> 1, PMCCFILTR_EL0 0x%llx -> 0x%llx (EL0 only)\n",
			cpu, st->old_pmcr, st->new_pmcr,
			(st->old_cntenset & CNTEN_C) ? 1 : 0, st->old_ccfiltr,
			PMCCFILTR_P);
	return 0;
}

static int kmod_eu_cpu_offline(unsigned int cpu)
{
	struct kmod_eu_cpu *st;
	int ret;

	if (!slots || cpu >= nr_cpu_ids)
		return 0;
	st = &slots[cpu];
	if (!st->applied)
		return 0;
	ret = smp_call_function_single(cpu, restore_on_cpu, st, 1);
	if (ret) {
		pr_err("cpu%u: cannot run on the CPU to restore it (%pe)\n", cpu,
		       ERR_PTR(ret));
		return 0;
	}
	pr_info("cpu%u: PMUSERENR_EL0 0x%llx -> 0x%llx (%s) restored%s\n", cpu,
		st->found_userenr, st->old_userenr,
		kmod_eu_arm64_access_names(st->old_userenr),
		st->found_userenr != st->new_userenr ?
			" (perf had already changed it)" : "");
	if (st->cycle_counter)
		pr_info("cpu%u: cycle counter settings restored (PMCR_EL0.E/LC, PMCNTENSET_EL0.C, PMCCFILTR_EL0 0x%llx)\n",
			cpu, st->old_ccfiltr);
	return 0;
}

static int __init kmod_enable_user_init(void)
{
	u8 pmuver = 0;
	u32 counters = 0;
	int ret;

	if (kmod_eu_arm64_check_user_access(user_access)) {
		pr_err("user_access=0x%x: must be a non-empty subset of EN=1|SW=2|CR=4|ER=8\n",
		       user_access);
		return -EINVAL;
	}
	/* This CPU's ID register and PMCR_EL0.N (no PMU state is changed), on one CPU. */
	preempt_disable();
	ret = kmod_eu_arm64_probe(&pmuver, &counters);
	preempt_enable();
	if (ret) {
		pr_err("no PMUv3 on this CPU (ID_AA64DFR0_EL1.PMUVer=0x%x): refusing to load\n",
		       pmuver);
		return -ENODEV;
	}
	slots = kcalloc(nr_cpu_ids, sizeof(*slots), GFP_KERNEL);
	if (!slots)
		return -ENOMEM;
	WRITE_ONCE(installing, true);
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "perf/kmod_enable_user:online",
				kmod_eu_cpu_online, kmod_eu_cpu_offline);
	WRITE_ONCE(installing, false);
	if (ret < 0) {
		kfree(slots);
		slots = NULL;
		return ret;
	}
	/* For CPUHP_AP_ONLINE_DYN the positive return value is the allocated state. */
	hp_state = ret;
	pr_info("loaded: EL0 may now use the PMU on every online CPU and on CPUs that come online later (PMUSERENR_EL0 = %s, PMUVer=0x%x, %u event counters, cycle_counter=%u)\n",
		kmod_eu_arm64_access_names(user_access), pmuver, counters,
		cycle_counter ? 1 : 0);
	pr_warn("any process can now read the PMU counters (a timing side channel)\n");
	return 0;
}

static void __exit kmod_enable_user_exit(void)
{
	/* Runs kmod_eu_cpu_offline on every online CPU before the state is freed. */
	cpuhp_remove_state(hp_state);
	kfree(slots);
	slots = NULL;
	pr_info("unloaded: EL0 access revoked, every online CPU's previous PMU state restored\n");
}

#elif defined(CONFIG_ARM)

MODULE_DESCRIPTION("Lets user space read the PMU counters directly (ARM1176: SUNAVCR.V); stock-kernel flavour: C glue + Rust object");

static struct kmod_eu_armv6 sunavcr;

static int __init kmod_enable_user_init(void)
{
	u32 midr = read_cpuid_id();
	int ret;

	if (!kmod_eu_armv6_is_arm1176(midr)) {
		pr_err("not an ARM1176 (MIDR 0x%08x, part 0x%03x; SUNAVCR exists only there): refusing to load\n",
		       midr, kmod_eu_armv6_part_number(midr));
		return -ENODEV;
	}
	/* The ARM1176 is a uniprocessor core: stay on it while SUNAVCR is changed. */
	preempt_disable();
	ret = kmod_eu_armv6_enable(&sunavcr);
	preempt_enable();
	if (ret) {
		pr_err("SUNAVCR.V did not stick: wrote 0x%x, read back 0x%x (QEMU's ARM1176 has a dummy c15 that reads 0; on hardware, Linux must run in the Secure state): refusing to load\n",
		       sunavcr.written, sunavcr.read_back);
		return ret;
	}
	pr_info("loaded: SUNAVCR 0x%x -> 0x%x (V=1): User mode may now use the PMU (PMCR, CCR, CR0, CR1)\n",
		sunavcr.previous, sunavcr.read_back);
	pr_warn("any process can now read the PMU counters (a timing side channel)\n");
	return 0;
}

static void __exit kmod_enable_user_exit(void)
{
	preempt_disable();
	kmod_eu_armv6_disable(&sunavcr);
	preempt_enable();
	pr_info("unloaded: SUNAVCR 0x%x -> 0x%x restored, User-mode PMU access revoked\n",
		sunavcr.found, sunavcr.previous);
}

#else
#error "kmod-enable-user/stock supports arm64 and 32-bit ARM (ARMv6) kernels only"
#endif

module_init(kmod_enable_user_init);
module_exit(kmod_enable_user_exit);
