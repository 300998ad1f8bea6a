//! The Rust half of kmod-enable-user for stock kernels: the register logic of
//! `pmu_armv8::user_enable` (arm64) and `pmu_armv6::user_enable` (ARMv6) behind a few
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
    //! arm64: the per-CPU work of `pmu_armv8::user_enable` for the hotplug callbacks.

    use super::*;
    use core::ffi::c_char;
    use pmu_armv8::user_enable::{self, Applied, Request, UserAccess, UserAccessRegisters};
    use pmu_armv8::El1UserAccess;

    /// `ENODEV`: no such device (include/uapi/asm-generic/errno-base.h).
    const ENODEV: i32 = 19;

    /// One CPU's state, shared with C as `struct kmod_eu_cpu`: inputs (`user_access`,
    /// `cycle_counter`) set by the glue, the rest filled by [`kmod_eu_arm64_apply`] and
    /// [`kmod_eu_arm64_restore`] for the log and the restore.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct KmodEuCpu {
        /// In: PMUSERENR_EL0 bits to grant (checked by [`kmod_eu_arm64_check_user_access`]).
        pub user_access: u64,
        /// PMUSERENR_EL0 before.
        pub old_userenr: u64,
        /// PMUSERENR_EL0 written.
        pub new_userenr: u64,
        /// PMCR_EL0 reset bits written (P and/or C).
        pub zeroed: u64,
        /// PMCR_EL0 before.
        pub old_pmcr: u64,
        /// PMCR_EL0 after.
        pub new_pmcr: u64,
        /// PMCNTENSET_EL0 before.
        pub old_cntenset: u64,
        /// PMCCFILTR_EL0 before.
        pub old_ccfiltr: u64,
        /// PMUSERENR_EL0 found at restore time.
        pub found_userenr: u64,
        /// In: also start the cycle counter for EL0.
        pub cycle_counter: bool,
        /// Whether the grant was made (and must be restored).
        pub applied: bool,
        /// ID_AA64DFR0_EL1.PMUVer of this CPU.
        pub pmuver: u8,
    }

    // The C declaration has the same size (checked there with _Static_assert too).
    const _: () = assert!(core::mem::size_of::<KmodEuCpu>() == 80);

    impl KmodEuCpu {
        fn applied(&self) -> Applied {
            Applied {
                pmuver: self.pmuver,
                cycle_counter: self.cycle_counter,
                old_pmuserenr: self.old_userenr,
                new_pmuserenr: self.new_userenr,
                zeroed: self.zeroed,
                old_pmcr: self.old_pmcr,
                new_pmcr: self.new_pmcr,
                old_pmcntenset: self.old_cntenset,
                old_pmccfiltr: self.old_ccfiltr,
            }
        }
    }

    /// 0 when `user_access` is a non-empty subset of EN=1|SW=2|CR=4|ER=8, else
    /// `-EINVAL`.
    #[no_mangle]
    pub extern "C" fn kmod_eu_arm64_check_user_access(user_access: u32) -> i32 {
        match UserAccess::new(u64::from(user_access)) {
            Ok(_) => 0,
            Err(_) => -EINVAL,
        }
    }

    /// Reads this CPU's ID_AA64DFR0_EL1.PMUVer into `*pmuver` and, with PMUv3,
    /// PMCR_EL0.N into `*event_counters`. Returns 0, or `-ENODEV` without PMUv3.
    ///
    /// # Safety
    ///
    /// At EL1 (kernel code) with preemption disabled, so both registers are read on one
    /// CPU; `pmuver` and `event_counters` are valid for writes or null.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_arm64_probe(pmuver: *mut u8, event_counters: *mut u32) -> i32 {
        // SAFETY: EL1 with preemption off (the caller's contract), so the value stays on
        // this CPU; only ID_AA64DFR0_EL1 and PMCR_EL0 are read (PMCR_EL0 only when
        // PMUv3 is there), nothing is written, so no owner of the PMU is disturbed.
        let regs = unsafe { El1UserAccess::new() };
        let version = pmu_armv8::PmuVersion::from_id_aa64dfr0(regs.id_aa64dfr0());
        // SAFETY: the caller passes a valid pointer or null.
        if let Some(out) = unsafe { pmuver.as_mut() } {
            *out = version.pmuver();
        }
        if !version.is_pmuv3() {
            return -ENODEV;
        }
        // PMCR_EL0.N, bits 15:11 (Arm ARM, PMCR_EL0).
        let n = ((regs.pmcr().get() >> 11) & 0x1f) as u32;
        // SAFETY: the caller passes a valid pointer or null.
        if let Some(out) = unsafe { event_counters.as_mut() } {
            *out = n;
        }
        0
    }

    /// On the CPU, interrupts off: [`user_enable::apply`] with `st`'s inputs; fills
    /// `st`. `st.applied` says whether the grant was made (false: no PMUv3, see
    /// `st.pmuver`, or an invalid `st.user_access`).
    ///
    /// # Safety
    ///
    /// `st` is valid for reads and writes (or null: nothing happens); runs at EL1 with
    /// interrupts disabled on the CPU `st` describes (`smp_call_function_single()`), and
    /// the caller has decided that EL0 may use the PMU.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_arm64_apply(st: *mut KmodEuCpu) {
        // SAFETY: valid or null, by the caller's contract.
        let Some(st) = (unsafe { st.as_mut() }) else {
            return;
        };
        st.applied = false;
        let Ok(user_access) = UserAccess::new(st.user_access) else {
            return;
        };
        // SAFETY: EL1, interrupts off on this CPU, and the decision to grant EL0 access
        // taken by the caller: `El1UserAccess::new`'s contract.
        let regs = unsafe { El1UserAccess::new() };
        let request = Request {
            user_access,
            cycle_counter: st.cycle_counter,
        };
        match user_enable::apply(&regs, request) {
            Ok(applied) => {
                st.pmuver = applied.pmuver;
                st.old_userenr = applied.old_pmuserenr;
                st.new_userenr = applied.new_pmuserenr;
                st.zeroed = applied.zeroed;
                st.old_pmcr = applied.old_pmcr;
                st.new_pmcr = applied.new_pmcr;
                st.old_cntenset = applied.old_pmcntenset;
                st.old_ccfiltr = applied.old_pmccfiltr;
                st.applied = true;
            }
            Err(no_pmu) => st.pmuver = no_pmu.version.pmuver(),
        }
    }

    /// On the CPU, interrupts off: [`user_enable::restore`] of what
    /// [`kmod_eu_arm64_apply`] recorded in `st`; sets `st.found_userenr`, clears
    /// `st.applied`. Nothing happens unless `st.applied`.
    ///
    /// # Safety
    ///
    /// As for [`kmod_eu_arm64_apply`], with `st` filled by it on this CPU.
    #[no_mangle]
    pub unsafe extern "C" fn kmod_eu_arm64_restore(st: *mut KmodEuCpu) {
        // SAFETY: valid or null, by the caller's contract.
        let Some(st) = (unsafe { st.as_mut() }) else {
            return;
        };
        if !st.applied {
            return;
        }
        // SAFETY: as in `kmod_eu_arm64_apply`; restoring takes access away again.
        let regs = unsafe { El1UserAccess::new() };
        st.found_userenr = user_enable::restore(&regs, &st.applied()).found_pmuserenr;
        st.applied = false;
    }

    /// "EN|CR|ER" and so on for PMUSERENR_EL0 `bits` ("none" without any of the four):
    /// a static NUL-terminated string.
    #[no_mangle]
    pub extern "C" fn kmod_eu_arm64_access_names(bits: u64) -> *const c_char {
        user_enable::access_names(bits).as_ptr()
    }

    /// Which counters the PMCR_EL0 resets `zeroed` cleared ("event and cycle counters",
    /// …, "nothing"): a static NUL-terminated string.
    #[no_mangle]
    pub extern "C" fn kmod_eu_arm64_zeroed_names(zeroed: u64) -> *const c_char {
        user_enable::zeroed_names(zeroed).as_ptr()
    }
}

#[cfg(target_arch = "arm")]
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
