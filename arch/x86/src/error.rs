//! What can be wrong when this crate looks for the CPU's PMU.
//!
//! Requests to a PMU that exists use [`pmu_core::Error`]; this type covers the step
//! before: CPUID says there is no PMU, or one this backend cannot drive.

use core::fmt;

use crate::cpuid::Vendor;

/// Why no PMU backend could be built for this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProbeError {
    /// CPUID.0AH:EAX\[7:0\] (version) is 0: no architectural performance monitoring. This
    /// is what a virtual machine without a virtual PMU reports (QEMU TCG, KVM without
    /// `-cpu …,pmu=on`).
    NoArchitecturalPmu,
    /// The CPU's highest CPUID leaf is below the one needed.
    LeafNotSupported {
        /// The leaf needed.
        leaf: u32,
    },
    /// A counter width CPUID reported is outside 1..=64 bits.
    InvalidCounterWidth {
        /// `true` for the fixed-function counters (EDX\[12:5\]), `false` for the
        /// general-purpose ones (EAX\[23:16\]).
        fixed: bool,
        /// The width reported.
        bits: u32,
    },
    /// The backend asked for is for another vendor's PMU.
    WrongVendor {
        /// The vendor the backend drives.
        expected: Vendor,
        /// The vendor of this CPU.
        found: Vendor,
    },
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoArchitecturalPmu => write!(
                f,
                "CPUID leaf 0xA reports no architectural PMU (version 0): in a VM, enable a virtual PMU; else use a timer"
            ),
            Self::LeafNotSupported { leaf } => write!(
                f,
                "this CPU does not implement CPUID leaf {leaf:#x}: it has no PMU this crate can drive"
            ),
            Self::InvalidCounterWidth { fixed, bits } => write!(
                f,
                "CPUID reports {} counters {bits} bits wide, outside 1..=64: the CPUID data (often a hypervisor's) is wrong",
                if *fixed { "fixed-function" } else { "general-purpose" }
            ),
            Self::WrongVendor { expected, found } => write!(
                f,
                "this backend drives {expected} PMUs but the CPU is {found}: use the backend for {found}"
            ),
        }
    }
}

impl core::error::Error for ProbeError {}
