// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * kmod_enable_user, every flavour (arm64, and 32-bit ARM's ARMv7 and ARMv6): which
 * counters are perf's, from perf's own bookkeeping. Linked into both module flavours
 * (the stock glue and, on arm64, the Rust-for-Linux module). The same code for every
 * arm_pmu driver: drivers/perf/arm_pmuv3.c (arm64, and its 32-bit build for ARMv8
 * cores under a 32-bit kernel), arm_v7_pmu.c (ARMv7 PMUv1/v2) and arm_v6_pmu.c
 * (ARM1176); only perf's counter numbering differs (below).
 *
 * - Reservation: the layout's event counters are taken out of the counters perf may
 *   allocate from (struct arm_pmu, include/linux/perf/arm_pmu.h: `cntr_mask` since
 *   Linux 6.12, `num_events` before; which one, features.mk probes in the headers), so
 *   perf cannot hand them out while the module holds them (armv8pmu_get_single_idx/
 *   get_chain_idx and armv7pmu_get_event_idx walk that mask, 6.12; before it both
 *   walked indexes 1 .. num_events - 1). A counter perf already holds at load stays
 *   perf's: its bit in perf's per-CPU `used_mask` makes the grant on that CPU fail with
 *   -EBUSY (the Rust object checks it). arm_v6_pmu.c's armv6pmu_get_event_idx takes
 *   its two counters by number, whatever the mask says: perf cannot be narrowed there,
 *   so the ARMv6 flavour (which programs no counter) reserves nothing and refuses to
 *   load while perf holds any counter.
 * - Keeper: one pinned, CPU-wide, in-kernel perf event per CPU, owned by the module
 *   (SW_INCR with every level excluded: it counts nothing). While it exists perf's
 *   used_mask on that CPU is never empty, so perf's armpmu_enable() always restarts
 *   the PMU (armv8pmu_start / armv7pmu_start set PMCR.E) after each armpmu_disable()
 *   (armv8pmu_stop / armv7pmu_stop clear it): the module's counters cannot be left
 *   frozen when perf's last own event leaves the CPU. It costs perf one general
 *   counter on every CPU. The glue decides per flavour whether to have one.
 * - used_mask: read on the CPU with interrupts off (perf changes it there, under
 *   its context lock with interrupts off), as PMCNTENSET bits (31: the cycle counter).
 *   With `cntr_mask` (Linux 6.12 on) arm_pmuv3.c and arm_v7_pmu.c number perf's index
 *   as the counter (31 = the cycle counter, ARMV8_PMU_CYCLE_IDX / ARMV7_IDX_CYCLE_COUNTER;
 *   32 = PMICNTR_EL0). Before it index 0 is the cycle counter and index i the counter
 *   i - 1 (ARMV8_IDX_TO_COUNTER, arch/arm64/kernel/perf_event.c, and
 *   ARMV7_IDX_TO_COUNTER, arch/arm/kernel/perf_event_v7.c, Linux 6.1). arm_v6_pmu.c
 *   keeps that older numbering in every release (ARMV6_CYCLE_COUNTER = 0, ARMV6_COUNTER0
 *   = 1, ARMV6_COUNTER1 = 2): the ARMv6 flavour (KMOD_EU_ARMV6) reads it so. Bits above
 *   the counters (Krait's and Scorpion's column bits in arm_v7_pmu.c) come out above
 *   the layout and never refuse it.
 * - No arm_pmu: without CONFIG_ARM_PMU, or on a 32-bit CPU whose device tree has no PMU
 *   node (no arm_pmu driver probed; the drivers are built in, so none can appear after
 *   boot), perf has no counter on the CPU and can get none: nothing is reserved, there
 *   is no keeper, and perf holds nothing. arm64 keeps refusing the load there.
 *
 * The arm_pmu is found through the keeper itself: to_arm_pmu(event->pmu).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/perf/arm_pmu.h>
#include <linux/percpu.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/smp.h>

#include <asm/barrier.h>
#ifdef CONFIG_ARM64
#include <asm/sysreg.h>
#endif

