//! The Rust half of kmod-enable-user for stock kernels: the register logic of
//! `pmu_armv8::user_enable` (arm64), `pmu_armv6::user_enable` (ARMv6, built for
//! `armv6-none-eabi`) and `pmu_armv7::user_enable` (ARMv7 and ARMv8 in AArch32, built for
//! `armv7a-none-eabi`) behind a few
//! `extern "C"` functions and `#[repr(C)]` structs, compiled as one no_std object that
//! Kbuild links with the C glue (`../kmod_enable_user_glue.c`, declarations in
//! `../kmod_enable_user_stock.h`).
//!
//! Why this shape: stock distribution kernels (Debian, Raspberry Pi OS) are built without
//! CONFIG_RUST, and Linux 6.12 has no Rust support for 32-bit ARM at all, so the
//! Rust-for-Linux module cannot be built there. What module loading needs (init/exit,
//! license, parameters, the CPU-hotplug state, `smp_call_function_single`, printk) is C;
//! everything that touches a PMU register is the same Rust the workspace tests on the
//! host.
//!
//! The object has no runtime: no allocation, no formatting, no unwinding. The panic
//! handler calls the glue's `kmod_enable_user_rust_panic()` (which calls the kernel's
//! `panic()`); the build checks with `nm -u` that the object needs nothing else, and
//! the code is written so that no panic path survives optimization (then even that
//! symbol is absent).
//!
//! Errors are returned as negative errnos, the kernel's convention (values from
//! include/uapi/asm-generic/errno-base.h, the same on arm and arm64).
#![no_std]

/// `EINVAL`: invalid argument (include/uapi/asm-generic/errno-base.h).
const EINVAL: i32 = 22;

extern "C" {
    /// In the C glue: reports a Rust panic through the kernel's `panic()`.
    fn kmod_enable_user_rust_panic() -> !;
}

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: the glue's function takes no arguments and never returns (it calls
    // `panic()`); calling it from any context is what it is for.
    unsafe { kmod_enable_user_rust_panic() }
}

#[cfg(target_arch = "aarch64")]
pub mod arm64 {
    //! arm64: the grant of `pmu_armv8::user_enable`, for the module's callbacks (CPU
    //! hotplug, CPU PM, the `regrant` parameter) and its load-time checks.

    use super::*;
    use core::ffi::{c_char, CStr};
    use pmu_armv8::user_enable::{
        self, Applied, ApplyError, EventsError, Layout, ModuleEvents, Request, Sentinel,
        UserAccess, UserAccessError, UserAccessRegisters, MAX_MODULE_EVENTS,
    };
    use pmu_armv8::{El1UserAccess, EventNumber};

    /// `ENODEV`: no such device (include/uapi/asm-generic/errno-base.h).
    const ENODEV: i32 = 19;
    /// `EBUSY`: device or resource busy.
    const EBUSY: i32 = 16;
    /// `EOPNOTSUPP`: operation not supported (include/uapi/asm-generic/errno.h).
    const EOPNOTSUPP: i32 = 95;
    /// The longest `events` text: 6 items of `0xffff` and 5 commas.
    const EVENTS_TEXT_MAX: usize = 6 * 6 + 5;

