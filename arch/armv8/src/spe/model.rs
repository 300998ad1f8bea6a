//! A reference model of the SPE sample filter: given the sampling registers and one sampled
//! operation, does the hardware write a record?
//!
//! The Arm ARM (DDI 0487 M.a.a D17.6 "Filtering", D24.7.12 PMSFCR_EL1, and the
//! `SPECollectRecord()` pseudocode) ANDs the enabled filters:
//! - FE: every event of PMSEVFR_EL1 (masked to the filterable bits) is present;
//! - FnE: no event of PMSNEVFR_EL1 (masked likewise) is present;
//! - FT: the operation is of a selected type (B, LD, ST, and with FEAT_SPE_EFT SIMD, FP: an
//!   OR among the types whose mask bit Bm/LDm/STm/SIMDm/FPm is 0; a type whose mask bit is 1
//!   is ANDed instead: the operation must have it when its type bit is 1 and must not when it
//!   is 0 — "change filter behavior from OR to AND", as Linux 7.3's
//!   tools/perf/Documentation/perf-arm-spe.txt puts it);
//! - FDS (FEAT_SPE_FDS): an operation with a data source n is kept only when PMSDSFR_EL1 bit n
//!   is 1 (sources above 63 have no bit); one without a data source is not filtered;
//! - FL: the total latency is at least PMSLATFR_EL1.MINLAT;
//!
//! and makes three settings CONSTRAINED UNPREDICTABLE, which the model reports instead of
//! guessing: FE with an empty mask, FnE with an empty mask, an event in both masks, and FT with
//! no type bit and no mask bit set.
//! PMSCR_EL1.E0SPE/E1SPE decide whether the operation is sampled at all.
//!
//! Event bits that are RAZ/WI at the PE's SPE version cannot hold a 1 in the real registers,
//! so the model masks them out ([`SpeVersion::unfilterable_mask`]); optional bits are assumed
//! implemented.

use super::config::OperationTypes;
use super::events::SpeEvents;
use super::pmscr_el1::{PmscrEl1, PMSCR_EL1};
use super::pmsfcr_el1::{PmsfcrEl1, PMSFCR_EL1};
use super::register_set::SpeRegisterValues;
use super::version::SpeVersion;

/// One operation the interval counter picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SampledOperation {
    /// Its types: empty for "other" operations, LOADS | STORES for an atomic read-modify-write.
    pub types: OperationTypes,
    /// Total latency in cycles (the Counter packet with index 0).
    pub total_latency: u32,
    /// Its events (the Events packet).
    pub events: SpeEvents,
    /// The Exception level it executed at (0 or 1; anything else is never sampled here).
    pub exception_level: u8,
    /// Its data source (the Data Source packet's value), if it has one.
    pub data_source: Option<u64>,
}

/// Why a sampled operation produced no record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Sampling is not enabled at the operation's Exception level (PMSCR_EL1.E0SPE/E1SPE).
    ExceptionLevel,
    /// FE: these required events are missing.
    MissingEvents(SpeEvents),
    /// FnE: these excluded events are present.
    ExcludedEvents(SpeEvents),
    /// FT: the operation is not of a selected type.
    OperationType,
    /// FDS: its data source is not selected in PMSDSFR_EL1.
    DataSource,
    /// FL: the total latency is below MINLAT.
    Latency,
}

/// A CONSTRAINED UNPREDICTABLE filter setting: the Arm ARM lets the PE record or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unpredictable {
    /// FE = 1 with no filterable bit in PMSEVFR_EL1.
    EmptyEventFilter,
    /// FnE = 1 with no filterable bit in PMSNEVFR_EL1.
    EmptyInvertedEventFilter,
    /// FE = FnE = 1 with an event in both masks.
    EventRequiredAndExcluded,
    /// FT = 1 with no type bit (B, LD, ST, SIMD, FP) and no type mask bit set.
    TypeFilterWithoutTypes,
}

/// The model's answer for one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilterDecision {
    /// A record is written.
    Recorded,
    /// No record: the first filter (in the order of [`DropReason`]) that rejected it.
    Dropped(DropReason),
    /// The setting is CONSTRAINED UNPREDICTABLE.
    Unpredictable(Unpredictable),
}

