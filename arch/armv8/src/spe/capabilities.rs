//! What this PE's SPE can do, decoded from `ID_AA64DFR0_EL1.PMSVer`, `PMSIDR_EL1` and
//! `PMBIDR_EL1`, and the probe that reads them in the only safe order.
//!
//! The probe follows Linux `__arm_spe_pmu_dev_probe()` (drivers/perf/arm_spe_pmu.c) and the
//! access rules of Arm ARM DDI 0487 M.a.a D24.7.1/D24.7.14:
//! 1. `ID_AA64DFR0_EL1.PMSVer`: 0 means every SPE register is UNDEFINED (QEMU has no SPE), so
//!    stop with [`SpeError::NotImplemented`] before touching any of them;
//! 2. `PMBIDR_EL1`, the one SPE register without the MDCR_EL3.NSPB trap: `P = 1` means a higher
//!    Exception level owns the buffer and the other SPE registers may trap to EL3, so stop
//!    with [`SpeError::BufferOwnedByHigherEl`];
//! 3. only then `PMSIDR_EL1`.

use super::error::SpeError;
use super::events::{check_event_filter, SpeEvents};
use super::pmbidr_el1::{decode_align, PmbidrEl1, PMBIDR_EL1};
use super::pmsidr_el1::{
    decode_counter_size, decode_max_record_size, decode_min_interval, nibble, CounterSize,
    PmsidrEl1, PMSIDR_EL1,
};
use super::pmslatfr_el1::{encode_min_latency, PmslatfrEl1};
use super::version::SpeVersion;

/// SPE capabilities of one PE. Fields whose code can be reserved hold the decoder's `Result`;
/// [`SpeCapabilities::validate`] turns the first problem into an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SpeCapabilities {
    /// SPE version from `ID_AA64DFR0_EL1.PMSVer`.
    pub version: SpeVersion,
    /// PMSIDR_EL1.FE: filtering by events (PMSEVFR_EL1).
    pub filter_by_event: bool,
    /// PMSIDR_EL1.FT: filtering by operation type (PMSFCR_EL1.{B, LD, ST}).
    pub filter_by_type: bool,
    /// PMSIDR_EL1.FL: filtering by latency (PMSLATFR_EL1).
    pub filter_by_latency: bool,
    /// PMSIDR_EL1.FnE: inverted event filter (PMSNEVFR_EL1, PMSFCR_EL1.FnE).
    pub inverted_event_filter: bool,
    /// PMSIDR_EL1.FDS: data source filter (PMSDSFR_EL1, PMSFCR_EL1.FDS).
    pub data_source_filter: bool,
    /// PMSIDR_EL1.EFT: extended type filter (PMSFCR_EL1.{FP, SIMD} and the type masks).
    pub extended_type_filter: bool,
    /// PMSIDR_EL1.ArchInst: the interval counts architectural instructions, not micro-ops.
    pub architectural_instructions: bool,
    /// PMSIDR_EL1.LDS: records carry the data source of loads.
    pub loaded_data_source: bool,
    /// PMSIDR_EL1.ERnd: the random part of the interval is added after the programmed one.
    pub extended_random: bool,
    /// PMSIDR_EL1.PBT: previous branch target Address packets.
    pub previous_branch_target: bool,
    /// PMSIDR_EL1.Interval: smallest recommended interval, in operations (or instructions).
    pub min_interval: Result<u32, SpeError>,
    /// PMSIDR_EL1.MaxSize: largest record in bytes.
    pub max_record_size: Result<u32, SpeError>,
    /// PMSIDR_EL1.CountSize: width of the latency counters.
    pub counter_size: Result<CounterSize, SpeError>,
    /// PMSIDR_EL1.Format: sample record format (0 is the only defined one).
    pub record_format: u8,
    /// PMBIDR_EL1.Align: alignment of PMBPTR_EL1 writes, in bytes.
    pub buffer_align: Result<u32, SpeError>,
    /// PMBIDR_EL1.P: a higher Exception level (or another Security state) owns the buffer, so
    /// EL1 cannot use SPE.
    pub buffer_owned_by_higher_el: bool,
    /// PMBIDR_EL1.F: hardware Access flag/dirty state updates apply to profiling writes.
    pub hardware_flag_updates: bool,
    /// The raw PMSIDR_EL1 value the rest was decoded from.
    pub pmsidr: u64,
    /// The raw PMBIDR_EL1 value the rest was decoded from.
    pub pmbidr: u64,
}

