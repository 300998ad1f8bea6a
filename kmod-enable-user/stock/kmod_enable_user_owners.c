// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * kmod_enable_user, every flavour (arm64, and 32-bit ARM's ARMv7 and ARMv6): what the
 * module may take from perf, decided before it takes anything. perf-core code, the same
 * for every arm_pmu driver; linked into both arm64 flavours and both 32-bit ones, beside
 * kmod_enable_user_perf.c (the reservation, the keeper, used_mask), which calls it.
 *
 * The rule: a load (or a CPU's online) that cannot guarantee that perf keeps every
 * counter it handed out or promised refuses before it narrows perf's counter mask,
 * creates a keeper or reschedules anything. perf promises a counter to:
 * - every event bound to a task (perf stat of a command, perf record -p, KVM's vCPU
 *   events on arm64, which are pinned task-bound events on the vCPU threads:
 *   arch/arm64/kvm/pmu-emul.c kvm_pmu_create_perf_event). Such events hold a counter
 *   only while their task runs (armpmu_add/armpmu_del at every switch,
 *   drivers/perf/arm_pmu.c, the same for arm_pmuv3.c, arm_v7_pmu.c and arm_v6_pmu.c), so
 *   used_mask never shows them from the CPU hotplug thread that runs the module's apply;
 * - every CPU-wide event that is not on a counter right now (multiplexed out, disabled
 *   for later, in ERROR until re-enabled).
 * Both are found by walking perf's contexts under RCU (below), with the events of the
 * arm_pmu concerned counted; with any found the load refuses (-EBUSY) unless
 * take_from_perf=1 says the loader accepts what perf loses (logged).
 *
 * The ARMv6 flavour narrows nothing (arm_v6_pmu.c takes its counters by number): for it
 * the same walk refuses a load while perf promised any counter of the PMU, and its glue
 * refuses while perf holds one.
 *
 * KVM (arm64 only): on a host where KVM may run guests, the narrowing changes the vPMU
 * new guests get (Linux 6.12 arch/arm64/kvm/pmu-emul.c kvm_arm_pmu_get_max_counters
 * reads cntr_mask), and VMs restored or migrated in keep a counter count the host no
 * longer places: the load refuses unless kvm_hosts=1. 32-bit ARM has had no KVM since
 * Linux 5.7 (arch/arm/kvm removed), so kvm_hosts= does not exist there.
 *
 * `cpus=`: the CPUs the module grants on (default all). perf's counter mask belongs to
 * the arm_pmu, not to a CPU (struct arm_pmu, include/linux/perf/arm_pmu.h), so a PMU with
 * one named CPU is narrowed on all its CPUs; an unnamed CPU saves perf the keeper's
 * counter, and a PMU with no named CPU (another cluster type) is not narrowed at all.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/kthread.h>
#include <linux/moduleparam.h>
#include <linux/perf_event.h>
#include <linux/perf/arm_pmu.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/smp.h>
#include <linux/string.h>

#include <asm/barrier.h>
#ifdef CONFIG_ARM64
#include <asm/sysreg.h>
#include <asm/virt.h>
#endif

#include "kmod_enable_user_owners.h"
#include "kmod_enable_user_perf.h"
#ifdef KMOD_EU_ARMV7
#include "kmod_enable_user_stock.h"
#endif

#ifdef CONFIG_ARM64
static bool kvm_hosts;
module_param(kvm_hosts, bool, 0444);
MODULE_PARM_DESC(kvm_hosts, "Load on a host where KVM may run guests (EL2 present): new guests then get fewer vPMU counters (the load log says how many), and VMs restored or migrated onto this host keep a counter count the host no longer places (their top counters stop or UNDEF); default 0: refuse");
#endif

static bool take_from_perf;
module_param(take_from_perf, bool, 0444);
MODULE_PARM_DESC(take_from_perf, "Load even though perf has task-bound events (perf stat of a command, KVM vCPUs) or waiting CPU-wide events on the PMU: those may lose counters (pinned ones that no longer fit go to ERROR, <not counted>; flexible ones multiplex); default 0: refuse with -EBUSY");

static char *cpus = "";
module_param(cpus, charp, 0444);
MODULE_PARM_DESC(cpus, "The CPUs to grant on, a CPU list (e.g. 2-3); default empty: every CPU. perf's counter mask belongs to a PMU: a PMU with one named CPU loses the layout's counters on all its CPUs; unnamed CPUs keep the keeper's counter");

static struct cpumask eu_named;

#ifdef CONFIG_ARM64
/* 0, or -EOPNOTSUPP (logged) on a host where KVM may run guests without kvm_hosts=1. */
static int eu_kvm_check(void)
{
	u64 pfr0;
	bool el2;


	/*
	 * Whether KVM may run guests here: KVM needs EL2. The kernel runs at EL2 (VHE), or
	 * was entered at EL2 and left KVM's nVHE hypervisor there: then EL2 is implemented
	 * (ID_AA64PFR0_EL1.EL2, bits [11:8], Arm ARM D19.2). __boot_cpu_mode and
	 * kvm_get_mode(), which say it exactly, are not exported to modules (Linux 6.12
	 * arch/arm64/include/asm/virt.h is_hyp_mode_available, arch/arm64/kvm/arm.c). The
	 * test errs towards refusing: EL2 implemented but the kernel entered at EL1, or
	 * kvm-arm.mode=none, refuse too; a KVM guest reads EL2 as 0 (KVM hides it unless it
	 * offers nested virtualization, and then the guest may run KVM itself).
	 */
	pfr0 = read_sysreg(id_aa64pfr0_el1);
	el2 = is_kernel_in_hyp_mode() || ((pfr0 >> 8) & 0xf) != 0;
	if (IS_ENABLED(CONFIG_KVM) && el2) {
		if (!kvm_hosts) {
			pr_err("KVM may run guests on this host (%s; ID_AA64PFR0_EL1 0x%llx): taking counters from perf changes the vPMU of new guests and breaks VMs restored or migrated here; load with kvm_hosts=1 to accept that: refusing to load\n",
			       is_kernel_in_hyp_mode() ? "the kernel runs at EL2 (VHE)" : "EL2 is implemented",
			       pfr0);
			return -EOPNOTSUPP;
		}
		pr_warn("kvm_hosts=1: KVM may run guests here; do not restore or migrate VMs onto this host while the module is loaded\n");
	}
	return 0;
}
#else
/* 32-bit ARM: no KVM since Linux 5.7. */
static int eu_kvm_check(void)
{
	return 0;
}
#endif

int kmod_eu_owners_init(void)
{
	int ret;

	if (!cpus || !cpus[0]) {
		cpumask_setall(&eu_named);
	} else {
		ret = cpulist_parse(cpus, &eu_named);
		if (ret || cpumask_empty(&eu_named)) {
			pr_err("cpus=%s is not a CPU list naming at least one CPU (e.g. 0,2-3): refusing to load\n",
			       cpus);
			return -EINVAL;
		}
	}
	return eu_kvm_check();
}

bool kmod_eu_owners_named(unsigned int cpu)
{
	return cpumask_test_cpu(cpu, &eu_named);
}

#ifdef CONFIG_ARM_PMU	/* the rest reads struct arm_pmu: only with perf's arm_pmu driver */

/* The probe thread's function: never called (the thread is stopped before it runs). */
static int eu_probe_thread(void *unused)
{
	return 0;
}

int kmod_eu_owners_find_pmu(unsigned int cpu, struct arm_pmu **found, const char **why)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_RAW,
		.size = sizeof(attr),
		.config = 0x00,	/* SW_INCR, as the keeper */
		/*
		 * Never enabled, it only finds the arm_pmu: without exclusions, which a PMU
		 * without a privilege filter refuses (PERF_PMU_CAP_NO_EXCLUDE: arm_v6_pmu.c,
		 * and arm_v7_pmu.c's PMUv1 cores; drivers/perf/arm_pmu.c armpmu_register,
		 * kernel/events/core.c perf_try_init_event, Linux 6.12).
		 */
		.disabled = 1,
	};
	struct task_struct *thread;
	struct perf_event *event;
	struct arm_pmu *pmu;
	int ret = 0;

	/*
	 * A created kthread sleeps until its first wake-up (kernel/kthread.c kthread):
	 * perf_install_in_context adds an event bound to a task that is not running to
	 * that task's context under its lock, with no reschedule of any CPU (Linux 6.12
	 * kernel/events/core.c perf_install_in_context). A CPU-wide event would be added to
	 * the CPU's context with a ctx_resched.
	 */
	thread = kthread_create(eu_probe_thread, NULL, "kmod_eu_probe/%u", cpu);
	if (IS_ERR(thread)) {
		*why = "cannot create the thread that finds the CPU's PMU";
		return PTR_ERR(thread);
	}
	event = perf_event_create_kernel_counter(&attr, cpu, thread, NULL, NULL);
	if (IS_ERR(event)) {
		ret = PTR_ERR(event);
		/*
		 * No PMU took the event: core.c perf_init_event answers -ENOENT, passed on
		 * (the caller decides: -ENODEV on arm64, no PMU to share on 32-bit ARM).
		 */
		*why = ret == -ENOENT ?
			"no perf arm_pmu driver for this CPU (no PMU node in the device tree, or no PMU interrupts in ACPI)" :
			"perf refused the module's probe event (perf_event_create_kernel_counter)";
		goto stop;
	}
	pmu = to_arm_pmu(event->pmu);
	/*
	 * A raw event is offered to every PMU (core.c perf_init_event): make sure this is
	 * an arm_pmu before its memory is written. arm_pmu registers its pmu under its own
	 * name string and points every CPU's hw_events at itself (drivers/perf/arm_pmu.c
	 * armpmu_alloc, armpmu_register); Linux 6.12 also sets EXTENDED_HW_TYPE there.
	 */
	if (
#ifdef KMOD_EU_HAVE_CNTR_MASK
	    !(event->pmu->capabilities & PERF_PMU_CAP_EXTENDED_HW_TYPE) ||
#endif
	    event->pmu->task_ctx_nr != perf_hw_context ||
	    pmu->name != event->pmu->name ||
	    !cpumask_test_cpu(cpu, &pmu->supported_cpus) ||
	    per_cpu_ptr(pmu->hw_events, cpu)->percpu_pmu != pmu) {
		*why = "the PMU that took the module's probe event is not a CPU's arm_pmu";
		ret = -ENODEV;
	} else {
		*found = pmu;
	}
	perf_event_release_kernel(event);