impl FilterDecision {
    /// `Some(true)` for recorded, `Some(false)` for dropped, `None` when unpredictable.
    pub const fn is_recorded(self) -> Option<bool> {
        match self {
            Self::Recorded => Some(true),
            Self::Dropped(_) => Some(false),
            Self::Unpredictable(_) => None,
        }
    }
}

/// One field of PMSFCR_EL1.
type PmsfcrField = tock_registers::fields::Field<u64, PMSFCR_EL1::Register>;

/// Each operation type with its PMSFCR_EL1 type bit and mask bit (Arm ARM D24.7.12).
const TYPE_BITS: [(OperationTypes, PmsfcrField, PmsfcrField); 5] = [
    (OperationTypes::BRANCHES, PMSFCR_EL1::B, PMSFCR_EL1::Bm),
    (OperationTypes::LOADS, PMSFCR_EL1::LD, PMSFCR_EL1::LDm),
    (OperationTypes::STORES, PMSFCR_EL1::ST, PMSFCR_EL1::STm),
    (OperationTypes::SIMD, PMSFCR_EL1::SIMD, PMSFCR_EL1::SIMDm),
    (OperationTypes::FLOAT, PMSFCR_EL1::FP, PMSFCR_EL1::FPm),
];

/// PMSFCR_EL1's FEAT_SPE_EFT bits: SIMD, FP and the five type masks.
pub(crate) const EXTENDED_TYPE_BITS: u64 = PMSFCR_EL1::SIMD::SET.value
    | PMSFCR_EL1::FP::SET.value
    | PMSFCR_EL1::Bm::SET.value
    | PMSFCR_EL1::LDm::SET.value
    | PMSFCR_EL1::STm::SET.value
    | PMSFCR_EL1::SIMDm::SET.value
    | PMSFCR_EL1::FPm::SET.value;