impl SpeCapabilities {
    /// Decodes capabilities from register values. Never fails and never panics: reserved codes
    /// stay in the `Result` fields.
    pub fn decode(version: SpeVersion, pmsidr: PmsidrEl1, pmbidr: PmbidrEl1) -> Self {
        Self {
            version,
            filter_by_event: pmsidr.is_set(PMSIDR_EL1::FE),
            filter_by_type: pmsidr.is_set(PMSIDR_EL1::FT),
            filter_by_latency: pmsidr.is_set(PMSIDR_EL1::FL),
            inverted_event_filter: pmsidr.is_set(PMSIDR_EL1::FnE),
            data_source_filter: pmsidr.is_set(PMSIDR_EL1::FDS),
            extended_type_filter: pmsidr.is_set(PMSIDR_EL1::EFT),
            architectural_instructions: pmsidr.is_set(PMSIDR_EL1::ArchInst),
            loaded_data_source: pmsidr.is_set(PMSIDR_EL1::LDS),
            extended_random: pmsidr.is_set(PMSIDR_EL1::ERnd),
            previous_branch_target: pmsidr.is_set(PMSIDR_EL1::PBT),
            min_interval: decode_min_interval(nibble(pmsidr, PMSIDR_EL1::Interval)),
            max_record_size: decode_max_record_size(nibble(pmsidr, PMSIDR_EL1::MaxSize)),
            counter_size: decode_counter_size(nibble(pmsidr, PMSIDR_EL1::CountSize)),
            record_format: nibble(pmsidr, PMSIDR_EL1::Format),
            // Align is 4 bits wide.
            buffer_align: decode_align((pmbidr.read(PMBIDR_EL1::Align) & 0xF) as u8),
            buffer_owned_by_higher_el: pmbidr.is_set(PMBIDR_EL1::P),
            hardware_flag_updates: pmbidr.is_set(PMBIDR_EL1::F),
            pmsidr: pmsidr.get(),
            pmbidr: pmbidr.get(),
        }
    }

    /// Decodes capabilities from raw register values.
    pub fn decode_raw(version: SpeVersion, pmsidr: u64, pmbidr: u64) -> Self {
        Self::decode(version, PmsidrEl1::new(pmsidr), PmbidrEl1::new(pmbidr))
    }

    /// Whether EL1 can use SPE with these capabilities: the buffer is EL1's and every coded
    /// field has a defined value (a reserved one means an encoding this driver does not know,
    /// so nothing derived from it can be trusted).
    pub fn validate(&self) -> Result<(), SpeError> {
        if self.buffer_owned_by_higher_el {
            return Err(SpeError::BufferOwnedByHigherEl);
        }
        self.max_record_size?;
        self.buffer_align?;
        self.min_interval?;
        self.counter_size?;
        Ok(())
    }

    /// Encodes a PMSLATFR_EL1 minimum latency checked against this PE's counter size.
    pub fn encode_min_latency(&self, min_latency: u32) -> Result<PmslatfrEl1, SpeError> {
        encode_min_latency(min_latency, self.counter_size?)
    }

    /// Rejects filter events that are RAZ/WI at this PE's SPE version
    /// ([`check_event_filter`]).
    pub fn check_event_filter(&self, events: SpeEvents) -> Result<(), SpeError> {
        check_event_filter(self.version, events)
    }
}

/// Where [`probe_with`] reads the three ID registers: the real ones (`CurrentPe`, aarch64
/// only) or a fake in tests.
pub trait SpeIdRegisters {
    /// Reads `ID_AA64DFR0_EL1`.
    fn id_aa64dfr0_el1(&mut self) -> u64;

