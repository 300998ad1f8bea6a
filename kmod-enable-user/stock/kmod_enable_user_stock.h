/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The interface between the C glue (kmod_enable_user_glue.c) and the Rust object
 * (rust/src/arm64.rs, armv7.rs and armv6.rs over the shared rust/src/grant.rs; linked as
 * kmod_enable_user_rust.o). The structs mirror the #[repr(C)] ones there; both sides
 * assert their size.
 */
#ifndef KMOD_ENABLE_USER_STOCK_H
#define KMOD_ENABLE_USER_STOCK_H

#include <linux/build_bug.h>
#include <linux/stddef.h>
#include <linux/types.h>

/* error_detail of an -EOPNOTSUPP that names no event (PMUv2 without el0_programming). */
#define KMOD_EU_NO_EVENT 0xffffffffU

/* Called by the Rust panic handler; never returns. */
void __noreturn kmod_enable_user_rust_panic(void);

#ifdef CONFIG_ARM64
#define KMOD_EU_MAX_EVENTS 6
/* The longest `layout` text (pmu_armv8::user_enable::LAYOUT_TEXT_MAX) plus the NUL. */
#define KMOD_EU_LAYOUT_SIZE 97

/* The module-wide settings, checked at load (Rust: arm64::KmodEuConfig). */
struct kmod_eu_config {
	u32 user_access;
	u16 events[KMOD_EU_MAX_EVENTS];
	u8 n_events;
	u8 event_counters;	/* PMCR_EL0.N of the loading CPU */
	bool cycle_counter;
	bool el0_programming;
	u8 pmuver;
	bool sentinel;		/* the kernel-entry sentinel (parameter) */
	u8 sentinel_event;	/* INST_RETIRED, or CPU_CYCLES without it */
	bool kernel_at_el2;	/* VHE: the sentinel counts at EL2 */
};
static_assert(sizeof(struct kmod_eu_config) == 24);

/* One CPU's grant (Rust: arm64::KmodEuCpu). */
struct kmod_eu_cpu {
	u64 old_userenr;	/* PMUSERENR_EL0 before the first grant */
	u64 found_userenr;	/* found by the last apply or restore */
	u64 new_userenr;	/* written by the last apply or restore */
	u64 owned;		/* PMCNTENSET_EL0 bits of the module's counters */
	u64 zeroed;		/* module counters the last apply programmed from zero */
	u64 kept;		/* module counters found running and kept (re-grant) */
	u64 released;		/* counters the restore disabled and zeroed */
	u64 taken;		/* module counters in perf's used_mask: left to perf */
	u64 busy_config;	/* -EBUSY: PMEVTYPER<n>_EL0 of the counter perf holds */
	s32 error;		/* 0 or -ENODEV, -EBUSY, -EOPNOTSUPP */
	u32 error_detail;	/* the counter, the event, or PMCR_EL0.N */
	bool applied;
	bool enabled_pmu;	/* the module turned PMCR_EL0.E on */
	u8 pmuver;
	u8 reserved[5];
	u64 perf_used;		/* input: perf's used_mask as PMCNTENSET_EL0 bits */
	/* PMUv3p9 (UEN with PMUACR_EL1; user_enable::Applied): */
	u64 new_acr;		/* PMUACR_EL1 written with UEN (0: not written) */
	u64 outside_userenr;	/* the grant beside the module's: what restore puts back */
	u64 outside_acr;	/* its PMUACR_EL1 */
};
static_assert(sizeof(struct kmod_eu_cpu) == 120);
static_assert(offsetof(struct kmod_eu_cpu, applied) == 80);

int kmod_eu_arm64_configure(struct kmod_eu_config *cfg, u32 user_access,
			    bool el0_programming, const char *events,
			    bool cycle_counter, bool sentinel, char *layout,
			    size_t layout_size,
			    const char **why);
void kmod_eu_arm64_apply(struct kmod_eu_cpu *st, const struct kmod_eu_config *cfg);
void kmod_eu_arm64_restore(struct kmod_eu_cpu *st, const struct kmod_eu_config *cfg);
const char *kmod_eu_arm64_access_names(u64 bits);
const char *kmod_eu_arm64_grant_words(u64 bits);

/* One granted thread (Rust: pmu_armv8::user_enable::thread::ThreadGrant). */
struct kmod_eu_thread {
	u64 counters;		/* the counters granted, PMCNTENSET_EL0 bits */
	u64 saved_userenr;	/* PMUSERENR_EL0 found at the last switch-in */
	u64 saved_acr;		/* PMUACR_EL1 found then (PMUv3p9) */
	u64 granted_userenr;	/* PMUSERENR_EL0 written then */
	u64 granted_acr;	/* PMUACR_EL1 written then (0: not written) */
	u64 values[31];		/* the counters at the last switch-out (follow=1) */
	bool on_cpu;		/* switched in: the grant is on its CPU */
	bool saved;		/* values[] holds a switch-out's values */
	bool lost;		/* ran where the module's counters did not count for it */
	u8 reserved[5];
};
static_assert(sizeof(struct kmod_eu_thread) == 296);
static_assert(offsetof(struct kmod_eu_thread, values) == 40);
static_assert(offsetof(struct kmod_eu_thread, on_cpu) == 288);
static_assert(offsetof(struct kmod_eu_thread, lost) == 290);

