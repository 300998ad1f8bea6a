//! Granting EL0 access to the PMU on one CPU, and taking it back: the per-CPU work of
//! the kernel module kmod-enable-user, in both of its flavours.
//!
//! The Rust-for-Linux module (`kmod-enable-user/kmod_enable_user.rs`, `apply_on_cpu` and
//! `restore_on_cpu`) and the stock-kernel module (`kmod-enable-user/stock/`, C glue around
//! this code compiled as a no_std object) must do exactly the same on every CPU, so the
//! steps are written once, here, over the small register interface
//! [`UserAccessRegisters`]: `el1::El1UserAccess` (aarch64 only) is the real one,
//! [`crate::fake::FakeUserAccess`] the host-test one.
//!
//! [`apply`], with interrupts off on the CPU:
//!
//! 1. PMUVer of ID_AA64DFR0_EL1 must name a PMUv3, else nothing is touched
//!    ([`NoPmuV3`]);
//! 2. PMUSERENR_EL0, PMCR_EL0, PMCNTENSET_EL0, PMCCFILTR_EL0 are recorded;
//! 3. with `cycle_counter`: PMCCFILTR_EL0 = P (count at EL0 only: P = 1 excludes EL1,
//!    U = 0 and NSH = 0 keep EL0 in and EL2 out), PMCNTENSET_EL0.C = 1, and PMCR_EL0.E
//!    and LC set;
//! 4. PMCR_EL0 is written once with P (zero the event counters) when EL0 gets ER or
//!    EN, and C (zero the cycle counter) when it gets CR or EN, so no count of an
//!    earlier context leaks to user space (Linux's `armv8pmu_enable_user_access` clears
//!    the unused counters for the same reason); the write synchronizes, so the resets
//!    and enables are in effect before step 5;
//! 5. PMUSERENR_EL0 = the requested bits, then an `isb`.
//!
//! [`restore`] revokes first (PMUSERENR_EL0 back to its old value, `isb`), then, when the
//! cycle counter was started, puts back PMCCFILTR_EL0, PMCNTENSET_EL0.C and PMCR_EL0.E/LC.
//!
//! Sources: Arm ARM (DDI 0487), "PMUSERENR_EL0", "PMCR_EL0", "PMCNTENSET_EL0",
//! "PMCCFILTR_EL0", "ID_AA64DFR0_EL1"; the register field definitions in
//! [`crate::registers`].

use core::ffi::CStr;

use tock_registers::LocalRegisterCopy;

use crate::registers::{
    PmccfiltrEl0, PmcntenclrEl0, PmcntensetEl0, PmcrEl0, PmuserenrEl0, PMCCFILTR_EL0,
    PMCNTENCLR_EL0, PMCNTENSET_EL0, PMCR_EL0, PMUSERENR_EL0,
};
use crate::version::PmuVersion;

/// The PMUSERENR_EL0 bits a user may ask for: EN | SW | CR | ER.
pub const USER_ACCESS_BITS: u64 = 0xF;

/// What both module flavours grant by default: EN | CR | ER (13): every counter readable
/// (and, through EN, programmable), no software increment.
pub const DEFAULT_USER_ACCESS: u64 = 0b1101;

