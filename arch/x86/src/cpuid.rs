//! What the CPU says about its PMU: CPUID leaf 0AH (Intel architectural performance
//! monitoring) and the AMD extended leaves.
//!
//! Each leaf has a pure decoder from the raw register values ([`ArchPerfmon::decode`],
//! [`AmdCoreCounters::decode`]) that the host tests feed vectors to. [`describe`] runs the
//! whole probe against any `raw_cpuid::CpuIdReader`: the real CPU
//! ([`describe_this_cpu`]) or a closure in a test.
//!
//! Sources: SDM Vol. 2A, CPUID, "Architectural Performance Monitoring Leaf (EAX = 0AH)";
//! SDM Vol. 3B, "Architectural Performance Monitoring"; AMD APM Vol. 3, CPUID
//! Fn8000_0001_ECX (PerfCtrExtCore, bit 23) and Fn8000_0022 (PerfMonV2).

use core::fmt;

use pmu_core::CounterWidth;
use raw_cpuid::{CpuId, CpuIdReader};

use crate::events::ArchEvent;
use crate::msr::AmdCounterLayout;
use crate::ProbeError;

/// The CPU vendor, from CPUID leaf 0's vendor string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// "GenuineIntel".
    Intel,
    /// "AuthenticAMD", or "HygonGenuine" (Hygon's cores are AMD Zen and have its PMU).
    Amd,
    /// Anything else.
    Other,
}

impl Vendor {
    /// The vendor whose CPUID leaf 0 says `name`.
    pub fn from_name(name: &str) -> Self {
        match name {
            "GenuineIntel" => Self::Intel,
            "AuthenticAMD" | "HygonGenuine" => Self::Amd,
            _ => Self::Other,
        }
    }
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Intel => "Intel",
            Self::Amd => "AMD",
            Self::Other => "another vendor",
        })
    }
}

/// Largest number of general-purpose counters this crate drives: the architectural MSRs
/// IA32_PMC0-7 (C1H-C8H) and IA32_PERFEVTSEL0-7 (186H-18DH).
pub const MAX_GP_COUNTERS: u8 = 8;

/// Largest number of fixed counters this crate drives: IA32_FIXED_CTR0-3 (309H-30CH).
pub const MAX_FIXED_COUNTERS: u8 = 4;

/// CPUID leaf 0AH, decoded: Intel architectural performance monitoring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchPerfmon {
    version: u8,
    gp_counters: u8,
    gp_width: CounterWidth,
    events_length: u8,
    events_unavailable: u32,
    fixed_counters: u8,
    fixed_width: Option<CounterWidth>,
    fixed_counter_mask: u32,
    any_thread_deprecated: bool,
}

impl ArchPerfmon {
    /// Decodes the four registers CPUID returns for EAX = 0AH.
    ///
    /// - EAX\[7:0\] version ID, \[15:8\] general-purpose counters per logical processor,
    ///   \[23:16\] their width, \[31:24\] length of the EBX event vector;
    /// - EBX bit `i` set: architectural event `i` is *not* available;
    /// - ECX (version 5+): bit `i` set: fixed counter `i` is supported;
    /// - EDX\[4:0\] number of fixed counters, \[12:5\] their width (both only if the version
    ///   is above 1), \[15\] AnyThread deprecation.
    ///
    /// # Errors
    /// [`ProbeError::NoArchitecturalPmu`] when the version is 0 (a VM without a virtual
    /// PMU returns all zeros); [`ProbeError::InvalidCounterWidth`] for a width outside
    /// 1..=64 where counters exist.
    pub fn decode(eax: u32, ebx: u32, ecx: u32, edx: u32) -> Result<Self, ProbeError> {
        let version = (eax & 0xFF) as u8;
        if version == 0 {
            return Err(ProbeError::NoArchitecturalPmu);
        }
        let gp_counters = ((eax >> 8) & 0xFF) as u8;
        let gp_bits = (eax >> 16) & 0xFF;
        let events_length = (eax >> 24) as u8;
        // Counters of width 0 exist nowhere; with no counters the width is meaningless,
        // and then 48 is as good as any (nothing is read at that width).
        let gp_width = match CounterWidth::new(gp_bits) {
            Ok(w) => w,
            Err(_) if gp_counters == 0 => CounterWidth::W48,
            Err(_) => {
                return Err(ProbeError::InvalidCounterWidth {
                    fixed: false,
                    bits: gp_bits,
                })
            }
        };
        // EDX is only defined from version 2 on, ECX from version 5 on.
        let (fixed_counters, fixed_bits) = if version > 1 {
            ((edx & 0x1F) as u8, (edx >> 5) & 0xFF)
        } else {
            (0, 0)
        };
        let fixed_counter_mask = if version >= 5 { ecx } else { 0 };
        let fixed_width = if fixed_counters == 0 && fixed_counter_mask == 0 {
            None
        } else {
            Some(
                CounterWidth::new(fixed_bits).map_err(|_| ProbeError::InvalidCounterWidth {
                    fixed: true,
                    bits: fixed_bits,
                })?,
            )
        };
        Ok(Self {
            version,
            gp_counters,
            gp_width,
            events_length,
            events_unavailable: ebx,
            fixed_counters,
            fixed_width,
            fixed_counter_mask,
            any_thread_deprecated: version > 1 && edx & (1 << 15) != 0,
        })
    }

