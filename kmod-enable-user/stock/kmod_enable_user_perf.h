/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * kmod_enable_user, every flavour: perf's bookkeeping (kmod_enable_user_perf.c), for
 * both module flavours' glue. The Rust-for-Linux module declares the same functions.
 */
#ifndef KMOD_ENABLE_USER_PERF_H
#define KMOD_ENABLE_USER_PERF_H

#include <linux/types.h>

/* Allocates the per-CPU tables; 0 or -ENOMEM. */
int kmod_eu_perf_init(void);
/*
 * Process context, `cpu` online: reserves `layout_mask`'s event counters in the CPU's
 * arm_pmu (once per PMU, after kmod_enable_user_owners.c found nothing perf holds or
 * promised there) and, with `keeper`, creates the CPU's keeper event. 0, or
 * KMOD_EU_CPU_NOT_NAMED (kmod_enable_user_owners.h) for a CPU `cpus=` leaves out, or
 * -errno with *why a static sentence.
 */
int kmod_eu_perf_cpu_up(unsigned int cpu, u64 layout_mask, bool keeper,
			const char **why);
/* Process context: releases the CPU's keeper event (perf frees its counter). */
void kmod_eu_perf_cpu_down(unsigned int cpu);
/* Whether any CPU brought up has an arm_pmu (32-bit ARM may have none: no PMU node). */
bool kmod_eu_perf_any_pmu(void);
/* Whether the CPU's keeper event is on the PMU (PERF_EVENT_STATE_ACTIVE). */
bool kmod_eu_perf_keeper_active(unsigned int cpu);
/*
 * On the CPU, interrupts off, right before an apply: 0 when the grant may be given;
 * -ENOLINK when the CPU's keeper is not on the PMU (perf evicted it): then PMUSERENR_EL0
 * is set to 0 if it still holds `granted` (the module's last grant, 0 for none).
 */
int kmod_eu_perf_grant_check_here(u64 granted);
/* Process context: puts an evicted keeper back on the PMU if perf has room (regrant). */
void kmod_eu_perf_keeper_revive(unsigned int cpu);
/*
 * On the CPU, interrupts off, after a CPU PM exit: the counters taken from its PMU lose
 * their interrupt enables and overflow flags, and without a grant (`granted` false)
 * their enables too: perf's reset skips them (kmod_enable_user_owners.c).
 */
void kmod_eu_perf_cpu_pm_exit(bool granted);
/* On the CPU, interrupts off: perf's used_mask there as PMCNTENSET(_EL0) bits. */
u64 kmod_eu_perf_used_here(void);
struct arm_pmu;
/* As kmod_eu_perf_used_here, for `pmu` (on one of its CPUs). */
u64 kmod_eu_perf_used_of(struct arm_pmu *pmu);
/* Whether lockdown forbids kernel-level perf data (the sentinel is refused then). */
bool kmod_eu_perf_kernel_data_locked_down(void);
/* After every CPU is down: gives the reserved counters back to perf; frees the tables. */
void kmod_eu_perf_exit(void);

#endif