/// The register accesses [`apply`] and [`restore`] need, on one CPU.
///
/// The writes of PMCR_EL0, PMCNTENSET_EL0 and PMCNTENCLR_EL0 synchronize (`isb` after
/// the `msr`), as [`crate::asm`]'s do; the others do not, and [`Self::isb`] is the
/// explicit barrier.
pub trait UserAccessRegisters {
    /// ID_AA64DFR0_EL1 (only PMUVer, bits 11:8, is used).
    fn id_aa64dfr0(&self) -> u64;
    /// PMUSERENR_EL0.
    fn pmuserenr(&self) -> PmuserenrEl0;
    /// Writes PMUSERENR_EL0 (no barrier).
    fn set_pmuserenr(&self, value: PmuserenrEl0);
    /// PMCR_EL0.
    fn pmcr(&self) -> PmcrEl0;
    /// Writes PMCR_EL0, then synchronizes.
    fn set_pmcr(&self, value: PmcrEl0);
    /// PMCNTENSET_EL0.
    fn pmcntenset(&self) -> PmcntensetEl0;
    /// Writes PMCNTENSET_EL0, then synchronizes.
    fn set_pmcntenset(&self, value: PmcntensetEl0);
    /// Writes PMCNTENCLR_EL0, then synchronizes.
    fn set_pmcntenclr(&self, value: PmcntenclrEl0);
    /// PMCCFILTR_EL0.
    fn pmccfiltr(&self) -> PmccfiltrEl0;
    /// Writes PMCCFILTR_EL0 (no barrier).
    fn set_pmccfiltr(&self, value: PmccfiltrEl0);
    /// A context synchronization event (`isb`).
    fn isb(&self);
}

/// A `user_access` value a user may ask for, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserAccess(u64);

/// Why a `user_access` value was refused (both module flavours answer `-EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UserAccessError {
    /// 0 grants nothing: loading the module would be pointless.
    Empty,
    /// A bit outside EN=1 | SW=2 | CR=4 | ER=8 (bits 4..6 need FEAT_PMUv3p9 and a
    /// PMUACR_EL1 set-up this module does not do).
    UnknownBits {
        /// The value asked for.
        requested: u64,
    },
}

impl UserAccess {
    /// Checks the module parameter: a non-empty subset of EN | SW | CR | ER.
    ///
    /// # Errors
    /// [`UserAccessError`] says which rule `bits` breaks.
    pub const fn new(bits: u64) -> Result<Self, UserAccessError> {
        if bits == 0 {
            Err(UserAccessError::Empty)
        } else if bits & !USER_ACCESS_BITS != 0 {
            Err(UserAccessError::UnknownBits { requested: bits })
        } else {
            Ok(Self(bits))
        }
    }

    /// The PMUSERENR_EL0 value.
    pub fn pmuserenr(self) -> PmuserenrEl0 {
        PmuserenrEl0::new(self.0)
    }

    /// The raw bits.
    pub const fn bits(self) -> u64 {
        self.0
    }
}

/// What to do on each CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The PMUSERENR_EL0 bits to grant.
    pub user_access: UserAccess,
    /// Also start the cycle counter for EL0 (PMCR_EL0.E and LC, PMCNTENSET_EL0.C,
    /// PMCCFILTR_EL0 = EL0 only).
    pub cycle_counter: bool,
}

/// The CPU has no architected PMUv3: [`apply`] touched nothing (`-ENODEV`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoPmuV3 {
    /// What ID_AA64DFR0_EL1.PMUVer says.
    pub version: PmuVersion,
}

/// What [`apply`] found and wrote on one CPU: what [`restore`] needs, and what the log
/// says. Raw register values, so that a kernel module can keep them in a C struct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// ID_AA64DFR0_EL1.PMUVer.
    pub pmuver: u8,
    /// Whether the cycle counter was started (the request's `cycle_counter`).
    pub cycle_counter: bool,
    /// PMUSERENR_EL0 before.
    pub old_pmuserenr: u64,
    /// PMUSERENR_EL0 written.
    pub new_pmuserenr: u64,
    /// The PMCR_EL0 reset bits written: P (bit 1), C (bit 2), both or none.
    pub zeroed: u64,
    /// PMCR_EL0 before.
    pub old_pmcr: u64,
    /// PMCR_EL0 after (P and C are actions, not state: not included).
    pub new_pmcr: u64,
    /// PMCNTENSET_EL0 before.
    pub old_pmcntenset: u64,
    /// PMCCFILTR_EL0 before.
    pub old_pmccfiltr: u64,
}

