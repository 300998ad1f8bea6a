// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * kmod_enable_user, stock-kernel flavour: what module loading needs, in C, around the
 * register logic in Rust (rust/src/, one file per flavour, over pmu-armv8 / pmu-armv7 /
 * pmu-armv6), for kernels built without CONFIG_RUST (every distribution kernel; 32-bit
 * ARM has no kernel Rust at all in Linux 6.12).
 *
 * - arm64: the same behaviour, parameters and log lines as the Rust-for-Linux module
 *   (../kmod_enable_user_main.rs), whose per-CPU work is this same Rust object: on every
 *   online CPU, and on every CPU that comes online later (a CPU-hotplug state), zero
 *   the idle counters, program the `events` (EL0 only) on the highest-numbered event
 *   counters and the cycle counter, and grant EL0 read access (PMUSERENR_EL0 =
 *   `user_access`, default CR|ER); write access (EN) only with `el0_programming=1`.
 *   Counters perf is using are never touched; a CPU whose layout counter perf uses
 *   gets no grant (-EBUSY at load). After every CPU PM exit (idle, suspend) the grant
 *   is put back; `regrant` puts it back on request (after perf revoked it). Unload and
 *   offline release the module's counters and revoke the grant.
 *   -ENODEV without PMUv3, -EINVAL for a bad parameter.
 * - 32-bit ARM, ARMv7 flavour (KMOD_EU_ARMV7: Cortex-A7/A15, and ARMv8 cores under a
 *   32-bit kernel): the same per-CPU grant as arm64, through PMUSERENR and the cp15 c9
 *   registers (rust/src/armv7.rs over pmu-armv7), and the same ownership: the layout's
 *   counters taken out of perf's (kmod_enable_user_perf.c), CPU_CYCLES on an event
 *   counter, perf's used_mask beside every apply and restore, a keeper event on every
 *   CPU. PMUv3 seen from AArch32 gets the same read-only default (ER). PMUv2
 *   (Cortex-A7/A15) has PMUSERENR.EN alone, which is write access: the load is refused
 *   (-EOPNOTSUPP) unless el0_programming=1 is given. -ENODEV on a CPU older than ARMv7
 *   (the ARMv6 flavour is for that one) and on a CPU without a PMUv2/PMUv3
 *   (ID_DFR0.PerfMon).
 * - 32-bit ARM, ARMv6 flavour: ARM1176 only (Raspberry Pi 1 / Zero): set SUNAVCR.V
 *   (ARM1176JZF-S TRM, page 3-132), read it back, refuse with -EIO when it did not
 *   stick (QEMU's ARM1176 c15 is a dummy that reads 0), write the previous value back
 *   on unload. The module programs no counter, and perf's ARMv6 driver cannot be
 *   narrowed: the load is refused (-EBUSY) while perf holds any counter. -ENODEV on any
 *   other core (an ARMv7 CPU is told to load the ARMv7 flavour).
 *
 * Security: once loaded, any process can read the granted counters, a timing side
 * channel; with el0_programming=1 it can also program the PMU.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpu_pm.h>
#include <linux/cpuhotplug.h>
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/rcupdate.h>
#include <linux/preempt.h>
#include <linux/printk.h>
#include <linux/atomic.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>

#ifdef CONFIG_ARM
#include <asm/cputype.h>
#endif

#include "kmod_enable_user_stock.h"
#include "kmod_enable_user_owners.h"
#include "kmod_enable_user_perf.h"

MODULE_LICENSE("Dual MIT/GPL");
MODULE_AUTHOR("PMU workspace contributors");

/*
 * Which grant, and who gets it: the same three parameters in every flavour. The
 * per-thread grant needs the scheduler's preempt notifiers (CONFIG_PREEMPT_NOTIFIERS)
 * and is built for arm64 only; elsewhere the load is refused unless cpu_wide=1 says
 * that every process may read the counters.
 */
static bool cpu_wide;
module_param(cpu_wide, bool, 0444);
MODULE_PARM_DESC(cpu_wide, "1: grant EL0 access CPU-wide, to every process on every CPU (no device); 0 (default): only threads that opened /dev/" "kmod_enable_user" " and asked get it, only while they run (arm64 kernels with CONFIG_PREEMPT_NOTIFIERS; elsewhere cpu_wide=1 is required)");

static int group = -1;
module_param(group, int, 0444);
MODULE_PARM_DESC(group, "Per-thread mode: the numeric gid whose members may open /dev/kmod_enable_user (CAP_PERFMON or CAP_SYS_ADMIN always may); default -1: none");

static bool follow = true;
module_param(follow, bool, 0444);
MODULE_PARM_DESC(follow, "Per-thread mode: the module's counters follow the granted thread (saved when it is switched out, written back when it is switched in, on whichever CPU); default 1");

#if defined(CONFIG_ARM64) && defined(CONFIG_PREEMPT_NOTIFIERS)
#define EU_PER_THREAD 1
#else
#define EU_PER_THREAD 0
/* The refusal of cpu_wide=0 where the per-thread grant cannot be built. */
static int eu_refuse_per_thread(void)
{
	if (cpu_wide)
		return 0;
#ifdef CONFIG_ARM64
	pr_err("cpu_wide=0 (the default) grants per thread through the scheduler's preempt notifiers, and this kernel has no CONFIG_PREEMPT_NOTIFIERS (arm64 has it with KVM): load with cpu_wide=1 to let every process read the counters CPU-wide: refusing to load\n");
#else
	pr_err("cpu_wide=0 (the default) grants per thread, which this module builds for arm64 kernels with CONFIG_PREEMPT_NOTIFIERS only (32-bit ARM: not built; Debian's armmp kernels have no preempt notifiers): load with cpu_wide=1 to let every process read the counters CPU-wide: refusing to load\n");
#endif
	return -EOPNOTSUPP;
}
#endif

void __noreturn kmod_enable_user_rust_panic(void)
{
	panic(KBUILD_MODNAME ": panic in the Rust object\n");
}

#if defined(CONFIG_ARM64) || defined(KMOD_EU_ARMV7)

/*
 * The per-CPU grant shared by arm64 and the ARMv7 flavour: the same parameters,
 * callbacks and log lines; only the register names, the ID field and the Rust entry
 * points differ (the AArch32 registers are 32 bits: printed through the same u64
 * formats).
 */
#if defined(CONFIG_ARM64)

#define EU_USERENR "PMUSERENR_EL0"
#define EU_PMCR "PMCR_EL0"
#define EU_PCEID "PMCEID0/1_EL0"
#define EU_EL0 "EL0"
#define EU_EL1 "EL1"
#define EU_VERSION "PMUVer"
#define EU_CCFILTR "PMCCFILTR_EL0"
#define EU_CCNTR "PMCCNTR_EL0"
#define EU_USER_ACCESS_NOTE ""
#define EU_NO_PMU "no PMUv3 (ID_AA64DFR0_EL1.PMUVer=0x%x)"
typedef struct kmod_eu_config eu_config_t;
typedef struct kmod_eu_cpu eu_cpu_t;
#define eu_version(x) ((x).pmuver)
#define eu_configure kmod_eu_arm64_configure
#define eu_apply kmod_eu_arm64_apply
#define eu_restore kmod_eu_arm64_restore
#define eu_access_names kmod_eu_arm64_access_names
#define eu_grant_words kmod_eu_arm64_grant_words
/*
 * The keeper event (kmod_enable_user_perf.c) unless el0_programming=1: with EN, EL0
 * owns PMCR_EL0.E, and perf's overflow handler for the keeper's counter ends in
 * armv8pmu_start, which writes PMUSERENR_EL0 = 0 (drivers/perf/arm_pmuv3.c 6.12).
 */
#define EU_KEEPER (!el0_programming)
#define EU_CYCLES_NOTE "PMCCNTR_EL0"
/* arm64 only: the kernel-entry sentinel (`sentinel` below). */
#define EU_SENTINEL_ARG sentinel,
#define EU_COUNTING "counting: %s (parameters/layout: at EL0 only, :k at the kernel's level only)"

MODULE_DESCRIPTION("Lets user space read the PMU counters directly (arm64: PMUSERENR_EL0, read-only by default); stock-kernel flavour: C glue + Rust object");

#else /* ARMv7 flavour */

#define EU_USERENR "PMUSERENR"
#define EU_PMCR "PMCR"
#define EU_PCEID "PMCEID0/1"
#define EU_EL0 "PL0"
#define EU_EL1 "PL1"
#define EU_VERSION "ID_DFR0.PerfMon"
#define EU_CCFILTR "PMCCFILTR"
#define EU_CCNTR "PMCCNTR"
#define EU_USER_ACCESS_NOTE "; PMUv2 (ARMv7) has no read bits: EN alone, through el0_programming=1"
#define EU_NO_PMU "no PMUv2 or PMUv3 (ID_DFR0.PerfMon=0x%x)"
typedef struct kmod_eu_v7_config eu_config_t;
typedef struct kmod_eu_v7_cpu eu_cpu_t;
#define eu_version(x) ((x).perfmon)
#define eu_configure kmod_eu_armv7_configure
#define eu_apply kmod_eu_armv7_apply
#define eu_restore kmod_eu_armv7_restore
#define eu_access_names kmod_eu_armv7_access_names
#define eu_grant_words kmod_eu_armv7_grant_words
/*
 * Always a keeper event: armv7pmu_stop clears PMCR.E whenever perf's last event leaves
 * the CPU, with or without EN (drivers/perf/arm_v7_pmu.c 6.12; arm_pmuv3.c's
 * armv8pmu_stop likewise), and only a non-empty used_mask makes armpmu_enable start it
 * again (drivers/perf/arm_pmu.c).
 */
#define EU_KEEPER true
#define EU_CYCLES_NOTE "PMCCNTR"
#define EU_COUNTING "counting for PL0 only: %s (parameters/layout)"

MODULE_DESCRIPTION("Lets user space read the PMU counters directly (ARMv7/AArch32: PMUSERENR; read-only by default on PMUv3, PMUv2 only with el0_programming=1); stock-kernel flavour: C glue + Rust object");

/*
 * Whether this CPU is ARMv7 or later, before any ARMv7 instruction runs. MIDR must use
 * the CPUID scheme (Architecture = 0xF) and ID_MMFR0 name VMSAv7 or PMSAv7, the test of
 * Linux's __get_cpu_architecture() (arch/arm/kernel/setup.c, 6.12; cpu_architecture()
 * is not exported to modules). That test also calls the ARM1176 ARMv7 (its ID_MMFR0.VMSA
 * is 3), so its part number (0xB76) is excluded by name: its cp15 c9 has no PMU.
 */
static bool eu_cpu_is_armv7(u32 midr)
{
	u32 mmfr0;

	if ((midr & 0x000f0000) != 0x000f0000)
		return false;
	if ((midr & 0xff00fff0) == 0x4100b760)
		return false;
	mmfr0 = read_cpuid_ext(CPUID_EXT_MMFR0);
	return (mmfr0 & 0xf) >= 3 || (mmfr0 & 0xf0) >= 0x30;
}

/*
 * The run-time ABI's memcpy variants (ARM IHI 0043 "Run-time ABI for the Arm
 * Architecture", 4.3.4), which LLVM calls from the Rust object for struct copies it does
 * not inline; the kernel, built by gcc, has none of them (check-object.sh allows exactly
 * these three). The 4 and 8 variants only promise alignment: memcpy does the same work.
 */
void __aeabi_memcpy(void *dest, const void *src, size_t n);
void __aeabi_memcpy4(void *dest, const void *src, size_t n);
void __aeabi_memcpy8(void *dest, const void *src, size_t n);

void __aeabi_memcpy(void *dest, const void *src, size_t n)
{
	memcpy(dest, src, n);
}

void __aeabi_memcpy4(void *dest, const void *src, size_t n)
{
	memcpy(dest, src, n);
}

void __aeabi_memcpy8(void *dest, const void *src, size_t n)
{
	memcpy(dest, src, n);
}

#endif

/* ER: read-only, the event counters (the module never uses the cycle counter: perf's). */
static unsigned int user_access = 8;
module_param(user_access, uint, 0444);
MODULE_PARM_DESC(user_access, EU_USERENR " read bits to grant on every CPU: SW=2 (software increment), CR=4 (perf's cycle counter), ER=8 (event counters: every one, perf's too); default 8 = ER, read-only. Write access (EN=1) only through el0_programming=1" EU_USER_ACCESS_NOTE);

static bool el0_programming;
module_param(el0_programming, bool, 0444);
MODULE_PARM_DESC(el0_programming, "Also let " EU_EL0 " program the PMU (" EU_USERENR ".EN): every process may then count at " EU_EL1 " (a side channel into the kernel) and stop or reset perf's counters; default 0");

static char *events = "0x8";
module_param(events, charp, 0444);
MODULE_PARM_DESC(events, "Events the module counts for " EU_EL0 " (" EU_EL0 " only) on the highest-numbered event counters: comma-separated numbers, e.g. 0x8,0x3; default 0x8 (INST_RETIRED); empty for none");

static bool cycle_counter = true;
module_param(cycle_counter, bool, 0444);
MODULE_PARM_DESC(cycle_counter, "Also count CPU_CYCLES for " EU_EL0 ", " EU_EL0 " only, on one of the module's event counters (" EU_CCNTR " stays perf's); default 1");

#ifdef CONFIG_ARM64
static bool sentinel;
module_param(sentinel, bool, 0444);
MODULE_PARM_DESC(sentinel, "Also run the kernel-entry sentinel: an event counter counting INST_RETIRED at the kernel's level only (:k in layout), so a region read at EL0 sees the kernel run in it. Tells every process how much the kernel did on its CPU (perf allows that only with perf_event_paranoid <= 1); default 0");
#else
/* The ARMv7 flavour has no sentinel parameter (the AArch32 layout has none). */
#define EU_SENTINEL_ARG
#endif

#ifdef CONFIG_ARM64
#define EU_SENTINEL_COUNTERS (config.sentinel ? 1U : 0U)
#else
#define EU_SENTINEL_COUNTERS 0U
#endif

/* The settings every CPU gets, checked once at load. */
static eu_config_t config;
/* "<counter>=0x<event> …" (31: the cycle counter): the `layout` parameter. */
static char layout[KMOD_EU_LAYOUT_SIZE] = "none";

/* One slot per possible CPU number. */
static eu_cpu_t *slots;
static enum cpuhp_state hp_state;
/*
 * True while the hotplug state is being installed: a CPU that cannot be granted then
 * fails the load; later it only leaves that CPU without a grant (failing would block
 * the CPU coming online).
 */
static bool installing;
/* Serializes `regrant` writes with unload; `live` while the slots may be used. */
static DEFINE_MUTEX(state_lock);
static bool live;
/* Re-grants after CPU PM exits, and how many of them failed. */
static atomic_long_t cpu_pm_regrants = ATOMIC_LONG_INIT(0);
static atomic_long_t cpu_pm_failures = ATOMIC_LONG_INIT(0);

/*
 * perf's used_mask of this CPU for the Rust object: read here, interrupts off, right
 * before the apply or restore that checks it (AArch32's PMCNTENSET is 32 bits: the
 * cycle counter is bit 31 there too).
 */
static void eu_read_perf_used(eu_cpu_t *st)
{
	st->perf_used = kmod_eu_perf_used_here();
}

static void apply_on_cpu(void *info)
{
	eu_cpu_t *st = info;

	eu_read_perf_used(st);
	/* No grant over a keeper perf evicted (kmod_enable_user_perf.c). */
	st->error = kmod_eu_perf_grant_check_here(st->applied ? st->new_userenr : 0);
	if (st->error)
		return;
	eu_apply(st, &config);
#if EU_PER_THREAD
	/*
	 * Per-thread mode: the counters run, but PMUSERENR_EL0 gets back at once what the
	 * apply found; only a granted thread's switch-in opens them. This callback never
	 * runs in a granted thread (the CPU's hotplug thread, idle, a kworker).
	 */
	if (!cpu_wide && !st->error && st->applied)
		kmod_eu_arm64_withhold(st);
#endif
}

static void restore_on_cpu(void *info)
{
	eu_read_perf_used(info);
	eu_restore(info, &config);
}

/* The layout's event counters: the top n_events + cycle_counter (+ sentinel) of N. */
static u64 eu_layout_mask(void)
{
	unsigned int k = config.n_events + config.cycle_counter + EU_SENTINEL_COUNTERS;

	if (!k || k > config.event_counters)
		return 0;
	return GENMASK_ULL(config.event_counters - 1, config.event_counters - k);
}
#define EU_PERF_HOLDS "; perf holds 0x%llx"
#define EU_PERF_HOLDS_ARG(st) , (u64)(st)->perf_used

/* The log line for an apply on `cpu` (`why`: online, regrant); its errno. */
static int report_apply(unsigned int cpu, const eu_cpu_t *st,
			const char *why)
{
	switch (st->error) {
	case 0:
		if (EU_PER_THREAD && !cpu_wide) {
			pr_info("cpu%u: counters for " EU_EL0 ": %s, started 0x%llx, kept running 0x%llx" EU_PERF_HOLDS "; " EU_USERENR " left 0x%llx: the grant (%s: %s) is set only while a granted thread runs [%s]\n",
				cpu, layout, (u64)(st->owned & ~st->kept), (u64)st->kept
				EU_PERF_HOLDS_ARG(st), (u64)st->found_userenr,
				eu_access_names(st->new_userenr),
				eu_grant_words(st->new_userenr), why);
			break;
		}
		pr_info("cpu%u: " EU_USERENR " 0x%llx -> 0x%llx (%s: %s) [%s]; counters for " EU_EL0 ": %s, started 0x%llx, kept running 0x%llx" EU_PERF_HOLDS "\n",
			cpu, (u64)st->found_userenr, (u64)st->new_userenr,
			eu_access_names(st->new_userenr),
			eu_grant_words(st->new_userenr), why, layout,
			(u64)(st->owned & ~st->kept), (u64)st->kept EU_PERF_HOLDS_ARG(st));
		break;
	case -EBUSY:
		pr_err("cpu%u: counter %u is perf's (in its used_mask 0x%llx; config 0x%llx): no grant on this CPU [%s]\n",
		       cpu, st->error_detail, (u64)st->perf_used, (u64)st->busy_config, why);
		break;
	case -ENOLINK:
		pr_err("cpu%u: perf evicted the module's keeper event (an older pinned perf group took its counter): the grant is withdrawn on this CPU until `regrant` finds room for the keeper [%s]\n",
		       cpu, why);
		break;
	case -EOPNOTSUPP:
		if (st->error_detail != KMOD_EU_NO_EVENT)
			pr_err("cpu%u: event 0x%x is not implemented by this CPU (" EU_PCEID "): no grant on this CPU [%s]\n",
			       cpu, st->error_detail, why);
		else
			pr_err("cpu%u: " EU_VERSION "=0x%x has no read-only grant (PMUv2: " EU_USERENR ".EN alone) and el0_programming=1 was not given: no grant on this CPU [%s]\n",
			       cpu, eu_version(*st), why);
		break;
	case -ENODEV:
		if (st->error_detail)
			pr_err("cpu%u: %u event counters (" EU_PMCR ".N), the layout needs %u: no grant on this CPU [%s]\n",
			       cpu, st->error_detail, config.event_counters, why);
		else
			pr_err("cpu%u: " EU_NO_PMU ": no grant on this CPU [%s]\n",
			       cpu, eu_version(*st), why);
		break;
	default:
		pr_err("cpu%u: grant failed (%pe) [%s]\n", cpu, ERR_PTR(st->error), why);
	}
	return st->error;
}

static int kmod_eu_cpu_online(unsigned int cpu)
{
	eu_cpu_t *st;
	int ret;

	if (!slots || cpu >= nr_cpu_ids)
		return 0;
	st = &slots[cpu];
	/* A fresh grant: what this CPU holds now is what the restore goes back to. */
	*st = (eu_cpu_t){};
	{
		const char *why;

		/* Process context (the CPU's hotplug thread): may sleep. */
		ret = kmod_eu_perf_cpu_up(cpu, eu_layout_mask(), EU_KEEPER, &why);
		if (ret == KMOD_EU_CPU_NOT_NAMED) {
			pr_info("cpu%u: not in cpus=: no grant and no keeper on this CPU [online]\n", cpu);
			return 0;
		}
		if (ret) {
			pr_err("cpu%u: %s (%pe): no grant on this CPU [online]\n", cpu,
			       why, ERR_PTR(ret));
			return READ_ONCE(installing) ? ret : 0;
		}
	}
	/* On this CPU (the callback runs there), with interrupts off. */
	ret = smp_call_function_single(cpu, apply_on_cpu, st, 1);
	if (ret)
		pr_err("cpu%u: cannot run on the CPU (%pe)\n", cpu, ERR_PTR(ret));
	else
		ret = report_apply(cpu, st, "online");
	if (ret) {
		/* No grant here: the keeper's counter goes back to perf. */
		kmod_eu_perf_cpu_down(cpu);
		if (READ_ONCE(installing)) {
			pr_err("cpu%u: refusing to load\n", cpu);
			return ret;
		}
	}
	return 0;
}

static int kmod_eu_cpu_offline(unsigned int cpu)
{
	eu_cpu_t *st;
	u64 granted;
	int ret;

	if (!slots || cpu >= nr_cpu_ids)
		return 0;
	st = &slots[cpu];
	if (!st->applied) {
		kmod_eu_perf_cpu_down(cpu);
		return 0;
	}
	granted = st->new_userenr;
	ret = smp_call_function_single(cpu, restore_on_cpu, st, 1);
	if (ret) {
		pr_err("cpu%u: cannot run on the CPU to restore it (%pe)\n", cpu,
		       ERR_PTR(ret));
		return 0;
	}
	/* After the restore: the keeper's counter goes back to perf last. */
	kmod_eu_perf_cpu_down(cpu);
	pr_info("cpu%u: " EU_USERENR " 0x%llx -> 0x%llx (%s)%s; counters released 0x%llx, left to perf 0x%llx\n",
		cpu, (u64)st->found_userenr, (u64)st->new_userenr,
		eu_access_names(st->new_userenr),
		st->found_userenr != granted && (cpu_wide || !EU_PER_THREAD) ?
		" (perf had rewritten it: left as perf wrote it)" : "",
		(u64)st->released, (u64)st->taken);
	return 0;
}

/*
 * CPU PM: after a CPU power-down (cpu_do_resume resets PMUSERENR_EL0) and after every
 * CPU_PM_EXIT (arm_pmu's cpu_pm_pmu_notify resets the PMU: armv8pmu_reset), put the
 * grant back. Runs on the CPU itself with interrupts off, after arm_pmu's notifier
 * (priority -1 < arm_pmu's 0: the chain runs higher priorities first).
 */
static int kmod_eu_cpu_pm(struct notifier_block *nb, unsigned long action, void *data)
{
	unsigned int cpu = smp_processor_id();
	eu_cpu_t *st;

	if (action != CPU_PM_EXIT && action != CPU_PM_ENTER_FAILED)
		return NOTIFY_OK;
	st = READ_ONCE(slots);
	if (!st || cpu >= nr_cpu_ids)
		return NOTIFY_OK;
	/* perf's reset skipped the reserved counters (kmod_enable_user_perf.c). */
	kmod_eu_perf_cpu_pm_exit(st[cpu].applied);
	if (!st[cpu].applied)
		return NOTIFY_OK;
	apply_on_cpu(&st[cpu]);
	atomic_long_inc(&cpu_pm_regrants);
	if (st[cpu].error) {
		atomic_long_inc(&cpu_pm_failures);
		pr_warn_ratelimited("cpu%u: grant not restored after CPU PM exit (%pe): " EU_EL0 " access stays off on this CPU\n",
				    cpu, ERR_PTR(st[cpu].error));
	}
	return NOTIFY_OK;
}

static struct notifier_block kmod_eu_cpu_pm_nb = {
	.notifier_call = kmod_eu_cpu_pm,
	.priority = -1,
};

/* `layout`: read-only, what user space reads to find the module's counters. */
static int layout_get(char *buffer, const struct kernel_param *kp)
{
	return scnprintf(buffer, PAGE_SIZE, "%s\n", layout);
}

static int read_only_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops layout_ops = {
	.set = read_only_set,
	.get = layout_get,
};
module_param_cb(layout, &layout_ops, NULL, 0444);
#ifdef CONFIG_ARM64
MODULE_PARM_DESC(layout, "Read-only: the counters the module runs for EL0, as <counter>=<event> pairs, e.g. 5=0x8 4=0x11 (:k the sentinel)");
#else
MODULE_PARM_DESC(layout, "Read-only: the counters the module runs for " EU_EL0 ", as <counter>=<event> pairs, e.g. 5=0x8 4=0x11");
#endif

/* `cpu_pm_regrants`: read-only, how often the grant was put back after CPU PM. */
static int cpu_pm_regrants_get(char *buffer, const struct kernel_param *kp)
{
	return scnprintf(buffer, PAGE_SIZE, "%ld %ld\n",
			 atomic_long_read(&cpu_pm_regrants),
			 atomic_long_read(&cpu_pm_failures));
}

static const struct kernel_param_ops cpu_pm_regrants_ops = {
	.set = read_only_set,
	.get = cpu_pm_regrants_get,
};
module_param_cb(cpu_pm_regrants, &cpu_pm_regrants_ops, NULL, 0444);
MODULE_PARM_DESC(cpu_pm_regrants, "Read-only: grants put back after CPU PM exits, and how many of those failed");

/*
 * One CPU's `regrant`. While the slot holds a grant (`applied`) it is written on its CPU
 * with interrupts off only, and the log line comes from `after`, copied there: the CPU
 * PM notifier may rewrite such a slot at any time once interrupts are back on, so it is
 * not read from another CPU. (kmod_eu_cpu_online zeroes the slot, and
 * kmod_eu_cpu_offline reads it after its restore, in process context: the notifier
 * leaves a slot without `applied` alone, and the restore runs with the CPU PM notifier
 * still registered only for a CPU going offline, whose slot is zeroed before its next
 * grant.)
 */
struct regrant_work {
	eu_cpu_t *slot;
	bool acted;
	eu_cpu_t after;
};

/*
 * The regrant's work on one CPU, in process context on that CPU (smp_call_on_cpu), not
 * in an IPI: on a KVM host an IPI can land while a vCPU is loaded, when
 * PMUSERENR_EL0 holds the guest's trap value and the host's lives in KVM's copy
 * (kvm_set_pmuserenr, arch/arm64/kvm/pmu.c 6.12); a thread running there means the
 * vCPU was put. Interrupts off around the apply, as the other callers have them.
 */
static int regrant_on_cpu(void *info)
{
	struct regrant_work *work = info;
	unsigned long flags;

	local_irq_save(flags);
	/* No grant (and no keeper event) on this CPU since it came online. */
	if (work->slot->applied) {
		apply_on_cpu(work->slot);
		work->after = *work->slot;
		work->acted = true;
	}
	local_irq_restore(flags);
	return 0;
}

/*
 * `regrant` (write-only, root): put the grant back on every online CPU, after perf's
 * armv8pmu_start() wrote PMUSERENR_EL0 = 0 there. -EBUSY when a CPU's layout counter
 * is perf's now.
 */
static int regrant_set(const char *val, const struct kernel_param *kp)
{
	unsigned int cpu;
	int ret = 0;

	mutex_lock(&state_lock);
	if (!live) {
		mutex_unlock(&state_lock);
		return -ENODEV;
	}
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		struct regrant_work work = { .slot = &slots[cpu] };
		int err;

		/* Process context: an evicted keeper gets back on the PMU if there is room. */
		kmod_eu_perf_keeper_revive(cpu);
		err = smp_call_on_cpu(cpu, regrant_on_cpu, &work, false);
		if (!err && work.acted)
			err = report_apply(cpu, &work.after, "regrant");
		if (err && !ret)
			ret = err;
	}
	cpus_read_unlock();
	mutex_unlock(&state_lock);
	return ret;
}