/// Decides whether a PE with SPE `version`, programmed with `registers`, records `op`.
pub fn decide(
    registers: &SpeRegisterValues,
    version: SpeVersion,
    op: &SampledOperation,
) -> FilterDecision {
    let fcr = PmsfcrEl1::new(registers.pmsfcr);
    let filterable = !version.unfilterable_mask();
    let required = registers.pmsevfr & filterable;
    let excluded = registers.pmsnevfr.unwrap_or(0) & filterable;
    let fe = fcr.is_set(PMSFCR_EL1::FE);
    // Without PMSNEVFR_EL1 (no FEAT_SPE_FnE), FnE is RES0.
    let fne = fcr.is_set(PMSFCR_EL1::FnE) && registers.pmsnevfr.is_some();
    let ft = fcr.is_set(PMSFCR_EL1::FT);
    let fl = fcr.is_set(PMSFCR_EL1::FL);
    // Without PMSDSFR_EL1 (no FEAT_SPE_FDS), FDS is RES0.
    let fds = fcr.is_set(PMSFCR_EL1::FDS) && registers.pmsdsfr.is_some();
    // Each type with its bit and mask bit: selected (OR), required or forbidden (AND).
    let mut selected = OperationTypes::empty();
    let mut masked = OperationTypes::empty();
    let mut must_have = OperationTypes::empty();
    for (ty, bit, mask) in TYPE_BITS {
        match (fcr.is_set(bit), fcr.is_set(mask)) {
            (true, false) => selected |= ty,
            (true, true) => {
                masked |= ty;
                must_have |= ty;
            }
            (false, true) => masked |= ty,
            (false, false) => {}
        }
    }

    if fe && required == 0 {
        return FilterDecision::Unpredictable(Unpredictable::EmptyEventFilter);
    }
    if fne && excluded == 0 {
        return FilterDecision::Unpredictable(Unpredictable::EmptyInvertedEventFilter);
    }
    if fe && fne && required & excluded != 0 {
        return FilterDecision::Unpredictable(Unpredictable::EventRequiredAndExcluded);
    }
    if ft && selected.is_empty() && masked.is_empty() {
        return FilterDecision::Unpredictable(Unpredictable::TypeFilterWithoutTypes);
    }

    let scr = PmscrEl1::new(registers.pmscr);
    let el_enabled = match op.exception_level {
        0 => scr.is_set(PMSCR_EL1::E0SPE),
        1 => scr.is_set(PMSCR_EL1::E1SPE),
        _ => false,
    };
    if !el_enabled {
        return FilterDecision::Dropped(DropReason::ExceptionLevel);
    }
    let events = op.events.bits() & filterable;
    if fe && required & !events != 0 {
        return FilterDecision::Dropped(DropReason::MissingEvents(SpeEvents::from_bits_retain(
            required & !events,
        )));
    }
    if fne && excluded & events != 0 {
        return FilterDecision::Dropped(DropReason::ExcludedEvents(SpeEvents::from_bits_retain(
            excluded & events,
        )));
    }
    let any_of = selected.is_empty() || op.types.intersects(selected);
    if ft && !(any_of && op.types & masked == must_have) {
        return FilterDecision::Dropped(DropReason::OperationType);
    }
    if let (true, Some(source)) = (fds, op.data_source) {
        let kept = registers.pmsdsfr.unwrap_or(0);
        if source >= 64 || kept >> source & 1 == 0 {
            return FilterDecision::Dropped(DropReason::DataSource);
        }
    }
    if fl && u64::from(op.total_latency) < registers.pmslatfr & 0xFFFF {
        return FilterDecision::Dropped(DropReason::Latency);
    }
    FilterDecision::Recorded
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::capabilities::SpeCapabilities;
    use super::super::config::{SpeConfigBuilder, TimestampSource};
    use super::*;

    /// A FEAT_SPEv1p2 PE with every filter: PMSIDR_EL1 FE, FT, FL, FnE, Interval 1024,
    /// MaxSize 64 B, 12-bit counters (the field values of capabilities.rs's FEAT_SPEv1p1 example
    /// plus FnE).
    fn v1p2_caps() -> SpeCapabilities {
        SpeCapabilities::decode_raw(SpeVersion::V1p2, 0x2_6447, 0)
    }

    fn op(types: OperationTypes, latency: u32, events: SpeEvents) -> SampledOperation {
        SampledOperation {
            types,
            total_latency: latency,
            events,
            exception_level: 0,
            data_source: None,
        }
    }

    /// The Arm ARM rules restated as one boolean expression (D24.7.12 field descriptions:
    /// "FE: ... only samples with all of the events in PMSEVFR_EL1", "FnE: ... samples with any
    /// of the events in PMSNEVFR_EL1 are not recorded", "FT: ... only samples of the selected
    /// types", "FL: ... latency ... less than PMSLATFR_EL1.MINLAT ... not recorded"; with
    /// FEAT_SPE_EFT a type whose mask bit is set is ANDed, Linux 7.3 perf-arm-spe.txt "change
    /// filter behavior from OR to AND"; FDS keeps the data sources whose PMSDSFR_EL1 bit is
    /// set), written independently of `decide` and with plain shifts instead of the register
    /// types.
    fn restated(
        regs: &SpeRegisterValues,
        version: SpeVersion,
        op: &SampledOperation,
    ) -> Option<bool> {
        let mask = !version.unfilterable_mask();
        let fcr = regs.pmsfcr;
        let bit = |n: u32| fcr >> n & 1 == 1;
        let (fe, ft, fl) = (bit(0), bit(1), bit(2));
        let fne = bit(3) && regs.pmsnevfr.is_some();
        let fds = bit(4) && regs.pmsdsfr.is_some();
        let has = |t: OperationTypes| op.types.contains(t);
        // (the operation has the type, type bit, mask bit): B 16/48, LD 17/49, ST 18/50,
        // FP 19/51, SIMD 20/52.
        let types = [
            (has(OperationTypes::BRANCHES), bit(16), bit(48)),
            (has(OperationTypes::LOADS), bit(17), bit(49)),
            (has(OperationTypes::STORES), bit(18), bit(50)),
            (has(OperationTypes::FLOAT), bit(19), bit(51)),
            (has(OperationTypes::SIMD), bit(20), bit(52)),
        ];
        let ev = regs.pmsevfr & mask;
        let nev = regs.pmsnevfr.unwrap_or(0) & mask;
        if (fe && ev == 0)
            || (fne && nev == 0)
            || (fe && fne && ev & nev != 0)
            || (ft && types.iter().all(|&(_, t, m)| !t && !m))
        {
            return None;
        }
        let e = op.events.bits() & mask;
        let el_ok = (op.exception_level == 0 && regs.pmscr & 1 == 1)
            || (op.exception_level == 1 && regs.pmscr >> 1 & 1 == 1);
        let event_ok = !fe || e & ev == ev;
        let inverted_ok = !fne || e & nev == 0;
        let or_group = types.iter().filter(|&&(_, t, m)| t && !m);
        let or_ok = or_group.clone().count() == 0 || or_group.clone().any(|&(h, _, _)| h);
        let and_ok = types
            .iter()
            .filter(|&&(_, _, m)| m)
            .all(|&(h, t, _)| h == t);
        let type_ok = !ft || (or_ok && and_ok);
        let source_ok = !fds
            || op
                .data_source
                .is_none_or(|n| n < 64 && regs.pmsdsfr.unwrap_or(0) >> n & 1 == 1);
        let latency_ok = !fl || u64::from(op.total_latency) >= (regs.pmslatfr & 0xFFFF);
        Some(el_ok && event_ok && inverted_ok && type_ok && source_ok && latency_ok)
    }

    fn any_version() -> impl Strategy<Value = SpeVersion> {
        (1u8..=8).prop_map(|v| SpeVersion::from_pmsver(v).expect("non-zero"))
    }

    proptest! {
        /// The model agrees with the restatement on random registers (biased towards the
        /// filter bits) and random operations, including the unpredictable cases.
        #[test]
        fn model_agrees_with_restated_rules(
            version in any_version(),
            fcr_bits in 0u64..32,
            type_bits in 0u64..32,
            mask_bits in prop_oneof![Just(0u64), 0u64..32],
            pmsdsfr in prop::option::of(prop_oneof![Just(u64::MAX), any::<u64>()]),
            pmsevfr in prop_oneof![Just(0u64), any::<u64>(), 0u64..0x1000],
            pmsnevfr in prop::option::of(prop_oneof![Just(0u64), any::<u64>(), 0u64..0x1000]),
            minlat in 0u64..0x1_0000,
            pmscr in 0u64..4,
            op_types in 0u8..32,
            latency in 0u32..0x1_2000,
            events in prop_oneof![any::<u64>(), 0u64..0x1000],
            el in 0u8..3,
            data_source in prop::option::of(0u64..70),
        ) {
            let regs = SpeRegisterValues {
                pmscr,
                pmsfcr: fcr_bits | (type_bits << 16) | (mask_bits << 48),
                pmsevfr,
                pmsnevfr,
                pmsdsfr,
                pmslatfr: minlat,
                pmsirr: 0x1000,
                pmsicr: 0,
            };
            let op = SampledOperation {
                types: OperationTypes::from_bits_retain(op_types),
                total_latency: latency,
                events: SpeEvents::from_bits_retain(events),
                exception_level: el,
                data_source,
            };
            prop_assert_eq!(decide(&regs, version, &op).is_recorded(), restated(&regs, version, &op));
        }

        /// A configuration the builder accepts is never unpredictable, and its decision agrees
        /// with the restatement.
        #[test]
        fn built_configurations_are_predictable(
            types in prop::option::of(1u8..32),
            all_types: bool,
            data_sources in prop::option::of(1u64..0x1_0000),
            op_data_source in prop::option::of(0u64..20),
            latency in prop::option::of(0u32..0x1000),
            required in prop::option::of(prop_oneof![Just(0x8u64), Just(0x200), Just(0x80), Just(0xA2)]),
            excluded in prop::option::of(prop_oneof![Just(0x40u64), Just(0x2), Just(0x20)]),
            op_types in 0u8..32,
            op_latency in 0u32..0x2000,
            op_events in 0u64..0x1000,
        ) {
            let mut builder = SpeConfigBuilder::new().interval(4096);
            builder.operation_types = types.map(OperationTypes::from_bits_retain);
            builder.all_types = all_types;
            builder.data_sources = data_sources;
            builder.min_latency = latency;
            builder.required_events = required.map(SpeEvents::from_bits_retain);
            builder.excluded_events = excluded.map(SpeEvents::from_bits_retain);
            // PMSIDR_EL1.FDS (bit 7) and EFT (bit 26) on top of v1p2_caps().
            let caps = SpeCapabilities::decode_raw(SpeVersion::V1p2, 0x2_6447 | 1 << 7 | 1 << 26, 0);
            if let Ok(config) = builder.build(&caps) {
                let op = SampledOperation {
                    types: OperationTypes::from_bits_retain(op_types),
                    total_latency: op_latency,
                    events: SpeEvents::from_bits_retain(op_events),
                    exception_level: 0,
                    data_source: op_data_source,
                };
                let decision = config.decide(&op);
                prop_assert!(decision.is_recorded().is_some(), "{:?}", decision);
                prop_assert_eq!(decision.is_recorded(), restated(config.registers(), config.version(), &op));
            }
        }
    }

    /// The usual memory-latency recipe: FL=1 MINLAT=120, FT=1 LD=1, FE=1 with the event it
    /// means (a cache miss beyond L1: LLC miss, E[9] = 0x200, Arm ARM D24.7.11) instead of the
    /// 0x08 often written (E[3], L1D refill; the `spe` module docs, "Common mistake"). A slow load that missed the LLC is
    /// recorded; a fast one, a store, or a slow load that only missed L1 is not.
    #[test]
    fn memory_latency_scenario() {
        let config = SpeConfigBuilder::new()
            .operation_types(OperationTypes::LOADS)
            .min_latency(120)
            .require_events(SpeEvents::LLC_MISS)
            .interval(4096)
            .timestamps(TimestampSource::Physical)
            .build(&v1p2_caps())
            .expect("valid on FEAT_SPEv1p2");
        assert_eq!(config.registers().pmsfcr, 0x2_0007);
        assert_eq!(config.registers().pmsevfr, 0x200);
        assert_eq!(config.registers().pmslatfr, 120);
        let llc_miss = SpeEvents::RETIRED | SpeEvents::L1D_REFILL | SpeEvents::LLC_MISS;
        let cases = [
            (
                op(OperationTypes::LOADS, 300, llc_miss),
                FilterDecision::Recorded,
            ),
            (
                op(OperationTypes::LOADS, 120, llc_miss),
                FilterDecision::Recorded,
            ),
            (
                op(OperationTypes::LOADS, 119, llc_miss),
                FilterDecision::Dropped(DropReason::Latency),
            ),
            (
                op(OperationTypes::STORES, 300, llc_miss),
                FilterDecision::Dropped(DropReason::OperationType),
            ),
            (
                op(
                    OperationTypes::LOADS,
                    300,
                    SpeEvents::RETIRED | SpeEvents::L1D_REFILL,
                ),
                FilterDecision::Dropped(DropReason::MissingEvents(SpeEvents::LLC_MISS)),
            ),
            // An atomic (load and store) passes the LD filter.
            (
                op(
                    OperationTypes::LOADS | OperationTypes::STORES,
                    300,
                    llc_miss,
                ),
                FilterDecision::Recorded,
            ),
        ];
        for (operation, want) in cases {
            assert_eq!(config.decide(&operation), want, "{operation:?}");
        }
        // The often-written 0x08 would have recorded every slow L1-missing load instead.
        let literal = SpeConfigBuilder::new()
            .operation_types(OperationTypes::LOADS)
            .min_latency(120)
            .require_events(SpeEvents::from_bits_retain(0x08))
            .interval(4096)
            .build(&v1p2_caps())
            .unwrap();
        let l1_only = op(OperationTypes::LOADS, 300, SpeEvents::L1D_REFILL);
        assert_eq!(literal.decide(&l1_only), FilterDecision::Recorded);
        assert_eq!(
            config.decide(&l1_only),
            FilterDecision::Dropped(DropReason::MissingEvents(SpeEvents::LLC_MISS))
        );
    }

    /// The usual branch-misprediction recipe: FT=1 B=1, FnE=1 with
    /// PMSNEVFR_EL1.E[7]=1, described as "only record mispredictions". E[7] *is* the
    /// mispredicted event, so excluding it keeps the correctly predicted branches, the
    /// opposite of the stated goal. The intent is met by FE=1 with PMSEVFR_EL1.E[7]=1; what
    /// the recipe writes is shown to do the opposite.
    #[test]
    fn branch_misprediction_scenario() {
        let caps = v1p2_caps();
        let intended = SpeConfigBuilder::new()
            .operation_types(OperationTypes::BRANCHES)
            .require_events(SpeEvents::MISPREDICTED)
            .interval(4096)
            .build(&caps)
            .unwrap();
        assert_eq!(intended.registers().pmsfcr, 0x1_0003);
        assert_eq!(intended.registers().pmsevfr, 0x80);
        let as_written = SpeConfigBuilder::new()
            .operation_types(OperationTypes::BRANCHES)
            .exclude_events(SpeEvents::MISPREDICTED)
            .interval(4096)
            .build(&caps)
            .unwrap();
        assert_eq!(as_written.registers().pmsfcr, 0x1_000A);
        assert_eq!(as_written.registers().pmsnevfr, Some(0x80));

        let mispredicted = op(
            OperationTypes::BRANCHES,
            10,
            SpeEvents::RETIRED | SpeEvents::MISPREDICTED,
        );
        let predicted = op(OperationTypes::BRANCHES, 10, SpeEvents::RETIRED);
        let load = op(
            OperationTypes::LOADS,
            10,
            SpeEvents::RETIRED | SpeEvents::MISPREDICTED,
        );
        assert_eq!(intended.decide(&mispredicted), FilterDecision::Recorded);
        assert_eq!(
            intended.decide(&predicted),
            FilterDecision::Dropped(DropReason::MissingEvents(SpeEvents::MISPREDICTED))
        );
        assert_eq!(
            intended.decide(&load),
            FilterDecision::Dropped(DropReason::OperationType)
        );
        assert_eq!(
            as_written.decide(&mispredicted),
            FilterDecision::Dropped(DropReason::ExcludedEvents(SpeEvents::MISPREDICTED))
        );
        assert_eq!(as_written.decide(&predicted), FilterDecision::Recorded);
        // Without FEAT_SPEv1p2 (PMSIDR_EL1.FnE = 0) the recipe's configuration is refused.
        let v1p1 = SpeCapabilities::decode_raw(SpeVersion::V1p1, 0x2_6407, 0);
        assert_eq!(
            SpeConfigBuilder::new()
                .operation_types(OperationTypes::BRANCHES)
                .exclude_events(SpeEvents::MISPREDICTED)
                .build(&v1p1),
            Err(super::super::SpeError::FilterNotImplemented {
                filter: super::super::SpeFilter::InvertedEvent
            })
        );
    }

    /// The usual store-bottleneck recipe: FL=1 MINLAT=80, FT=1 ST=1, FE=1 PMSEVFR_EL1=0x20,
    /// called "store buffer full". 0x20 is E[5], TLB walk (Arm ARM D24.7.11);
    /// SPE has no store-buffer-full event, so the corrected configuration records slow stores
    /// that walked the page tables.
    #[test]
    fn store_scenario_corrected() {
        let config = SpeConfigBuilder::new()
            .operation_types(OperationTypes::STORES)
            .min_latency(80)
            .require_events(SpeEvents::TLB_WALK)
            .interval(4096)
            .build(&v1p2_caps())
            .unwrap();
        assert_eq!(config.registers().pmsevfr, 0x20);
        assert_eq!(config.registers().pmsfcr, 0x4_0007);
        let walk = op(OperationTypes::STORES, 200, SpeEvents::TLB_WALK);
        assert_eq!(config.decide(&walk), FilterDecision::Recorded);
        assert_eq!(
            config.decide(&op(OperationTypes::STORES, 79, SpeEvents::TLB_WALK)),
            FilterDecision::Dropped(DropReason::Latency)
        );
    }

    /// Arm ARM D24.7.12 (PMSFCR_EL1) and D24.7.11: FE=1 with PMSEVFR_EL1=0, an event required and
    /// excluded, and FT=1 with B=LD=ST=0 are reported as unpredictable, never guessed.
    #[test]
    fn unpredictable_settings() {
        let base = SpeRegisterValues {
            pmscr: 1,
            pmsirr: 0x1000,
            pmsnevfr: Some(0),
            pmsdsfr: None,
            ..SpeRegisterValues::default()
        };
        let any_op = op(OperationTypes::LOADS, 1000, SpeEvents::all());
        let cases = [
            (
                SpeRegisterValues { pmsfcr: 1, ..base },
                Unpredictable::EmptyEventFilter,
            ),
            (
                SpeRegisterValues {
                    pmsfcr: 1 << 3,
                    ..base
                },
                Unpredictable::EmptyInvertedEventFilter,
            ),
            (
                SpeRegisterValues {
                    pmsfcr: 1 | 1 << 3,
                    pmsevfr: 0x88,
                    pmsnevfr: Some(0x80),
                    ..base
                },
                Unpredictable::EventRequiredAndExcluded,
            ),
            (
                SpeRegisterValues {
                    pmsfcr: 1 << 1,
                    ..base
                },
                Unpredictable::TypeFilterWithoutTypes,
            ),
        ];
        for (regs, want) in cases {
            assert_eq!(
                decide(&regs, SpeVersion::V1p2, &any_op),
                FilterDecision::Unpredictable(want)
            );
        }
        // An event that is RAZ/WI at this version (E[0]) does not count as content.
        let raz = SpeRegisterValues {
            pmsfcr: 1,
            pmsevfr: 1,
            ..base
        };
        assert_eq!(
            decide(&raz, SpeVersion::V1p2, &any_op),
            FilterDecision::Unpredictable(Unpredictable::EmptyEventFilter)
        );
    }

    /// PMSCR_EL1.E0SPE/E1SPE gate sampling per Exception level (Arm ARM D24.7.8).
    #[test]
    fn exception_level_gate() {
        let regs = SpeRegisterValues {
            pmscr: 0b10,
            pmsirr: 0x1000,
            ..SpeRegisterValues::default()
        };
        let mut o = op(OperationTypes::empty(), 0, SpeEvents::empty());
        assert_eq!(
            decide(&regs, SpeVersion::V1p0, &o),
            FilterDecision::Dropped(DropReason::ExceptionLevel)
        );
        o.exception_level = 1;
        assert_eq!(
            decide(&regs, SpeVersion::V1p0, &o),
            FilterDecision::Recorded
        );
    }

    /// FEAT_SPE_EFT and FEAT_SPE_FDS (Linux 7.3 tools/perf/Documentation/perf-arm-spe.txt: the
    /// masks change a type filter "from OR to AND", "store AND SIMD" is
    /// `store_filter=1,simd_filter=1,store_filter_mask=1,simd_filter_mask=1`; data source N is
    /// bit N of the filter): SIMD stores from sources 0 or 3 are recorded; a plain store, a SIMD
    /// load, or a SIMD store from source 1 are not; a SIMD store without a data source passes
    /// the source filter.
    #[test]
    fn simd_stores_from_two_sources() {
        let caps = SpeCapabilities::decode_raw(SpeVersion::V1p2, 0x2_6447 | 1 << 7 | 1 << 26, 0);
        let config = SpeConfigBuilder::new()
            .operation_types(OperationTypes::STORES | OperationTypes::SIMD)
            .all_types(true)
            .data_sources(0x9)
            .interval(1024)
            .build(&caps)
            .unwrap();
        let simd_store = OperationTypes::STORES | OperationTypes::SIMD;
        let from = |types, source| SampledOperation {
            data_source: source,
            ..op(types, 10, SpeEvents::RETIRED)
        };
        assert_eq!(
            config.decide(&from(simd_store, Some(3))),
            FilterDecision::Recorded
        );
        assert_eq!(
            config.decide(&from(simd_store, Some(0))),
            FilterDecision::Recorded
        );
        assert_eq!(
            config.decide(&from(simd_store, None)),
            FilterDecision::Recorded
        );
        assert_eq!(
            config.decide(&from(simd_store, Some(1))),
            FilterDecision::Dropped(DropReason::DataSource)
        );
        for other in [
            OperationTypes::STORES,
            OperationTypes::LOADS | OperationTypes::SIMD,
        ] {
            assert_eq!(
                config.decide(&from(other, Some(3))),
                FilterDecision::Dropped(DropReason::OperationType)
            );
        }
        // Without the masks the types are ORed: a plain store is recorded too.
        let any = SpeConfigBuilder::new()
            .operation_types(OperationTypes::STORES | OperationTypes::SIMD)
            .interval(1024)
            .build(&caps)
            .unwrap();
        assert_eq!(
            any.decide(&from(OperationTypes::STORES, None)),
            FilterDecision::Recorded
        );
        // No data source at all: refused with what to change.
        assert_eq!(
            SpeConfigBuilder::new()
                .data_sources(0)
                .interval(1024)
                .build(&caps),
            Err(crate::spe::SpeError::EmptyDataSourceFilter)
        );
        // "Every selected type" with no type selected.
        assert_eq!(
            SpeConfigBuilder::new()
                .all_types(true)
                .interval(1024)
                .build(&caps),
            Err(crate::spe::SpeError::NoOperationTypeSelected)
        );
    }
}