#include "kmod_enable_user_owners.h"
#include "kmod_enable_user_perf.h"
#ifdef KMOD_EU_ARMV7
#include "kmod_enable_user_stock.h"
#endif

#ifdef CONFIG_ARM_PMU

#define EU_MAX_PMUS 4
/* PMCR_EL0.E, bit 0 (Arm ARM D24.5 PMCR_EL0; Linux 6.1 has no arm_pmuv3.h to name it). */
#define EU_PMCR_E BIT_ULL(0)
/* PMUSERENR(_EL0).EN, bit 0: EL0 may write the PMU (Arm ARM D24.5; DDI 0406C C12). */
#define EU_USERENR_EN BIT_ULL(0)

/* One arm_pmu whose counters the module narrowed, and what it took away. */
struct eu_reserved_pmu {
	struct arm_pmu *pmu;
#ifdef KMOD_EU_HAVE_CNTR_MASK
	u64 cleared;		/* cntr_mask bits the module cleared */
#else
	int old_num_events;	/* num_events before the module narrowed it */
	u64 reserved;		/* the counters it took away */
#endif
};

static DEFINE_MUTEX(eu_perf_lock);
static struct eu_reserved_pmu eu_pmus[EU_MAX_PMUS];
static unsigned int eu_n_pmus;
static struct perf_event **eu_keepers;
static struct arm_pmu **eu_cpu_pmu;
/* 32-bit ARM: CPUs without an arm_pmu (perf has no counter there). */
static unsigned long *eu_no_pmu;

/* What module init found for one possible CPU (kmod_eu_owners_find_pmu). */
struct eu_probe {
	struct arm_pmu *pmu;
	int ret;
	const char *why;
};
static struct eu_probe *eu_probes;

static void eu_free_tables(void)
{
	kfree(eu_keepers);
	kfree(eu_cpu_pmu);
	bitmap_free(eu_no_pmu);
	kfree(eu_probes);
	eu_keepers = NULL;
	eu_cpu_pmu = NULL;
	eu_no_pmu = NULL;
	eu_probes = NULL;
}

int kmod_eu_perf_init(void)
{
	unsigned int cpu;
	int ret = kmod_eu_owners_init();

	if (ret)
		return ret;
	eu_keepers = kcalloc(nr_cpu_ids, sizeof(*eu_keepers), GFP_KERNEL);
	eu_cpu_pmu = kcalloc(nr_cpu_ids, sizeof(*eu_cpu_pmu), GFP_KERNEL);
	eu_no_pmu = bitmap_zalloc(nr_cpu_ids, GFP_KERNEL);
	eu_probes = kcalloc(nr_cpu_ids, sizeof(*eu_probes), GFP_KERNEL);
	if (!eu_keepers || !eu_cpu_pmu || !eu_no_pmu || !eu_probes) {
		eu_free_tables();
		return -ENOMEM;
	}
	/*
	 * Every possible CPU's arm_pmu is found here, in module init, not in the CPU
	 * hotplug callbacks: the probe is a task-bound event, and while no other
	 * task-bound event exists perf's accounting of it enables a static key
	 * (kernel/events/core.c account_event → static_branch_enable →
	 * static_key_enable, which takes cpus_read_lock: kernel/jump_label.c, Linux 6.12).
	 * Around a CPU's online the hotplug lock is held for write by the task that
	 * onlines it, so the probe would deadlock there (seen: Debian's 6.1 armmp kernel
	 * hung in CPU 1's offline/online right after a task-bound perf stat had ended), and
	 * under cpuhp_setup_state it would be a recursive read. The arm_pmus stay: their
	 * drivers are built in and cannot be unbound (arm_pmuv3.c and arm_v7_pmu.c set
	 * suppress_bind_attrs; the ARMv6 flavour uses its PMU during init only).
	 */
	for_each_possible_cpu(cpu) {
		struct eu_probe *p = &eu_probes[cpu];

		p->why = "";
		p->ret = kmod_eu_owners_find_pmu(cpu, &p->pmu, &p->why);
	}
	return 0;
}