    /// Reads `PMBIDR_EL1`.
    ///
    /// # Safety
    ///
    /// Called only after [`SpeIdRegisters::id_aa64dfr0_el1`] of the same source reported
    /// PMSVer != 0.
    unsafe fn pmbidr_el1(&mut self) -> u64;

    /// Reads `PMSIDR_EL1`.
    ///
    /// # Safety
    ///
    /// Called only after PMSVer != 0 and [`SpeIdRegisters::pmbidr_el1`] of the same source
    /// reported P == 0.
    unsafe fn pmsidr_el1(&mut self) -> u64;
}

/// Probes SPE through `regs`, in the order of the module documentation: it never reads an SPE
/// register when PMSVer is 0, and never reads PMSIDR_EL1 when PMBIDR_EL1.P is 1.
pub fn probe_with<R: SpeIdRegisters + ?Sized>(regs: &mut R) -> Result<SpeCapabilities, SpeError> {
    let version = SpeVersion::from_id_aa64dfr0(regs.id_aa64dfr0_el1())?;
    // SAFETY: PMSVer != 0 was just read from the same source.
    let pmbidr = PmbidrEl1::new(unsafe { regs.pmbidr_el1() });
    if pmbidr.is_set(PMBIDR_EL1::P) {
        return Err(SpeError::BufferOwnedByHigherEl);
    }
    // SAFETY: PMSVer != 0 and PMBIDR_EL1.P == 0, both read from the same source.
    let pmsidr = PmsidrEl1::new(unsafe { regs.pmsidr_el1() });
    let caps = SpeCapabilities::decode(version, pmsidr, pmbidr);
    caps.validate()?;
    Ok(caps)
}

/// The ID registers of the PE the code runs on.
#[cfg(target_arch = "aarch64")]
#[derive(Clone, Copy, Debug, Default)]
pub struct CurrentPe;

#[cfg(target_arch = "aarch64")]
impl SpeIdRegisters for CurrentPe {
    fn id_aa64dfr0_el1(&mut self) -> u64 {
        use aarch64_cpu::registers::{Readable, ID_AA64DFR0_EL1};
        ID_AA64DFR0_EL1.get()
    }

    unsafe fn pmbidr_el1(&mut self) -> u64 {
        // SAFETY: the caller saw PMSVer != 0 (trait contract), so PMBIDR_EL1 exists; it has no
        // MDCR_EL3.NSPB trap (Arm ARM D24.7.1).
        unsafe { crate::asm::spe::read_pmbidr_el1() }
    }

    unsafe fn pmsidr_el1(&mut self) -> u64 {
        // SAFETY: the caller saw PMSVer != 0 and PMBIDR_EL1.P == 0 (trait contract), so
        // PMSIDR_EL1 exists and EL1 owns the buffer: no trap to EL3.
        unsafe { crate::asm::spe::read_pmsidr_el1() }
    }
}