    /// The module-wide settings, checked once at load by [`kmod_eu_arm64_configure`]
    /// (C: `struct kmod_eu_config`), read by every per-CPU call.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct KmodEuConfig {
        /// The `user_access` parameter.
        pub user_access: u32,
        /// The events the module programs, `n_events` of them.
        pub events: [u16; MAX_MODULE_EVENTS],
        /// How many of `events`.
        pub n_events: u8,
        /// PMCR_EL0.N of the loading CPU: the layout's counters are counted from it.
        pub event_counters: u8,
        /// The `cycle_counter` parameter.
        pub cycle_counter: bool,
        /// The `el0_programming` parameter.
        pub el0_programming: bool,
        /// ID_AA64DFR0_EL1.PMUVer of the loading CPU.
        pub pmuver: u8,
        /// The `sentinel` parameter: run the kernel-entry sentinel.
        pub sentinel: bool,
        /// The sentinel's event: INST_RETIRED, or CPU_CYCLES where the CPU does not
        /// implement INST_RETIRED.
        pub sentinel_event: u8,
        /// The kernel runs at EL2 (VHE): the sentinel counts there.
        pub kernel_at_el2: bool,
    }

    const _: () = assert!(core::mem::size_of::<KmodEuConfig>() == 24);

    impl KmodEuConfig {
        /// The request every CPU gets; `None` only for a config that
        /// [`kmod_eu_arm64_configure`] did not accept.
        fn request(&self) -> Option<Request> {
            let n = usize::from(self.n_events).min(MAX_MODULE_EVENTS);
            let events = ModuleEvents::from_slice(self.events.get(..n)?).ok()?;
            let layout = Layout::new(self.event_counters, events, self.cycle_counter).ok()?;
            let layout = if self.sentinel {
                let sentinel = Sentinel::new(u16::from(self.sentinel_event), self.kernel_at_el2);
                layout.with_sentinel(sentinel).ok()?
            } else {
                layout
            };
            Some(Request {
                user_access: UserAccess::new(u64::from(self.user_access), self.el0_programming)
                    .ok()?,
                layout,
            })
        }
    }

    /// Checks the parameters and fills `cfg` and `layout` (the `layout` parameter's text,
    /// with `sentinel` the kernel-entry sentinel below the events, `:k`;
    /// NUL-terminated, at most `layout_size` bytes with the NUL) on the CPU it runs on.
    /// Returns 0, or a negative errno with `*why` a static sentence saying which rule was
    /// broken: `-EINVAL` (a parameter), `-ENODEV` (no PMUv3, or too few counters).
    ///
    /// # Safety
    ///
    /// At EL1 with preemption disabled (ID_AA64DFR0_EL1 and PMCR_EL0 are read on one
    /// CPU); `cfg` and `why` valid for writes, `events` a NUL-terminated string or null,
    /// `layout` valid for `layout_size` bytes of writes.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_arm64_configure(
        cfg: *mut KmodEuConfig,
        user_access: u32,
        el0_programming: bool,
        events: *const c_char,
        cycle_counter: bool,
        sentinel: bool,
        layout: *mut c_char,
        layout_size: usize,
        why: *mut *const c_char,
    ) -> i32 {
        // SAFETY: valid pointers by the caller's contract.
        let (Some(cfg), Some(why)) = (unsafe { cfg.as_mut() }, unsafe { why.as_mut() }) else {
            return -EINVAL;
        };
        *why = c"".as_ptr();
        let fail = |why: &mut *const c_char, errno: i32, text: &'static CStr| {
            *why = text.as_ptr();
            errno
        };
        // The version first, so that every refusal's log line names the CPU's real
        // PMUVer (read after the parameter checks, a refused parameter logged 0x0).
        // SAFETY: EL1 with preemption off (the caller's contract); only ID_AA64DFR0_EL1
        // and, with PMUv3, PMCR_EL0 are read: nothing is written.
        let regs = unsafe { El1UserAccess::new() };
        let version = pmu_armv8::PmuVersion::from_id_aa64dfr0(regs.id_aa64dfr0());
        cfg.pmuver = version.pmuver();
        if let Err(e) = UserAccess::new(u64::from(user_access), el0_programming) {
            let text = match e {
                UserAccessError::Empty => c"user_access=0 grants nothing",
                UserAccessError::WriteAccessNeedsOptIn => {
                    c"user_access may hold SW=2, CR=4, ER=8 only: write access (EN=1) is granted by el0_programming=1 alone"
                }
                _ => c"user_access has bits outside SW=2|CR=4|ER=8",
            };
            return fail(why, -EINVAL, text);
        }
        // The string's bytes up to its NUL, at most EVENTS_TEXT_MAX of them (longer is
        // refused below as not a list). Scanned by hand: `CStr::from_ptr` would need the
        // C library's strlen, which the object must not import.
        let mut length = 0;
        if !events.is_null() {
            // SAFETY: a NUL-terminated string by the caller's contract; the scan stops
            // at the NUL or at EVENTS_TEXT_MAX + 1 bytes, within the string.
            while length <= EVENTS_TEXT_MAX && unsafe { *events.add(length) } != 0 {
                length += 1;
            }
        }
        if length > EVENTS_TEXT_MAX {
            return fail(
                why,
                -EINVAL,
                c"events: longer than a list of 6 event numbers can be",
            );
        }
        let text: &[u8] = if length == 0 {
            b""
        } else {
            // SAFETY: `length` bytes before the NUL, read above.
            unsafe { core::slice::from_raw_parts(events.cast::<u8>(), length) }
        };
        let parsed = match ModuleEvents::parse(text) {
            Ok(parsed) => parsed,
            Err(e) => {
                let text = match e {
                    EventsError::TooMany => c"events: at most 6 event numbers",
                    EventsError::OutOfRange { .. } => {
                        c"events: an event number above 0xffff (PMEVTYPER<n>_EL0.evtCount has 16 bits)"
                    }
                    EventsError::Duplicate { .. } => c"events: an event named twice",
                    _ => {
                        c"events: a comma-separated list of event numbers, decimal or 0x-hex, e.g. 0x8,0x3"
                    }
                };
                return fail(why, -EINVAL, text);
            }
        };
        if !version.is_pmuv3() {
            return fail(
                why,
                -ENODEV,
                c"no PMUv3 on this CPU (ID_AA64DFR0_EL1.PMUVer)",
            );
        }
        if parsed.is_empty() && !cycle_counter && !sentinel && !el0_programming {
            return fail(
                why,
                -EINVAL,
                c"events is empty, cycle_counter=0 and sentinel=0: the grant would only expose perf's counters",
            );
        }
        if parsed.as_slice().contains(&user_enable::CHAIN) {
            return fail(
                why,
                -EINVAL,
                c"events: 0x1e (CHAIN) only pairs two counters and counts nothing alone",
            );
        }
        if cycle_counter && parsed.as_slice().contains(&user_enable::CPU_CYCLES) {
            return fail(
                why,
                -EINVAL,
                c"events: 0x11 (CPU_CYCLES) is already counted by cycle_counter=1",
            );
        }
        // PMEVTYPER<n>_EL0.evtCount is 10 bits wide in PMUv3 for ARMv8.0 (PMUVer 0b0001)
        // and 16 bits from PMUv3 for ARMv8.1 (Arm ARM, PMEVTYPER<n>_EL0): a wider number
        // would write RES0 bits and count another event.
        if version.pmuver() == 1 && parsed.as_slice().iter().any(|&e| e > 0x3ff) {
            return fail(
                why,
                -EINVAL,
                c"events: an event number above 0x3ff (PMUv3 for ARMv8.0: evtCount has 10 bits)",
            );
        }
        // PMCR_EL0.N, bits 15:11 (Arm ARM, PMCR_EL0).
        let n = ((regs.pmcr().get() >> 11) & 0x1f) as u8;
        let Ok(checked) = Layout::new(n, parsed, cycle_counter) else {
            return fail(
                why,
                -ENODEV,
                c"events: more events than this CPU has event counters (PMCR_EL0.N)",
            );
        };
        // The sentinel's event: INST_RETIRED where implemented (PMCEID0_EL0), else
        // CPU_CYCLES, which every PMUv3 implements (Arm ARM, "Common event numbers").
        // Which Exception level the kernel runs at: CurrentEL (2 with VHE).
        let inst_retired = regs
            .implemented_events()
            .contains(EventNumber::INST_RETIRED);
        let sentinel_event: u8 = if inst_retired == Some(false) {
            0x11
        } else {
            0x08
        };
        // SAFETY: at EL1 or EL2 (the caller's contract), where CurrentEL is readable.
        let kernel_at_el2 = unsafe { pmu_armv8::asm::current_el() } == 2;
        let checked = if sentinel {
            match checked.with_sentinel(Sentinel::new(u16::from(sentinel_event), kernel_at_el2)) {
                Ok(with) => with,
                Err(_) => {
                    return fail(
                        why,
                        -ENODEV,
                        c"sentinel: the events and the sentinel need more event counters than this CPU has (PMCR_EL0.N)",
                    )
                }
            }
        } else {
            checked
        };
        *cfg = KmodEuConfig {
            user_access,
            events: [0; MAX_MODULE_EVENTS],
            n_events: parsed.len() as u8,
            event_counters: n,
            cycle_counter,
            el0_programming,
            pmuver: version.pmuver(),
            sentinel,
            sentinel_event,
            kernel_at_el2,
        };
        for (slot, &event) in cfg.events.iter_mut().zip(parsed.as_slice()) {
            *slot = event;
        }
        if !layout.is_null() && layout_size > 0 {
            // SAFETY: `layout` is valid for `layout_size` bytes (the caller's contract).
            let out = unsafe { core::slice::from_raw_parts_mut(layout.cast::<u8>(), layout_size) };
            if let Some((nul, text)) = out.split_last_mut() {
                let len = checked.write_text(text);
                *text.get_mut(len).unwrap_or(nul) = 0;
            }
        }
        0
    }

    /// One CPU's state (C: `struct kmod_eu_cpu`): filled by [`kmod_eu_arm64_apply`]
    /// and [`kmod_eu_arm64_restore`], for the log and the next call.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct KmodEuCpu {
        /// PMUSERENR_EL0 before the first grant on this CPU.
        pub old_userenr: u64,
        /// PMUSERENR_EL0 found by the last apply or restore.
        pub found_userenr: u64,
        /// PMUSERENR_EL0 written by the last apply or restore.
        pub new_userenr: u64,
        /// PMCNTENSET_EL0 bits of the module's counters.
        pub owned: u64,
        /// The module's counters the last apply programmed from zero.
        pub zeroed: u64,
        /// The module's counters the last apply found still running and kept.
        pub kept: u64,
        /// Counters the restore disabled and zeroed.
        pub released: u64,
        /// The module's counters the restore found in perf's `used_mask`, left alone.
        pub taken: u64,
        /// With `-EBUSY`: the configuration register of the counter in use.
        pub busy_config: u64,
        /// 0, or the negative errno of the last apply: `-ENODEV` (no PMUv3, too few
        /// counters), `-EBUSY` (a layout counter in use), `-EOPNOTSUPP` (an event not
        /// implemented).
        pub error: i32,
        /// With `-EBUSY` the counter, with `-EOPNOTSUPP` the event,
        /// with `-ENODEV` PMCR_EL0.N of this CPU.
        pub error_detail: u32,
        /// Whether the grant is in place (and must be restored).
        pub applied: bool,
        /// Whether the module turned PMCR_EL0.E on.
        pub enabled_pmu: bool,
        /// ID_AA64DFR0_EL1.PMUVer of this CPU.
        pub pmuver: u8,
        /// Padding, zero.
        pub reserved: [u8; 5],
        /// Input of apply and restore, set by the glue on this CPU with interrupts off
        /// just before: perf's `used_mask` of this CPU as PMCNTENSET_EL0 bits.
        pub perf_used: u64,
    }

    // The C declaration has the same size (checked there with static_assert too).
    const _: () = assert!(core::mem::size_of::<KmodEuCpu>() == 96);

    impl KmodEuCpu {
        fn applied(&self) -> Applied {
            Applied {
                pmuver: self.pmuver,
                old_pmuserenr: self.old_userenr,
                found_pmuserenr: self.found_userenr,
                new_pmuserenr: self.new_userenr,
                owned: self.owned,
                zeroed: self.zeroed,
                kept: self.kept,
                enabled_pmu: self.enabled_pmu,
            }
        }
    }

    /// On the CPU, interrupts off: [`user_enable::apply`] of `cfg`'s request, a
    /// re-grant when `st.applied` (after CPU PM, perf, or on request). Fills `st`:
    /// `st.applied` and `st.error` say how it went.
    ///
    /// # Safety
    ///
    /// `st` and `cfg` are valid (or null: nothing happens), `cfg` accepted by
    /// [`kmod_eu_arm64_configure`]; runs at EL1 with interrupts disabled on the CPU `st`
    /// describes, and the caller has decided that EL0 may use the PMU.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_arm64_apply(st: *mut KmodEuCpu, cfg: *const KmodEuConfig) {
        // SAFETY: valid or null, by the caller's contract.
        let (Some(st), Some(cfg)) = (unsafe { st.as_mut() }, unsafe { cfg.as_ref() }) else {
            return;
        };
        let Some(request) = cfg.request() else {
            st.error = -EINVAL;
            return;
        };
        // SAFETY: EL1, interrupts off on this CPU, and the decision to grant EL0 access
        // taken by the caller: `El1UserAccess::new`'s contract.
        let regs = unsafe { El1UserAccess::new() };
        let previous = st.applied.then(|| st.applied());
        match user_enable::apply(&regs, request, previous.as_ref(), st.perf_used) {
            Ok(applied) => {
                st.pmuver = applied.pmuver;
                st.old_userenr = applied.old_pmuserenr;
                st.found_userenr = applied.found_pmuserenr;
                st.new_userenr = applied.new_pmuserenr;
                st.owned = applied.owned;
                st.zeroed = applied.zeroed;
                st.kept = applied.kept;
                st.enabled_pmu = applied.enabled_pmu;
                st.error = 0;
                st.applied = true;
            }
            Err(e) => {
                (st.error, st.error_detail) = match e {
                    ApplyError::NoPmuV3(no) => {
                        st.pmuver = no.version.pmuver();
                        (-ENODEV, 0)
                    }
                    ApplyError::TooFewCounters(t) => (-ENODEV, u32::from(t.have)),
                    ApplyError::CounterInUse { counter, config } => {
                        st.busy_config = config;
                        (-EBUSY, u32::from(counter))
                    }
                    ApplyError::EventNotImplemented { event } => (-EOPNOTSUPP, u32::from(event)),
                    _ => (-EINVAL, 0),
                };
            }
        }
    }

    /// On the CPU, interrupts off: [`user_enable::restore`] of what
    /// [`kmod_eu_arm64_apply`] recorded in `st`; clears `st.applied`. Nothing happens
    /// unless `st.applied`.
    ///
    /// # Safety
    ///
    /// As for [`kmod_eu_arm64_apply`], with `st` filled by it on this CPU.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_arm64_restore(st: *mut KmodEuCpu, cfg: *const KmodEuConfig) {
        // SAFETY: valid or null, by the caller's contract.
        let (Some(st), Some(cfg)) = (unsafe { st.as_mut() }, unsafe { cfg.as_ref() }) else {
            return;
        };
        if !st.applied {
            return;
        }
        let Some(request) = cfg.request() else {
            return;
        };
        // SAFETY: as in `kmod_eu_arm64_apply`; restoring takes access away again.
        let regs = unsafe { El1UserAccess::new() };
        let restored = user_enable::restore(&regs, &st.applied(), &request.layout, st.perf_used);
        st.found_userenr = restored.found_pmuserenr;
        st.new_userenr = restored.new_pmuserenr;
        st.released = restored.released;
        st.taken = restored.taken;
        st.applied = false;
    }

    /// "CR|ER" and so on for PMUSERENR_EL0 `bits` ("none" without any of the four):
    /// a static NUL-terminated string.
    #[no_mangle]
    pub extern "C" fn kmod_eu_arm64_access_names(bits: u64) -> *const c_char {
        user_enable::access_names(bits).as_ptr()
    }

    /// What EL0 may do with PMUSERENR_EL0 `bits` ("read-only", "read and program
    /// (EN)", …): a static NUL-terminated string.
    #[no_mangle]
    pub extern "C" fn kmod_eu_arm64_grant_words(bits: u64) -> *const c_char {
        user_enable::grant_words(bits).as_ptr()
    }
}