/* Gives `r`'s counters back to perf. Under eu_perf_lock. */
static void eu_unreserve(struct eu_reserved_pmu *r)
{
#ifdef KMOD_EU_HAVE_CNTR_MASK
	unsigned int c;

	for (c = 0; c < 31; c++)
		if (r->cleared & BIT_ULL(c))
			set_bit(c, r->pmu->cntr_mask);
#else
	WRITE_ONCE(r->pmu->num_events, r->old_num_events);
#endif
}

/* The PMCNTENSET_EL0 bits of the counters taken from `r`'s PMU. */
static u64 eu_reserved_bits(const struct eu_reserved_pmu *r)
{
#ifdef KMOD_EU_HAVE_CNTR_MASK
	return r->cleared;
#else
	return r->reserved;
#endif
}

/* Whether `pmu`'s counters are narrowed. Under eu_perf_lock. */
static bool eu_reserved(struct arm_pmu *pmu)
{
	unsigned int i;

	for (i = 0; i < eu_n_pmus; i++)
		if (eu_pmus[i].pmu == pmu)
			return true;
	return false;
}

/* Narrows `pmu` into `r`; `general` its event counters before. Under eu_perf_lock. */
static int eu_narrow(struct eu_reserved_pmu *r, struct arm_pmu *pmu, u64 layout_mask,
		     unsigned int *general, const char **why)
{
	r->pmu = pmu;
#ifdef KMOD_EU_HAVE_CNTR_MASK
	unsigned int i;

	r->cleared = 0;
	for (i = 0; i < 31; i++) {
		if (!(layout_mask & BIT_ULL(i)))
			continue;
		if (!test_bit(i, pmu->cntr_mask)) {
			*why = "a layout counter is not one of this PMU's counters (cntr_mask)";
			return -ENODEV;
		}
	}
	*general = bitmap_weight(pmu->cntr_mask, 31);
	for (i = 0; i < 31; i++) {
		if (layout_mask & BIT_ULL(i)) {
			clear_bit(i, pmu->cntr_mask);
			r->cleared |= BIT_ULL(i);
		}
	}
#else
	{
		/* num_events counts PMCCNTR_EL0 (index 0) and counters 0..num_events-2. */
		int n = READ_ONCE(pmu->num_events) - 1;
		int k = hweight64(layout_mask & GENMASK_ULL(30, 0));

		/* GENMASK only once n >= k >= 1: its bounds must be in range. */
		if (n < k || (k && (layout_mask & GENMASK_ULL(30, 0)) !=
				   GENMASK_ULL(n - 1, n - k))) {
			*why = "the layout's counters are not the top of this PMU's counters (num_events)";
			return -ENODEV;
		}
		*general = n;
		r->old_num_events = n + 1;
		r->reserved = layout_mask & GENMASK_ULL(30, 0);
		WRITE_ONCE(pmu->num_events, n + 1 - k);
	}
#endif
	return 0;
}

/*
 * Takes `layout_mask`'s event counters away from `pmu`; 0 or -errno. Under eu_perf_lock.
 * Before the narrowing, kmod_eu_owners_vet refuses while perf holds or was promised
 * counters of `pmu` (nothing changed yet); after it, the same walk catches what perf
 * handed out meanwhile, and the counters go back (kmod_enable_user_owners.c).
 */
static int eu_reserve(struct arm_pmu *pmu, u64 layout_mask, bool keeper, const char **why)
{
	struct eu_reserved_pmu *r;
	unsigned int general;
	int ret;

	if (eu_reserved(pmu))
		return 0;
	if (eu_n_pmus == EU_MAX_PMUS) {
		*why = "more than 4 PMU types (big.LITTLE clusters)";
		return -ENODEV;
	}
	ret = kmod_eu_owners_vet(pmu, layout_mask, false, why);
	if (ret)
		return ret;
	ret = eu_narrow(&eu_pmus[eu_n_pmus], pmu, layout_mask, &general, why);
	if (ret)
		return ret;
	r = &eu_pmus[eu_n_pmus];
	ret = kmod_eu_owners_vet(pmu, layout_mask, true, why);
	if (ret) {
		eu_unreserve(r);
		return ret;
	}
	/* kmod_eu_perf_cpu_pm_exit reads the table without the lock: entry first. */
	smp_store_release(&eu_n_pmus, eu_n_pmus + 1);
	kmod_eu_owners_report_kvm(pmu, general, hweight64(layout_mask & GENMASK_ULL(30, 0)),
				  keeper);
	return 0;
}