/// Probes the SPE of the PE the code runs on.
///
/// Run it at EL1 or higher (bare metal, a kernel). Under Linux at EL0 the kernel emulates the
/// ID_AA64DFR0_EL1 read and hides PMSVer, so the answer is [`SpeError::NotImplemented`]; use
/// perf's `arm_spe` PMU there. Results are per PE: on a heterogeneous system, probe each CPU.
#[cfg(target_arch = "aarch64")]
pub fn probe() -> Result<SpeCapabilities, SpeError> {
    probe_with(&mut CurrentPe)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::string::ToString;

    use super::super::pmsidr_el1::PMSIDR_EL1;
    use super::*;

    /// A fake register file that counts which registers the probe read.
    struct FakePe {
        id_aa64dfr0: u64,
        pmbidr: u64,
        pmsidr: u64,
        pmbidr_reads: u32,
        pmsidr_reads: u32,
    }

    impl FakePe {
        fn new(id_aa64dfr0: u64, pmbidr: u64, pmsidr: u64) -> Self {
            Self {
                id_aa64dfr0,
                pmbidr,
                pmsidr,
                pmbidr_reads: 0,
                pmsidr_reads: 0,
            }
        }
    }

    impl SpeIdRegisters for FakePe {
        fn id_aa64dfr0_el1(&mut self) -> u64 {
            self.id_aa64dfr0
        }
        unsafe fn pmbidr_el1(&mut self) -> u64 {
            assert_ne!(
                (self.id_aa64dfr0 >> 32) & 0xF,
                0,
                "PMBIDR_EL1 read without SPE"
            );
            self.pmbidr_reads += 1;
            self.pmbidr
        }
        unsafe fn pmsidr_el1(&mut self) -> u64 {
            assert_eq!(
                self.pmbidr & (1 << 4),
                0,
                "PMSIDR_EL1 read with PMBIDR_EL1.P = 1"
            );
            self.pmsidr_reads += 1;
            self.pmsidr
        }
    }

    /// An example PMSIDR_EL1 value built from fields (not a dump of a real part): FE, FT, FL set, micro-op sampling, no LDS/ERnd/FnE, 1024-operation
    /// minimum interval, 64-byte records, 12-bit counters, Format 0.
    fn example_pmsidr() -> u64 {
        (PMSIDR_EL1::FE::SET
            + PMSIDR_EL1::FT::SET
            + PMSIDR_EL1::FL::SET
            + PMSIDR_EL1::Interval.val(0b0100)
            + PMSIDR_EL1::MaxSize.val(6)
            + PMSIDR_EL1::CountSize::Saturating12Bit)
            .value
    }

    /// QEMU `-cpu max`, ID_AA64DFR0_EL1 = 0x10305609 (docs/qemu.md): the probe
    /// stops at PMSVer = 0 and reads no SPE register (they would be UNDEFINED), with exactly
    /// the documented message.
    #[test]
    fn qemu_max_probe_touches_no_spe_register() {
        let mut pe = FakePe::new(0x1030_5609, 0, 0);
        let err = probe_with(&mut pe).unwrap_err();
        assert_eq!(err, SpeError::NotImplemented);
        assert_eq!(err.to_string(), "SPE not implemented (PMSVer=0)");
        assert_eq!((pe.pmbidr_reads, pe.pmsidr_reads), (0, 0));
    }

    /// Linux `__arm_spe_pmu_dev_probe()`: "Read PMBIDR first to determine whether or not we
    /// have access"; with P = 1 it stops before PMSIDR_EL1.
    #[test]
    fn owned_buffer_stops_before_pmsidr() {
        let mut pe = FakePe::new(2 << 32, 1 << 4, example_pmsidr());
        assert_eq!(probe_with(&mut pe), Err(SpeError::BufferOwnedByHigherEl));
        assert_eq!((pe.pmbidr_reads, pe.pmsidr_reads), (1, 0));
    }

    /// The example value with PMSVer = 2 (FEAT_SPEv1p1) and byte alignment.
    #[test]
    fn example_v1p1_capabilities() {
        let pmsidr = example_pmsidr();
        assert_eq!(pmsidr, 0x2_6407);
        let mut pe = FakePe::new(2 << 32, 0, pmsidr);
        let caps = probe_with(&mut pe).expect("valid");
        assert_eq!((pe.pmbidr_reads, pe.pmsidr_reads), (1, 1));
        assert_eq!(caps.version, SpeVersion::V1p1);
        assert!(caps.filter_by_event && caps.filter_by_type && caps.filter_by_latency);
        assert!(!caps.inverted_event_filter && !caps.architectural_instructions);
        assert!(!caps.loaded_data_source && !caps.extended_random);
        assert_eq!(caps.min_interval, Ok(1024));
        assert_eq!(caps.max_record_size, Ok(64));
        assert_eq!(caps.counter_size, Ok(CounterSize::Bits12));
        assert_eq!(caps.buffer_align, Ok(1));
        assert_eq!(caps.record_format, 0);
        assert!(!caps.buffer_owned_by_higher_el);
        // The memory-latency recipe's MINLAT=120 fits, 0x1000 does not (12-bit counters).
        assert_eq!(caps.encode_min_latency(120).map(|v| v.get()), Ok(120));
        assert_eq!(
            caps.encode_min_latency(0x1000).map(|v| v.get()),
            Err(SpeError::MinLatencyTooLarge {
                value: 0x1000,
                max: 0xFFF
            })
        );
        // FEAT_SPEv1p1 filters misalignment but not "not taken" (needs v1p2).
        assert_eq!(caps.check_event_filter(SpeEvents::MISALIGNED), Ok(()));
        assert!(caps.check_event_filter(SpeEvents::NOT_TAKEN).is_err());
    }

    /// PMSIDR_EL1 = 0 with PMSVer = 1: no filters, Interval code 0 = 256, but MaxSize 0 and
    /// CountSize 0 are reserved codes (Arm ARM D24.7.14), so the set is decoded yet not usable.
    #[test]
    fn zero_pmsidr_decodes_but_does_not_validate() {
        let caps = SpeCapabilities::decode_raw(SpeVersion::V1p0, 0, 0);
        assert!(!caps.filter_by_event && !caps.filter_by_type && !caps.filter_by_latency);
        assert!(!caps.inverted_event_filter);
        assert_eq!(caps.min_interval, Ok(256));
        assert_eq!(
            caps.max_record_size,
            Err(SpeError::ReservedField {
                field: super::super::error::IdRegisterField::PmsidrMaxSize,
                value: 0
            })
        );
        assert!(caps.counter_size.is_err());
        assert_eq!(caps.validate(), caps.max_record_size.map(|_| ()));
        assert!(caps.encode_min_latency(1).is_err());

        let mut pe = FakePe::new(1 << 32, 0, 0);
        assert!(matches!(
            probe_with(&mut pe),
            Err(SpeError::ReservedField { .. })
        ));
    }

    /// A FEAT_SPEv1p2 value with every PMSIDR_EL1 flag of Linux's probe set, 16-bit counters,
    /// 4096 minimum interval, 2 KiB records and 64-byte alignment, F set.
    #[test]
    fn v1p2_all_features() {
        let pmsidr = (PMSIDR_EL1::FE::SET
            + PMSIDR_EL1::FT::SET
            + PMSIDR_EL1::FL::SET
            + PMSIDR_EL1::ArchInst::SET
            + PMSIDR_EL1::LDS::SET
            + PMSIDR_EL1::ERnd::SET
            + PMSIDR_EL1::FnE::SET
            + PMSIDR_EL1::PBT::SET
            + PMSIDR_EL1::Interval.val(0b1000)
            + PMSIDR_EL1::MaxSize.val(0b1011)
            + PMSIDR_EL1::CountSize::Saturating16Bit)
            .value;
        let pmbidr = (PMBIDR_EL1::F::SET + PMBIDR_EL1::Align.val(6)).value;
        let caps = probe_with(&mut FakePe::new(3 << 32, pmbidr, pmsidr)).expect("valid");
        assert_eq!(caps.version, SpeVersion::V1p2);
        assert!(caps.inverted_event_filter && caps.architectural_instructions);
        assert!(caps.loaded_data_source && caps.extended_random && caps.previous_branch_target);
        assert!(caps.hardware_flag_updates);
        assert_eq!(caps.min_interval, Ok(4096));
        assert_eq!(caps.max_record_size, Ok(2048));
        assert_eq!(caps.counter_size, Ok(CounterSize::Bits16));
        assert_eq!(caps.buffer_align, Ok(64));
        assert_eq!(caps.encode_min_latency(0xFFFF).map(|v| v.get()), Ok(0xFFFF));
    }

    /// No input makes decoding or probing panic.
    #[test]
    fn probe_is_total() {
        use proptest::prelude::*;
        proptest!(|(id: u64, pmbidr: u64, pmsidr: u64)| {
            let mut pe = FakePe::new(id, pmbidr, pmsidr);
            let result = probe_with(&mut pe);
            if (id >> 32) & 0xF == 0 {
                prop_assert_eq!(result, Err(SpeError::NotImplemented));
                prop_assert_eq!(pe.pmbidr_reads, 0);
            }
            if pmbidr & (1 << 4) != 0 {
                prop_assert_eq!(pe.pmsidr_reads, 0);
            }
        });
    }
}