stop:
	kthread_stop(thread);
	return ret;
}

/* What a walk of perf's contexts found on one PMU. */
struct eu_scan {
	struct pmu *pmu;
	unsigned int task_events;
	unsigned int tasks;
	unsigned int cpu_waiting;
	pid_t first_pid;
	char first_comm[TASK_COMM_LEN];
};

/*
 * Under rcu_read_lock: the events of `ctx` on s->pmu, all of them (`every`) or those not
 * on a counter now. perf adds and removes events on ctx->event_list with
 * list_add_rcu/list_del_rcu and frees events and contexts after a grace period
 * (core.c list_add_event, list_del_event, _free_event, put_ctx): the walk is safe
 * without ctx->lock, and sees every event installed before it started.
 */
static unsigned int eu_count_ctx(struct perf_event_context *ctx, struct pmu *pmu,
				 bool every)
{
	struct perf_event *event;
	unsigned int n = 0;

	list_for_each_entry_rcu(event, &ctx->event_list, event_entry) {
		if (event->pmu != pmu)
			continue;
		if (every || READ_ONCE(event->state) != PERF_EVENT_STATE_ACTIVE)
			n++;
	}
	return n;
}

/* The CPU context of `cpu` as `pmu` reaches it, or NULL when it has none yet. */
static struct perf_event_context *eu_cpu_ctx(struct pmu *pmu, unsigned int cpu)
{
#if defined(KMOD_EU_PMU_CPU_CONTEXT)
	/* Before Linux 6.2: struct perf_cpu_context embeds the CPU's context. */
	return &per_cpu_ptr(pmu->pmu_cpu_context, cpu)->ctx;
#elif defined(KMOD_EU_CPU_PMU_CONTEXT_PTR)
	/* Later kernels allocate each CPU's perf_cpu_pmu_context separately. */
	struct perf_cpu_pmu_context *cpc = *per_cpu_ptr(pmu->cpu_pmu_context, cpu);