#[cfg(all(target_arch = "arm", not(target_feature = "v7")))]
pub mod armv6 {
    //! ARMv6 (ARM1176): SUNAVCR.V through `pmu_armv6::user_enable`.

    use super::*;
    use pmu_armv6::user_enable::{self, Granted};
    use pmu_armv6::PrivilegedCp15;

    /// `EIO`: I/O error (include/uapi/asm-generic/errno-base.h).
    const EIO: i32 = 5;

    /// SUNAVCR before and after, shared with C as `struct kmod_eu_armv6`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct KmodEuArmv6 {
        /// SUNAVCR before the load.
        pub previous: u32,
        /// What was written: `previous` with V set.
        pub written: u32,
        /// SUNAVCR read back right after the write.
        pub read_back: u32,
        /// SUNAVCR found at unload, before writing `previous` back.
        pub found: u32,
    }

    // The C declaration has the same size (checked there with _Static_assert too).
    const _: () = assert!(core::mem::size_of::<KmodEuArmv6>() == 16);

    /// Whether MIDR `midr` names an ARM1176 (part 0xB76), the only core with SUNAVCR.
    #[no_mangle]
    pub extern "C" fn kmod_eu_armv6_is_arm1176(midr: u32) -> bool {
        user_enable::is_arm1176(midr)
    }

    /// The primary part number of MIDR `midr` (bits 15:4), for the refusal message.
    #[no_mangle]
    pub extern "C" fn kmod_eu_armv6_part_number(midr: u32) -> u32 {
        user_enable::part_number(midr)
    }

    /// Sets SUNAVCR.V and reads it back. 0 when it stuck; `-EIO` when it did not (then
    /// SUNAVCR holds `st.previous` again and `st.read_back` says what was read).
    ///
    /// # Safety
    ///
    /// `st` is valid for writes (or null: `-EINVAL`); the CPU is an ARM1176
    /// ([`kmod_eu_armv6_is_arm1176`]), the code runs in a privileged mode on one CPU
    /// (preemption off), and the caller has decided that User mode may use the PMU.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_armv6_enable(st: *mut KmodEuArmv6) -> i32 {
        // SAFETY: valid or null, by the caller's contract.
        let Some(st) = (unsafe { st.as_mut() }) else {
            return -EINVAL;
        };
        // SAFETY: ARM1176, privileged, one CPU, decision taken: the caller's contract is
        // `PrivilegedCp15::new`'s.
        let regs = unsafe { PrivilegedCp15::new() };
        match user_enable::enable(&regs) {
            Ok(granted) => {
                st.previous = granted.previous;
                st.written = granted.previous | 1;
                st.read_back = granted.now;
                0
            }
            Err(refused) => {
                st.previous = refused.previous;
                st.written = refused.written;
                st.read_back = refused.read_back;
                -EIO
            }
        }
    }

    /// Writes SUNAVCR back to `st.previous`; sets `st.found` to what it held before.
    ///
    /// # Safety
    ///
    /// `st` is valid for reads and writes (or null: nothing happens) and was filled by a
    /// successful [`kmod_eu_armv6_enable`]; same CPU conditions as there.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_armv6_disable(st: *mut KmodEuArmv6) {
        // SAFETY: valid or null, by the caller's contract.
        let Some(st) = (unsafe { st.as_mut() }) else {
            return;
        };
        // SAFETY: as in `kmod_eu_armv6_enable`; writing the previous value back takes
        // the access away again.
        let regs = unsafe { PrivilegedCp15::new() };
        let granted = Granted {
            previous: st.previous,
            now: st.read_back,
        };
        st.found = user_enable::disable(&regs, &granted);
    }
}