/* On the CPU, interrupts off: quiets the layout's counters unless perf holds one. */
static void eu_quiet_on_cpu(void *info)
{
	u64 layout = *(u64 *)info;
	unsigned int cpu = smp_processor_id();

	if (!(kmod_eu_perf_used_of(eu_cpu_pmu[cpu]) & layout))
		kmod_eu_owners_quiet_here(layout, true);
}

int kmod_eu_perf_cpu_up(unsigned int cpu, u64 layout_mask, bool keeper,
			const char **why)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.config = 0x00,	/* SW_INCR: counts only software increments */
		.pinned = 1,
		.disabled = 1,
		.exclude_user = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	struct perf_event *event;
	struct arm_pmu *pmu = NULL;
	bool named = kmod_eu_owners_named(cpu);
	int ret;

	*why = "";
	if (!eu_keepers || cpu >= nr_cpu_ids)
		return -EINVAL;
	clear_bit(cpu, eu_no_pmu);
	/* The CPU's arm_pmu, found at init without touching any CPU's perf context. */
	pmu = eu_probes[cpu].pmu;
	ret = eu_probes[cpu].ret;
	*why = eu_probes[cpu].why;
	if (ret == -ENOENT && IS_ENABLED(CONFIG_ARM)) {
		/*
		 * 32-bit ARM: no PMU took the probe event, no arm_pmu drives this CPU (no PMU
		 * node): perf has no counter here and can get none.
		 */
		set_bit(cpu, eu_no_pmu);
		*why = "";
		return named ? 0 : KMOD_EU_CPU_NOT_NAMED;
	}
	if (ret == -ENOENT)
		ret = -ENODEV;	/* arm64 needs perf's driver (not "Unknown symbol") */
	if (ret)
		return named ? ret : KMOD_EU_CPU_NOT_NAMED;
	mutex_lock(&eu_perf_lock);
	/* A CPU `cpus=` leaves out narrows nothing; a named one may (once per PMU). */
	ret = named ? eu_reserve(pmu, layout_mask, keeper, why) : 0;
	if (!ret && eu_reserved(pmu)) {
		eu_cpu_pmu[cpu] = pmu;
		/* The reserved counters have no other owner to reset them here. */
		smp_call_function_single(cpu, eu_quiet_on_cpu, &layout_mask, 1);
	}
	mutex_unlock(&eu_perf_lock);
	if (ret)
		return ret;
	if (!named)
		return KMOD_EU_CPU_NOT_NAMED;
	if (!keeper)
		return 0;
	/* The keeper goes to this arm_pmu only: its own dynamic type. */
	attr.type = pmu->pmu.type;
	/* Disabled: it gets no counter before the reservation above. */
	event = perf_event_create_kernel_counter(&attr, cpu, NULL, NULL, NULL);
	if (IS_ERR(event)) {
		*why = "perf refused the module's keeper event (perf_event_create_kernel_counter)";
		return PTR_ERR(event);
	}
	perf_event_enable(event);
	if (READ_ONCE(event->state) != PERF_EVENT_STATE_ACTIVE) {
		*why = "perf could not place the module's keeper event on this CPU (every counter it may use is taken)";
		perf_event_release_kernel(event);
		return -EBUSY;
	}
	eu_keepers[cpu] = event;
	return 0;
}