static const struct kernel_param_ops regrant_ops = {
	.set = regrant_set,
};
module_param_cb(regrant, &regrant_ops, NULL, 0200);
MODULE_PARM_DESC(regrant, "Write-only (root): write 1 to put the grant back on every online CPU (after perf revoked it)");

#if EU_PER_THREAD
/*
 * The per-thread grant (the default, cpu_wide=0): /dev/kmod_enable_user, and the
 * scheduler's preempt notifiers of each granted thread.
 *
 * Why preempt notifiers: they are the one hook a module gets into a given task's
 * context switches, on whichever CPU (include/linux/preempt.h: struct
 * preempt_ops.sched_in/sched_out, CONFIG_PREEMPT_NOTIFIERS, which arm64 selects with
 * KVM). Both run after perf's own switch work (kernel/sched/core.c, Linux 6.12 and
 * 7.3: prepare_task_switch calls perf_event_task_sched_out before
 * fire_sched_out_preempt_notifiers; finish_task_switch calls perf_event_task_sched_in
 * before fire_sched_in_preempt_notifiers), so a PMUSERENR_EL0 write by perf's
 * sched-in (armv8pmu_start through perf_pmu_enable) cannot undo the grant, and the
 * switch-out puts back what the switch-in found. sched_out runs with the runqueue
 * lock held (interrupts off); sched_in after it is released, so the switch-in turns
 * interrupts off itself (perf's overflow handler writes PMUSERENR_EL0 too).
 *
 * preempt_notifier_register/unregister act on `current` and the list is walked only
 * during that task's own context switches: the granted thread links and unlinks its
 * notifier itself. A release from another task (the fd shared with a thread, passed
 * over a socket, or the thread gone) unlinks inside stop_machine(): every online CPU
 * runs the stopper then, so no context switch walks any list meanwhile, and the
 * thread, not running, has had its switch-out. The file holds a task reference while
 * the notifier is linked. A child after fork(2) starts with an empty list
 * (__sched_fork: INIT_HLIST_HEAD(&p->preempt_notifiers)): it traps.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/pid.h>
#include <linux/sched/task.h>
#include <linux/stop_machine.h>
#include <linux/uaccess.h>

#include "kmod_enable_user_uapi.h"

static_assert(sizeof(struct kmod_eu_grant) == 24);

/* One open file of the device. */
struct eu_file {
	struct preempt_notifier pn;
	/* The process (thread group) that opened the file. */
	struct pid *opener;
	/* Serializes GRANT, REGRANT and the grant's state of this file. */
	struct mutex lock;
	/* The granted thread (a reference held), NULL before GRANT. */
	struct task_struct *task;
	/* Switch-in/out state; written only on the thread's CPU with interrupts off. */
	struct kmod_eu_thread thread;
};