#[cfg(all(target_arch = "arm", target_feature = "v7"))]
pub mod armv7 {
    //! ARMv7 / AArch32: the grant of `pmu_armv7::user_enable` (PMUSERENR), for the
    //! ARMv7 flavour's callbacks (CPU hotplug, CPU PM, `regrant`) and load-time checks.
    //! The same shape as [`crate::arm64`], with the AArch32 rule that PMUv2 has no
    //! read-only grant.

    use super::*;
    use core::ffi::{c_char, CStr};
    use pmu_armv7::user_enable::{
        self, Applied, ApplyError, EventsError, Layout, ModuleEvents, Request, UserAccess,
        UserAccessError, UserAccessRegisters, MAX_MODULE_EVENTS,
    };
    use pmu_armv7::{PerfMon, Pl1Registers, PmuRegisters};

    /// `ENODEV`: no such device (include/uapi/asm-generic/errno-base.h).
    const ENODEV: i32 = 19;
    /// `EBUSY`: device or resource busy.
    const EBUSY: i32 = 16;
    /// `EOPNOTSUPP`: operation not supported (include/uapi/asm-generic/errno.h).
    const EOPNOTSUPP: i32 = 95;
    /// The longest `events` text: 6 items of `0xffff` and 5 commas.
    const EVENTS_TEXT_MAX: usize = 6 * 6 + 5;
    /// `error_detail` of an `-EOPNOTSUPP` that names no event (C: KMOD_EU_NO_EVENT).
    const NO_EVENT: u32 = u32::MAX;

