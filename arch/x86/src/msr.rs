//! Model-specific register numbers of the core PMU, Intel and AMD.
//!
//! Intel numbers come from the `x86` crate (which copies SDM Vol. 4, "Architectural
//! MSRs") where it has them; the ones it lacks or misspells are defined here from the same
//! table. AMD numbers are from the AMD64 APM Vol. 2, "Performance Counters" and the PPRs
//! of families 17h/19h (MSRC001_020x, MSRC000_030x).
//!
//! The `x86` crate compiles to nothing off x86, so on other hosts the same values come
//! from [`literal`], which a host test checks against the `x86` crate.

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
use x86::msr as source;

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
use literal as source;

/// The Intel MSR numbers as plain literals (SDM Vol. 4, Table "IA-32 Architectural MSRs").
/// Used where the `x86` crate is empty (non-x86 hosts); checked against it on x86.
#[cfg_attr(
    any(target_arch = "x86", target_arch = "x86_64"),
    allow(dead_code, reason = "checked against the x86 crate by a host test")
)]
pub mod literal {
    /// IA32_PMC0.
    pub const IA32_PMC0: u32 = 0xC1;
    /// IA32_PERFEVTSEL0.
    pub const IA32_PERFEVTSEL0: u32 = 0x186;
    /// IA32_FIXED_CTR0.
    pub const IA32_FIXED_CTR0: u32 = 0x309;
    /// IA32_PERF_CAPABILITIES.
    pub const IA32_PERF_CAPABILITIES: u32 = 0x345;
    /// IA32_FIXED_CTR_CTRL.
    pub const IA32_FIXED_CTR_CTRL: u32 = 0x38D;
    /// IA32_PERF_GLOBAL_STATUS (spelled `IA32_PERF_GLOBAL_STAUS` by the `x86` crate).
    pub const IA32_PERF_GLOBAL_STAUS: u32 = 0x38E;
    /// IA32_PERF_GLOBAL_CTRL.
    pub const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;
    /// IA32_PERF_GLOBAL_OVF_CTRL.
    pub const IA32_PERF_GLOBAL_OVF_CTRL: u32 = 0x390;
    /// IA32_A_PMC0.
    pub const IA32_A_PMC0: u32 = 0x4C1;
}

/// General-purpose counter 0 (IA32_PMC0); counter `n` is at `IA32_PMC0 + n`. A WRMSR to it
/// writes bits 31:0 and sign-extends bit 31 into the rest of the counter.
pub const IA32_PMC0: u32 = source::IA32_PMC0;
/// Event select of general-purpose counter 0; counter `n`'s is at `IA32_PERFEVTSEL0 + n`.
pub const IA32_PERFEVTSEL0: u32 = source::IA32_PERFEVTSEL0;
/// Fixed-function counter 0 (INST_RETIRED.ANY); counter `n` is at `IA32_FIXED_CTR0 + n`.
pub const IA32_FIXED_CTR0: u32 = source::IA32_FIXED_CTR0;
/// IA32_PERF_CAPABILITIES (exists if CPUID.01H:ECX.PDCM\[15\] = 1).
pub const IA32_PERF_CAPABILITIES: u32 = source::IA32_PERF_CAPABILITIES;
/// IA32_FIXED_CTR_CTRL: four control bits per fixed counter (version 2+).
pub const IA32_FIXED_CTR_CTRL: u32 = source::IA32_FIXED_CTR_CTRL;
/// IA32_PERF_GLOBAL_STATUS: overflow flags (version 2+). Spelled correctly here; the `x86`
/// crate calls it `IA32_PERF_GLOBAL_STAUS`.
pub const IA32_PERF_GLOBAL_STATUS: u32 = source::IA32_PERF_GLOBAL_STAUS;
/// IA32_PERF_GLOBAL_CTRL: one enable bit per counter (version 2+).
pub const IA32_PERF_GLOBAL_CTRL: u32 = source::IA32_PERF_GLOBAL_CTRL;
/// IA32_PERF_GLOBAL_OVF_CTRL: write 1 to clear a bit of IA32_PERF_GLOBAL_STATUS
/// (versions 2 to 3).
pub const IA32_PERF_GLOBAL_OVF_CTRL: u32 = source::IA32_PERF_GLOBAL_OVF_CTRL;
/// IA32_PERF_GLOBAL_STATUS_RESET: the version-4 name of the same MSR (390H), with the same
/// write-1-to-clear meaning and more bits.
pub const IA32_PERF_GLOBAL_STATUS_RESET: u32 = IA32_PERF_GLOBAL_OVF_CTRL;
/// IA32_PERF_GLOBAL_STATUS_SET (391H, version 4+): write 1 to set a status bit.
pub const IA32_PERF_GLOBAL_STATUS_SET: u32 = 0x391;
/// IA32_PERF_GLOBAL_INUSE (392H, version 4+): which counters some agent has programmed.
pub const IA32_PERF_GLOBAL_INUSE: u32 = 0x392;
/// Full-width-writable alias of IA32_PMC0 (exists if IA32_PERF_CAPABILITIES.FW_WRITE\[13\]
/// = 1); counter `n`'s is at `IA32_A_PMC0 + n`.
pub const IA32_A_PMC0: u32 = source::IA32_A_PMC0;