static struct preempt_ops eu_preempt_ops;

/*
 * Whether the module's counters count on this CPU (interrupts off): it granted here at
 * load (not left out by cpus=, no layout counter of perf's), and perf has not stopped
 * the PMU under them (kmod_eu_perf_grant_check_here: the keeper on the PMU and
 * PMCR_EL0.E set; with 0 it takes no CPU-wide grant back, there is none).
 */
static bool eu_counting_here(unsigned int cpu)
{
	return slots && cpu < nr_cpu_ids && slots[cpu].applied &&
	       !kmod_eu_perf_grant_check_here(0);
}

static void eu_sched_in(struct preempt_notifier *pn, int cpu)
{
	struct eu_file *f = container_of(pn, struct eu_file, pn);
	unsigned long flags;

	local_irq_save(flags);
	/*
	 * No grant on a CPU where the module's counters do not count: the thread's
	 * instructions here are in none of its counters, so it gets no grant anywhere until
	 * it asks again, and REGRANT then says its counts were lost (thread::missed).
	 */
	if (eu_counting_here(cpu))
		kmod_eu_arm64_thread_in(&f->thread, &config, follow);
	else
		kmod_eu_arm64_thread_missed(&f->thread);
	local_irq_restore(flags);
}

static void eu_sched_out(struct preempt_notifier *pn, struct task_struct *next)
{
	struct eu_file *f = container_of(pn, struct eu_file, pn);

	/* Interrupts are off here (the runqueue lock): on the CPU it was switched in on. */
	kmod_eu_arm64_thread_out(&f->thread, follow);
	/* perf stopped the PMU while the thread ran (the keeper evicted): counts short. */
	if (!eu_counting_here(smp_processor_id()))
		kmod_eu_arm64_thread_missed(&f->thread);
}