/// PMCCFILTR_EL0 for "count cycles at EL0 only": P = 1 (not at EL1), U = 0, NSK = 0,
/// NSU = 0, NSH = 0 (not at EL2) — the value cycle-counter modules for boards write.
pub fn pmccfiltr_el0_only() -> PmccfiltrEl0 {
    let mut value = PmccfiltrEl0::new(0);
    value.write(PMCCFILTR_EL0::P::SET);
    value
}

/// The PMCR_EL0 resets that keep earlier counts from EL0: P when EL0 may read the event
/// counters (ER, or EN which includes it), C when it may read the cycle counter (CR or
/// EN).
pub fn resets_for(access: UserAccess) -> PmcrEl0 {
    let wanted = access.pmuserenr();
    let mut resets = PmcrEl0::new(0);
    if wanted.is_set(PMUSERENR_EL0::EN) || wanted.is_set(PMUSERENR_EL0::ER) {
        resets.modify(PMCR_EL0::P::SET);
    }
    if wanted.is_set(PMUSERENR_EL0::EN) || wanted.is_set(PMUSERENR_EL0::CR) {
        resets.modify(PMCR_EL0::C::SET);
    }
    resets
}

/// Grants EL0 the access `request` names on this CPU; see the module docs for the steps.
///
/// # Errors
/// [`NoPmuV3`] when ID_AA64DFR0_EL1.PMUVer names no PMUv3; then no PMU register was
/// accessed.
pub fn apply<R: UserAccessRegisters>(regs: &R, request: Request) -> Result<Applied, NoPmuV3> {
    let version = PmuVersion::from_id_aa64dfr0(regs.id_aa64dfr0());
    if !version.is_pmuv3() {
        return Err(NoPmuV3 { version });
    }
    let old_pmuserenr = regs.pmuserenr();
    let old_pmcr = regs.pmcr();
    let old_pmcntenset = regs.pmcntenset();
    let old_pmccfiltr = regs.pmccfiltr();

    let zeroed = resets_for(request.user_access);
    let mut new_pmcr = old_pmcr;
    if request.cycle_counter {
        new_pmcr.modify(PMCR_EL0::E::SET + PMCR_EL0::LC::SET);
        regs.set_pmccfiltr(pmccfiltr_el0_only());
        let mut enable = PmcntensetEl0::new(0);
        enable.write(PMCNTENSET_EL0::C::SET);
        regs.set_pmcntenset(enable);
    }
    // One write for the enables and the resets. It synchronizes (see the trait), so the
    // counters are zero and running before EL0 is granted access below.
    regs.set_pmcr(PmcrEl0::new(new_pmcr.get() | zeroed.get()));
    let new_pmuserenr = request.user_access.pmuserenr();
    regs.set_pmuserenr(new_pmuserenr);
    // An exception return to EL0 would synchronize the new PMUSERENR_EL0 anyway; the
    // barrier makes the grant complete before this CPU's hotplug callback reports it,
    // independent of how the kernel gets back to EL0 (the Rust-for-Linux module does
    // the same).
    regs.isb();
    Ok(Applied {
        pmuver: version.pmuver(),
        cycle_counter: request.cycle_counter,
        old_pmuserenr: old_pmuserenr.get(),
        new_pmuserenr: new_pmuserenr.get(),
        zeroed: zeroed.get(),
        old_pmcr: old_pmcr.get(),
        new_pmcr: new_pmcr.get(),
        old_pmcntenset: old_pmcntenset.get(),
        old_pmccfiltr: old_pmccfiltr.get(),
    })
}

/// What [`restore`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restored {
    /// PMUSERENR_EL0 just before the restore. Differs from [`Applied::new_pmuserenr`]
    /// when something else (perf's `armv8pmu_start()`) rewrote it meanwhile.
    pub found_pmuserenr: u64,
}