	return cpc ? READ_ONCE(cpc->epc.ctx) : NULL;
#else
	/*
	 * Linux 6.2 to 6.12: epc.ctx is set when the PMU's first event on that CPU joins
	 * the CPU's context (core.c find_get_pmu_context).
	 */
	return READ_ONCE(per_cpu_ptr(pmu->cpu_pmu_context, cpu)->epc.ctx);
#endif
}

static void eu_scan_contexts(struct eu_scan *s)
{
	struct task_struct *group, *task;
	unsigned int cpu;

	rcu_read_lock();
	for_each_process_thread(group, task) {
		struct perf_event_context *ctx;
		unsigned int n;

#ifdef KMOD_EU_TASK_CTXP_ARRAY
		ctx = rcu_dereference(task->perf_event_ctxp[perf_hw_context]);
#else
		ctx = rcu_dereference(task->perf_event_ctxp);
#endif
		if (!ctx)
			continue;
		/*
		 * A context perf swaps between two clones at a switch
		 * (perf_event_context_sched_out) may be read twice and its twin missed:
		 * twins hold the same events, so a task with events is still found.
		 */
		n = eu_count_ctx(ctx, s->pmu, true);
		if (!n)
			continue;
		if (!s->tasks) {
			s->first_pid = task_pid_nr(task);
			get_task_comm(s->first_comm, task);
		}
		s->tasks++;
		s->task_events += n;
	}
	for_each_possible_cpu(cpu) {
		struct perf_event_context *ctx = eu_cpu_ctx(s->pmu, cpu);
		unsigned long flags;

		if (!ctx)
			continue;
		/*
		 * Under the context's lock: perf schedules a CPU's events out and in again
		 * under it (core.c perf_ctx_lock, ctx_sched_out/ctx_sched_in, e.g. around a
		 * task with pinned events), so an event seen INACTIVE here is one that waits,
		 * not one caught in passing. CPU contexts are per-CPU data, never freed.
		 */
		raw_spin_lock_irqsave(&ctx->lock, flags);
		s->cpu_waiting += eu_count_ctx(ctx, s->pmu, false);
		raw_spin_unlock_irqrestore(&ctx->lock, flags);
	}
	rcu_read_unlock();
}

