/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The interface between the C glue (kmod_enable_user_glue.c) and the Rust object
 * (rust/src/lib.rs, linked as kmod_enable_user_rust.o). The structs mirror the
 * #[repr(C)] ones there; both sides assert their size.
 */
#ifndef KMOD_ENABLE_USER_STOCK_H
#define KMOD_ENABLE_USER_STOCK_H

#include <linux/build_bug.h>
#include <linux/stddef.h>
#include <linux/types.h>

/* Called by the Rust panic handler; never returns. */
void __noreturn kmod_enable_user_rust_panic(void);

#ifdef CONFIG_ARM64
/* One CPU's PMU state before and after the grant (Rust: arm64::KmodEuCpu). */
struct kmod_eu_cpu {
	u64 user_access;	/* in: PMUSERENR_EL0 bits to grant */
	u64 old_userenr;
	u64 new_userenr;
	u64 zeroed;		/* PMCR_EL0 reset bits written: P (1 << 1), C (1 << 2) */
	u64 old_pmcr;
	u64 new_pmcr;
	u64 old_cntenset;
	u64 old_ccfiltr;
	u64 found_userenr;	/* PMUSERENR_EL0 at restore time */
	bool cycle_counter;	/* in */
	bool applied;
	u8 pmuver;		/* ID_AA64DFR0_EL1.PMUVer */
};
static_assert(sizeof(struct kmod_eu_cpu) == 80);
static_assert(offsetof(struct kmod_eu_cpu, cycle_counter) == 72);

int kmod_eu_arm64_check_user_access(u32 user_access);
int kmod_eu_arm64_probe(u8 *pmuver, u32 *event_counters);
void kmod_eu_arm64_apply(struct kmod_eu_cpu *st);
void kmod_eu_arm64_restore(struct kmod_eu_cpu *st);
const char *kmod_eu_arm64_access_names(u64 bits);
const char *kmod_eu_arm64_zeroed_names(u64 zeroed);
#endif

#ifdef CONFIG_ARM
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
