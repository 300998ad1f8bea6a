// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! kmod_enable_user: lets user-space programs read the hardware performance counters with
//! one instruction, without perf.
//!
//! - arm64: on every online CPU, and on every CPU that comes online later (a CPU-hotplug
//!   state), program the `events` (default INST_RETIRED) on the top event counters and the
//!   cycle counter, all counting at EL0 only, and grant EL0 read access to them
//!   (PMUSERENR_EL0 = `user_access`, default CR|ER: read-only). Write access (EN) only with
//!   `el0_programming=1`. Counters perf uses are never touched; the grant is put back
//!   after every CPU PM exit and on `regrant`; unload releases the module's counters and
//!   revokes the grant. The per-CPU register work is the stock flavour's Rust object over
//!   `pmu_armv8::user_enable`, linked into this module (see `mod arch` below and
//!   kmod-enable-user/README.md).
//! - x86_64: perf owns CR4.PCE and sets it per process from its `rdpmc` policy. That
//!   policy file (`/sys/bus/event_source/devices/cpu/rdpmc`, or the one `rdpmc_policy=`
//!   names: only `/sys/bus/event_source/devices/<pmu>/rdpmc` on sysfs) is switched to 2
//!   ("always") and restored on unload. Where none exists (no x86 PMU driver, as in a VM
//!   without a virtual PMU) the module refuses with `-ENODEV`, unless
//!   `cr4_pce_until_switch=1` asks for CR4.PCE on every CPU, which the kernel clears again
//!   at the CPU's next switch to another process, as the log says.
//! - Any other architecture, or an arm64 CPU without a PMUv3: the module refuses to load
//!   with `-ENODEV` and a one-line reason.
//!
//! Security: once loaded, any process can read the granted counters, a timing side
//! channel. Load it only where that is acceptable (kmod-enable-user/README.md).

use core::cell::UnsafeCell;
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_uint, c_void};
use kernel::prelude::*;

module! {
    type: EnableUser,
    name: "kmod_enable_user",
    author: "PMU workspace contributors",
    description: "Lets user space read the PMU counters directly (arm64: PMUSERENR_EL0, read-only by default; x86_64: perf's rdpmc policy)",
    license: "Dual MIT/GPL",
}

/// The module's state: what was changed, so that `Drop` can undo exactly that.
struct EnableUser {
    arch: arch::Enabled,
}

impl kernel::Module for EnableUser {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(EnableUser {
            arch: arch::enable()?,
        })
    }
}

impl Drop for EnableUser {
    fn drop(&mut self) {
        self.arch.disable();
    }
}

/// Module parameters.
///
/// The `module!` macro of Linux 6.12 has no `params:` key, so each parameter is written out
/// the way `module_param()` lays it out in C: a `struct kernel_param` in the `__param`
/// section, where `load_module()` finds it, and `parm`/`parmtype` strings in `.modinfo`,
/// which `modinfo` prints.
mod param;

/// A `.modinfo` entry such as `parm=name:description`.
macro_rules! modinfo {
    ($static:ident, $text:expr) => {
        #[link_section = ".modinfo"]
        #[used(compiler)]
        static $static: [u8; $text.len() + 1] = param::nul_terminated($text);
    };
}

/// Per-CPU bookkeeping shared by both architectures: one slot per possible CPU number,
/// filled and emptied by the CPU-hotplug callbacks.
mod percpu;

// One file per architecture (the stock flavour's glue is stock/kmod_enable_user_glue.c).
#[cfg(target_arch = "aarch64")]
#[path = "arch_arm64.rs"]
mod arch;

#[cfg(target_arch = "x86_64")]
#[path = "arch_x86_64.rs"]
mod arch;

#[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
#[path = "arch_other.rs"]
mod arch;