    /// Version ID of architectural performance monitoring (EAX\[7:0\], at least 1).
    pub const fn version(&self) -> u8 {
        self.version
    }

    /// General-purpose counters per logical processor as CPUID reports them (EAX\[15:8\]).
    pub const fn gp_counters(&self) -> u8 {
        self.gp_counters
    }

    /// Width of the general-purpose counters (EAX\[23:16\]).
    pub const fn gp_width(&self) -> CounterWidth {
        self.gp_width
    }

    /// Length of the EBX event-availability vector (EAX\[31:24\]).
    pub const fn events_length(&self) -> u8 {
        self.events_length
    }

    /// The raw EBX vector: bit `i` set means architectural event `i` is *not* available.
    pub const fn events_unavailable(&self) -> u32 {
        self.events_unavailable
    }

    /// Whether architectural event `event` is available: its bit lies inside the vector
    /// length and is clear. Events past the length are not enumerated, so not available.
    pub const fn event_available(&self, event: ArchEvent) -> bool {
        let bit = event.ebx_bit() as u32;
        bit < self.events_length as u32 && bit < 32 && self.events_unavailable & (1 << bit) == 0
    }

    /// Number of fixed-function counters (EDX\[4:0\]; 0 for version 1).
    pub const fn fixed_counters(&self) -> u8 {
        self.fixed_counters
    }

    /// Width of the fixed-function counters (EDX\[12:5\]), `None` when there are none.
    pub const fn fixed_width(&self) -> Option<CounterWidth> {
        self.fixed_width
    }

    /// The version-5 fixed-counter bit mask (ECX; 0 before version 5).
    pub const fn fixed_counter_mask(&self) -> u32 {
        self.fixed_counter_mask
    }

    /// Whether fixed counter `index` exists: "ECX\[i\] || EDX\[4:0\] > i" (SDM, CPUID 0AH).
    pub const fn fixed_counter_supported(&self, index: u8) -> bool {
        (index < self.fixed_counters) || (index < 32 && self.fixed_counter_mask & (1 << index) != 0)
    }

    /// Whether the AnyThread bits are deprecated (EDX\[15\]): they must then be written 0.
    pub const fn any_thread_deprecated(&self) -> bool {
        self.any_thread_deprecated
    }

    /// Whether IA32_PERF_GLOBAL_CTRL/STATUS/OVF_CTRL and IA32_FIXED_CTR_CTRL exist
    /// (version 2 and later).
    pub const fn has_global_controls(&self) -> bool {
        self.version >= 2
    }

    /// General-purpose counters this crate drives: [`Self::gp_counters`] capped at
    /// [`MAX_GP_COUNTERS`].
    pub const fn usable_gp_counters(&self) -> u8 {
        if self.gp_counters < MAX_GP_COUNTERS {
            self.gp_counters
        } else {
            MAX_GP_COUNTERS
        }
    }

    /// Fixed-counter slots this crate drives: one past the highest supported fixed
    /// counter, capped at [`MAX_FIXED_COUNTERS`]. Unsupported indices below it (possible
    /// with a version-5 bit mask) are slots that count nothing.
    pub const fn usable_fixed_counters(&self) -> u8 {
        let from_mask = 32 - self.fixed_counter_mask.leading_zeros();
        let highest = if from_mask as u8 > self.fixed_counters {
            from_mask as u8
        } else {
            self.fixed_counters
        };
        if highest < MAX_FIXED_COUNTERS {
            highest
        } else {
            MAX_FIXED_COUNTERS
        }
    }
}

