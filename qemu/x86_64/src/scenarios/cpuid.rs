//! Scenario `cpuid`: what CPUID says about the PMU, raw and decoded, and whether a
//! counter really exists.
//!
//! Intel-style CPUs describe architectural performance monitoring in leaf 0AH (SDM
//! Vol. 2A, CPUID); AMD in Fn8000_0001_ECX bit 23 PerfCtrExtCore and Fn8000_0022
//! PerfMonV2 (APM Vol. 3), with four legacy counters that no CPUID bit announces. So on
//! AMD the counter is checked the way Linux's `check_hw_exists()`
//! (`arch/x86/events/core.c`) does: a value written to PERF_CTR0 must read back. QEMU
//! TCG reports leaf 0AH as zeros and lets MSRs read 0 and drop writes
//! (docs/qemu.md): no PMU either way, and the line says so.

use core::arch::x86_64::{__cpuid, __cpuid_count, CpuidResult};

use pmu_x86::cpuid::{AmdCoreCounters, ArchPerfmon, PmuDescription, Vendor};
use pmu_x86::ProbeError;

use super::{Tally, Verdict};
use crate::println;
use crate::traps;

/// What the later scenarios need to know about the PMU.
#[derive(Clone, Copy, Debug)]
pub struct Platform {
    /// Leaf 0AH decoded, when it reports architectural performance monitoring with at
    /// least one general-purpose counter (and the CPU is not AMD).
    pub arch: Option<ArchPerfmon>,
    /// Whether AMD core counters exist (PERF_CTR0 keeps a written value).
    pub amd_counters: bool,
    /// Whether general-purpose counter 0 exists (RDPMC with ECX = 0 must then work).
    pub counter0: bool,
}

/// The 12-byte vendor string of leaf 0 (EBX, EDX, ECX).
struct VendorId([u8; 12]);

impl VendorId {
    fn of(leaf0: CpuidResult) -> Self {
        let mut id = [0; 12];
        id[0..4].copy_from_slice(&leaf0.ebx.to_le_bytes());
        id[4..8].copy_from_slice(&leaf0.edx.to_le_bytes());
        id[8..12].copy_from_slice(&leaf0.ecx.to_le_bytes());
        Self(id)
    }

    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or("(not-utf8)")
    }
}

/// Ring-0 probe: writes 0xABCD to the MSR `msr`, reads it back, writes 0 again and
/// returns what was read (Linux `check_hw_exists()`).
extern "C" fn msr_read_back(msr: u64) -> u64 {
    let msr = msr as u32;
    // SAFETY: runs in ring 0 under `run_ring0`: a missing MSR raises #GP, which comes
    // back as a fault. The MSR is an AMD PERF_CTR whose PERF_CTL is disabled (reset state,
    // never programmed by this image): writing it changes no other state.
    unsafe {
        pmu_x86::asm::wrmsr(msr, 0xABCD);
        let value = pmu_x86::asm::rdmsr(msr);
        pmu_x86::asm::wrmsr(msr, 0);
        value
    }
}

