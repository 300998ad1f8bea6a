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
 * arm_pmu (once per PMU) and, with `keeper`, creates the CPU's keeper event. 0, or
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
/* On the CPU, interrupts off: perf's used_mask there as PMCNTENSET(_EL0) bits. */
u64 kmod_eu_perf_used_here(void);
/* Whether lockdown forbids kernel-level perf data (the sentinel is refused then). */
bool kmod_eu_perf_kernel_data_locked_down(void);
/* After every CPU is down: gives the reserved counters back to perf; frees the tables. */
void kmod_eu_perf_exit(void);

#endif