/* One CPU's used_mask check (and, after the narrowing, the quieting). */
struct eu_cpu_vet {
	struct arm_pmu *pmu;
	u64 layout;
	bool quiet;
	u64 used;
};

static void eu_vet_on_cpu(void *info)
{
	struct eu_cpu_vet *v = info;

	/* Interrupts off (an IPI or the calling CPU's own call): used_mask is stable. */
	v->used = kmod_eu_perf_used_of(v->pmu);
	if (v->quiet && !(v->used & v->layout))
		kmod_eu_owners_quiet_here(v->layout, true);
}

int kmod_eu_owners_vet(struct arm_pmu *pmu, u64 layout_mask, bool after,
		       const char **why)
{
	struct eu_scan scan = { .pmu = &pmu->pmu };
	u64 layout = layout_mask & GENMASK_ULL(30, 0);
	unsigned int cpu;

	/*
	 * Every online CPU of the PMU: a layout counter perf holds anywhere refuses the
	 * load before the mask changes (the check each CPU's apply repeats stays as the
	 * race catcher). The caller holds the CPU hotplug lock (cpuhp_setup_state or a
	 * CPU's hotplug thread).
	 */
	for_each_cpu_and(cpu, &pmu->supported_cpus, cpu_online_mask) {
		struct eu_cpu_vet v = { .pmu = pmu, .layout = layout, .quiet = after };

		if (smp_call_function_single(cpu, eu_vet_on_cpu, &v, 1))
			continue;
		if (v.used & layout) {
			pr_err("cpu%u: perf holds a counter of the layout 0x%llx (its used_mask 0x%llx on PMU %s)%s\n",
			       cpu, layout, v.used, pmu->name,
			       after ? ": the counters go back to perf" : ": nothing was changed");
			*why = "perf holds a counter of the layout";
			return -EBUSY;
		}
	}
	eu_scan_contexts(&scan);
	if (!scan.task_events && !scan.cpu_waiting)
		return 0;
	if (take_from_perf) {
		if (!after)
			pr_warn("take_from_perf=1: %u task-bound perf events in %u tasks (first: pid %d, %s) and %u CPU-wide perf events not on a counter now, on PMU %s, may lose counters: pinned ones that no longer fit go to ERROR (<not counted>) for good, flexible ones multiplex\n",
				scan.task_events, scan.tasks, scan.first_pid,
				scan.tasks ? scan.first_comm : "-", scan.cpu_waiting,
				pmu->name);
		return 0;
	}
	pr_err("perf has promised counters of PMU %s: %u task-bound events in %u tasks (first: pid %d, %s; KVM vCPUs are such tasks) and %u CPU-wide events not on a counter now; the layout would take %u of them (take_from_perf=1 takes them anyway)%s\n",
	       pmu->name, scan.task_events, scan.tasks, scan.first_pid,
	       scan.tasks ? scan.first_comm : "-", scan.cpu_waiting,
	       (unsigned int)hweight64(layout),
	       after ? ": they appeared while the module took the counters, which go back to perf" :
		       ": nothing was changed");
	*why = "perf has task-bound or waiting events on this PMU";
	return -EBUSY;
}