/// AMD core performance counters, decoded from CPUID Fn8000_0001 and Fn8000_0022.
///
/// AMD has no fixed-function counters and no CPUID leaf 0AH; every core counter is
/// 48 bits wide (APM Vol. 2, "Performance Counters").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmdCoreCounters {
    layout: AmdCounterLayout,
    counters: u8,
    perfmon_v2: bool,
}

impl AmdCoreCounters {
    /// Width of every AMD core counter.
    pub const WIDTH: CounterWidth = CounterWidth::W48;

    /// Decodes CPUID Fn8000_0001_ECX and, when the CPU has leaf 8000_0022h, its EAX/EBX.
    ///
    /// - Fn8000_0001_ECX\[23\] PerfCtrExtCore: six counters at MSR C001_0200h + 2n (control)
    ///   and C001_0201h + 2n (count); else the four legacy ones at C001_0000h / C001_0004h;
    /// - Fn8000_0022_EAX\[0\] PerfMonV2: global control/status MSRs C000_0300h..; then
    ///   EBX\[3:0\] NumPerfCtrCore gives the number of core counters.
    pub const fn decode(ext_ecx: u32, leaf_8000_0022: Option<(u32, u32)>) -> Self {
        let layout = if ext_ecx & (1 << 23) != 0 {
            AmdCounterLayout::Extended
        } else {
            AmdCounterLayout::Legacy
        };
        let mut counters = layout.counters();
        let mut perfmon_v2 = false;
        if let Some((eax, ebx)) = leaf_8000_0022 {
            if eax & 1 != 0 && matches!(layout, AmdCounterLayout::Extended) {
                perfmon_v2 = true;
                let reported = (ebx & 0xF) as u8;
                // The extended MSR block has room for six pairs.
                if reported < counters {
                    counters = reported;
                }
            }
        }
        Self {
            layout,
            counters,
            perfmon_v2,
        }
    }

    /// Where the counters live.
    pub const fn layout(&self) -> AmdCounterLayout {
        self.layout
    }

    /// How many core counters there are.
    pub const fn counters(&self) -> u8 {
        self.counters
    }

    /// Whether PerfMonV2 global control and status MSRs exist.
    pub const fn perfmon_v2(&self) -> bool {
        self.perfmon_v2
    }
}

/// The PMU CPUID describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmuDescription {
    /// Intel architectural performance monitoring (CPUID leaf 0AH).
    Architectural {
        /// Leaf 0AH.
        perfmon: ArchPerfmon,
        /// CPUID.01H:ECX.PDCM\[15\]: IA32_PERF_CAPABILITIES exists.
        pdcm: bool,
    },
    /// AMD core counters.
    Amd(AmdCoreCounters),
}

/// Vendor and PMU of a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuPmuInfo {
    /// The vendor.
    pub vendor: Vendor,
    /// The PMU.
    pub pmu: PmuDescription,
}

/// Probes the PMU of the CPU `reader` answers for.
///
/// AMD (and Hygon) CPUs are described by their extended leaves; every other vendor by
/// leaf 0AH, which Intel defines and some others implement.
///
/// AMD has no CPUID bit saying the legacy counters are absent: a hypervisor without a
/// virtual PMU that reports neither PerfCtrExtCore nor PerfMonV2 is described as four
/// legacy counters whose MSRs may fault.
///
/// # Errors
/// [`ProbeError::LeafNotSupported`], [`ProbeError::NoArchitecturalPmu`],
/// [`ProbeError::InvalidCounterWidth`].
pub fn describe<R: CpuIdReader>(reader: R) -> Result<CpuPmuInfo, ProbeError> {
    let cpuid = CpuId::with_cpuid_reader(reader.clone());
    let vendor = cpuid
        .get_vendor_info()
        .map_or(Vendor::Other, |v| Vendor::from_name(v.as_str()));
    let pmu = if vendor == Vendor::Amd {
        let max_extended = reader.cpuid1(0x8000_0000).eax;
        if max_extended < 0x8000_0001 {
            return Err(ProbeError::LeafNotSupported { leaf: 0x8000_0001 });
        }
        let ext_ecx = reader.cpuid1(0x8000_0001).ecx;
        let v2 = (max_extended >= 0x8000_0022).then(|| {
            let r = reader.cpuid1(0x8000_0022);
            (r.eax, r.ebx)
        });
        PmuDescription::Amd(AmdCoreCounters::decode(ext_ecx, v2))
    } else {
        // raw-cpuid answers `None` when the highest basic leaf is below 0AH.
        if cpuid.get_performance_monitoring_info().is_none() {
            return Err(ProbeError::LeafNotSupported { leaf: 0xA });
        }
        let r = reader.cpuid1(0xA);
        PmuDescription::Architectural {
            perfmon: ArchPerfmon::decode(r.eax, r.ebx, r.ecx, r.edx)?,
            pdcm: cpuid.get_feature_info().is_some_and(|f| f.has_pdcm()),
        }
    };
    Ok(CpuPmuInfo { vendor, pmu })
}