void kmod_eu_perf_cpu_down(unsigned int cpu)
{
	struct perf_event *event;

	if (!eu_keepers || cpu >= nr_cpu_ids)
		return;
	event = eu_keepers[cpu];
	eu_keepers[cpu] = NULL;
	if (event)
		perf_event_release_kernel(event);
}

bool kmod_eu_perf_any_pmu(void)
{
	unsigned int cpu;

	if (!eu_cpu_pmu)
		return false;
	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		if (READ_ONCE(eu_cpu_pmu[cpu]))
			return true;
	return false;
}

bool kmod_eu_perf_keeper_active(unsigned int cpu)
{
	struct perf_event *event;

	if (!eu_keepers || cpu >= nr_cpu_ids)
		return false;
	event = eu_keepers[cpu];
	return event && READ_ONCE(event->state) == PERF_EVENT_STATE_ACTIVE;
}

/*
 * On the CPU: PMCR(_EL0).E, and the module's grant taken back if PMUSERENR(_EL0) still
 * holds it (then an isb: revoked before any EL0 instruction runs again). arm64's system
 * registers here; the AArch32 ones in the Rust object (pmu-armv7 pmu_enabled,
 * withdraw). The ARMv6 flavour has no keeper and never asks.
 */
static bool eu_pmu_enabled_here(void)
{
#ifdef CONFIG_ARM64
	return read_sysreg(pmcr_el0) & EU_PMCR_E;
#elif defined(KMOD_EU_ARMV7)
	return kmod_eu_armv7_pmu_enabled();
#else
	return true;
#endif
}

static void eu_withdraw_here(u64 granted)
{
#ifdef CONFIG_ARM64
	if (granted && read_sysreg(pmuserenr_el0) == granted) {
		write_sysreg(0, pmuserenr_el0);
		isb();
	}
#elif defined(KMOD_EU_ARMV7)
	kmod_eu_armv7_withdraw((u32)granted);
#endif
}

int kmod_eu_perf_grant_check_here(u64 granted)
{
	unsigned int cpu = smp_processor_id();

	/*
	 * Without a keeper (arm64 with el0_programming=1: EL0 owns PMCR_EL0.E) there is
	 * nothing to check. With one, it must be on the PMU, and PMCR.E set: while the
	 * keeper is ACTIVE perf's used_mask is not empty, so perf's armpmu_enable has run
	 * armv8pmu_start / armv7pmu_start (drivers/perf/arm_pmu.c, arm_pmuv3.c,
	 * arm_v7_pmu.c); E clear means perf stopped the PMU and the grant would show frozen
	 * counters. The keeper is evicted when an older pinned CPU-wide group takes its
	 * counter (core.c merge_sched_in puts a pinned event that does not fit into ERROR):
	 * then, once perf's last own event leaves, armv8pmu_stop / armv7pmu_stop clears E
	 * and nothing sets it again. The module never sets E itself here: it takes its own
	 * grant back instead. A grant with EN (the ARMv7 flavour keeps its keeper under
	 * el0_programming=1) lets EL0 write PMCR.E itself: then only the keeper is checked.
	 */
	if (!eu_keepers || cpu >= nr_cpu_ids || !eu_keepers[cpu] ||
	    (kmod_eu_perf_keeper_active(cpu) &&
	     ((granted & EU_USERENR_EN) || eu_pmu_enabled_here())))
		return 0;
	eu_withdraw_here(granted);
	return -ENOLINK;
}

void kmod_eu_perf_keeper_revive(unsigned int cpu)
{
	if (!eu_keepers || cpu >= nr_cpu_ids || !eu_keepers[cpu] ||
	    kmod_eu_perf_keeper_active(cpu))
		return;
	/* perf_event_enable clears ERROR and schedules it again (core.c _perf_event_enable). */
	perf_event_enable(eu_keepers[cpu]);
}

