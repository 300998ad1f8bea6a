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

# perf's contexts, walked by kmod_enable_user_owners.c to find the events perf promised
# counters to (include/linux/sched.h, include/linux/perf_event.h):
# KMOD_EU_TASK_CTXP_ARRAY: a task has one context per context type
#   (`perf_event_ctxp[perf_nr_task_contexts]`, before Linux 6.2), else one
#   (`perf_event_ctxp`).
# KMOD_EU_PMU_CPU_CONTEXT: a PMU reaches each CPU's context through `pmu_cpu_context`
#   (before Linux 6.2); else through `cpu_pmu_context`, per CPU a struct
#   perf_cpu_pmu_context (Linux 6.2 to 6.14) or a pointer to one
#   (KMOD_EU_CPU_PMU_CONTEXT_PTR, later kernels: Debian's 7.3).
ifneq ($(CONFIG_ARM64)$(CONFIG_ARM),)
kmod_eu_sched_h := $(srctree)/include/linux/sched.h
kmod_eu_perf_event_h := $(srctree)/include/linux/perf_event.h
ifneq ($(shell grep -Eq 'perf_event_ctxp\[' $(kmod_eu_sched_h) && echo y),)
ccflags-y += -DKMOD_EU_TASK_CTXP_ARRAY
endif
ifneq ($(shell grep -Eq '__percpu[[:space:]]+\*pmu_cpu_context;' $(kmod_eu_perf_event_h) && echo y),)
ccflags-y += -DKMOD_EU_PMU_CPU_CONTEXT
else ifneq ($(shell grep -Eq 'perf_cpu_pmu_context[[:space:]]*\*[[:space:]]*__percpu[[:space:]]*\*cpu_pmu_context;' $(kmod_eu_perf_event_h) && echo y),)
ccflags-y += -DKMOD_EU_CPU_PMU_CONTEXT_PTR
else ifeq ($(shell grep -Eq 'perf_cpu_pmu_context[[:space:]]+__percpu[[:space:]]+\*cpu_pmu_context;' $(kmod_eu_perf_event_h) && echo y),)
$(error $(kmod_eu_perf_event_h): struct pmu reaches its per-CPU contexts in a way this module does not know)
endif
endif