u64 kmod_eu_arm64_withhold(const struct kmod_eu_cpu *st);
void kmod_eu_arm64_thread_in(struct kmod_eu_thread *t, const struct kmod_eu_config *cfg,
			     bool follow);
void kmod_eu_arm64_thread_out(struct kmod_eu_thread *t, bool follow);
void kmod_eu_arm64_thread_missed(struct kmod_eu_thread *t);
/* 0: the grant held; 1: put back; 2: put back, the counts had been missed. */
int kmod_eu_arm64_thread_regrant(struct kmod_eu_thread *t, const struct kmod_eu_config *cfg);
#endif

#if defined(CONFIG_ARM) && defined(KMOD_EU_ARMV7)
#define KMOD_EU_MAX_EVENTS 6
/* The longest `layout` text (pmu_armv8::user_enable::LAYOUT_TEXT_MAX) plus the NUL. */
#define KMOD_EU_LAYOUT_SIZE 71

/* The module-wide settings, checked at load (Rust: armv7::KmodEuV7Config). */
struct kmod_eu_v7_config {
	u32 user_access;
	u16 events[KMOD_EU_MAX_EVENTS];
	u8 n_events;
	u8 event_counters;	/* PMCR.N of the loading CPU */
	bool cycle_counter;
	bool el0_programming;
	u8 perfmon;		/* ID_DFR0.PerfMon of the loading CPU */
	u8 reserved[3];
};
static_assert(sizeof(struct kmod_eu_v7_config) == 24);

/* One CPU's grant (Rust: armv7::KmodEuV7Cpu); AArch32 registers are 32 bits. */
struct kmod_eu_v7_cpu {
	u32 found_userenr;	/* PMUSERENR found by the last apply or restore */
	u32 new_userenr;	/* written by the last apply or restore */
	u32 owned;		/* PMCNTENSET bits of the module's counters */
	u32 zeroed;		/* module counters the last apply programmed from zero */
	u32 kept;		/* module counters found running and kept (re-grant) */
	u32 released;		/* counters the restore disabled and zeroed */
	u32 taken;		/* module counters in perf's used_mask: left to perf */
	u32 busy_config;	/* -EBUSY: PMXEVTYPER of the counter in use */
	s32 error;		/* 0 or -ENODEV, -EBUSY, -EOPNOTSUPP, -EINVAL */
	u32 error_detail;	/* the counter, the event, or PMCR.N */
	bool applied;
	bool enabled_pmu;	/* the module turned PMCR.E on */
	u8 perfmon;
	u8 reserved;
	u32 perf_used;		/* input: perf's used_mask as PMCNTENSET bits */
};
static_assert(sizeof(struct kmod_eu_v7_cpu) == 48);
static_assert(offsetof(struct kmod_eu_v7_cpu, applied) == 40);
static_assert(offsetof(struct kmod_eu_v7_cpu, perf_used) == 44);

int kmod_eu_armv7_configure(struct kmod_eu_v7_config *cfg, u32 user_access,
			    bool el0_programming, const char *events,
			    bool cycle_counter, char *layout, size_t layout_size,
			    const char **why);
void kmod_eu_armv7_apply(struct kmod_eu_v7_cpu *st, const struct kmod_eu_v7_config *cfg);
void kmod_eu_armv7_restore(struct kmod_eu_v7_cpu *st, const struct kmod_eu_v7_config *cfg);
const char *kmod_eu_armv7_access_names(u32 bits);
const char *kmod_eu_armv7_grant_words(u32 bits);
/*
 * On the CPU, interrupts off, for kmod_enable_user_owners.c and kmod_enable_user_perf.c
 * (the AArch32 registers of what arm64 does there with its system registers): quiet the
 * reserved counters (PMINTENCLR, PMOVSR, with `disable` PMCNTENCLR, then isb); whether
 * PMCR.E is set; PMUSERENR to 0 if it still holds `granted`, then isb.
 */
void kmod_eu_armv7_quiet(u32 reserved, bool disable);
bool kmod_eu_armv7_pmu_enabled(void);
void kmod_eu_armv7_withdraw(u32 granted);
#elif defined(CONFIG_ARM)
/* SUNAVCR before and after (Rust: armv6::KmodEuArmv6). */
struct kmod_eu_armv6 {
	u32 previous;
	u32 written;
	u32 read_back;
	u32 found;
};
static_assert(sizeof(struct kmod_eu_armv6) == 16);

bool kmod_eu_armv6_is_arm1176(u32 midr);
u32 kmod_eu_armv6_part_number(u32 midr);
int kmod_eu_armv6_enable(struct kmod_eu_armv6 *st);
void kmod_eu_armv6_disable(struct kmod_eu_armv6 *st);
#endif

#endif
