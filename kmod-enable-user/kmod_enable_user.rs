// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! kmod_enable_user: lets user-space programs read the hardware performance counters with
//! one instruction, without perf.
//!
//! - arm64: on every online CPU, and on every CPU that comes online later (a CPU-hotplug
//!   state), zero the counters it makes readable, then set PMUSERENR_EL0 to the bits of the
//!   `user_access` parameter (default EN|CR|ER: every counter readable, no software
//!   increment). With `cycle_counter=1` it also starts the cycle counter for EL0 the way
//!   boards' cycle-counter modules do (PMCR_EL0.E and LC, PMCNTENSET_EL0.C, PMCCFILTR_EL0).
//!   Each CPU's previous state is kept and written back on unload (and when the CPU goes
//!   offline).
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
//! Security: once loaded, any process can read the counters, a timing side channel. Load
//! it only where that is acceptable (see the workspace README).

use core::cell::UnsafeCell;
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_uint, c_void};
use kernel::prelude::*;

module! {
    type: EnableUser,
    name: "kmod_enable_user",
    author: "PMU workspace contributors",
    description: "Lets user space read the PMU counters directly (arm64: PMUSERENR_EL0, x86_64: perf rdpmc policy or CR4.PCE)",
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
mod param {
    use super::*;

    /// The storage of one parameter.
    #[repr(transparent)]
    pub(crate) struct Value<T>(UnsafeCell<T>);

    // SAFETY: the kernel writes the value only while it parses the load arguments, before
    // `init` runs and before any code of this module can read it; the sysfs file is
    // read-only (permission 0444), so nothing writes it later.
    unsafe impl<T: Copy> Sync for Value<T> {}

    impl<T: Copy> Value<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(UnsafeCell::new(value))
        }

        /// The address the kernel's parser writes to.
        pub(crate) const fn as_arg(&self) -> *mut c_void {
            self.0.get().cast()
        }

        pub(crate) fn get(&self) -> T {
            // SAFETY: no writer after load (see the `Sync` impl), so a plain read is fine.
            unsafe { *self.0.get() }
        }
    }

    /// A `struct kernel_param`, placed by its `static` in the `__param` section.
    #[repr(transparent)]
    pub(crate) struct Param(pub(crate) bindings::kernel_param);

    // SAFETY: a constant description (name, ops, address of the storage) that neither this
    // module nor the kernel writes.
    unsafe impl Sync for Param {}

    /// `struct kernel_param` for a read-only (0444) parameter of this module.
    pub(crate) const fn describe(
        name: &'static core::ffi::CStr,
        ops: *const bindings::kernel_param_ops,
        arg: *mut c_void,
    ) -> Param {
        Param(bindings::kernel_param {
            name: name.as_ptr().cast::<c_char>(),
            mod_: &raw mut bindings::__this_module,
            ops,
            perm: 0o444,
            // -1: a module's parameters are parsed at load, not at an init level.
            level: -1,
            flags: 0,
            __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 { arg },
        })
    }

    /// `text` as a NUL-terminated byte array of length `N` (= `text.len() + 1`).
    pub(crate) const fn nul_terminated<const N: usize>(text: &str) -> [u8; N] {
        let bytes = text.as_bytes();
        let mut out = [0u8; N];
        let mut i = 0;
        while i < bytes.len() {
            out[i] = bytes[i];
            i += 1;
        }
        out
    }
}

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
mod percpu {
    use super::*;
    use core::sync::atomic::{AtomicPtr, Ordering};

    /// One CPU's slot. Only the hotplug callbacks of that CPU touch it, and the hotplug
    /// core runs those one at a time.
    pub(crate) struct Slot<T>(UnsafeCell<T>);

    // SAFETY: a slot is only touched by the hotplug callbacks of its own CPU, which the
    // hotplug core runs one at a time, so sharing the array between CPUs is sound.
    unsafe impl<T: Send> Sync for Slot<T> {}