/// [`describe`] for the CPU this runs on. CPUID is unprivileged: safe anywhere.
///
/// # Errors
/// As [`describe`].
#[cfg(target_arch = "x86_64")]
pub fn describe_this_cpu() -> Result<CpuPmuInfo, ProbeError> {
    describe(raw_cpuid::CpuIdReaderNative)
}

/// Whether the CPU this runs on implements RDTSCP (CPUID.80000001H:EDX\[27\]).
#[cfg(target_arch = "x86_64")]
pub fn has_rdtscp() -> bool {
    CpuId::new()
        .get_extended_processor_and_feature_identifiers()
        .is_some_and(|f| f.has_rdtscp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use raw_cpuid::CpuIdResult;

    const fn regs(eax: u32, ebx: u32, ecx: u32, edx: u32) -> CpuIdResult {
        CpuIdResult { eax, ebx, ecx, edx }
    }

    /// Leaf 0 registers (EBX, EDX, ECX hold the vendor string) with `max` as EAX.
    fn vendor_leaf(max: u32, name: &[u8; 12]) -> CpuIdResult {
        let word = |i: usize| u32::from_le_bytes([name[i], name[i + 1], name[i + 2], name[i + 3]]);
        regs(max, word(0), word(8), word(4))
    }

    /// Skylake client (Core i7-6700K), leaf 0AH as `cpuid -1 -l 0xa` prints it:
    /// EAX = 0x07300404 -> version 4 (bits 7:0 = 0x04), 4 general-purpose counters per
    /// logical processor with Hyper-Threading (15:8 = 0x04), 48 bits wide (23:16 = 0x30),
    /// EBX vector of length 7 (31:24 = 0x07); EBX = 0, all seven events available;
    /// EDX = 0x603 -> 3 fixed counters (4:0 = 0b00011), 48 bits wide (12:5 = 0x30).
    const SKYLAKE: CpuIdResult = regs(0x0730_0404, 0, 0, 0x0000_0603);

    #[test]
    fn skylake_leaf_0a() {
        let p = ArchPerfmon::decode(SKYLAKE.eax, SKYLAKE.ebx, SKYLAKE.ecx, SKYLAKE.edx).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.gp_counters(), 4);
        assert_eq!(p.gp_width(), CounterWidth::W48);
        assert_eq!(p.events_length(), 7);
        assert_eq!(p.fixed_counters(), 3);
        assert_eq!(p.fixed_width(), Some(CounterWidth::W48));
        assert!(p.has_global_controls());
        assert!(!p.any_thread_deprecated());
        for e in ArchEvent::ALL {
            // Topdown slots is bit 7, outside a length-7 vector: not enumerated.
            assert_eq!(p.event_available(e), e != ArchEvent::TopdownSlots, "{e:?}");
        }
        assert!(p.fixed_counter_supported(2));
        assert!(!p.fixed_counter_supported(3));
        assert_eq!((p.usable_gp_counters(), p.usable_fixed_counters()), (4, 3));
    }

    /// The same vector through raw-cpuid's own decoder gives the same fields (a second,
    /// independent reading of SDM Vol. 2A, CPUID leaf 0AH).
    #[test]
    fn decode_agrees_with_raw_cpuid() {
        let reader = |leaf: u32, _sub: u32| match leaf {
            0 => vendor_leaf(0x16, b"GenuineIntel"),
            0xA => SKYLAKE,
            _ => regs(0, 0, 0, 0),
        };
        let theirs = CpuId::with_cpuid_reader(reader)
            .get_performance_monitoring_info()
            .unwrap();
        let ours = ArchPerfmon::decode(SKYLAKE.eax, SKYLAKE.ebx, SKYLAKE.ecx, SKYLAKE.edx).unwrap();
        assert_eq!(theirs.version_id(), ours.version());
        assert_eq!(theirs.number_of_counters(), ours.gp_counters());
        assert_eq!(
            u32::from(theirs.counter_bit_width()),
            ours.gp_width().bits()
        );
        assert_eq!(theirs.ebx_length(), ours.events_length());
        assert_eq!(theirs.fixed_function_counters(), ours.fixed_counters());
        assert_eq!(
            u32::from(theirs.fixed_function_counters_bit_width()),
            ours.fixed_width().unwrap().bits()
        );
    }

    /// A VM without a virtual PMU (QEMU TCG, and this project's KVM hosts: docs/qemu.md "x86_64",
    /// CPUID 0xA is zero) returns all zeros: a typed "no architectural PMU", not a panic.
    #[test]
    fn all_zero_leaf_is_no_pmu() {
        assert_eq!(
            ArchPerfmon::decode(0, 0, 0, 0),
            Err(ProbeError::NoArchitecturalPmu)
        );
        let reader = |leaf: u32, _sub: u32| match leaf {
            0 => vendor_leaf(0xD, b"GenuineIntel"),
            _ => regs(0, 0, 0, 0),
        };
        assert_eq!(describe(reader), Err(ProbeError::NoArchitecturalPmu));
        // A CPU whose highest basic leaf is below 0AH.
        let old = |leaf: u32, _sub: u32| match leaf {
            0 => vendor_leaf(0x5, b"GenuineIntel"),
            _ => regs(0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF),
        };
        assert_eq!(
            describe(old),
            Err(ProbeError::LeafNotSupported { leaf: 0xA })
        );
    }

    /// EBX: "Bit 06: Branch mispredict retired event not available if 1" (SDM Vol. 2A).
    /// Synthetic vector: Skylake's EAX/EDX with EBX bit 6 set, as a hypervisor that hides
    /// that event reports it.
    #[test]
    fn set_ebx_bit_means_unavailable() {
        let p = ArchPerfmon::decode(SKYLAKE.eax, 1 << 6, 0, SKYLAKE.edx).unwrap();
        assert!(!p.event_available(ArchEvent::BranchMissesRetired));
        assert!(p.event_available(ArchEvent::BranchInstructionsRetired));
        assert!(p.event_available(ArchEvent::InstructionsRetired));
    }

    /// Version 1 (SDM: EDX is defined "if Version ID > 1"): fixed-counter fields ignored.
    #[test]
    fn version_1_has_no_fixed_counters() {
        // Synthetic: version 1, 2 counters of 40 bits, length 7, garbage in EDX.
        let p = ArchPerfmon::decode(0x0728_0201, 0, 0, 0x0000_0503).unwrap();
        assert_eq!(p.version(), 1);
        assert_eq!(p.gp_counters(), 2);
        assert_eq!(p.gp_width().bits(), 40);
        assert_eq!(p.fixed_counters(), 0);
        assert_eq!(p.fixed_width(), None);
        assert!(!p.has_global_controls());
    }

    /// Version 5 with 8 counters, length 8 (topdown slots), 4 fixed counters, AnyThread
    /// deprecated (EDX\[15\]), and an ECX mask adding fixed counter 3 (synthetic vector in
    /// the shape of an Ice Lake client, built from the SDM field definitions).
    #[test]
    fn version_5_fields() {
        let edx = 0x8000 | (48 << 5) | 3;
        let p = ArchPerfmon::decode(0x0830_0805, 0, 0b1000, edx).unwrap();
        assert_eq!(p.version(), 5);
        assert_eq!(p.gp_counters(), 8);
        assert!(p.event_available(ArchEvent::TopdownSlots));
        assert!(p.any_thread_deprecated());
        assert_eq!(p.fixed_counters(), 3);
        assert!(p.fixed_counter_supported(3));
        assert!(!p.fixed_counter_supported(4));
        assert_eq!(p.usable_fixed_counters(), 4);
    }

    /// Widths outside 1..=64 are typed errors (a broken hypervisor CPUID).
    #[test]
    fn bad_widths_are_errors() {
        assert_eq!(
            ArchPerfmon::decode(0x0700_0402, 0, 0, 0x603),
            Err(ProbeError::InvalidCounterWidth {
                fixed: false,
                bits: 0
            })
        );
        assert_eq!(
            ArchPerfmon::decode(0x0741_0402, 0, 0, 0x603),
            Err(ProbeError::InvalidCounterWidth {
                fixed: false,
                bits: 0x41
            })
        );
        assert_eq!(
            ArchPerfmon::decode(0x0730_0402, 0, 0, 3),
            Err(ProbeError::InvalidCounterWidth {
                fixed: true,
                bits: 0
            })
        );
        // No general-purpose counters: the width does not matter.
        assert!(ArchPerfmon::decode(0x0700_0002, 0, 0, 0x603).is_ok());
    }

    /// APM Vol. 3, CPUID Fn8000_0001_ECX bit 23 PerfCtrExtCore. Zen 2 (e.g. Ryzen 7 4700U, family 17h
    /// model 60h) reports it set: six counters at C001_0200h.
    #[test]
    fn amd_perf_ctr_ext_core() {
        let ext = AmdCoreCounters::decode(1 << 23, None);
        assert_eq!(ext.layout(), AmdCounterLayout::Extended);
        assert_eq!(ext.counters(), 6);
        assert!(!ext.perfmon_v2());
        let legacy = AmdCoreCounters::decode(!(1 << 23), None);
        assert_eq!(legacy.layout(), AmdCounterLayout::Legacy);
        assert_eq!(legacy.counters(), 4);
        // PerfMonV2 (Zen 4): EAX[0] = 1, EBX[3:0] = 6 core counters.
        let v2 = AmdCoreCounters::decode(1 << 23, Some((1, 6)));
        assert!(v2.perfmon_v2());
        assert_eq!(v2.counters(), 6);
        // A leaf that reports fewer counters is believed; PerfMonV2 without the
        // extended layout is not (its counters live there).
        assert_eq!(AmdCoreCounters::decode(1 << 23, Some((1, 4))).counters(), 4);
        assert!(!AmdCoreCounters::decode(0, Some((1, 6))).perfmon_v2());
    }

    /// The whole probe on an AMD vendor string reads the extended leaves.
    #[test]
    fn describe_amd() {
        let reader = |leaf: u32, _sub: u32| match leaf {
            0 => vendor_leaf(0x10, b"AuthenticAMD"),
            0x8000_0000 => regs(0x8000_0020, 0, 0, 0),
            0x8000_0001 => regs(0, 0, 1 << 23, 0),
            _ => regs(0, 0, 0, 0),
        };
        let info = describe(reader).unwrap();
        assert_eq!(info.vendor, Vendor::Amd);
        assert_eq!(
            info.pmu,
            PmuDescription::Amd(AmdCoreCounters::decode(1 << 23, None))
        );
    }

    /// The whole probe on an Intel vendor string decodes leaf 0AH and PDCM (CPUID.01H:
    /// ECX\[15\]).
    #[test]
    fn describe_intel() {
        let reader = |leaf: u32, _sub: u32| match leaf {
            0 => vendor_leaf(0x16, b"GenuineIntel"),
            1 => regs(0, 0, 1 << 15, 0),
            0xA => SKYLAKE,
            _ => regs(0, 0, 0, 0),
        };
        let info = describe(reader).unwrap();
        assert_eq!(info.vendor, Vendor::Intel);
        let PmuDescription::Architectural { perfmon, pdcm } = info.pmu else {
            panic!("expected leaf 0AH")
        };
        assert!(pdcm);
        assert_eq!(perfmon.gp_counters(), 4);
    }

    /// Probing the machine the tests run on never panics; on this project's VMs it
    /// reports no PMU (docs/qemu.md: CPUID 0xA is zero), on real hardware a decoded one.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn describe_this_cpu_is_typed() {
        match describe_this_cpu() {
            Ok(CpuPmuInfo {
                pmu: PmuDescription::Architectural { perfmon, .. },
                ..
            }) => assert!(perfmon.version() >= 1),
            Ok(CpuPmuInfo {
                pmu: PmuDescription::Amd(amd),
                vendor,
            }) => assert_eq!((vendor, amd.counters() <= 6), (Vendor::Amd, true)),
            Err(e) => assert!(matches!(
                e,
                ProbeError::NoArchitecturalPmu | ProbeError::LeafNotSupported { .. }
            )),
        }
    }
}