/// IA32_PMCn.
pub const fn ia32_pmc(n: u8) -> u32 {
    IA32_PMC0 + n as u32
}

/// IA32_A_PMCn, the full-width-writable alias of IA32_PMCn.
pub const fn ia32_a_pmc(n: u8) -> u32 {
    IA32_A_PMC0 + n as u32
}

/// IA32_PERFEVTSELn.
pub const fn ia32_perfevtsel(n: u8) -> u32 {
    IA32_PERFEVTSEL0 + n as u32
}

/// IA32_FIXED_CTRn.
pub const fn ia32_fixed_ctr(n: u8) -> u32 {
    IA32_FIXED_CTR0 + n as u32
}

/// AMD legacy PerfEvtSel0 (PERF_CTL0); 0..=3 at consecutive addresses (APM Vol. 2,
/// "Performance Counters").
pub const AMD_PERF_CTL0_LEGACY: u32 = 0xC001_0000;
/// AMD legacy PerfCtr0 (PERF_CTR0); 0..=3 at consecutive addresses.
pub const AMD_PERF_CTR0_LEGACY: u32 = 0xC001_0004;
/// AMD extended PERF_CTL0 (PerfCtrExtCore): PERF_CTLn at `0xC001_0200 + 2n`, n in 0..=5.
pub const AMD_PERF_CTL0_EXT: u32 = 0xC001_0200;
/// AMD extended PERF_CTR0 (PerfCtrExtCore): PERF_CTRn at `0xC001_0201 + 2n`.
pub const AMD_PERF_CTR0_EXT: u32 = 0xC001_0201;
/// AMD PerfCntrGlobalStatus (PerfMonV2, read-only): overflow bit `n` for core counter `n`.
pub const AMD_PERF_CNTR_GLOBAL_STATUS: u32 = 0xC000_0300;
/// AMD PerfCntrGlobalCtl (PerfMonV2): enable bit `n` for core counter `n`.
pub const AMD_PERF_CNTR_GLOBAL_CTL: u32 = 0xC000_0301;
/// AMD PerfCntrGlobalStatusClr (PerfMonV2): write 1 to clear a status bit.
pub const AMD_PERF_CNTR_GLOBAL_STATUS_CLR: u32 = 0xC000_0302;

/// Where an AMD CPU's core performance counters live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmdCounterLayout {
    /// Four counters at PerfEvtSel 0xC001_0000.. / PerfCtr 0xC001_0004.. (K8 onwards).
    Legacy,
    /// Six counters, control and count interleaved from 0xC001_0200
    /// (CPUID 8000_0001h:ECX.PerfCtrExtCore\[23\] = 1, family 15h onwards). The first four
    /// are also reachable through the legacy addresses.
    Extended,
}

