/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * kmod_enable_user: the per-thread grant's user-space interface (the default mode on
 * kernels with CONFIG_PREEMPT_NOTIFIERS; `cpu_wide=1` loads the CPU-wide grant instead,
 * which creates no device).
 *
 * A thread opens /dev/kmod_enable_user and asks for the grant with KMOD_EU_IOC_GRANT.
 * From then on, and only while that thread runs, its CPU grants EL0 read access to the
 * module's counters (arm64: PMUSERENR_EL0 = the module's `user_access` bits, set when
 * the thread is switched in and put back when it is switched out). Its other threads,
 * other processes and children after fork(2) trap, as without the module. With
 * `follow=1` (the default) the module's counters follow the thread: their values are
 * saved when it is switched out and written back when it is switched in, on whichever
 * CPU, so a region read with one instruction counts that thread's own events.
 *
 * The grant ends when the thread closes the file, or the file's last reference goes.
 * The module cannot be unloaded while a file is open (the kernel's module reference).
 *
 * Who may open the device: CAP_PERFMON (or CAP_SYS_ADMIN), or a member of the group
 * the `group=` parameter names (a numeric gid; none by default). Everybody else gets
 * EACCES.
 *
 * Errors (errno):
 *   open:  EACCES  not in `group=` and without CAP_PERFMON.
 *   GRANT: EINVAL  `size` is not sizeof(struct kmod_eu_grant), `flags` has an unknown
 *                  bit, or `counters` names a counter outside the module's layout;
 *          EBUSY   this file already holds a grant, or the calling thread holds one
 *                  through another file;
 *          EPERM   the file was opened by another process (a child after fork(2)
 *                  using its parent's file: it opens the device itself).
 *   REGRANT: ENOENT the calling thread holds no grant through this file;
 *            EBUSY  this CPU has no module counters now (perf holds a layout
 *                   counter here, or `cpus=` leaves this CPU out).
 *   other numbers: ENOTTY.
 * A failed call changes nothing.
 */
#ifndef KMOD_ENABLE_USER_UAPI_H
#define KMOD_ENABLE_USER_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* The device's name under /dev. */
#define KMOD_EU_DEVICE_NAME "kmod_enable_user"

/* ioctl type 0xB9, numbers 0x00-0x0F (free in Documentation/userspace-api/ioctl/ioctl-number.rst, Linux 6.12 and 7.3). */
#define KMOD_EU_IOC_MAGIC 0xB9

/* KMOD_EU_IOC_GRANT's argument. */
struct kmod_eu_grant {
	/* In: sizeof(struct kmod_eu_grant), 24. */
	__u32 size;
	/* In: 0 (no flag is defined yet). */
	__u32 flags;
	/*
	 * In: the counters the thread asks for, as PMCNTENSET bits (bit n = event counter
	 * n); 0 asks for every counter of the module's layout. Out: the counters granted.
	 * Under PMUSERENR.ER alone (before PMUv3p9) the thread can read every event
	 * counter of its CPU while it runs; this field names the ones the module runs.
	 */
	__u64 counters;
	/* Out: KMOD_EU_GRANTED_* bits. */
	__u32 granted;
	/* Out: 0. */
	__u32 reserved;
};

/* Out: the module's counters follow the thread (saved and restored at each switch). */
#define KMOD_EU_GRANTED_FOLLOW (1U << 0)
/* Out: the grant includes programming access (el0_programming=1). */
#define KMOD_EU_GRANTED_PROGRAM (1U << 1)

/* Grant the calling thread. */
#define KMOD_EU_IOC_GRANT _IOWR(KMOD_EU_IOC_MAGIC, 0x00, struct kmod_eu_grant)
/*
 * Put the calling thread's grant back on this CPU, after perf cleared PMUSERENR (its
 * overflow interrupts, multiplexing and the watchdog do: armv8pmu_start,
 * drivers/perf/arm_pmuv3.c). The counters' values are untouched. Returns 0, or
 * KMOD_EU_REGRANT_LOST.
 */
#define KMOD_EU_IOC_REGRANT _IO(KMOD_EU_IOC_MAGIC, 0x01)
/*
 * REGRANT's result when the thread had run, since its grant was last on a CPU, where
 * the module's counters did not count for it: on a CPU that `cpus=` leaves out or
 * where perf holds a layout counter, or while perf had stopped the PMU. The module then
 * withholds the grant at every switch-in until the thread asks (its next read traps),
 * so that nothing it reads spans the gap unnoticed. The grant is back from here on; a
 * count taken across the gap is short.
 */
#define KMOD_EU_REGRANT_LOST 1

#endif /* KMOD_ENABLE_USER_UAPI_H */