static struct preempt_ops eu_preempt_ops = {
	.sched_in = eu_sched_in,
	.sched_out = eu_sched_out,
};

static int eu_open(struct inode *inode, struct file *file)
{
	struct eu_file *f;

	if (!(group >= 0 && in_group_p(make_kgid(&init_user_ns, group))) &&
	    !perfmon_capable())
		return -EACCES;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	preempt_notifier_init(&f->pn, &eu_preempt_ops);
	f->opener = get_pid(task_tgid(current));
	file->private_data = f;
	return 0;
}

/* Whether the calling thread holds a grant through any file (preemption off). */
static bool eu_current_granted(void)
{
	struct preempt_notifier *pn;

	/* Only `current` links or unlinks its own list outside stop_machine(). */
	hlist_for_each_entry(pn, &current->preempt_notifiers, link)
		if (pn->ops == &eu_preempt_ops)
			return true;
	return false;
}

static long eu_grant(struct eu_file *f, void __user *arg)
{
	struct kmod_eu_grant req;
	u64 layout_mask = eu_layout_mask();
	unsigned long flags;
	bool busy;

	if (task_tgid(current) != f->opener)
		return -EPERM;
	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.size != sizeof(req) || req.flags != 0)
		return -EINVAL;
	if (!req.counters)
		req.counters = layout_mask;
	if (req.counters & ~layout_mask)
		return -EINVAL;
	mutex_lock(&f->lock);
	preempt_disable();
	busy = f->task || eu_current_granted();
	preempt_enable();
	if (busy) {
		mutex_unlock(&f->lock);
		return -EBUSY;
	}
	req.granted = (follow ? KMOD_EU_GRANTED_FOLLOW : 0) |
		      (el0_programming ? KMOD_EU_GRANTED_PROGRAM : 0);
	req.reserved = 0;
	/* Before the grant: a failed copy changes nothing. */
	if (copy_to_user(arg, &req, sizeof(req))) {
		mutex_unlock(&f->lock);
		return -EFAULT;
	}
	f->thread = (struct kmod_eu_thread){ .counters = req.counters };
	get_task_struct(current);
	f->task = current;
	preempt_disable();
	preempt_notifier_register(&f->pn);
	/*
	 * As a switch-in now, on this CPU: the grant starts at once. Where the module's
	 * counters do not count, nothing was counted yet to lose: the thread's reads trap
	 * until it runs on a CPU where they do (REGRANT here: EBUSY).
	 */
	local_irq_save(flags);
	if (eu_counting_here(smp_processor_id()))
		kmod_eu_arm64_thread_in(&f->thread, &config, follow);
	local_irq_restore(flags);
	preempt_enable();
	mutex_unlock(&f->lock);
	return 0;
}