    /// The slots, indexed by CPU number, `nr_cpu_ids` of them.
    pub(crate) struct Slots<T: 'static> {
        /// Owns the memory; the callbacks reach it through `published` only.
        _storage: KVec<Slot<T>>,
        published: &'static AtomicPtr<Slot<T>>,
    }

    impl<T: Default + 'static> Slots<T> {
        /// Allocates the slots and publishes them to the callbacks through `published`.
        pub(crate) fn new(published: &'static AtomicPtr<Slot<T>>) -> Result<Self> {
            // SAFETY: `nr_cpu_ids` is set during boot and constant afterwards.
            let n = unsafe { bindings::nr_cpu_ids } as usize;
            let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
            for _ in 0..n {
                slots.push(Slot(UnsafeCell::new(T::default())), GFP_KERNEL)?;
            }
            published.store(slots.as_mut_ptr(), Ordering::Release);
            Ok(Self {
                _storage: slots,
                published,
            })
        }
    }

    impl<T: 'static> Drop for Slots<T> {
        fn drop(&mut self) {
            self.published.store(core::ptr::null_mut(), Ordering::Release);
        }
    }

    /// The slot of `cpu`, from a hotplug callback.
    ///
    /// # Safety
    ///
    /// Call only from the hotplug callbacks of `cpu` while the slots are published (between
    /// `Slots::new` and the removal of the hotplug state), and do not keep the reference
    /// past the callback.
    pub(crate) unsafe fn slot<'a, T>(
        published: &AtomicPtr<Slot<T>>,
        cpu: c_uint,
    ) -> Option<&'a mut T> {
        let base = published.load(Ordering::Acquire);
        // SAFETY: `nr_cpu_ids` is constant after boot.
        let n = unsafe { bindings::nr_cpu_ids };
        if base.is_null() || cpu >= n {
            return None;
        }
        // SAFETY: `base` points to `nr_cpu_ids` slots (published by `Slots::new`, still
        // alive per the caller's contract) and `cpu < nr_cpu_ids`; only this CPU's
        // callback uses this slot, one at a time, so the mutable reference is unique.
        Some(unsafe { &mut *(*base.add(cpu as usize)).0.get() })
    }

    /// Runs `func(info)` on `cpu` with interrupts disabled and waits for it.
    ///
    /// Called from `cpu`'s own hotplug callback, this runs it right there, with interrupts
    /// off (`smp_call_function_single()` on the current CPU).
    pub(crate) fn run_on<T>(cpu: c_uint, func: unsafe extern "C" fn(*mut c_void), info: &mut T) -> Result {
        // SAFETY: `func` takes `info` as `*mut T`, which lives until this call returns
        // (wait = 1).
        let ret = unsafe {
            bindings::smp_call_function_single(
                cpu as c_int,
                Some(func),
                (info as *mut T).cast(),
                1,
            )
        };
        kernel::error::to_result(ret)
    }

    /// A dynamic CPU-hotplug state in the "online" section: `startup` runs on every CPU
    /// that is online now and on every CPU that comes online later, `teardown` on every
    /// CPU that goes offline and, at removal, on every online CPU.
    pub(crate) struct HotplugState(c_int);

    impl HotplugState {
        pub(crate) fn install(
            name: &'static core::ffi::CStr,
            startup: unsafe extern "C" fn(c_uint) -> c_int,
            teardown: unsafe extern "C" fn(c_uint) -> c_int,
        ) -> Result<Self> {
            // SAFETY: `name` is a static C string; the callbacks stay valid until the state
            // is removed in `drop`, before the module's code goes away.
            let ret = unsafe {
                bindings::__cpuhp_setup_state(
                    bindings::cpuhp_state_CPUHP_AP_ONLINE_DYN,
                    name.as_ptr().cast::<c_char>(),
                    true,
                    Some(startup),
                    Some(teardown),
                    false,
                )
            };
            if ret < 0 {
                return Err(Error::from_errno(ret));
            }
            // For CPUHP_AP_ONLINE_DYN the positive return value is the allocated state.
            Ok(Self(ret))
        }
    }

    impl Drop for HotplugState {
        fn drop(&mut self) {
            // SAFETY: `self.0` is the state `install` allocated; `invoke = true` runs the
            // teardown callback on every online CPU before the state is freed.
            unsafe { bindings::__cpuhp_remove_state(self.0, true) };
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    //! arm64: PMUSERENR_EL0 and, optionally, the cycle counter, per CPU.
    //!
    //! Register layouts: Arm Architecture Reference Manual for A-profile (DDI 0487),
    //! D24.5 "Performance Monitors registers"; the same bits as Linux's
    //! `arch/arm64/include/asm/perf_event.h` and `drivers/perf/arm_pmuv3.c`.

    use super::*;
    use core::arch::asm;
    use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

    /// PMUSERENR_EL0.EN: EL0 may access every PMU register the other bits name, and more.
    const EN: u64 = 1 << 0;
    /// PMUSERENR_EL0.SW: EL0 may write PMSWINC_EL0.
    const SW: u64 = 1 << 1;
    /// PMUSERENR_EL0.CR: EL0 may read PMCCNTR_EL0.
    const CR: u64 = 1 << 2;
    /// PMUSERENR_EL0.ER: EL0 may read the event counters (and PMSELR_EL0).
    const ER: u64 = 1 << 3;
    const USER_ACCESS_BITS: u64 = EN | SW | CR | ER;
    const DEFAULT_USER_ACCESS: c_uint = (EN | CR | ER) as c_uint;

    /// PMCR_EL0.E: enable the counters.
    const PMCR_E: u64 = 1 << 0;
    /// PMCR_EL0.P: reset the event counters (write-only action).
    const PMCR_P: u64 = 1 << 1;
    /// PMCR_EL0.C: reset the cycle counter (write-only action).
    const PMCR_C: u64 = 1 << 2;
    /// PMCR_EL0.LC: the cycle counter overflows at 64 bits.
    const PMCR_LC: u64 = 1 << 6;
    /// PMCNTENSET_EL0.C / PMCNTENCLR_EL0.C: the cycle counter's enable bit.
    const CNTEN_C: u64 = 1 << 31;
    /// PMCCFILTR_EL0.P: do not count at EL1. With U = 0 and NSH = 0: count EL0 only.
    const PMCCFILTR_P: u64 = 1 << 31;

    /// ID_AA64DFR0_EL1.PMUVer, bits 11:8: 0 no PMU, 0xF an IMPLEMENTATION DEFINED one.
    fn pmu_version(dfr0: u64) -> u8 {
        ((dfr0 >> 8) & 0xf) as u8
    }

    fn has_pmuv3(pmuver: u8) -> bool {
        pmuver != 0 && pmuver != 0xf
    }

    static USER_ACCESS: param::Value<c_uint> = param::Value::new(DEFAULT_USER_ACCESS);
    static CYCLE_COUNTER: param::Value<bool> = param::Value::new(false);

    #[link_section = "__param"]
    #[used(compiler)]
    static USER_ACCESS_PARAM: param::Param = param::describe(
        c"user_access",
        &raw const bindings::param_ops_uint,
        USER_ACCESS.as_arg(),
    );

    #[link_section = "__param"]
    #[used(compiler)]
    static CYCLE_COUNTER_PARAM: param::Param = param::describe(
        c"cycle_counter",
        &raw const bindings::param_ops_bool,
        CYCLE_COUNTER.as_arg(),
    );

    modinfo!(
        PARM_USER_ACCESS,
        "parm=user_access:PMUSERENR_EL0 bits to set on every CPU: EN=1 (all), SW=2 (software increment), CR=4 (cycle counter), ER=8 (event counters); default 13 = EN|CR|ER"
    );
    modinfo!(PARMTYPE_USER_ACCESS, "parmtype=user_access:uint");
    modinfo!(
        PARM_CYCLE_COUNTER,
        "parm=cycle_counter:Also start the cycle counter for EL0 (PMCR_EL0.E and LC, PMCNTENSET_EL0.C, PMCCFILTR_EL0 = EL0 only); default 0"
    );
    modinfo!(PARMTYPE_CYCLE_COUNTER, "parmtype=cycle_counter:bool");

    /// The instructions, one small function each.
    mod sysreg {
        use super::asm;

        macro_rules! read {
            ($name:ident, $reg:literal) => {
                pub(super) fn $name() -> u64 {
                    let value: u64;
                    // SAFETY: reading this PMU/ID register at EL1 has no side effect.
                    unsafe { asm!(concat!("mrs {}, ", $reg), out(reg) value, options(nomem, nostack)) };
                    value
                }
            };
        }
        macro_rules! write {
            ($name:ident, $reg:literal) => {
                /// # Safety
                ///
                /// Changes this CPU's PMU state: call with interrupts disabled, on the CPU
                /// whose state the caller owns.
                pub(super) unsafe fn $name(value: u64) {
                    // SAFETY: the caller owns this CPU's PMU state (see above).
                    unsafe { asm!(concat!("msr ", $reg, ", {}"), in(reg) value, options(nomem, nostack)) };
                }
            };
        }

        read!(id_aa64dfr0_el1, "id_aa64dfr0_el1");
        read!(pmuserenr_el0, "pmuserenr_el0");
        read!(pmcr_el0, "pmcr_el0");
        read!(pmcntenset_el0, "pmcntenset_el0");
        read!(pmccfiltr_el0, "pmccfiltr_el0");
        write!(set_pmuserenr_el0, "pmuserenr_el0");
        write!(set_pmcr_el0, "pmcr_el0");
        write!(set_pmcntenset_el0, "pmcntenset_el0");
        write!(set_pmcntenclr_el0, "pmcntenclr_el0");
        write!(set_pmccfiltr_el0, "pmccfiltr_el0");

        /// Makes the PMU register writes before it visible to what follows.
        pub(super) fn isb() {
            // SAFETY: a barrier, no state change.
            unsafe { asm!("isb", options(nomem, nostack)) };
        }
    }

    /// One CPU's state before and after this module touched it.
    #[derive(Default, Clone, Copy)]
    struct CpuState {
        /// Inputs to the per-CPU function.
        user_access: u64,
        cycle_counter: bool,
        /// ID_AA64DFR0_EL1.PMUVer of this CPU.
        pmuver: u8,
        /// Whether this module changed (and must restore) this CPU.
        applied: bool,
        old_userenr: u64,
        new_userenr: u64,
        /// PMCR_EL0 reset bits written (P and/or C).
        zeroed: u64,
        old_pmcr: u64,
        new_pmcr: u64,
        old_cntenset: u64,
        old_ccfiltr: u64,
        /// PMUSERENR_EL0 found at restore time (perf may have reset it meanwhile).
        found_userenr: u64,
    }

    static SLOTS: AtomicPtr<percpu::Slot<CpuState>> = AtomicPtr::new(core::ptr::null_mut());
    /// True while `enable()` installs the hotplug state: a CPU without PMUv3 then fails
    /// the load; later it only skips that CPU (failing would block the CPU coming online).
    static INSTALLING: AtomicBool = AtomicBool::new(false);

    /// On the CPU, interrupts off: zero what becomes readable, then grant EL0 access.
    ///
    /// # Safety
    ///
    /// `info` is a `*mut CpuState` valid for the call; run with interrupts disabled on the
    /// CPU whose state it records (through [`percpu::run_on`]).
    unsafe extern "C" fn apply_on_cpu(info: *mut c_void) {
        // SAFETY: `percpu::run_on` passes a `&mut CpuState` that outlives the call.
        let st = unsafe { &mut *info.cast::<CpuState>() };
        st.pmuver = pmu_version(sysreg::id_aa64dfr0_el1());
        if !has_pmuv3(st.pmuver) {
            return;
        }
        st.old_userenr = sysreg::pmuserenr_el0();
        st.old_pmcr = sysreg::pmcr_el0();
        st.old_cntenset = sysreg::pmcntenset_el0();
        st.old_ccfiltr = sysreg::pmccfiltr_el0();

        // Zero the counters EL0 is about to read, so no earlier count leaks to it.
        st.zeroed = 0;
        if st.user_access & (EN | ER) != 0 {
            st.zeroed |= PMCR_P;
        }
        if st.user_access & (EN | CR) != 0 {
            st.zeroed |= PMCR_C;
        }
        st.new_pmcr = st.old_pmcr;
        if st.cycle_counter {
            st.new_pmcr |= PMCR_E | PMCR_LC;
            // SAFETY: interrupts are off on the CPU whose state this slot records.
            unsafe {
                sysreg::set_pmccfiltr_el0(PMCCFILTR_P);
                sysreg::set_pmcntenset_el0(CNTEN_C);
            }
        }
        // SAFETY: as above. P and C are actions that read back as zero, so the stored
        // value stays `new_pmcr`.
        unsafe { sysreg::set_pmcr_el0(st.new_pmcr | st.zeroed) };
        // The resets and the enables must take effect before EL0 gets access.
        sysreg::isb();
        st.new_userenr = st.user_access;
        // SAFETY: as above.
        unsafe { sysreg::set_pmuserenr_el0(st.new_userenr) };
        // PMUSERENR_EL0 is used by the next EL0 instruction: synchronise the write.
        sysreg::isb();
        st.applied = true;
    }

    /// On the CPU, interrupts off: put back what `apply_on_cpu` changed.
    ///
    /// # Safety
    ///
    /// As for [`apply_on_cpu`], with the state `apply_on_cpu` filled in.
    unsafe extern "C" fn restore_on_cpu(info: *mut c_void) {
        // SAFETY: `percpu::run_on` passes a `&mut CpuState` that outlives the call.
        let st = unsafe { &mut *info.cast::<CpuState>() };
        st.found_userenr = sysreg::pmuserenr_el0();
        // Revoke EL0 access first.
        // SAFETY: interrupts are off on the CPU whose state this slot records.
        unsafe { sysreg::set_pmuserenr_el0(st.old_userenr) };
        sysreg::isb();
        if st.cycle_counter {
            // SAFETY: as above.
            unsafe {
                sysreg::set_pmccfiltr_el0(st.old_ccfiltr);
                if st.old_cntenset & CNTEN_C == 0 {
                    sysreg::set_pmcntenclr_el0(CNTEN_C);
                }
                let pmcr = sysreg::pmcr_el0();
                sysreg::set_pmcr_el0((pmcr & !(PMCR_E | PMCR_LC)) | (st.old_pmcr & (PMCR_E | PMCR_LC)));
            }
            sysreg::isb();
        }
        st.applied = false;
    }

    /// PMUSERENR_EL0 bits by name, for the log.
    struct Bits(u64);

    impl core::fmt::Display for Bits {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            if self.0 & USER_ACCESS_BITS == 0 {
                return f.write_str("none");
            }
            let mut sep = "";
            for (bit, name) in [(EN, "EN"), (SW, "SW"), (CR, "CR"), (ER, "ER")] {
                if self.0 & bit != 0 {
                    write!(f, "{sep}{name}")?;
                    sep = "|";
                }
            }
            Ok(())
        }
    }

    /// What was zeroed, for the log.
    fn zeroed(bits: u64) -> &'static str {
        match (bits & PMCR_P != 0, bits & PMCR_C != 0) {
            (true, true) => "event and cycle counters",
            (true, false) => "event counters",
            (false, true) => "cycle counter",
            (false, false) => "nothing",
        }
    }

    /// Hotplug startup: runs on `cpu` when it comes online, and on every online CPU when
    /// the state is installed.
    ///
    /// # Safety
    ///
    /// Called by the CPU-hotplug core only, for `cpu`, while the state is installed.
    unsafe extern "C" fn cpu_online(cpu: c_uint) -> c_int {
        // SAFETY: a hotplug callback of `cpu`, while the state (and so the slots) exists.
        let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
            return 0;
        };
        *st = CpuState {
            user_access: USER_ACCESS.get() as u64,
            cycle_counter: CYCLE_COUNTER.get(),
            ..CpuState::default()
        };
        if let Err(e) = percpu::run_on(cpu, apply_on_cpu, st) {
            pr_err!("cpu{cpu}: cannot run on the CPU ({e:?})\n");
            return e.to_errno();
        }
        if !st.applied {
            if INSTALLING.load(Ordering::Acquire) {
                pr_err!(
                    "cpu{cpu}: no PMUv3 (ID_AA64DFR0_EL1.PMUVer={:#x}): refusing to load\n",
                    st.pmuver
                );
                return ENODEV.to_errno();
            }
            pr_warn!(
                "cpu{cpu}: came online without PMUv3 (ID_AA64DFR0_EL1.PMUVer={:#x}): left unchanged\n",
                st.pmuver
            );
            return 0;
        }
        pr_info!(
            "cpu{cpu}: PMUSERENR_EL0 {:#x} -> {:#x} ({}), zeroed {}\n",
            st.old_userenr,
            st.new_userenr,
            Bits(st.new_userenr),
            zeroed(st.zeroed)
        );
        if st.cycle_counter {
            pr_info!(
                "cpu{cpu}: cycle counter on: PMCR_EL0 {:#x} -> {:#x} (E, LC), PMCNTENSET_EL0.C {} -> 1, PMCCFILTR_EL0 {:#x} -> {:#x} (EL0 only)\n",
                st.old_pmcr,
                st.new_pmcr,
                (st.old_cntenset & CNTEN_C != 0) as u8,
                st.old_ccfiltr,
                PMCCFILTR_P
            );
        }
        0
    }

    /// Hotplug teardown: runs on `cpu` when it goes offline, and on every online CPU when
    /// the state is removed.
    ///
    /// # Safety
    ///
    /// As for [`cpu_online`].
    unsafe extern "C" fn cpu_offline(cpu: c_uint) -> c_int {
        // SAFETY: a hotplug callback of `cpu`, while the state (and so the slots) exists.
        let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
            return 0;
        };
        if !st.applied {
            return 0;
        }
        if let Err(e) = percpu::run_on(cpu, restore_on_cpu, st) {
            pr_err!("cpu{cpu}: cannot run on the CPU to restore it ({e:?})\n");
            return 0;
        }
        let note = if st.found_userenr != st.new_userenr {
            " (perf had already changed it)"
        } else {
            ""
        };
        pr_info!(
            "cpu{cpu}: PMUSERENR_EL0 {:#x} -> {:#x} ({}) restored{note}\n",
            st.found_userenr,
            st.old_userenr,
            Bits(st.old_userenr)
        );
        if st.cycle_counter {
            pr_info!(
                "cpu{cpu}: cycle counter settings restored (PMCR_EL0.E/LC, PMCNTENSET_EL0.C, PMCCFILTR_EL0 {:#x})\n",
                st.old_ccfiltr
            );
        }
        0
    }

    /// What `enable` changed: the hotplug state (its removal restores every CPU), then
    /// the slots it uses.
    pub(crate) struct Enabled {
        state: Option<percpu::HotplugState>,
        _slots: percpu::Slots<CpuState>,
    }

    pub(crate) fn enable() -> Result<Enabled> {
        let access = USER_ACCESS.get() as u64;
        if access == 0 || access & !USER_ACCESS_BITS != 0 {
            pr_err!(
                "user_access={access:#x}: must be a non-empty subset of EN=1|SW=2|CR=4|ER=8\n"
            );
            return Err(EINVAL);
        }
        let pmuver = pmu_version(sysreg::id_aa64dfr0_el1());
        if !has_pmuv3(pmuver) {
            pr_err!("no PMUv3 on this CPU (ID_AA64DFR0_EL1.PMUVer={pmuver:#x}): refusing to load\n");
            return Err(ENODEV);
        }
        let n = (sysreg::pmcr_el0() >> 11) & 0x1f;
        let slots = percpu::Slots::new(&SLOTS)?;
        INSTALLING.store(true, Ordering::Release);
        let state = percpu::HotplugState::install(c"perf/kmod_enable_user:online", cpu_online, cpu_offline);
        INSTALLING.store(false, Ordering::Release);
        let state = state?;
        pr_info!(
            "loaded: EL0 may now use the PMU on every online CPU and on CPUs that come online later (PMUSERENR_EL0 = {}, PMUVer={pmuver:#x}, {n} event counters, cycle_counter={})\n",
            Bits(access),
            CYCLE_COUNTER.get() as u8
        );
        pr_warn!("any process can now read the PMU counters (a timing side channel)\n");
        Ok(Enabled {
            state: Some(state),
            _slots: slots,
        })
    }

    impl Enabled {
        pub(crate) fn disable(&mut self) {
            // Removing the state runs `cpu_offline` on every online CPU; the slots are
            // freed after it (field order and this explicit drop).
            drop(self.state.take());
            pr_info!("unloaded: EL0 access revoked, every online CPU's previous PMU state restored\n");
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod arch {
    //! x86_64: perf's `rdpmc` policy; CR4.PCE per CPU only as a named, short-lived opt-in.
    //!
    //! Linux owns CR4.PCE. arch/x86/mm/tlb.c (Linux 6.12): `switch_mm_irqs_off()` calls
    //! `cr4_update_pce_mm()` whenever a CPU switches to another address space, and that
    //! sets or clears the bit from perf's rdpmc policy, the sysfs file
    //! `/sys/bus/event_source/devices/<pmu>/rdpmc` of an x86 core PMU
    //! (arch/x86/events/core.c, `set_attr_rdpmc()`: 0 never, 1 while the process has a
    //! perf event mmapped, 2 always). So:
    //!
    //! - The policy is the lasting route and the default one: the module writes 2 to it and
    //!   writes the old value back on unload. `rdpmc_policy=` may name the file of another
    //!   PMU, but only a path of exactly that shape (`<pmu>`: one path component, not `.`
    //!   or `..`) that lies on sysfs; anything else is refused with -EINVAL before it is
    //!   opened for writing.
    //! - Without a policy file (no x86 PMU driver: a VM without a virtual PMU) there is
    //!   nothing lasting to enable: the module refuses with -ENODEV and says so.
    //!   `cr4_pce_until_switch=1` sets CR4.PCE on every CPU instead, which the kernel
    //!   clears at that CPU's next switch to another address space (with
    //!   CONFIG_PERF_EVENTS; without it `cr4_update_pce_mm()` is empty and the bit stays
    //!   until unload). The log says which.
    //! - Errnos are ones user space knows: perf's -ENOTSUPP (524, kernel-internal: insmod
    //!   would print "Unknown error 524") becomes -EOPNOTSUPP.

    use super::*;
    use core::arch::asm;
    use core::ffi::CStr;
    use core::sync::atomic::AtomicPtr;

    /// CR4.PCE, bit 8 (SDM Vol. 3A, 2.5 "Control Registers").
    const X86_CR4_PCE: u64 = 1 << 8;

    /// The only directory whose files the module writes: perf's PMUs on the event_source
    /// bus (Documentation/ABI/testing/sysfs-bus-event_source-devices-rdpmc).
    const EVENT_SOURCE_DEVICES: &[u8] = b"/sys/bus/event_source/devices/";
    /// The policy file's name inside a PMU's directory.
    const RDPMC_FILE: &[u8] = b"/rdpmc";

    /// Where perf's rdpmc policy lives by default: the core PMU is `cpu`, or `cpu_core` on
    /// hybrid Intel parts (both files write the same policy).
    const POLICY_FILES: [&CStr; 2] = [
        c"/sys/bus/event_source/devices/cpu/rdpmc",
        c"/sys/bus/event_source/devices/cpu_core/rdpmc",
    ];

    static RDPMC_POLICY: param::Value<*mut c_char> = param::Value::new(core::ptr::null_mut());
    static CR4_PCE_UNTIL_SWITCH: param::Value<bool> = param::Value::new(false);

    #[link_section = "__param"]
    #[used(compiler)]
    static RDPMC_POLICY_PARAM: param::Param = param::describe(
        c"rdpmc_policy",
        &raw const bindings::param_ops_charp,
        RDPMC_POLICY.as_arg(),
    );

    #[link_section = "__param"]
    #[used(compiler)]
    static CR4_PCE_UNTIL_SWITCH_PARAM: param::Param = param::describe(
        c"cr4_pce_until_switch",
        &raw const bindings::param_ops_bool,
        CR4_PCE_UNTIL_SWITCH.as_arg(),
    );

    modinfo!(
        PARM_RDPMC_POLICY,
        "parm=rdpmc_policy:perf's rdpmc policy file, /sys/bus/event_source/devices/<pmu>/rdpmc only (on sysfs); set to 2 (always) and restored on unload. Default: .../cpu/rdpmc, then .../cpu_core/rdpmc"
    );
    modinfo!(PARMTYPE_RDPMC_POLICY, "parmtype=rdpmc_policy:charp");
    modinfo!(
        PARM_CR4_PCE_UNTIL_SWITCH,
        "parm=cr4_pce_until_switch:Only where no perf rdpmc policy exists: set CR4.PCE on every CPU; the kernel clears it at each CPU's next switch to another process, so only the process running there keeps rdpmc. Default 0: refuse to load (-ENODEV)"
    );
    modinfo!(PARMTYPE_CR4_PCE_UNTIL_SWITCH, "parmtype=cr4_pce_until_switch:bool");

    /// The policy file named by the `rdpmc_policy` parameter, if given.
    fn given_policy_file() -> Option<&'static CStr> {
        let given = RDPMC_POLICY.get();
        // SAFETY: when set, the kernel's charp parser stored a NUL-terminated copy that
        // stays allocated until the module is freed, after `Drop`.
        (!given.is_null()).then(|| unsafe { CStr::from_ptr(given.cast()) })
    }

    /// Why an `rdpmc_policy` path is refused.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[non_exhaustive]
    enum PathRefusal {
        /// Not under `/sys/bus/event_source/devices/`.
        OutsideEventSource,
        /// Under it, but not a PMU's `rdpmc` file.
        NotRdpmc,
        /// The PMU part is empty, `.`, `..` or more than one path component.
        BadPmuName,
    }

    impl PathRefusal {
        fn reason(self) -> &'static str {
            match self {
                Self::OutsideEventSource => "not under /sys/bus/event_source/devices/",
                Self::NotRdpmc => "not a PMU's rdpmc file (the name must end in /rdpmc)",
                Self::BadPmuName => {
                    "the PMU name must be one path component, not empty, '.' or '..'"
                }
            }
        }
    }

    /// The PMU name of a policy path `/sys/bus/event_source/devices/<pmu>/rdpmc`, or why
    /// the path is not of that shape.
    fn policy_path_pmu(path: &[u8]) -> core::result::Result<&[u8], PathRefusal> {
        let rest = path
            .strip_prefix(EVENT_SOURCE_DEVICES)
            .ok_or(PathRefusal::OutsideEventSource)?;
        let pmu = rest.strip_suffix(RDPMC_FILE).ok_or(PathRefusal::NotRdpmc)?;
        if pmu.is_empty() || pmu == b"." || pmu == b".." || pmu.contains(&b'/') {
            return Err(PathRefusal::BadPmuName);
        }
        Ok(pmu)
    }

    /// An errno that user space has a message for. The kernel-internal ones (512 and up,
    /// include/linux/errno.h) print as "Unknown error N": perf's -ENOTSUPP becomes
    /// -EOPNOTSUPP, any other -EIO (the log line before it names the original).
    fn user_visible(e: Error) -> Error {
        if e == ENOTSUPP {
            Error::from_errno(-(bindings::EOPNOTSUPP as c_int))
        } else if -e.to_errno() >= 512 {
            EIO
        } else {
            e
        }
    }

    /// Policy value "always": every process may execute rdpmc.
    const ALWAYS: u8 = b'2';

    fn read_cr4() -> u64 {
        let value: u64;
        // SAFETY: reading CR4 at CPL 0 has no side effect.
        unsafe { asm!("mov {}, cr4", out(reg) value, options(nomem, nostack)) };
        value
    }

    /// A file opened in the kernel, closed on drop.
    struct KernelFile(*mut bindings::file);

    impl KernelFile {
        fn open(path: &CStr, flags: u32) -> Result<Self> {
            // SAFETY: `path` is a NUL-terminated string; the call may sleep (we are in
            // process context: module init or exit).
            let file = unsafe { bindings::filp_open(path.as_ptr().cast::<c_char>(), flags as c_int, 0) };
            let value = file as isize;
            if (-(bindings::MAX_ERRNO as isize)..0).contains(&value) {
                return Err(Error::from_errno(value as c_int));
            }
            Ok(Self(file))
        }

        /// The magic number of the file system the file lies on (include/uapi/linux/magic.h).
        fn fs_magic(&self) -> u64 {
            // SAFETY: `self.0` is an open file: its inode, and the inode's super block,
            // stay alive at least as long as the file.
            unsafe { (*(*(*self.0).f_inode).i_sb).s_magic as u64 }
        }

        /// The first line of the file (up to 15 bytes).
        fn read_value(&self) -> Result<([u8; 16], usize)> {
            let mut buf = [0u8; 16];
            let mut pos: bindings::loff_t = 0;
            // SAFETY: `self.0` is an open file; `buf` is writable for 15 bytes.
            let n = unsafe { bindings::kernel_read(self.0, buf.as_mut_ptr().cast(), 15, &mut pos) };
            if n < 0 {
                return Err(Error::from_errno(n as c_int));
            }
            let n = buf[..n as usize].iter().position(|&b| b == b'\n').unwrap_or(n as usize);
            Ok((buf, n))
        }

        fn write_value(&self, value: &[u8]) -> Result {
            let mut pos: bindings::loff_t = 0;
            // SAFETY: `self.0` is an open file; `value` is readable for its length.
            let n = unsafe { bindings::kernel_write(self.0, value.as_ptr().cast(), value.len(), &mut pos) };
            if n < 0 {
                return Err(Error::from_errno(n as c_int));
            }
            Ok(())
        }
    }

    impl Drop for KernelFile {
        fn drop(&mut self) {
            // SAFETY: `self.0` was opened by `filp_open` and is closed once.
            unsafe { bindings::filp_close(self.0, core::ptr::null_mut()) };
        }
    }

    /// Opens perf's policy file `path` for writing, after proving it is one: the path has
    /// the shape `/sys/bus/event_source/devices/<pmu>/rdpmc` (-EINVAL otherwise), and the
    /// file lies on sysfs (-EINVAL otherwise; looked at through an `O_PATH` handle, which
    /// opens nothing, so no device or FIFO is ever opened for writing). A missing file
    /// is -ENOENT; the caller logs it (the default paths may be missing).
    fn open_policy(path: &CStr) -> Result<KernelFile> {
        let pmu = match policy_path_pmu(path.to_bytes()) {
            Ok(pmu) => pmu,
            Err(refusal) => {
                pr_err!(
                    "rdpmc_policy={path:?} refused: {}; only perf's rdpmc policy file /sys/bus/event_source/devices/<pmu>/rdpmc is written\n",
                    refusal.reason()
                );
                return Err(EINVAL);
            }
        };
        let handle = KernelFile::open(path, bindings::O_PATH).inspect_err(|e| {
            if *e != ENOENT {
                pr_err!("cannot look up {path:?} ({e:?}): refusing to load\n");
            }
        })?;
        let magic = handle.fs_magic();
        if magic != u64::from(bindings::SYSFS_MAGIC) {
            pr_err!(
                "{path:?} refused: not a sysfs file (file system magic {magic:#x}, sysfs is {:#x}), so not perf's rdpmc policy of PMU '{}'\n",
                bindings::SYSFS_MAGIC,
                text(pmu)
            );
            return Err(EINVAL);
        }
        drop(handle);
        KernelFile::open(path, bindings::O_RDWR).inspect_err(|e| {
            pr_err!("cannot open {path:?} for writing ({e:?}): refusing to load\n");
        })
    }

    /// Switches the policy in `file` to "always", returning what was there.
    fn switch_policy(path: &'static CStr, file: KernelFile) -> Result<Enabled> {
        let (old, old_len) = file.read_value().map_err(|e| {
            pr_err!("cannot read {path:?} ({e:?}): refusing to load\n");
            user_visible(e)
        })?;
        if let Err(e) = file.write_value(&[ALWAYS, b'\n']) {
            if e == ENOTSUPP {
                pr_err!(
                    "perf refuses to change {path:?}: rdpmc is marked broken on this CPU (x86_pmu.attr_rdpmc_broken, arch/x86/events/core.c); refusing to load (-EOPNOTSUPP)\n"
                );
            } else {
                pr_err!("cannot write 2 to {path:?} ({e:?}): refusing to load\n");
            }
            return Err(user_visible(e));
        }
        pr_info!(
            "loaded: perf rdpmc policy {path:?} {} -> 2 (always): every process may execute rdpmc, on every CPU, now and after process switches\n",
            text(&old[..old_len])
        );
        pr_warn!("any process can now read the PMU counters (a timing side channel)\n");
        Ok(Enabled::Policy { path, old, old_len })
    }

    /// One CPU's CR4.PCE before and after.
    #[derive(Default, Clone, Copy)]
    pub(crate) struct CpuState {
        applied: bool,
        old_pce: bool,
        found_pce: bool,
    }

    static SLOTS: AtomicPtr<percpu::Slot<CpuState>> = AtomicPtr::new(core::ptr::null_mut());

    /// On the CPU, interrupts off: set CR4.PCE, remembering the previous value.
    ///
    /// # Safety
    ///
    /// `info` is a `*mut CpuState` valid for the call; run with interrupts disabled on the
    /// CPU whose state it records (through [`percpu::run_on`]).
    unsafe extern "C" fn set_pce(info: *mut c_void) {
        // SAFETY: `percpu::run_on` passes a `&mut CpuState` that outlives the call.
        let st = unsafe { &mut *info.cast::<CpuState>() };
        st.old_pce = read_cr4() & X86_CR4_PCE != 0;
        // SAFETY: interrupts are off (smp_call_function_single), as
        // `cr4_update_irqsoff()` requires; it keeps the kernel's per-CPU CR4 shadow in step.
        unsafe { bindings::cr4_update_irqsoff(X86_CR4_PCE as _, 0) };
        st.applied = true;
    }

    /// On the CPU, interrupts off: clear CR4.PCE again if it was clear before `set_pce`.
    ///
    /// # Safety
    ///
    /// As for [`set_pce`].
    unsafe extern "C" fn restore_pce(info: *mut c_void) {
        // SAFETY: `percpu::run_on` passes a `&mut CpuState` that outlives the call.
        let st = unsafe { &mut *info.cast::<CpuState>() };
        st.found_pce = read_cr4() & X86_CR4_PCE != 0;
        if !st.old_pce {
            // SAFETY: as in `set_pce`.
            unsafe { bindings::cr4_update_irqsoff(0, X86_CR4_PCE as _) };
        }
        st.applied = false;
    }

    /// How long a CR4.PCE set by the module lasts on this kernel (arch/x86/mm/tlb.c,
    /// Linux 6.12: `cr4_update_pce_mm()` is empty without CONFIG_PERF_EVENTS).
    #[cfg(CONFIG_PERF_EVENTS)]
    const PCE_LASTS: &str = "until this CPU switches to another process";
    #[cfg(not(CONFIG_PERF_EVENTS))]
    const PCE_LASTS: &str = "until unload: this kernel has no CONFIG_PERF_EVENTS, nothing clears it";

    /// Hotplug startup: runs on `cpu` when it comes online, and on every online CPU when
    /// the state is installed.
    ///
    /// # Safety
    ///
    /// Called by the CPU-hotplug core only, for `cpu`, while the state is installed.
    unsafe extern "C" fn cpu_online(cpu: c_uint) -> c_int {
        // SAFETY: a hotplug callback of `cpu`, while the state (and so the slots) exists.
        let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
            return 0;
        };
        *st = CpuState::default();
        if let Err(e) = percpu::run_on(cpu, set_pce, st) {
            pr_err!("cpu{cpu}: cannot run on the CPU ({e:?})\n");
            return e.to_errno();
        }
        pr_info!(
            "cpu{cpu}: CR4.PCE {} -> 1 (rdpmc allowed at CPL 3 {PCE_LASTS})\n",
            st.old_pce as u8
        );
        0
    }

    /// Hotplug teardown: runs on `cpu` when it goes offline, and on every online CPU when
    /// the state is removed.
    ///
    /// # Safety
    ///
    /// As for [`cpu_online`].
    unsafe extern "C" fn cpu_offline(cpu: c_uint) -> c_int {
        // SAFETY: a hotplug callback of `cpu`, while the state (and so the slots) exists.
        let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
            return 0;
        };
        if !st.applied {
            return 0;
        }
        if let Err(e) = percpu::run_on(cpu, restore_pce, st) {
            pr_err!("cpu{cpu}: cannot run on the CPU to restore it ({e:?})\n");
            return 0;
        }
        let note = if st.found_pce { "" } else { " (the kernel had already cleared it)" };
        pr_info!(
            "cpu{cpu}: CR4.PCE {} -> {} restored{note}\n",
            st.found_pce as u8,
            (st.found_pce && st.old_pce) as u8
        );
        0
    }

    /// Sets CR4.PCE on every CPU (the `cr4_pce_until_switch=1` opt-in).
    fn set_cr4_pce() -> Result<Enabled> {
        #[cfg(CONFIG_PERF_EVENTS)]
        pr_warn!(
            "cr4_pce_until_switch=1: setting CR4.PCE on every CPU; it lasts only until each CPU's next switch to another process (arch/x86/mm/tlb.c: switch_mm_irqs_off() -> cr4_update_pce_mm() clears it, there being no perf rdpmc policy): only the process running there keeps rdpmc, not a lasting grant\n"
        );
        #[cfg(not(CONFIG_PERF_EVENTS))]
        pr_warn!(
            "cr4_pce_until_switch=1: setting CR4.PCE on every CPU; this kernel has no CONFIG_PERF_EVENTS, so nothing clears it: every process may execute rdpmc until unload\n"
        );
        let slots = percpu::Slots::new(&SLOTS)?;
        let state = percpu::HotplugState::install(c"perf/kmod_enable_user:online", cpu_online, cpu_offline)
            .map_err(user_visible)?;
        pr_info!("loaded: CR4.PCE set on every online CPU (mode cr4_pce_until_switch)\n");
        Ok(Enabled::Cr4 {
            state: Some(state),
            _slots: slots,
        })
    }

    /// What `enable` changed.
    pub(crate) enum Enabled {
        /// perf's policy file was switched from `old` to "2".
        Policy {
            path: &'static CStr,
            old: [u8; 16],
            old_len: usize,
        },
        /// CR4.PCE set per CPU; removing the state restores each CPU.
        Cr4 {
            state: Option<percpu::HotplugState>,
            _slots: percpu::Slots<CpuState>,
        },
    }

    fn text(bytes: &[u8]) -> &str {
        core::str::from_utf8(bytes).unwrap_or("?")
    }

    pub(crate) fn enable() -> Result<Enabled> {
        let cr4 = CR4_PCE_UNTIL_SWITCH.get();
        if let Some(path) = given_policy_file() {
            if cr4 {
                pr_err!(
                    "rdpmc_policy= and cr4_pce_until_switch=1 exclude each other (the policy is the lasting route, CR4.PCE the stand-in where there is none): refusing to load\n"
                );
                return Err(EINVAL);
            }
            // ENOENT would read "Unknown symbol in module" in kmod's insmod
            // (tools/insmod.c, `mod_strerror()`): a missing policy is "No such device".
            let file = open_policy(path).map_err(|e| {
                if e == ENOENT {
                    pr_err!(
                        "{path:?} does not exist: no such PMU, or one without an rdpmc policy (only x86 core PMUs have one): refusing to load (-ENODEV)\n"
                    );
                    ENODEV
                } else {
                    user_visible(e)
                }
            })?;
            return switch_policy(path, file);
        }
        for path in POLICY_FILES {
            let file = match open_policy(path) {
                Ok(file) => file,
                Err(e) if e == ENOENT => continue,
                Err(e) => return Err(user_visible(e)),
            };
            if cr4 {
                pr_err!(
                    "cr4_pce_until_switch=1 refused: perf's rdpmc policy {path:?} exists and is the lasting route; load without it\n"
                );
                return Err(EINVAL);
            }
            return switch_policy(path, file);
        }
        if !cr4 {
            pr_err!(
                "no perf rdpmc policy here ({:?} absent: no x86 PMU driver, as in a VM without a virtual PMU): nothing lasting to enable, refusing to load (-ENODEV)\n",
                POLICY_FILES[0]
            );
            pr_err!(
                "cr4_pce_until_switch=1 would set CR4.PCE on every CPU instead; the kernel clears it at each CPU's next switch to another process, so only the process running there could execute rdpmc\n"
            );
            return Err(ENODEV);
        }
        set_cr4_pce()
    }

    impl Enabled {
        pub(crate) fn disable(&mut self) {
            match self {
                Enabled::Policy { path, old, old_len } => {
                    let len = *old_len;
                    old[len] = b'\n';
                    let restored = KernelFile::open(path, bindings::O_RDWR)
                        .and_then(|f| f.write_value(&old[..=len]));
                    let old = &old[..len];
                    match restored {
                        Ok(()) => pr_info!(
                            "unloaded: perf rdpmc policy {path:?} 2 -> {} restored\n",
                            text(old)
                        ),
                        Err(e) => pr_err!(
                            "unloaded, but could not restore {path:?} to {} ({e:?}): write it by hand\n",
                            text(old)
                        ),
                    }
                }
                Enabled::Cr4 { state, .. } => {
                    drop(state.take());
                    pr_info!("unloaded: every online CPU's previous CR4.PCE restored\n");
                }
            }
        }
    }
}

#[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
mod arch {
    //! Any other architecture: nothing this module knows how to enable.

    use super::*;

    pub(crate) struct Enabled;

    pub(crate) fn enable() -> Result<Enabled> {
        pr_err!("unsupported architecture (arm64 and x86_64 only): refusing to load\n");
        Err(ENODEV)
    }

    impl Enabled {
        pub(crate) fn disable(&mut self) {}
    }
}
