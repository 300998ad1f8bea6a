# SPDX-License-Identifier: GPL-2.0-only OR MIT
#
# What the kernel's headers offer, probed where the module is built (Kbuild's way: the
# headers themselves, never the release number, so a vendor backport or a release that
# moved a field cannot break the build). Included by this directory's Kbuild and, on
# arm64, by the Rust-for-Linux flavour's (../Makefile copies it there).
#
# KMOD_EU_HAVE_CNTR_MASK: struct arm_pmu has the `cntr_mask` bitmap and perf numbers its
# counter index as the counter itself (31 = the cycle counter, 32 = the instruction
# counter). Both came with the Armv9.4 instruction-counter series, first released in
# Linux 6.12 (include/linux/perf/arm_pmu.h: `DECLARE_BITMAP(cntr_mask,
# ARMPMU_MAX_HWEVENTS)`); before it `int num_events` counted the cycle counter as index
# 0 and event counter i as index i + 1.
kmod_eu_arm_pmu_h := $(srctree)/include/linux/perf/arm_pmu.h
ifneq ($(CONFIG_ARM64)$(CONFIG_ARM),)
ifeq ($(wildcard $(kmod_eu_arm_pmu_h)),)
$(error $(kmod_eu_arm_pmu_h) not found: the headers of this kernel lack perf's arm_pmu.h, which the module reads perf's counter bookkeeping from)
endif
kmod_eu_has_cntr_mask := $(shell grep -Eq '^[[:space:]]*DECLARE_BITMAP.cntr_mask,' $(kmod_eu_arm_pmu_h) && echo y)
kmod_eu_has_num_events := $(shell grep -Eq '^[[:space:]]*int[[:space:]]+num_events;' $(kmod_eu_arm_pmu_h) && echo y)
ifeq ($(kmod_eu_has_cntr_mask),y)
ccflags-y += -DKMOD_EU_HAVE_CNTR_MASK
else ifneq ($(kmod_eu_has_num_events),y)
$(error $(kmod_eu_arm_pmu_h) has neither `cntr_mask` (Linux 6.12 on) nor `num_events` (before): a struct arm_pmu this module does not know)
endif
endif
