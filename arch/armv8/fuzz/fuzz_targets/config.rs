//! Fuzz target: the SPE configuration builder, the raw register review, the perf bridge, the
//! filter model, the field explanations and the programming sequences never panic on any
//! input, and what the builder accepts is consistent everywhere else.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmu_armv8::spe::config::{check_registers, ExceptionLevels, OperationTypes, TimestampSource};
use pmu_armv8::spe::fake::RecordingSpe;
use pmu_armv8::spe::model::SampledOperation;
use pmu_armv8::spe::perf::{kernel_registers, perf_event, PerfField, PerfFormat};
use pmu_armv8::spe::program::{apply_if_present_with, stop};
use pmu_armv8::spe::{SpeCapabilities, SpeConfigBuilder, SpeEvents, SpeRegister, SpeVersion};

/// Takes fixed-size little-endian values off the front of the input, zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        let n = self.0.len().min(8);
        b[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        u64::from_le_bytes(b)
    }
    fn u32(&mut self) -> u32 {
        self.u64() as u32
    }
    fn u8(&mut self) -> u8 {
        let v = self.0.first().copied().unwrap_or(0);
        self.0 = self.0.get(1..).unwrap_or(&[]);
        v
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let pmsver = input.u8() & 0xF;
    let pmsidr = input.u64();
    let pmbidr = input.u64();
    let flags = input.u8();
    let opt = |bit: u8| flags & (1 << bit) != 0;
    let builder = SpeConfigBuilder {
        operation_types: opt(0).then(|| OperationTypes::from_bits_retain(data.len() as u8 & 7)),
        min_latency: opt(1).then(|| input.u32()),
        required_events: opt(2).then(|| SpeEvents::from_bits_retain(input.u64())),
        excluded_events: opt(3).then(|| SpeEvents::from_bits_retain(input.u64())),
        interval: opt(4).then(|| input.u32()),
        jitter: opt(5),
        timestamps: match input.u8() % 3 {
            0 => None,
            1 => Some(TimestampSource::Virtual),
            _ => Some(TimestampSource::Physical),
        },
        physical_addresses: opt(6),
        context: opt(7),
        exception_levels: ExceptionLevels::from_bits_retain(input.u8() & 3),
    };
    let text = core::str::from_utf8(input.0).unwrap_or("");
    // Format entries from arbitrary text never panic.
    let _ = PerfFormat::from_entries(PerfField::ALL.iter().map(|f| (f.name(), text)));

    let Ok(version) = SpeVersion::from_pmsver(pmsver) else {
        // PMSVer = 0: applying must stop at the probe.
        let mut pe = RecordingSpe::new(0, pmbidr, pmsidr);
        // SAFETY: fake register file.
        let r = unsafe { apply_if_present_with(&mut pe, &builder, 0x4000_0000, 0x10_0000) };
        assert!(r.is_err());
        assert_eq!(pe.writes().count(), 0);
        return;
    };
    let caps = SpeCapabilities::decode_raw(version, pmsidr, pmbidr);
    let diagnostics = builder.check(&caps);
    for e in diagnostics.errors() {
        let _ = e.to_string();
    }
    for w in diagnostics.warnings() {
        let _ = w.to_string();
    }
    let built = builder.build(&caps);
    assert_eq!(built.is_ok(), diagnostics.is_ok());
    let Ok(config) = built else { return };
    assert!(check_registers(config.registers(), &caps).is_ok());
    for (register, value) in config.registers().in_programming_order() {
        for field in register.fields(value) {
            let _ = (field.name, field.value, field.value_meaning);
        }
    }
    let op = SampledOperation {
        types: OperationTypes::from_bits_retain(flags & 7),
        total_latency: pmsidr as u32,
        events: SpeEvents::from_bits_retain(pmbidr),
        exception_level: flags & 1,
    };
    assert!(config.decide(&op).is_recorded().is_some());
    let format = PerfFormat::linux_6_12();
    if let Ok(event) = perf_event(&config, &format) {
        let _ = event.event_string("arm_spe_0").to_string();
        let min = caps.min_interval.unwrap_or(256);
        let kernel = kernel_registers(
            event.attr(),
            &format,
            caps.inverted_event_filter,
            builder.context,
            min,
        );
        assert_eq!(kernel, *config.registers());
    }
    // The sequences on a fake PE with these ID registers: no forbidden access.
    let mut pe = RecordingSpe::new(u64::from(pmsver) << 32, pmbidr & !(1 << 4), pmsidr);
    // SAFETY: fake register file.
    if unsafe { apply_if_present_with(&mut pe, &builder, 0x4000_0000, 0x10_0000) }.is_ok() {
        pe.set(SpeRegister::Pmbsr, pmbidr);
        // SAFETY: fake register file.
        let _ = unsafe { stop(&mut pe) }.check();
        assert_eq!(
            pe.violations().count(),
            0,
            "{:?}",
            pe.violations().collect::<Vec<_>>()
        );
    }
});