impl AmdCounterLayout {
    /// How many counters the layout has.
    pub const fn counters(self) -> u8 {
        match self {
            Self::Legacy => 4,
            Self::Extended => 6,
        }
    }

    /// PERF_CTLn (the event select of counter `n`).
    pub const fn perf_ctl(self, n: u8) -> u32 {
        match self {
            Self::Legacy => AMD_PERF_CTL0_LEGACY + n as u32,
            Self::Extended => AMD_PERF_CTL0_EXT + 2 * n as u32,
        }
    }

    /// PERF_CTRn (the count of counter `n`).
    pub const fn perf_ctr(self, n: u8) -> u32 {
        match self {
            Self::Legacy => AMD_PERF_CTR0_LEGACY + n as u32,
            Self::Extended => AMD_PERF_CTR0_EXT + 2 * n as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The literals used off x86 are the `x86` crate's values (SDM Vol. 4 table).
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    #[test]
    fn literals_match_the_x86_crate() {
        assert_eq!(literal::IA32_PMC0, x86::msr::IA32_PMC0);
        assert_eq!(literal::IA32_PERFEVTSEL0, x86::msr::IA32_PERFEVTSEL0);
        assert_eq!(literal::IA32_FIXED_CTR0, x86::msr::IA32_FIXED_CTR0);
        assert_eq!(
            literal::IA32_PERF_CAPABILITIES,
            x86::msr::IA32_PERF_CAPABILITIES
        );
        assert_eq!(literal::IA32_FIXED_CTR_CTRL, x86::msr::IA32_FIXED_CTR_CTRL);
        assert_eq!(
            literal::IA32_PERF_GLOBAL_STAUS,
            x86::msr::IA32_PERF_GLOBAL_STAUS
        );
        assert_eq!(
            literal::IA32_PERF_GLOBAL_CTRL,
            x86::msr::IA32_PERF_GLOBAL_CTRL
        );
        assert_eq!(
            literal::IA32_PERF_GLOBAL_OVF_CTRL,
            x86::msr::IA32_PERF_GLOBAL_OVF_CTRL
        );
        assert_eq!(literal::IA32_A_PMC0, x86::msr::IA32_A_PMC0);
    }

    /// SDM Vol. 4 "IA-32 Architectural MSRs": IA32_PMC0-3 at C1H-C4H, IA32_PERFEVTSEL0-3 at
    /// 186H-189H, IA32_FIXED_CTR0-2 at 309H-30BH, 38DH-390H the version-2 controls.
    #[test]
    fn intel_numbers_follow_the_sdm_table() {
        assert_eq!(ia32_pmc(3), 0xC4);
        assert_eq!(ia32_a_pmc(1), 0x4C2);
        assert_eq!(ia32_perfevtsel(3), 0x189);
        assert_eq!(ia32_fixed_ctr(2), 0x30B);
        assert_eq!(IA32_FIXED_CTR_CTRL, 0x38D);
        assert_eq!(IA32_PERF_GLOBAL_STATUS, 0x38E);
        assert_eq!(IA32_PERF_GLOBAL_CTRL, 0x38F);
        assert_eq!(IA32_PERF_GLOBAL_STATUS_RESET, 0x390);
    }

    /// APM Vol. 2 "Performance Counters": legacy PerfEvtSel0-3 C001_0000h-03h and
    /// PerfCtr0-3 C001_0004h-07h; extended PERF_CTL/CTR pairs from C001_0200h.
    #[test]
    fn amd_layouts() {
        let legacy = AmdCounterLayout::Legacy;
        assert_eq!(legacy.perf_ctl(3), 0xC001_0003);
        assert_eq!(legacy.perf_ctr(3), 0xC001_0007);
        let ext = AmdCounterLayout::Extended;
        assert_eq!(ext.perf_ctl(0), 0xC001_0200);
        assert_eq!(ext.perf_ctr(0), 0xC001_0201);
        assert_eq!(ext.perf_ctl(5), 0xC001_020A);
        assert_eq!(ext.perf_ctr(5), 0xC001_020B);
        assert_eq!((legacy.counters(), ext.counters()), (4, 6));
    }
}