/// Takes back what [`apply`] did on this CPU: EL0 access first, then the cycle counter
/// settings it changed.
pub fn restore<R: UserAccessRegisters>(regs: &R, applied: &Applied) -> Restored {
    let found = regs.pmuserenr();
    regs.set_pmuserenr(PmuserenrEl0::new(applied.old_pmuserenr));
    // Revoke before anything else changes: no EL0 instruction may run with access to
    // counters that are being reconfigured.
    regs.isb();
    if applied.cycle_counter {
        regs.set_pmccfiltr(PmccfiltrEl0::new(applied.old_pmccfiltr));
        let old_enable = PmcntensetEl0::new(applied.old_pmcntenset);
        if !old_enable.is_set(PMCNTENSET_EL0::C) {
            let mut disable = PmcntenclrEl0::new(0);
            disable.write(PMCNTENCLR_EL0::C::SET);
            regs.set_pmcntenclr(disable);
        }
        // E and LC back to what they were; the other PMCR_EL0 bits as they are now
        // (perf may own them by now). The write synchronizes.
        let old = PmcrEl0::new(applied.old_pmcr);
        let mut pmcr = regs.pmcr();
        pmcr.modify(
            PMCR_EL0::E.val(old.read(PMCR_EL0::E)) + PMCR_EL0::LC.val(old.read(PMCR_EL0::LC)),
        );
        regs.set_pmcr(pmcr);
    }
    Restored {
        found_pmuserenr: found.get(),
    }
}

/// The PMUSERENR_EL0 bits EN, SW, CR, ER of `value` by name, `|`-separated, or "none":
/// the form both module flavours log (`0xd (EN|CR|ER)`). Other bits are not named.
pub fn access_names(value: u64) -> &'static CStr {
    const NAMES: [&CStr; 16] = [
        c"none",
        c"EN",
        c"SW",
        c"EN|SW",
        c"CR",
        c"EN|CR",
        c"SW|CR",
        c"EN|SW|CR",
        c"ER",
        c"EN|ER",
        c"SW|ER",
        c"EN|SW|ER",
        c"CR|ER",
        c"EN|CR|ER",
        c"SW|CR|ER",
        c"EN|SW|CR|ER",
    ];
    // The index is 4 bits wide: always within the table.
    NAMES[(value & USER_ACCESS_BITS) as usize]
}