static long eu_regrant(struct eu_file *f)
{
	unsigned int cpu;
	unsigned long flags;
	long ret = 0;

	mutex_lock(&f->lock);
	if (f->task != current) {
		mutex_unlock(&f->lock);
		return -ENOENT;
	}
	preempt_disable();
	local_irq_save(flags);
	cpu = smp_processor_id();
	/* No module counters here, or perf evicted the keeper (PMCR_EL0.E may be off). */
	if (!eu_counting_here(cpu))
		ret = -EBUSY;
	else if (kmod_eu_arm64_thread_regrant(&f->thread, &config) == 2)
		ret = KMOD_EU_REGRANT_LOST;
	local_irq_restore(flags);
	preempt_enable();
	mutex_unlock(&f->lock);
	return ret;
}

static long eu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct eu_file *f = file->private_data;

	switch (cmd) {
	case KMOD_EU_IOC_GRANT:
		return eu_grant(f, (void __user *)arg);
	case KMOD_EU_IOC_REGRANT:
		return eu_regrant(f);
	default:
		return -ENOTTY;
	}
}

/* In stop_machine(): no CPU is in a context switch, the thread is switched out. */
static int eu_unlink_remote(void *data)
{
	struct eu_file *f = data;

	hlist_del(&f->pn.link);
	return 0;
}

