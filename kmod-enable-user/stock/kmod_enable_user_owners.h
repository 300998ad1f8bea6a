/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * kmod_enable_user, every flavour: what the module may take from perf, decided before
 * it takes anything (kmod_enable_user_owners.c). Used by kmod_enable_user_perf.c and,
 * for the `cpus=` choice, by the glue of every flavour.
 */
#ifndef KMOD_ENABLE_USER_OWNERS_H
#define KMOD_ENABLE_USER_OWNERS_H

#include <linux/types.h>

struct arm_pmu;

/*
 * kmod_eu_perf_cpu_up's answer for a CPU that `cpus=` does not name: no grant and no
 * keeper there, by choice (the glue logs it and goes on).
 */
#define KMOD_EU_CPU_NOT_NAMED 1

/*
 * Module init, process context, before anything is changed: parses `cpus=` and, on
 * arm64, refuses a host where KVM may run guests unless `kvm_hosts=1` (32-bit ARM has
 * no KVM). 0 or -errno (logged).
 */
int kmod_eu_owners_init(void);
/* Whether `cpus=` names `cpu` (every CPU when it is empty). */
bool kmod_eu_owners_named(unsigned int cpu);
/*
 * Process context: the arm_pmu perf drives `cpu` with, found with a disabled event on a
 * thread that never runs (no CPU's perf context is touched) and checked to be an
 * arm_pmu. 0; -ENOENT when no PMU took the probe (no arm_pmu drives `cpu`), or -errno,
 * with *why a static sentence.
 */
int kmod_eu_owners_find_pmu(unsigned int cpu, struct arm_pmu **pmu, const char **why);
/*
 * Process context: whether perf holds or was promised counters of `pmu` that the
 * narrowing to `layout_mask` would take: a layout counter in any online CPU's used_mask,
 * any task-bound event on `pmu`, any CPU-wide event on `pmu` that is not on a counter
 * now. `after` (run once the counters are taken out of perf's mask): also disables the
 * reserved counters on every online CPU of `pmu` and clears their overflow flags and
 * interrupt enables. 0 or -EBUSY (logged, *why set).
 */
int kmod_eu_owners_vet(struct arm_pmu *pmu, u64 layout_mask, bool after,
		       const char **why);
/*
 * arm64, with kvm_hosts=1: the KVM line of a narrowed PMU, what new guests get.
 * `general` = its counters before. Nothing elsewhere.
 */
void kmod_eu_owners_report_kvm(struct arm_pmu *pmu, unsigned int general,
			       unsigned int taken, bool keeper);
/*
 * On a CPU, interrupts off: the reserved counters `reserved` lose their interrupt
 * enables and overflow flags there, and with `disable` their enables too (arm64's
 * system registers; ARMv7's cp15 registers through the Rust object; ARMv6 reserves
 * nothing).
 */
void kmod_eu_owners_quiet_here(u64 reserved, bool disable);

#endif