/// Which counters the PMCR_EL0 resets `zeroed` cleared, for the log.
pub fn zeroed_names(zeroed: u64) -> &'static CStr {
    let resets = LocalRegisterCopy::<u64, PMCR_EL0::Register>::new(zeroed);
    match (resets.is_set(PMCR_EL0::P), resets.is_set(PMCR_EL0::C)) {
        (true, true) => c"event and cycle counters",
        (true, false) => c"event counters",
        (false, true) => c"cycle counter",
        (false, false) => c"nothing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeUserAccess, UserAccessOp};
    use std::vec::Vec;

    /// ID_AA64DFR0_EL1 as QEMU `-cpu max` reports it: PMUVer = 6 (PMUv3p5)
    /// (shared/notes/qemu-facts.md).
    const DFR0_PMUV3P5: u64 = 0x6 << 8;

    fn request(bits: u64, cycle_counter: bool) -> Request {
        Request {
            user_access: UserAccess::new(bits).unwrap(),
            cycle_counter,
        }
    }

    /// The parameter rule of kmod_enable_user.rs `enable()`: `access == 0 || access &
    /// !(EN|SW|CR|ER) != 0` is EINVAL; its default is EN|CR|ER = 13.
    #[test]
    fn user_access_values_follow_the_module_parameter_rule() {
        assert_eq!(UserAccess::new(0), Err(UserAccessError::Empty));
        assert_eq!(
            UserAccess::new(16),
            Err(UserAccessError::UnknownBits { requested: 16 })
        );
        for bits in 1..=15 {
            assert_eq!(UserAccess::new(bits).map(UserAccess::bits), Ok(bits));
        }
        assert_eq!(DEFAULT_USER_ACCESS, 13);
        assert_eq!(
            UserAccess::new(DEFAULT_USER_ACCESS)
                .unwrap()
                .pmuserenr()
                .get(),
            crate::registers::pmuserenr_el0::linux_user_read().get() | 1
        );
    }

    /// No PMUv3 (PMUVer 0, or 0xF = IMPLEMENTATION DEFINED; Arm ARM ID_AA64DFR0_EL1):
    /// refused before any PMU register is read or written.
    #[test]
    fn without_pmuv3_nothing_is_touched() {
        for pmuver in [0x0, 0xF] {
            let regs = FakeUserAccess::new(pmuver << 8);
            let err = apply(&regs, request(13, true)).unwrap_err();
            assert_eq!(err.version.pmuver(), pmuver as u8);
            assert_eq!(
                regs.ops().collect::<Vec<_>>(),
                [UserAccessOp::ReadIdAa64dfr0]
            );
        }
    }

    /// The default (EN|CR|ER) on a fresh QEMU CPU: the log line the e2e tests expect from
    /// both flavours is "PMUSERENR_EL0 0x0 -> 0xd (EN|CR|ER), zeroed event and cycle
    /// counters" (tests/tests/kernel_arm64.rs), and the writes come in the order of
    /// kmod_enable_user.rs `apply_on_cpu`: PMCR (P|C, synchronizing), PMUSERENR, isb.
    #[test]
    fn default_grant_zeroes_both_and_writes_in_order() {
        let regs = FakeUserAccess::new(DFR0_PMUV3P5);
        let applied = apply(&regs, request(13, false)).unwrap();
        assert_eq!(applied.pmuver, 6);
        assert_eq!((applied.old_pmuserenr, applied.new_pmuserenr), (0, 0xd));
        assert_eq!(applied.zeroed, 0b110, "PMCR_EL0.P (bit 1) | C (bit 2)");
        assert_eq!(access_names(applied.new_pmuserenr), c"EN|CR|ER");
        assert_eq!(access_names(applied.old_pmuserenr), c"none");
        assert_eq!(zeroed_names(applied.zeroed), c"event and cycle counters");
        let writes: Vec<_> = regs.ops().filter(UserAccessOp::is_write).collect();
        assert_eq!(
            writes,
            [
                UserAccessOp::WritePmcr(0b110),
                UserAccessOp::WritePmuserenr(0xd),
                UserAccessOp::Isb,
            ]
        );
        assert_eq!(regs.pmuserenr().get(), 0xd);
        assert_eq!(regs.zeroed_counters(), 0b110);
    }

    /// Which counters are zeroed per granted bit (kmod_enable_user.rs: P for EN|ER, C
    /// for EN|CR); SW alone makes nothing readable and zeroes nothing.
    #[test]
    fn resets_follow_the_granted_reads() {
        let cases = [
            (1, 0b110, c"event and cycle counters"),
            (2, 0b000, c"nothing"),
            (4, 0b100, c"cycle counter"),
            (8, 0b010, c"event counters"),
            (12, 0b110, c"event and cycle counters"),
        ];
        for (bits, zeroed, name) in cases {
            let applied = apply(&FakeUserAccess::new(DFR0_PMUV3P5), request(bits, false)).unwrap();
            assert_eq!(applied.zeroed, zeroed, "user_access={bits}");
            assert_eq!(zeroed_names(applied.zeroed), name);
        }
    }

    /// cycle_counter=1 with CR (the e2e case `user_access=4 cycle_counter=1`):
    /// PMCCFILTR_EL0 = 0x8000_0000 (P: EL0 only), PMCNTENSET_EL0.C (bit 31), PMCR_EL0
    /// E (bit 0) | LC (bit 6) kept plus the C reset, all before PMUSERENR_EL0.
    #[test]
    fn cycle_counter_is_started_before_the_grant_and_undone_after_the_revoke() {
        let regs = FakeUserAccess::new(DFR0_PMUV3P5);
        let applied = apply(&regs, request(4, true)).unwrap();
        assert_eq!((applied.old_pmcr, applied.new_pmcr), (0, 0x41));
        let writes: Vec<_> = regs.ops().filter(UserAccessOp::is_write).collect();
        assert_eq!(
            writes,
            [
                UserAccessOp::WritePmccfiltr(0x8000_0000),
                UserAccessOp::WritePmcntenset(0x8000_0000),
                UserAccessOp::WritePmcr(0x41 | 0b100),
                UserAccessOp::WritePmuserenr(0x4),
                UserAccessOp::Isb,
            ]
        );
        assert_eq!(access_names(applied.new_pmuserenr), c"CR");

        regs.clear_ops();
        let restored = restore(&regs, &applied);
        assert_eq!(restored.found_pmuserenr, 0x4);
        let writes: Vec<_> = regs.ops().filter(UserAccessOp::is_write).collect();
        assert_eq!(
            writes,
            [
                UserAccessOp::WritePmuserenr(0),
                UserAccessOp::Isb,
                UserAccessOp::WritePmccfiltr(0),
                UserAccessOp::WritePmcntenclr(0x8000_0000),
                UserAccessOp::WritePmcr(0),
            ]
        );
        assert_eq!(regs.pmcr().get(), 0);
        assert_eq!(regs.pmcntenset().get(), 0);
    }

    /// Restoring keeps what was there before: a cycle counter perf had already enabled
    /// (PMCNTENSET_EL0.C = 1, PMCR_EL0.E = 1) stays enabled, its filter comes back, and
    /// PMCR_EL0 bits other than E and LC are left as found.
    #[test]
    fn restore_keeps_an_earlier_owner_of_the_cycle_counter() {
        let regs = FakeUserAccess::new(DFR0_PMUV3P5);
        regs.preset(0x8, 0x1, 0x8000_0000, 0x4000_0000);
        let applied = apply(&regs, request(13, true)).unwrap();
        assert_eq!(applied.old_pmuserenr, 0x8);
        regs.clear_ops();
        let restored = restore(&regs, &applied);
        assert_eq!(restored.found_pmuserenr, 0xd);
        let writes: Vec<_> = regs.ops().filter(UserAccessOp::is_write).collect();
        assert_eq!(
            writes,
            [
                UserAccessOp::WritePmuserenr(0x8),
                UserAccessOp::Isb,
                UserAccessOp::WritePmccfiltr(0x4000_0000),
                UserAccessOp::WritePmcr(0x1),
            ]
        );
    }

    /// perf's `armv8pmu_start()` writes PMUSERENR_EL0 = 0 meanwhile: restore reports what
    /// it found (the module logs "(perf had already changed it)").
    #[test]
    fn restore_reports_a_pmuserenr_changed_meanwhile() {
        let regs = FakeUserAccess::new(DFR0_PMUV3P5);
        let applied = apply(&regs, request(13, false)).unwrap();
        regs.set_pmuserenr(PmuserenrEl0::new(0));
        regs.clear_ops();
        assert_eq!(restore(&regs, &applied).found_pmuserenr, 0);
        // Without the cycle counter only PMUSERENR_EL0 is written back.
        let writes: Vec<_> = regs.ops().filter(UserAccessOp::is_write).collect();
        assert_eq!(writes, [UserAccessOp::WritePmuserenr(0), UserAccessOp::Isb]);
    }

    /// Every combination is named in the order EN, SW, CR, ER (kmod_enable_user.rs
    /// `Bits`); bits above 3 (PMUv3p9 UEN, IR, TID) are not named.
    #[test]
    fn names_of_every_combination() {
        for bits in 0..16u64 {
            let mut expected = std::string::String::new();
            for (bit, name) in [(1, "EN"), (2, "SW"), (4, "CR"), (8, "ER")] {
                if bits & bit != 0 {
                    if !expected.is_empty() {
                        expected.push('|');
                    }
                    expected.push_str(name);
                }
            }
            if expected.is_empty() {
                expected.push_str("none");
            }
            assert_eq!(access_names(bits).to_str().unwrap(), expected);
            assert_eq!(access_names(bits | 0x70), access_names(bits));
        }
    }
}