    /// The module-wide settings, checked once at load by [`kmod_eu_armv7_configure`]
    /// (C: `struct kmod_eu_v7_config`).
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct KmodEuV7Config {
        /// The `user_access` parameter.
        pub user_access: u32,
        /// The events the module programs, `n_events` of them.
        pub events: [u16; MAX_MODULE_EVENTS],
        /// How many of `events`.
        pub n_events: u8,
        /// PMCR.N of the loading CPU: the layout's counters are counted from it.
        pub event_counters: u8,
        /// The `cycle_counter` parameter.
        pub cycle_counter: bool,
        /// The `el0_programming` parameter.
        pub el0_programming: bool,
        /// ID_DFR0.PerfMon of the loading CPU.
        pub perfmon: u8,
        /// Padding, zero.
        pub reserved: [u8; 3],
    }

    const _: () = assert!(core::mem::size_of::<KmodEuV7Config>() == 24);

    impl KmodEuV7Config {
        fn request(&self) -> Option<Request> {
            let n = usize::from(self.n_events).min(MAX_MODULE_EVENTS);
            let events = ModuleEvents::from_slice(self.events.get(..n)?).ok()?;
            Some(Request {
                user_access: UserAccess::new(self.user_access, self.el0_programming).ok()?,
                layout: Layout::with_cycle_counter_register(
                    self.event_counters,
                    events,
                    self.cycle_counter,
                )
                .ok()?,
            })
        }
    }