void kmod_eu_owners_report_kvm(struct arm_pmu *pmu, unsigned int general,
			       unsigned int taken, bool keeper)
{
#ifdef CONFIG_ARM64
	if (!kvm_hosts)
		return;
#ifdef KMOD_EU_HAVE_CNTR_MASK
	/* Linux 6.12 arch/arm64/kvm/pmu-emul.c kvm_arm_pmu_get_max_counters: cntr_mask. */
	pr_warn("kvm_hosts=1: new guests on PMU %s get %u event counters (PMCR_EL0.N) instead of %u; with the keeper the host places %u of them at once\n",
		pmu->name, general - taken, general, general - taken - (keeper ? 1 : 0));
#else
	/* Before Linux 6.12 KVM offers guests the hardware's PMCR_EL0.N (reset_pmcr). */
	pr_warn("kvm_hosts=1: new guests on PMU %s still get %u event counters (KVM reads PMCR_EL0.N), but the host places only %u of them at once: the others stop (their perf events go to ERROR)\n",
		pmu->name, general, general - taken - (keeper ? 1 : 0));
#endif
#endif /* CONFIG_ARM64: 32-bit ARM has no KVM */
}

void kmod_eu_owners_quiet_here(u64 reserved, bool disable)
{
	reserved &= GENMASK_ULL(30, 0);
	if (!reserved)
		return;
	/*
	 * perf's reset skips the counters outside its mask (Linux 6.12
	 * drivers/perf/arm_pmuv3.c armv8pmu_reset, arm_v7_pmu.c armv7pmu_reset), and
	 * PMINTENSET/PMCNTENSET are UNKNOWN after a power-up (Arm ARM D24.5): an overflow
	 * interrupt of a reserved counter would reach perf's handler, which does not look
	 * at it.
	 */
#ifdef CONFIG_ARM64
	if (disable)
		write_sysreg(reserved, pmcntenclr_el0);
	write_sysreg(reserved, pmintenclr_el1);
	write_sysreg(reserved, pmovsclr_el0);
	/* The clears take effect before whatever the caller does next with the PMU. */
	isb();
#elif defined(KMOD_EU_ARMV7)
	/*
	 * The same writes to the AArch32 registers (PMCNTENCLR, PMINTENCLR, PMOVSR, isb),
	 * in the Rust object (pmu-armv7 quiet_reserved).
	 */
	kmod_eu_armv7_quiet((u32)reserved, disable);
#endif
	/* ARMv6: its flavour takes no counter, `reserved` is always empty. */
}

#endif /* CONFIG_ARM_PMU */