static int eu_release(struct inode *inode, struct file *file)
{
	struct eu_file *f = file->private_data;
	unsigned long flags;

	if (f->task == current) {
		preempt_disable();
		local_irq_save(flags);
		kmod_eu_arm64_thread_out(&f->thread, follow);
		local_irq_restore(flags);
		preempt_notifier_unregister(&f->pn);
		preempt_enable();
	} else if (f->task) {
		/* Another task's list: see the comment at the top of this part. */
		stop_machine(eu_unlink_remote, f, NULL);
	}
	if (f->task)
		put_task_struct(f->task);
	put_pid(f->opener);
	kfree(f);
	return 0;
}

/* .owner: rmmod is refused (in use) while a file is open. */
static const struct file_operations eu_fops = {
	.owner = THIS_MODULE,
	.open = eu_open,
	.release = eu_release,
	.unlocked_ioctl = eu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice eu_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = KMOD_EU_DEVICE_NAME,
	.fops = &eu_fops,
	/* Anyone may try; open() checks group= and CAP_PERFMON. */
	.mode = 0666,
};
#endif

/* What the load grants, for its log line: PMUv2 gets EN alone (rust: pmuserenr_for). */
static u32 eu_granted_bits(void)
{
	u32 bits = user_access | (el0_programming ? 1 : 0);

#ifndef CONFIG_ARM64
	if (eu_version(config) == 2)
		bits &= 1;
#endif
	return bits;
}