    /// Checks the parameters against the loading CPU and fills `cfg` and `layout` (as
    /// the arm64 `kmod_eu_arm64_configure`). Returns 0, or a negative errno with `*why`
    /// a static sentence: `-EINVAL` (a parameter), `-ENODEV` (no PMUv2/PMUv3, too few
    /// counters), `-EOPNOTSUPP` (PMUv2, which has no read-only grant, without
    /// `el0_programming=1`).
    ///
    /// # Safety
    ///
    /// At PL1 on an ARMv7 CPU (the glue checked ID_MMFR0) with preemption disabled;
    /// `cfg` and `why` valid for writes, `events` a NUL-terminated string or null,
    /// `layout` valid for `layout_size` bytes of writes.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_armv7_configure(
        cfg: *mut KmodEuV7Config,
        user_access: u32,
        el0_programming: bool,
        events: *const c_char,
        cycle_counter: bool,
        layout: *mut c_char,
        layout_size: usize,
        why: *mut *const c_char,
    ) -> i32 {
        // SAFETY: valid pointers by the caller's contract.
        let (Some(cfg), Some(why)) = (unsafe { cfg.as_mut() }, unsafe { why.as_mut() }) else {
            return -EINVAL;
        };
        *why = c"".as_ptr();
        let fail = |why: &mut *const c_char, errno: i32, text: &'static CStr| {
            *why = text.as_ptr();
            errno
        };
        // First, so that every refusal logs the CPU's true PerfMon (the glue prints it).
        // SAFETY: PL1 with preemption off (the caller's contract); only ID_DFR0 and, with
        // a PMU, PMCR are read here: nothing is written.
        let regs = unsafe { Pl1Registers::new() };
        let perfmon = PerfMon::from_id_dfr0(regs.id_dfr0());
        cfg.perfmon = perfmon.raw();
        if let Err(e) = UserAccess::new(user_access, el0_programming) {
            let text = match e {
                UserAccessError::Empty => c"user_access=0 grants nothing",
                UserAccessError::WriteAccessNeedsOptIn => {
                    c"user_access may hold SW=2, CR=4, ER=8 only: write access (EN=1) is granted by el0_programming=1 alone"
                }
                _ => c"user_access has bits outside SW=2|CR=4|ER=8",
            };
            return fail(why, -EINVAL, text);
        }
        let mut length = 0;
        if !events.is_null() {
            // SAFETY: a NUL-terminated string by the caller's contract; the scan stops
            // at the NUL or at EVENTS_TEXT_MAX + 1 bytes, within the string.
            while length <= EVENTS_TEXT_MAX && unsafe { *events.add(length) } != 0 {
                length += 1;
            }
        }
        if length > EVENTS_TEXT_MAX {
            return fail(
                why,
                -EINVAL,
                c"events: longer than a list of 6 event numbers can be",
            );
        }
        let text: &[u8] = if length == 0 {
            b""
        } else {
            // SAFETY: `length` bytes before the NUL, read above.
            unsafe { core::slice::from_raw_parts(events.cast::<u8>(), length) }
        };
        let parsed = match ModuleEvents::parse(text) {
            Ok(parsed) => parsed,
            Err(e) => {
                let text = match e {
                    EventsError::TooMany => c"events: at most 6 event numbers",
                    EventsError::OutOfRange { .. } => c"events: an event number above 0xffff",
                    EventsError::Duplicate { .. } => c"events: an event named twice",
                    _ => {
                        c"events: a comma-separated list of event numbers, decimal or 0x-hex, e.g. 0x8,0x3"
                    }
                };
                return fail(why, -EINVAL, text);
            }
        };
        match perfmon {
            PerfMon::PmuV2 | PerfMon::PmuV3(_) => {}
            PerfMon::PmuV1 => {
                return fail(
                    why,
                    -ENODEV,
                    c"PMUv1 (ID_DFR0.PerfMon=1) cannot restrict counting to PL0 (no PMXEVTYPER privilege filter)",
                )
            }
            _ => {
                return fail(
                    why,
                    -ENODEV,
                    c"no ARM-architected PMU on this CPU (ID_DFR0.PerfMon is 0 or 0xF)",
                )
            }
        }
        if !perfmon.has_read_only_grant() && !el0_programming {
            return fail(
                why,
                -EOPNOTSUPP,
                c"PMUv2 (ID_DFR0.PerfMon=2: Cortex-A7, Cortex-A15) has no read-only grant, PMUSERENR.EN alone lets user space program every counter and count in PL1: load with el0_programming=1 to accept that",
            );
        }
        let max_event: u16 = if perfmon.has_read_only_grant() {
            0x3FF
        } else {
            0xFF
        };
        if parsed.as_slice().iter().any(|&e| e > max_event) {
            return fail(
                why,
                -EINVAL,
                c"events: an event number above PMXEVTYPER.evtCount (0xff on PMUv2, 0x3ff on PMUv3)",
            );
        }
        // PMCR.N, bits 15:11 (DDI 0406C C12 "PMCR").
        let n = ((regs.pmcr().get() >> 11) & 0x1f) as u8;
        let Ok(checked) = Layout::with_cycle_counter_register(n, parsed, cycle_counter) else {
            return fail(
                why,
                -ENODEV,
                c"events: more events than this CPU has event counters (PMCR.N)",
            );
        };
        *cfg = KmodEuV7Config {
            user_access,
            events: [0; MAX_MODULE_EVENTS],
            n_events: parsed.len() as u8,
            event_counters: n,
            cycle_counter,
            el0_programming,
            perfmon: perfmon.raw(),
            reserved: [0; 3],
        };
        for (slot, &event) in cfg.events.iter_mut().zip(parsed.as_slice()) {
            *slot = event;
        }
        if !layout.is_null() && layout_size > 0 {
            // SAFETY: `layout` is valid for `layout_size` bytes (the caller's contract).
            let out = unsafe { core::slice::from_raw_parts_mut(layout.cast::<u8>(), layout_size) };
            if let Some((nul, text)) = out.split_last_mut() {
                let len = checked.write_text(text);
                *text.get_mut(len).unwrap_or(nul) = 0;
            }
        }
        0
    }

    /// One CPU's state (C: `struct kmod_eu_v7_cpu`).
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct KmodEuV7Cpu {
        /// PMUSERENR found by the last apply or restore.
        pub found_userenr: u32,
        /// PMUSERENR written by the last apply or restore.
        pub new_userenr: u32,
        /// PMCNTENSET bits of the module's counters.
        pub owned: u32,
        /// The module's counters the last apply programmed from zero.
        pub zeroed: u32,
        /// The module's counters the last apply found still running and kept.
        pub kept: u32,
        /// Counters the restore disabled and zeroed.
        pub released: u32,
        /// The module's counters the restore found counting something else: left alone.
        pub taken: u32,
        /// With `-EBUSY`: PMXEVTYPER (PMCCFILTR) of the counter in use.
        pub busy_config: u32,
        /// 0, or the negative errno of the last apply.
        pub error: i32,
        /// With `-EBUSY` the counter (31: cycle counter), with `-EOPNOTSUPP` and
        /// `-EINVAL` the event (`NO_EVENT`: PMUv2 without `el0_programming`), with
        /// `-ENODEV` PMCR.N (0: no usable PMU).
        pub error_detail: u32,
        /// Whether the grant is in place (and must be restored).
        pub applied: bool,
        /// Whether the module turned PMCR.E on.
        pub enabled_pmu: bool,
        /// ID_DFR0.PerfMon of this CPU.
        pub perfmon: u8,
        /// Padding, zero.
        pub reserved: u8,
    }

    const _: () = assert!(core::mem::size_of::<KmodEuV7Cpu>() == 44);

    impl KmodEuV7Cpu {
        fn applied(&self) -> Applied {
            Applied {
                perfmon: self.perfmon,
                found_pmuserenr: self.found_userenr,
                new_pmuserenr: self.new_userenr,
                owned: self.owned,
                zeroed: self.zeroed,
                kept: self.kept,
                enabled_pmu: self.enabled_pmu,
            }
        }
    }

    /// On the CPU, interrupts off: [`user_enable::apply`] of `cfg`'s request (a
    /// re-grant when `st.applied`). `st.applied` and `st.error` say how it went.
    ///
    /// # Safety
    ///
    /// `st` and `cfg` valid (or null: nothing happens), `cfg` accepted by
    /// [`kmod_eu_armv7_configure`]; PL1 with interrupts disabled on the CPU `st`
    /// describes, an ARMv7 CPU; the caller has decided that PL0 may use the PMU.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_armv7_apply(st: *mut KmodEuV7Cpu, cfg: *const KmodEuV7Config) {
        // SAFETY: valid or null, by the caller's contract.
        let (Some(st), Some(cfg)) = (unsafe { st.as_mut() }, unsafe { cfg.as_ref() }) else {
            return;
        };
        let Some(request) = cfg.request() else {
            st.error = -EINVAL;
            return;
        };
        // SAFETY: PL1, interrupts off on this CPU; perf's counters are never reset or
        // reprogrammed by `apply` (it refuses a counter in use): `new`'s contract.
        let regs = unsafe { Pl1Registers::new() };
        let previous = st.applied.then(|| st.applied());
        match user_enable::apply(&regs, request, previous.as_ref()) {
            Ok(applied) => {
                st.perfmon = applied.perfmon;
                st.found_userenr = applied.found_pmuserenr;
                st.new_userenr = applied.new_pmuserenr;
                st.owned = applied.owned;
                st.zeroed = applied.zeroed;
                st.kept = applied.kept;
                st.enabled_pmu = applied.enabled_pmu;
                st.error = 0;
                st.applied = true;
            }
            Err(e) => {
                (st.error, st.error_detail) = match e {
                    ApplyError::NoUsablePmu { perfmon } => {
                        st.perfmon = perfmon.raw();
                        (-ENODEV, 0)
                    }
                    ApplyError::NoReadOnlyGrant { perfmon } => {
                        st.perfmon = perfmon.raw();
                        (-EOPNOTSUPP, NO_EVENT)
                    }
                    ApplyError::TooFewCounters(t) => (-ENODEV, u32::from(t.have)),
                    ApplyError::CounterInUse { counter, config } => {
                        st.busy_config = config;
                        (-EBUSY, u32::from(counter))
                    }
                    ApplyError::EventNotImplemented { event } => (-EOPNOTSUPP, u32::from(event)),
                    ApplyError::EventOutOfRange { event } => (-EINVAL, u32::from(event)),
                    _ => (-EINVAL, 0),
                };
            }
        }
    }

    /// On the CPU, interrupts off: [`user_enable::restore`] of what
    /// [`kmod_eu_armv7_apply`] recorded; clears `st.applied`. Nothing happens unless
    /// `st.applied`.
    ///
    /// # Safety
    ///
    /// As for [`kmod_eu_armv7_apply`], with `st` filled by it on this CPU.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_armv7_restore(
        st: *mut KmodEuV7Cpu,
        cfg: *const KmodEuV7Config,
    ) {
        // SAFETY: valid or null, by the caller's contract.
        let (Some(st), Some(cfg)) = (unsafe { st.as_mut() }, unsafe { cfg.as_ref() }) else {
            return;
        };
        if !st.applied {
            return;
        }
        let Some(request) = cfg.request() else {
            return;
        };
        // SAFETY: as in `kmod_eu_armv7_apply`; restoring takes access away again.
        let regs = unsafe { Pl1Registers::new() };
        let restored = user_enable::restore(&regs, &st.applied(), &request.layout);
        st.found_userenr = restored.found_pmuserenr;
        st.new_userenr = restored.new_pmuserenr;
        st.released = restored.released;
        st.taken = restored.taken;
        st.applied = false;
    }

    /// "EN", "CR|ER" and so on for PMUSERENR `bits` (the same bit positions as
    /// PMUSERENR_EL0): a static NUL-terminated string.
    #[no_mangle]
    pub extern "C" fn kmod_eu_armv7_access_names(bits: u32) -> *const c_char {
        user_enable::access_names(u64::from(bits)).as_ptr()
    }

    /// What PL0 may do with PMUSERENR `bits`, in words: a static NUL-terminated string.
    #[no_mangle]
    pub extern "C" fn kmod_eu_armv7_grant_words(bits: u32) -> *const c_char {
        user_enable::grant_words(u64::from(bits)).as_ptr()
    }
}