void kmod_eu_perf_cpu_pm_exit(bool granted)
{
	unsigned int cpu = smp_processor_id();
	unsigned int i;
	u64 reserved = 0;

	if (!eu_cpu_pmu || cpu >= nr_cpu_ids || !eu_cpu_pmu[cpu])
		return;
	/*
	 * Without the lock (interrupts off): entries are complete before eu_n_pmus counts
	 * them (eu_reserve), and are emptied only once every CPU is down for the module.
	 */
	for (i = 0; i < smp_load_acquire(&eu_n_pmus); i++)
		if (eu_pmus[i].pmu == eu_cpu_pmu[cpu])
			reserved = eu_reserved_bits(&eu_pmus[i]);
	reserved &= ~kmod_eu_perf_used_of(eu_cpu_pmu[cpu]);
	kmod_eu_owners_quiet_here(reserved, !granted);
}

u64 kmod_eu_perf_used_here(void)
{
	unsigned int cpu = smp_processor_id();

	if (!eu_cpu_pmu || cpu >= nr_cpu_ids)
		return ~0ULL;	/* unknown: everything counts as perf's */
	if (test_bit(cpu, eu_no_pmu))
		return 0;	/* no arm_pmu: perf holds nothing here */
	if (!eu_cpu_pmu[cpu])
		return ~0ULL;
	return kmod_eu_perf_used_of(eu_cpu_pmu[cpu]);
}

u64 kmod_eu_perf_used_of(struct arm_pmu *pmu)
{
	struct pmu_hw_events *hw = this_cpu_ptr(pmu->hw_events);
	u64 used = 0;
	unsigned int i;

	for (i = 0; i < ARMPMU_MAX_HWEVENTS && i < 64; i++) {
		if (!test_bit(i, hw->used_mask))
			continue;
#if defined(KMOD_EU_HAVE_CNTR_MASK) && !defined(KMOD_EU_ARMV6)
		used |= BIT_ULL(i);
#else
		used |= i == 0 ? BIT_ULL(31) : BIT_ULL(i - 1);
#endif
	}
	return used;
}

bool kmod_eu_perf_kernel_data_locked_down(void)
{
	/*
	 * perf refuses kernel-level data under lockdown=confidentiality (LOCKDOWN_PERF,
	 * include/linux/security.h; kernel/events/core.c perf_event_open): so does the
	 * sentinel. Without CONFIG_SECURITY this is the inline that answers 0.
	 */
	return security_locked_down(LOCKDOWN_PERF) != 0;
}

void kmod_eu_perf_exit(void)
{
	unsigned int i;

	mutex_lock(&eu_perf_lock);
	for (i = 0; i < eu_n_pmus; i++)
		eu_unreserve(&eu_pmus[i]);
	eu_n_pmus = 0;
	mutex_unlock(&eu_perf_lock);
	eu_free_tables();
}

#else /* !CONFIG_ARM_PMU: no arm_pmu at all (32-bit kernels built without perf's driver) */

int kmod_eu_perf_init(void)
{
	/* `cpus=` still says where the grant goes. */
	return kmod_eu_owners_init();
}

int kmod_eu_perf_cpu_up(unsigned int cpu, u64 layout_mask, bool keeper,
			const char **why)
{
	*why = "";
	return kmod_eu_owners_named(cpu) ? 0 : KMOD_EU_CPU_NOT_NAMED;
}

int kmod_eu_perf_grant_check_here(u64 granted)
{
	return 0;	/* no keeper: perf cannot stop the PMU under the grant */
}

void kmod_eu_perf_keeper_revive(unsigned int cpu)
{
}

void kmod_eu_perf_cpu_pm_exit(bool granted)
{
}

void kmod_eu_perf_cpu_down(unsigned int cpu)
{
}

bool kmod_eu_perf_any_pmu(void)
{
	return false;
}

bool kmod_eu_perf_keeper_active(unsigned int cpu)
{
	return false;
}

u64 kmod_eu_perf_used_here(void)
{
	return 0;	/* perf has no counter on any CPU */
}

bool kmod_eu_perf_kernel_data_locked_down(void)
{
	return security_locked_down(LOCKDOWN_PERF) != 0;
}

void kmod_eu_perf_exit(void)
{
}

#endif /* CONFIG_ARM_PMU */