static int __init kmod_enable_user_init(void)
{
	const char *why;
	int ret;

#if !EU_PER_THREAD
	ret = eu_refuse_per_thread();
	if (ret)
		return ret;
#endif
#ifndef CONFIG_ARM64
	/*
	 * Before any ARMv7 instruction: the object's cp15 c9 accesses and `isb` are
	 * undefined on an ARMv6 CPU.
	 */
	if (!eu_cpu_is_armv7(read_cpuid_id())) {
		pr_err("not an ARMv7 or later CPU (MIDR 0x%08x): this is the ARMv7 flavour; an ARM1176 (Raspberry Pi 1 / Zero) takes the ARMv6 flavour (make FLAVOUR=armv6): refusing to load\n",
		       read_cpuid_id());
		return -ENODEV;
	}
#endif
	/* This CPU's ID register and PMCR.N (no PMU state is changed), on one CPU. */
	preempt_disable();
	ret = eu_configure(&config, user_access, el0_programming, events,
			   cycle_counter, EU_SENTINEL_ARG layout, sizeof(layout),
			   &why);
	preempt_enable();
	if (ret) {
		pr_err("%s (" EU_VERSION "=0x%x): refusing to load\n", why, eu_version(config));
		return ret;
	}
#ifdef CONFIG_ARM64
	if (config.sentinel && kmod_eu_perf_kernel_data_locked_down()) {
		pr_err("sentinel=1 tells every process how much the kernel ran, and the kernel is locked down against kernel-level perf data (lockdown=confidentiality): refusing to load\n");
		return -EPERM;
	}
#endif
	slots = kcalloc(nr_cpu_ids, sizeof(*slots), GFP_KERNEL);
	if (!slots)
		return -ENOMEM;
	ret = kmod_eu_perf_init();
	if (ret)
		goto free_slots;
	/* Before the grants: an idle exit right after a CPU's grant must find it. */
	ret = cpu_pm_register_notifier(&kmod_eu_cpu_pm_nb);
	if (ret)
		goto free_slots;
#if EU_PER_THREAD
	/* preempt_notifier_register warns unless the scheduler's static key is on. */
	if (!cpu_wide)
		preempt_notifier_inc();
#endif
	WRITE_ONCE(installing, true);
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "perf/kmod_enable_user:online",
				kmod_eu_cpu_online, kmod_eu_cpu_offline);
	WRITE_ONCE(installing, false);
	if (ret < 0)
		goto unregister;
	/* For CPUHP_AP_ONLINE_DYN the positive return value is the allocated state. */
	hp_state = ret;
#if EU_PER_THREAD
	if (!cpu_wide) {
		ret = misc_register(&eu_misc);
		if (ret) {
			pr_err("cannot register /dev/" KMOD_EU_DEVICE_NAME " (%pe): refusing to load\n",
			       ERR_PTR(ret));
			cpuhp_remove_state(hp_state);
			goto unregister;
		}
	}
#endif
	mutex_lock(&state_lock);
	live = true;
	mutex_unlock(&state_lock);
#if EU_PER_THREAD
	if (!cpu_wide) {
		pr_info("loaded, per-thread grant (cpu_wide=0): the module's counters run on every online CPU and on CPUs that come online later (" EU_VERSION "=0x%x, %u event counters); " EU_COUNTING "\n",
			eu_version(config), config.event_counters, layout);
		char who[48] = "no group= given";

		if (group >= 0)
			snprintf(who, sizeof(who), "members of group %d", group);
		pr_info("who reads what: threads that opened /dev/" KMOD_EU_DEVICE_NAME " (%s, and CAP_PERFMON or CAP_SYS_ADMIN holders) and asked with KMOD_EU_IOC_GRANT get " EU_USERENR " %s (%s) only while they run, on whichever CPU%s; everybody else traps, their other threads and their children too\n",
			who, eu_access_names(eu_granted_bits()),
			eu_grant_words(eu_granted_bits()),
			follow ? ", and the module's counters follow them (follow=1: saved at switch-out, written back at switch-in)" :
				 "; the counters are the CPU's (follow=0: a region that spans a switch counts whoever ran)");
		pr_info("rmmod is refused (in use) while a file of /dev/" KMOD_EU_DEVICE_NAME " is open\n");
	} else
#endif
	pr_info("loaded: " EU_USERENR " = %s (%s) on every online CPU and on CPUs that come online later (" EU_VERSION "=0x%x, %u event counters); " EU_COUNTING "\n",
		eu_access_names(eu_granted_bits()),
		eu_grant_words(eu_granted_bits()),
		eu_version(config), config.event_counters, layout);
	if (!kmod_eu_perf_any_pmu())
		pr_info("no perf driver (arm_pmu) for these CPUs: perf holds no counter and can get none, nothing is reserved, no keeper event\n");
	else if (!EU_KEEPER)
		pr_info("left to perf: " EU_CYCLES_NOTE " and event counters below %u (the layout's are taken out of perf's counter mask); no keeper event: with EN, EL0 owns " EU_PMCR ".E\n",
			config.event_counters - (unsigned int)hweight64(eu_layout_mask()));
	else
		pr_info("left to perf: " EU_CYCLES_NOTE " and event counters below %u (the layout's are taken out of perf's counter mask), minus one counter per CPU for the module's keeper event, which keeps perf's " EU_PMCR ".E on while the module is loaded\n",
			config.event_counters - (unsigned int)hweight64(eu_layout_mask()));
	if (el0_programming)
		pr_warn("el0_programming=1: every process may now program the PMU: count at " EU_EL1 " (a side channel into the kernel), and stop or reset perf's counters and the watchdog\n");
	else if (cpu_wide || !EU_PER_THREAD)
		pr_warn("cpu_wide=1: every process may now read every event counter of its CPU, perf's included, bypassing perf_event_paranoid, LSM and seccomp (a timing side channel)\n");
	else
		pr_warn("a granted thread may read every event counter of its CPU while it runs (" EU_USERENR ".ER), perf's included; before PMUv3p9 ER cannot be narrowed to the module's counters\n");
	return 0;

unregister:
#if EU_PER_THREAD
	if (!cpu_wide)
		preempt_notifier_dec();