/// Runs the scenario and returns what it found.
pub fn run(tally: &mut Tally) -> Platform {
    let leaf0 = __cpuid(0);
    let vendor_id = VendorId::of(leaf0);
    let vendor = Vendor::from_name(vendor_id.as_str());
    let max_leaf = leaf0.eax;
    let max_ext_leaf = __cpuid(0x8000_0000).eax;
    let hypervisor = __cpuid(1).ecx >> 31 & 1;

    let leaf_0a = if max_leaf >= 0xA {
        __cpuid_count(0xA, 0)
    } else {
        CpuidResult {
            eax: 0,
            ebx: 0,
            ecx: 0,
            edx: 0,
        }
    };
    let decoded = ArchPerfmon::decode(leaf_0a.eax, leaf_0a.ebx, leaf_0a.ecx, leaf_0a.edx);

    let ext_ecx = if max_ext_leaf >= 0x8000_0001 {
        __cpuid(0x8000_0001).ecx
    } else {
        0
    };
    let perfmon_v2_leaf = (max_ext_leaf >= 0x8000_0022).then(|| {
        let r = __cpuid(0x8000_0022);
        (r.eax, r.ebx)
    });
    let amd = AmdCoreCounters::decode(ext_ecx, perfmon_v2_leaf);
    let perfctr_core = ext_ecx >> 23 & 1;

    // pmu-x86's own view, for comparison with the raw decode above.
    let described = pmu_x86::cpuid::describe_this_cpu();

    // As pmu-x86's `describe`: AMD is described by its extended leaves, never by 0AH.
    let arch = decoded
        .ok()
        .filter(|a| a.gp_counters() > 0 && vendor != Vendor::Amd);
    // AMD counters: only a value that sticks proves them.
    let amd_read_back = (vendor == Vendor::Amd).then(|| {
        // SAFETY: msr_read_back owns nothing and changes only the counter it restores.
        unsafe { traps::run_ring0(msr_read_back, u64::from(amd.layout().perf_ctr(0))) }
    });
    let amd_present = matches!(amd_read_back, Some(Ok(0xABCD)));
    let counter0 = arch.is_some() || amd_present;

    let (version, gp, gp_width, fixed, fixed_width) = match decoded {
        Ok(a) => (
            a.version(),
            a.gp_counters(),
            a.gp_width().bits(),
            a.fixed_counters(),
            a.fixed_width().map_or(0, |w| w.bits()),
        ),
        Err(_) => (0, 0, 0, 0, 0),
    };
    let pmu = if arch.is_some() {
        "architectural"
    } else if amd_present {
        "amd"
    } else {
        "absent"
    };
    let amd_counters = match amd_read_back {
        None => "not-amd",
        Some(Ok(0xABCD)) => "present",
        Some(Ok(_)) => "absent-write-dropped",
        Some(Err(_)) => "absent-msr-faults",
    };
    let describe = match described {
        Ok(info) => match info.pmu {
            PmuDescription::Architectural { .. } => "architectural",
            PmuDescription::Amd(_) => "amd",
        },
        Err(ProbeError::NoArchitecturalPmu) => "no-architectural-pmu",
        Err(ProbeError::LeafNotSupported { .. }) => "leaf-not-supported",
        Err(_) => "error",
    };
    // The decode must agree with the raw version byte; anything else is a bug here or in
    // pmu-x86's decoder.
    let consistent = match decoded {
        Ok(a) => u32::from(a.version()) == leaf_0a.eax & 0xFF,
        Err(ProbeError::NoArchitecturalPmu) => leaf_0a.eax & 0xFF == 0,
        Err(_) => false,
    };
    tally.result(
        "cpuid",
        Verdict::from_check(consistent),
        format_args!(
            "vendor={} max_leaf={max_leaf:#x} max_ext_leaf={max_ext_leaf:#x} hypervisor={hypervisor} \
             leaf0a_eax={:#x} leaf0a_ebx={:#x} leaf0a_ecx={:#x} leaf0a_edx={:#x} \
             version={version} gp_counters={gp} gp_width={gp_width} fixed_counters={fixed} fixed_width={fixed_width} \
             amd_perfctr_core={perfctr_core} amd_perfmon_v2={} amd_counters={amd_counters} \
             describe={describe} pmu={pmu}",
            vendor_id.as_str(),
            leaf_0a.eax,
            leaf_0a.ebx,
            leaf_0a.ecx,
            leaf_0a.edx,
            u8::from(amd.perfmon_v2()),
        ),
    );
    match (decoded, arch, amd_present) {
        (Err(ProbeError::NoArchitecturalPmu), _, false) => println!(
            "cpuid: no architectural PMU (CPUID.0AH version 0): running under a hypervisor without vPMU?{}",
            if vendor == Vendor::Amd {
                " (and AMD PERF_CTR0 does not keep a written value)"
            } else {
                ""
            }
        ),
        (Err(e), _, _) => println!("cpuid: leaf 0AH: {e}"),
        (Ok(a), None, _) => println!(
            "cpuid: architectural performance monitoring version {} but no general-purpose counters",
            a.version()
        ),
        (Ok(a), Some(_), _) => println!(
            "cpuid: architectural PMU version {}: {} general-purpose counters of {} bits, {} fixed counters",
            a.version(),
            a.gp_counters(),
            a.gp_width().bits(),
            a.fixed_counters()
        ),
    }
    if amd_present {
        println!(
            "cpuid: AMD core counters: {} ({:?} layout)",
            amd.counters(),
            amd.layout()
        );
    }
    Platform {
        arch,
        amd_counters: amd_present,
        counter0,
    }
}