#endif
	cpu_pm_unregister_notifier(&kmod_eu_cpu_pm_nb);
	synchronize_rcu();
free_slots:
	kmod_eu_perf_exit();
	kfree(slots);
	slots = NULL;
	return ret;
}

static void __exit kmod_enable_user_exit(void)
{
#if EU_PER_THREAD
	/* No file is open (.owner holds the module while one is): no notifier is linked. */
	if (!cpu_wide)
		misc_deregister(&eu_misc);
#endif
	mutex_lock(&state_lock);
	live = false;
	mutex_unlock(&state_lock);
	/*
	 * No CPU PM re-grant may follow a CPU's restore: unregister first, and wait for
	 * notifiers already running (with interrupts off, an RCU read-side section).
	 */
	cpu_pm_unregister_notifier(&kmod_eu_cpu_pm_nb);
	synchronize_rcu();
	/* Runs kmod_eu_cpu_offline on every online CPU before the state is freed. */
	cpuhp_remove_state(hp_state);
	/* Every CPU is down for the module: its counters go back to perf. */
	kmod_eu_perf_exit();
	kfree(slots);
	slots = NULL;
#if EU_PER_THREAD
	if (!cpu_wide)
		preempt_notifier_dec();
#endif
	pr_info("unloaded: " EU_EL0 " access revoked, the module's counters released on every online CPU\n");
}

#elif defined(CONFIG_ARM) /* ARMv6 flavour */

MODULE_DESCRIPTION("Lets user space read the PMU counters directly (ARM1176: SUNAVCR.V); stock-kernel flavour: C glue + Rust object");

static struct kmod_eu_armv6 sunavcr;

/*
 * The ARM1176 has one User-mode access bit, SUNAVCR.V (ARM1176JZF-S TRM 3.2.50): it opens
 * PMCR, CCR, CR0 and CR1 to reads AND writes. There is no read-only grant, so, as the
 * ARMv7 flavour does for PMUv2, nothing is granted unless the loader asks for it.
 */
static bool el0_programming;
module_param(el0_programming, bool, 0444);
MODULE_PARM_DESC(el0_programming, "Set SUNAVCR.V: every process may then read and program the ARM1176 PMU (PMCR, CCR, CR0, CR1): count the kernel's events (a side channel into the kernel) and reset or stop the counters; the ARM1176 has no read-only grant, so without it the module refuses to load; default 0");

/*
 * perf's used_mask on this CPU (kmod_enable_user_perf.c), and SUNAVCR.V set only when
 * it is empty: with interrupts off, perf cannot schedule an event on this CPU in
 * between (it changes used_mask there with interrupts off).
 */
struct eu_v6_enable {
	u64 perf_used;
	int ret;
};

static void eu_v6_enable_here(struct eu_v6_enable *e)
{
	unsigned long flags;

	local_irq_save(flags);
	e->perf_used = kmod_eu_perf_used_here();
	e->ret = e->perf_used ? -EBUSY : kmod_eu_armv6_enable(&sunavcr);
	local_irq_restore(flags);
}

static int __init kmod_enable_user_init(void)
{
	u32 midr = read_cpuid_id();
	struct eu_v6_enable e;
	unsigned int cpu;
	const char *why;
	int ret;

	ret = eu_refuse_per_thread();
	if (ret)
		return ret;
	if (!kmod_eu_armv6_is_arm1176(midr)) {
		pr_err("not an ARM1176 (MIDR 0x%08x, part 0x%03x; SUNAVCR exists only there): this is the ARMv6 flavour; an ARMv7 or later CPU (Raspberry Pi 2/3/4/5 on a 32-bit kernel) takes the ARMv7 flavour (make FLAVOUR=armv7): refusing to load\n",
		       midr, kmod_eu_armv6_part_number(midr));
		return -ENODEV;
	}
	if (!el0_programming) {
		pr_err("the ARM1176's only User-mode grant (SUNAVCR.V) lets every process program the PMU as well as read it; load with el0_programming=1 to grant that: refusing to load\n");
		return -EOPNOTSUPP;
	}
	/*
	 * perf's ARMv6 driver takes its counters by number (armv6pmu_get_event_idx,
	 * drivers/perf/arm_v6_pmu.c 6.12), so none can be reserved: the module programs no
	 * counter, finds the arm_pmu (no keeper) and refuses while perf holds any counter.
	 */
	ret = kmod_eu_perf_init();
	if (ret)
		return ret;
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		ret = kmod_eu_perf_cpu_up(cpu, 0, false, &why);
		if (ret == KMOD_EU_CPU_NOT_NAMED) {
			why = "cpus= leaves out the ARM1176, the only CPU";
			ret = -EINVAL;
		}
		if (ret)
			break;
	}
	cpus_read_unlock();
	if (ret) {
		pr_err("%s (%pe): refusing to load\n", why, ERR_PTR(ret));
		kmod_eu_perf_exit();
		return ret;
	}
	/* The ARM1176 is a uniprocessor core: stay on it while SUNAVCR is changed. */
	preempt_disable();
	eu_v6_enable_here(&e);
	preempt_enable();
	ret = e.ret;
	if (ret == -EBUSY) {
		pr_err("perf holds counters of this CPU (its used_mask as PMCR bits 0x%llx: bit 31 CCNT, 0 CR0, 1 CR1); SUNAVCR.V would let every process reset and stop them, and perf's ARMv6 driver cannot be kept off counters: refusing to load while perf uses the PMU\n",
		       e.perf_used);
		kmod_eu_perf_exit();
		return ret;
	}
	kmod_eu_perf_exit();
	if (ret) {
		pr_err("SUNAVCR.V did not stick: wrote 0x%x, read back 0x%x (QEMU's ARM1176 has a dummy c15 that reads 0; on hardware, Linux must run in the Secure state): refusing to load\n",
		       sunavcr.written, sunavcr.read_back);
		return ret;
	}
	pr_info("loaded: SUNAVCR 0x%x -> 0x%x (V=1): User mode may now use the PMU (PMCR, CCR, CR0, CR1)\n",
		sunavcr.previous, sunavcr.read_back);
	pr_warn("el0_programming=1: every process may now read and program the PMU (a timing side channel, and counting the kernel's events)\n");
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
#error "kmod-enable-user/stock supports arm64 and 32-bit ARM (ARMv6, ARMv7) kernels only"
#endif

module_init(kmod_enable_user_init);
module_exit(kmod_enable_user_exit);
