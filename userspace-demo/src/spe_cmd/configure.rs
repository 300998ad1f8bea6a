//! `pmu-demo spe [intent flags]`: intent -> validated SPE register values, each field explained,
//! and the Linux `arm_spe` perf event.

use std::path::{Path, PathBuf};

use clap::{Args as ClapArgs, ValueEnum};
use pmu_armv8::spe::perf::sysfs::{self, FormatSource, SpePmu};
use pmu_armv8::spe::perf::{
    self, ConfigWord, LinuxSpeDriver, PerfEventAttr, PerfFormat, PerfSpeEvent, PerfTarget,
};
use pmu_armv8::spe::register_set::SpeRegisterValues;
use pmu_armv8::spe::{
    Diagnostics, ExceptionLevels, OperationTypes, SpeCapabilities, SpeConfig, SpeConfigBuilder,
    SpeError, SpeEvents, SpeRegister, SpeVersion, SpeWarning, TimestampSource,
};
use serde::Serialize;

use super::names::{self, Profile};
use crate::{Failure, EXIT_USAGE};

#[derive(ClapArgs, Debug)]
pub struct ConfigArgs {
    /// Record loads (PMSFCR_EL1.FT + LD; perf load_filter=1). With none of --loads,
    /// --stores, --branches every operation type is sampled.
    #[arg(long)]
    loads: bool,
    /// Record stores, atomics included (PMSFCR_EL1.FT + ST; perf store_filter=1).
    #[arg(long)]
    stores: bool,
    /// Record branches, exception returns included (PMSFCR_EL1.FT + B; perf branch_filter=1).
    #[arg(long)]
    branches: bool,
    /// Record SIMD operations, their loads and stores included (PMSFCR_EL1.FT + SIMD; perf
    /// simd_filter=1 from Linux 7.3). Needs FEAT_SPE_EFT (PMSIDR_EL1.EFT).
    #[arg(long)]
    simd: bool,
    /// Record floating-point operations, their loads and stores included (PMSFCR_EL1.FT + FP;
    /// perf float_filter=1 from Linux 7.3). Needs FEAT_SPE_EFT.
    #[arg(long)]
    float: bool,
    /// Record only operations of EVERY selected type, not of any (the type masks
    /// PMSFCR_EL1.{B,LD,ST,SIMD,FP}m; perf *_filter_mask=1 from Linux 7.3): --stores --simd
    /// --all-types are the SIMD stores. Needs FEAT_SPE_EFT.
    #[arg(long)]
    all_types: bool,
    /// Record only operations from these data sources (0-63, IMPLEMENTATION DEFINED: see the
    /// CPU's TRM; repeat or comma-separate). PMSFCR_EL1.FDS with PMSDSFR_EL1; perf
    /// inv_data_src_filter (its complement) from Linux 7.3. Needs FEAT_SPE_FDS
    /// (PMSIDR_EL1.FDS). Operations without a data source are kept.
    #[arg(long = "data-source", value_name = "N", value_delimiter = ',', value_parser = clap::value_parser!(u8).range(0..64))]
    data_sources: Vec<u8>,
    /// Record only operations with at least N cycles total latency (PMSFCR_EL1.FL,
    /// PMSLATFR_EL1.MINLAT; at most 4095 on 12-bit counters, 65535 on 16-bit).
    #[arg(long, value_name = "N")]
    min_latency: Option<u32>,
    /// Record only operations that have ALL of these events (PMSFCR_EL1.FE, PMSEVFR_EL1).
    /// Repeat or comma-separate: names (llc-miss, l1d-refill, tlb-walk, mispredicted,
    /// retired, not-taken, misaligned, …), bit numbers (9, E9) or hex masks (0x200).
    #[arg(long = "event", value_name = "EVENT", value_delimiter = ',', value_parser = names::parse_event)]
    events: Vec<SpeEvents>,
    /// Drop operations that have ANY of these events (PMSFCR_EL1.FnE, PMSNEVFR_EL1; needs
    /// FEAT_SPEv1p2). Same spellings as --event.
    #[arg(long = "exclude-event", value_name = "EVENT", value_delimiter = ',', value_parser = names::parse_event)]
    exclude_events: Vec<SpeEvents>,
    /// Sample one operation in N (PMSIRR_EL1.INTERVAL; a multiple of 256, at least the
    /// implementation's minimum; perf period=N). Default: that minimum.
    #[arg(long, value_name = "N")]
    interval: Option<u32>,
    /// Randomize the interval (PMSIRR_EL1.RND; perf jitter=1).
    #[arg(long)]
    jitter: bool,
    /// Record a timestamp in each record (PMSCR_EL1.TS; perf ts_enable=1), from the virtual
    /// counter (default) or the physical one (PMSCR_EL1.PCT; perf pct_enable=1).
    #[arg(long, value_enum, value_name = "COUNTER", num_args = 0..=1, default_missing_value = "virtual")]
    timestamps: Option<Timestamps>,
    /// Record physical data addresses (PMSCR_EL1.PA; perf pa_enable=1, needs kernel-profiling
    /// permission).
    #[arg(long)]
    physical_addresses: bool,
    /// Record CONTEXTIDR_EL1 (PMSCR_EL1.CX; perf has no field for it).
    #[arg(long)]
    context: bool,
    /// Sample at EL0, user space (PMSCR_EL1.E0SPE). With neither --el0 nor --el1 both are
    /// sampled, as perf does for an event without a `u`/`k` modifier; --el0 alone is perf's
    /// `u`.
    #[arg(long)]
    el0: bool,
    /// Sample at EL1, the kernel (PMSCR_EL1.E1SPE); --el1 alone is perf's `k`.
    #[arg(long)]
    el1: bool,
    /// Capabilities from an example profile built from the architecture's fields (not a
    /// vendor-published register dump).
    #[arg(long, value_enum, conflicts_with_all = ["pmsidr", "pmsver"])]
    profile: Option<Profile>,
    /// Capabilities from a raw PMSIDR_EL1 value (hex), with --pmsver.
    #[arg(long, value_name = "HEX", value_parser = parse_hex, requires = "pmsver")]
    pmsidr: Option<u64>,
    /// ID_AA64DFR0_EL1.PMSVer: 1 FEAT_SPE, 2 v1p1, 3 v1p2, 4 v1p3, 5 v1p4, 6 v1p5. With
    /// --pmsidr; alone it corrects the version assumed for this machine's sysfs PMU (sysfs
    /// does not publish PMSVer).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..16))]
    pmsver: Option<u8>,
    /// PMBIDR_EL1 (hex) to go with --pmsidr (default 0: EL1 owns the buffer).
    #[arg(long, value_name = "HEX", value_parser = parse_hex, requires = "pmsidr")]
    pmbidr: Option<u64>,
    /// The arm_spe PMU instance to read (and to name in the event string): default the first
    /// one in sysfs, or arm_spe_0 when the capabilities are given.
    #[arg(long, value_name = "NAME")]
    pmu: Option<String>,
    /// Where to look for arm_spe PMUs (a copy of another machine's tree works too).
    #[arg(long, value_name = "DIR", default_value = sysfs::DEVICES)]
    sysfs_devices: PathBuf,
    /// Whose arm_spe driver rules the perf event follows: 6.12 (Debian 13, Debian 12
    /// backports) or 7.3 (Debian 13 backports: the SIMD/float/mask and data source terms,
    /// event filters checked against what the CPU's PMSEVFR_EL1 keeps). Default: the running
    /// kernel's (uname release) where it is one of these, else the newest (7.3).
    #[arg(long, value_name = "VERSION", value_parser = parse_kernel)]
    kernel: Option<LinuxSpeDriver>,
    /// Also show the fields of SPE extensions that are 0 (FEAT_SPE_EFT, _EXC, _nVM, …).
    #[arg(long)]
    all_fields: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// Which counter timestamps come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Timestamps {
    /// The virtual counter (PMSCR_EL1.PCT = 0b00).
    Virtual,
    /// The physical counter (PMSCR_EL1.PCT = 0b01).
    Physical,
}

fn parse_kernel(text: &str) -> Result<LinuxSpeDriver, String> {
    LinuxSpeDriver::parse(text).ok_or_else(|| {
        let known: Vec<&str> = LinuxSpeDriver::ALL.iter().map(|d| d.version()).collect();
        format!(
            "`{text}` is not a kernel whose arm_spe rules this demo knows: give one of {}",
            known.join(", ")
        )
    })
}

pub(super) fn parse_hex(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u64::from_str_radix(&digits.replace('_', ""), 16)
        .map_err(|_| format!("`{t}` is not a hex number (like 0x26407)"))
}

/// Fields of SPE extensions a plain configuration never sets: hidden while 0 unless
/// `--all-fields`.
const EXTENSION_FIELDS: [(SpeRegister, &str); 12] = [
    (SpeRegister::Pmscr, "EE"),
    (SpeRegister::Pmscr, "KE"),
    (SpeRegister::Pmscr, "EnVM"),
    (SpeRegister::Pmsfcr, "FDS"),
    (SpeRegister::Pmsfcr, "FP"),
    (SpeRegister::Pmsfcr, "SIMD"),
    (SpeRegister::Pmsfcr, "Bm"),
    (SpeRegister::Pmsfcr, "LDm"),
    (SpeRegister::Pmsfcr, "STm"),
    (SpeRegister::Pmsfcr, "FPm"),
    (SpeRegister::Pmsfcr, "SIMDm"),
    (SpeRegister::Pmsicr, "ECOUNT"),
];

// ---- JSON shape (the human output prints the same): the library's `serde` shapes
// (`pmu_armv8::spe::serialize`) inside the command's own envelope ----

#[derive(Debug, Serialize)]
struct Output {
    intent: SpeConfigBuilder,
    capabilities: CapsOut,
    ok: bool,
    errors: Vec<SpeError>,
    warnings: Vec<SpeWarning>,
    /// In programming order; absent when there are errors.
    registers: Option<SpeRegisterValues>,
    perf: Option<PerfOut>,
}

#[derive(Debug, Serialize)]
struct CapsOut {
    /// `profile`, `pmsidr` or `sysfs`.
    source: &'static str,
    /// What exactly: the profile and its label, or the sysfs PMU.
    detail: String,
    #[serde(flatten)]
    caps: SpeCapabilities,
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct PerfOut {
    pmu: String,
    /// Whose arm_spe driver rules were applied: `6.12` or `7.3`.
    kernel: &'static str,
    /// Why: `option` (--kernel), `running` (the running kernel's release) or `newest` (the
    /// running kernel is none this demo knows, or unknown).
    kernel_choice: &'static str,
    kernel_detail: String,
    /// `sysfs` (the running kernel's format files) or `linux-6.12`/`linux-7.3` (the
    /// documented layout, as that release publishes it for these capabilities).
    format_source: String,
    format_detail: String,
    /// None when perf cannot express the configuration (see `error`).
    attr: Option<AttrOut>,
    event: Option<String>,
    command: Option<String>,
    warnings: Vec<SpeWarning>,
    error: Option<SpeError>,
    /// What the error means for another kernel (a term a newer release has).
    hint: Option<String>,
    /// When the kernel refuses some event filter bits (`error` kind `PerfEventsRefused`): the
    /// broader event perf accepts, and the filter to apply to its decoded records.
    instead: Option<InsteadOut>,
}

#[derive(Debug, Serialize)]
struct InsteadOut {
    event: String,
    command: String,
    /// Keep only records with all of these events (hex mask).
    post_required_mask: String,
    /// Drop records with any of these events (hex mask).
    post_excluded_mask: String,
    /// The decode command that applies the whole filter to the recording.
    decode_command: String,
}

#[derive(Debug, Serialize)]
struct AttrOut {
    #[serde(flatten)]
    attr: PerfEventAttr,
    /// Each field of the event with where the kernel's format puts it.
    terms: Vec<TermOut>,
}

#[derive(Debug, Serialize)]
struct TermOut {
    field: &'static str,
    format: String,
    value: u64,
}

/// Where the capabilities came from, and for the perf event which PMU to use and what its
/// sysfs says (nothing for a profile or raw registers: the chosen kernel's documented format).
struct CapsSource {
    caps: SpeCapabilities,
    source: &'static str,
    detail: String,
    notes: Vec<String>,
    pmu_name: String,
    /// The running kernel's format files, when read.
    sysfs_format: Option<(PerfFormat, String)>,
    /// The running kernel's `caps/event_filter` (Linux 7.3), when published.
    event_filter_read_back: Option<u64>,
}

/// Whose driver rules the perf event follows, and why.
struct KernelChoice {
    driver: LinuxSpeDriver,
    choice: &'static str,
    detail: String,
}

/// The running kernel's release (`uname -r`), as Linux publishes it in
/// /proc/sys/kernel/osrelease.
fn running_release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
}

fn kernel_choice(args: &ConfigArgs) -> KernelChoice {
    let newest = LinuxSpeDriver::NEWEST;
    if let Some(driver) = args.kernel {
        return KernelChoice {
            driver,
            choice: "option",
            detail: format!("--kernel {}", driver.version()),
        };
    }
    match running_release() {
        Some(release) => match LinuxSpeDriver::for_release(&release) {
            Some(driver) => KernelChoice {
                driver,
                choice: "running",
                detail: format!("the running kernel, {release}"),
            },
            None => KernelChoice {
                driver: newest,
                choice: "newest",
                detail: format!(
                    "the newest this demo knows: the running kernel, {release}, is neither 6.12 \
                     nor 7.3 (--kernel chooses)"
                ),
            },
        },
        None => KernelChoice {
            driver: newest,
            choice: "newest",
            detail: "the newest this demo knows: the running kernel's release is unknown \
                     (--kernel chooses)"
                .to_owned(),
        },
    }
}

fn usage(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        status: EXIT_USAGE,
    }
}

fn capabilities(args: &ConfigArgs) -> Result<CapsSource, Failure> {
    let given_pmu = args.pmu.clone().unwrap_or_else(|| "arm_spe_0".to_owned());
    if let Some(profile) = args.profile {
        let (pmsver, pmsidr) = profile.registers();
        return Ok(CapsSource {
            caps: profile.capabilities(),
            source: "profile",
            detail: format!(
                "profile {} (PMSVer {pmsver}, PMSIDR_EL1 {pmsidr:#x}): an example profile built \
                 from the architecture's fields, not a vendor-published register dump",
                profile.name()
            ),
            notes: Vec::new(),
            pmu_name: given_pmu,
            sysfs_format: None,
            event_filter_read_back: None,
        });
    }
    if let Some(pmsidr) = args.pmsidr {
        // clap makes --pmsidr require --pmsver.
        let pmsver = args.pmsver.unwrap_or_default();
        let version = SpeVersion::from_pmsver(pmsver).map_err(|e| {
            usage(format!(
                "--pmsver {pmsver}: {e}: every SPE register is UNDEFINED there, so there is \
                 nothing to configure; give the PMSVer of an SPE implementation (1 to 15)"
            ))
        })?;
        let pmbidr = args.pmbidr.unwrap_or(0);
        return Ok(CapsSource {
            caps: SpeCapabilities::decode_raw(version, pmsidr, pmbidr),
            source: "pmsidr",
            detail: format!("PMSIDR_EL1 {pmsidr:#x}, PMBIDR_EL1 {pmbidr:#x}, PMSVer {pmsver}"),
            notes: Vec::new(),
            pmu_name: given_pmu,
            sysfs_format: None,
            event_filter_read_back: None,
        });
    }
    machine_capabilities(args)
}

/// The capabilities the running kernel publishes for its arm_spe PMU: user space cannot read
/// PMSIDR_EL1 (EL1 only), so they are rebuilt from sysfs `caps/` and `format/`.
fn machine_capabilities(args: &ConfigArgs) -> Result<CapsSource, Failure> {
    let dir: &Path = &args.sysfs_devices;
    let hint = "give --pmsidr HEX --pmsver N (the values of the machine you will profile) or \
                --profile NAME (spev1p1-12bit, spev1p2-fne, spev1p4-16bit)";
    let pmus = sysfs::find_spe_pmus_in(dir)
        .map_err(|e| usage(format!("cannot read this machine's SPE PMU ({e}): {hint}")))?;
    let pmu: SpePmu = match &args.pmu {
        Some(name) => pmus
            .iter()
            .find(|p| &p.name == name)
            .cloned()
            .ok_or_else(|| {
                let found: Vec<&str> = pmus.iter().map(|p| p.name.as_str()).collect();
                usage(format!(
                    "no SPE PMU `{name}` in {} (found: {}): name one of those, or {hint}",
                    dir.display(),
                    if found.is_empty() {
                        "none".to_owned()
                    } else {
                        found.join(", ")
                    }
                ))
            })?,
        None => pmus.first().cloned().ok_or_else(|| {
            usage(format!(
                "this machine has no SPE (no arm_spe PMU in {}): give --pmsidr/--pmsver or \
                 --profile NAME (spev1p1-12bit, spev1p2-fne, spev1p4-16bit) to configure for \
                 another machine",
                dir.display()
            ))
        })?,
    };
    let mut notes = Vec::new();
    let version = match args.pmsver {
        Some(pmsver) => {
            SpeVersion::from_pmsver(pmsver).map_err(|e| usage(format!("--pmsver {pmsver}: {e}")))?
        }
        None => {
            let assumed = pmu.assumed_version();
            notes.push(format!(
                "sysfs does not publish PMSVer: assumed {assumed} because the kernel {} \
                 inv_event_filter (FEAT_SPE_FnE); give --pmsver N if the CPU has a newer SPE",
                if pmu.has_inverted_filter() {
                    "publishes"
                } else {
                    "does not publish"
                }
            ));
            assumed
        }
    };
    notes.push(
        "rebuilt from sysfs caps/ (min_interval, count_size, arch_inst, ernd): FE/FT/FL set (Linux \
         refuses PEs without them), FnE/EFT/FDS from the format terms the kernel shows only with \
         them (Linux 6.12 shows no EFT/FDS term, so on 6.12 they read as absent), MaxSize taken \
         as 64 bytes"
            .to_owned(),
    );
    if pmus.len() > 1 {
        let names: Vec<&str> = pmus.iter().map(|p| p.name.as_str()).collect();
        notes.push(format!(
            "several SPE PMUs ({}): a heterogeneous system; showing {}, choose with --pmu",
            names.join(", "),
            pmu.name
        ));
    }
    let sysfs_format = match pmu.format_source {
        FormatSource::Sysfs => Some((
            pmu.format,
            format!("the running kernel's format ({}/format)", pmu.dir.display()),
        )),
        FormatSource::Documented => {
            notes.push(format!(
                "{} has no format/ directory: the chosen kernel's documented layout is used",
                pmu.dir.display()
            ));
            None
        }
    };
    Ok(CapsSource {
        caps: pmu.capabilities(version),
        source: "sysfs",
        detail: format!(
            "this machine's {} ({}, perf type {})",
            pmu.name,
            pmu.dir.display(),
            pmu.pmu_type
        ),
        notes,
        pmu_name: pmu.name.clone(),
        sysfs_format,
        event_filter_read_back: pmu.caps.event_filter,
    })
}

/// The perf target: the chosen release's rules on these capabilities, with the running
/// kernel's format and event filter read-back when they were read from sysfs.
fn perf_target(s: &CapsSource, kernel: &KernelChoice) -> (PerfTarget, String, String) {
    let mut target = PerfTarget::new(kernel.driver, &s.caps);
    let (source, detail) = match &s.sysfs_format {
        Some((format, detail)) => {
            target = target.with_format(*format);
            ("sysfs".to_owned(), detail.clone())
        }
        None => (
            format!("linux-{}", kernel.driver.version()),
            format!(
                "the documented {} arm_spe layout (ATTR_CFG_FLD_* in \
                 drivers/perf/arm_spe_pmu.c), as it publishes it for these capabilities",
                kernel.driver
            ),
        ),
    };
    if let Some(read_back) = s.event_filter_read_back {
        target = target.with_event_filter_read_back(read_back);
    }
    (target, source, detail)
}

fn request(args: &ConfigArgs) -> SpeConfigBuilder {
    let mut types = OperationTypes::empty();
    types.set(OperationTypes::LOADS, args.loads);
    types.set(OperationTypes::STORES, args.stores);
    types.set(OperationTypes::BRANCHES, args.branches);
    types.set(OperationTypes::SIMD, args.simd);
    types.set(OperationTypes::FLOAT, args.float);
    let union = |events: &[SpeEvents]| {
        (!events.is_empty()).then(|| {
            events
                .iter()
                .fold(SpeEvents::empty(), |all, &e| all.union(e))
        })
    };
    let exception_levels = match (args.el0, args.el1) {
        (true, false) => ExceptionLevels::EL0,
        (false, true) => ExceptionLevels::EL1,
        _ => ExceptionLevels::all(),
    };
    SpeConfigBuilder {
        operation_types: (!types.is_empty()).then_some(types),
        all_types: args.all_types,
        data_sources: (!args.data_sources.is_empty()).then(|| {
            args.data_sources
                .iter()
                .fold(0u64, |mask, &source| mask | 1 << source)
        }),
        min_latency: args.min_latency,
        required_events: union(&args.events),
        excluded_events: union(&args.exclude_events),
        interval: args.interval,
        jitter: args.jitter,
        timestamps: args.timestamps.map(|t| match t {
            Timestamps::Virtual => TimestampSource::Virtual,
            Timestamps::Physical => TimestampSource::Physical,
        }),
        physical_addresses: args.physical_addresses,
        context: args.context,
        exception_levels,
    }
}

fn type_names(types: OperationTypes) -> Vec<&'static str> {
    [
        (OperationTypes::LOADS, "loads"),
        (OperationTypes::STORES, "stores"),
        (OperationTypes::BRANCHES, "branches"),
        (OperationTypes::SIMD, "SIMD"),
        (OperationTypes::FLOAT, "floating-point"),
    ]
    .into_iter()
    .filter(|(t, _)| types.contains(*t))
    .map(|(_, name)| name)
    .collect()
}

fn caps_out(s: &CapsSource) -> CapsOut {
    CapsOut {
        source: s.source,
        detail: s.detail.clone(),
        caps: s.caps,
        notes: s.notes.clone(),
    }
}

fn perf_out(config: &SpeConfig, s: &CapsSource, kernel: &KernelChoice) -> PerfOut {
    let (target, format_source, format_detail) = perf_target(s, kernel);
    let mut out = PerfOut {
        pmu: s.pmu_name.clone(),
        kernel: kernel.driver.version(),
        kernel_choice: kernel.choice,
        kernel_detail: kernel.detail.clone(),
        format_source,
        format_detail,
        attr: None,
        event: None,
        command: None,
        warnings: Vec::new(),
        error: None,
        hint: None,
        instead: None,
    };
    match perf::perf_event(config, &target) {
        Ok(event) => fill_perf(&mut out, &event, &target.format),
        Err(e) => {
            out.error = Some(e);
            out.hint = hint(&e, &target, kernel.driver);
            if matches!(e, SpeError::PerfEventsRefused { .. }) {
                if let Ok((event, post)) = perf::perf_event_with_post_filter(config, &target) {
                    let string = event.event_string(&out.pmu).to_string();
                    out.instead = Some(InsteadOut {
                        command: format!("perf record -e {string} -- <command>"),
                        event: string,
                        post_required_mask: format!("{:#x}", post.required.bits()),
                        post_excluded_mask: format!("{:#x}", post.excluded.bits()),
                        decode_command: decode_command(config),
                    });
                }
            }
        }
    }
    out
}

/// What a perf error means across kernels: a term the chosen release lacks but a newer one
/// has, or a term the kernel's sysfs does not show (the CPU lacks its feature, or the kernel
/// is older than the term).
fn hint(error: &SpeError, target: &PerfTarget, driver: LinuxSpeDriver) -> Option<String> {
    let SpeError::PerfFieldUnavailable { field } = *error else {
        return None;
    };
    if target.rules.format.field(field).is_some() {
        return Some(format!(
            "{driver} has `{}` but hides it on a CPU without its feature ({:?})",
            field.name(),
            field.needs()
        ));
    }
    LinuxSpeDriver::ALL
        .into_iter()
        .find(|d| d.rules().format.field(field).is_some())
        .map(|newer| {
            format!(
                "`{}` came with {newer}'s arm_spe driver; {driver} has no term for it: on a \
                 kernel with it, --kernel {} shows the event",
                field.name(),
                newer.version()
            )
        })
}

/// `pmu-demo spe decode perf.data` with the options that apply `config`'s type, latency and
/// event filters to the decoded records.
fn decode_command(config: &SpeConfig) -> String {
    let request = config.request();
    let mut command = String::from("pmu-demo spe decode perf.data");
    if let Some(types) = request.operation_types {
        for (flag, name) in [
            (OperationTypes::LOADS, "--loads"),
            (OperationTypes::STORES, "--stores"),
            (OperationTypes::BRANCHES, "--branches"),
        ] {
            if types.contains(flag) {
                command.push(' ');
                command.push_str(name);
            }
        }
    }
    if let Some(latency) = request.min_latency.filter(|&l| l > 0) {
        command.push_str(&format!(" --min-latency {latency}"));
    }
    if let Some(events) = request.required_events.filter(|e| !e.is_empty()) {
        command.push_str(&format!(" --event {:#x}", events.bits()));
    }
    if let Some(events) = request.excluded_events.filter(|e| !e.is_empty()) {
        command.push_str(&format!(" --exclude-event {:#x}", events.bits()));
    }
    command
}

fn fill_perf(out: &mut PerfOut, event: &PerfSpeEvent, format: &PerfFormat) {
    let attr = event.attr();
    let terms = event
        .terms()
        .map(|(field, value)| TermOut {
            field: field.name(),
            format: format
                .field(field)
                .map(|f| f.to_string())
                .unwrap_or_default(),
            value,
        })
        .collect();
    out.attr = Some(AttrOut { attr: *attr, terms });
    let string = event.event_string(&out.pmu).to_string();
    out.command = Some(format!("perf record -e {string} -- <command>"));
    out.event = Some(string);
    out.warnings = event.warnings().copied().collect();
}

pub fn run(args: &ConfigArgs) -> Result<(), Failure> {
    let source = capabilities(args)?;
    let kernel = kernel_choice(args);
    let request = request(args);
    let diagnostics: Diagnostics = request.check(&source.caps);
    let errors: Vec<SpeError> = diagnostics.errors().copied().collect();
    let built = request.build(&source.caps);
    let (registers, perf, warnings) = match &built {
        Ok(config) => (
            Some(*config.registers()),
            Some(perf_out(config, &source, &kernel)),
            config.warnings().copied().collect(),
        ),
        Err(_) => (None, None, diagnostics.warnings().copied().collect()),
    };
    // `build` stops at the first error `check` lists; both agree on whether there is one.
    let ok = built.is_ok() && errors.is_empty();
    let out = Output {
        intent: request,
        capabilities: caps_out(&source),
        ok,
        errors,
        warnings,
        registers,
        perf,
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| Failure::new(e.to_string()))?
        );
    } else {
        print_human(&out, args.all_fields);
    }
    if ok {
        Ok(())
    } else {
        Err(usage(format!(
            "the SPE configuration has {} error(s) (listed above); nothing was built",
            out.errors.len().max(1)
        )))
    }
}

fn print_human(out: &Output, all_fields: bool) {
    let i = &out.intent;
    let mut intent = Vec::new();
    match i.operation_types {
        Some(t) if i.all_types => intent.push(format!("only {}", type_names(t).join(" AND "))),
        Some(t) => intent.push(format!("only {}", type_names(t).join(" + "))),
        None => intent.push("every operation type".to_owned()),
    }
    if let Some(sources) = i.data_sources {
        let list: Vec<String> = (0..64)
            .filter(|n| sources >> n & 1 == 1)
            .map(|n: u32| n.to_string())
            .collect();
        intent.push(format!("from data source {}", list.join(", ")));
    }
    if let Some(l) = i.min_latency {
        intent.push(format!("latency >= {l} cycles"));
    }
    if let Some(e) = i.required_events {
        intent.push(format!(
            "with all of {} = {:#x}",
            names::event_list(e).join(", "),
            e.bits()
        ));
    }
    if let Some(e) = i.excluded_events {
        intent.push(format!(
            "with none of {} = {:#x}",
            names::event_list(e).join(", "),
            e.bits()
        ));
    }
    intent.push(match i.interval {
        Some(n) => format!("1 in {n}"),
        None => "1 in the minimum interval".to_owned(),
    });
    if i.jitter {
        intent.push("jittered".to_owned());
    }
    if let Some(t) = i.timestamps {
        intent.push(
            match t {
                TimestampSource::Virtual => "virtual timestamps",
                TimestampSource::Physical => "physical timestamps",
            }
            .to_owned(),
        );
    }
    if i.physical_addresses {
        intent.push("physical addresses".to_owned());
    }
    if i.context {
        intent.push("CONTEXTIDR_EL1".to_owned());
    }
    let levels: Vec<&str> = [(ExceptionLevels::EL0, "EL0"), (ExceptionLevels::EL1, "EL1")]
        .into_iter()
        .filter(|(l, _)| i.exception_levels.contains(*l))
        .map(|(_, n)| n)
        .collect();
    intent.push(format!("at {}", levels.join("+")));
    println!("intent:        {}", intent.join("; "));

    println!("capabilities:  {}", out.capabilities.detail);
    let c = &out.capabilities.caps;
    let mut filters = Vec::new();
    for (has, name) in [
        (c.filter_by_event, "FE"),
        (c.filter_by_type, "FT"),
        (c.filter_by_latency, "FL"),
        (c.inverted_event_filter, "FnE"),
        (c.extended_type_filter, "EFT"),
        (c.data_source_filter, "FDS"),
        (c.loaded_data_source, "LDS"),
        (c.extended_random, "ERnd"),
        (c.architectural_instructions, "ArchInst"),
    ] {
        if has {
            filters.push(name);
        }
    }
    let min_interval = c.min_interval.map_or_else(
        |_| "reserved Interval".to_owned(),
        |v| format!("min interval {v}"),
    );
    let counters = c.counter_size.map_or_else(
        |_| "reserved CountSize".to_owned(),
        |b| format!("{}-bit latency counters", b.bits()),
    );
    let records = c.max_record_size.map_or_else(
        |_| "reserved MaxSize".to_owned(),
        |b| format!("records up to {b} bytes"),
    );
    println!(
        "               {} (PMSVer {}), PMSIDR_EL1 {:#x}: {}; {min_interval}, {counters}, {records}",
        c.version,
        c.version.pmsver(),
        c.pmsidr,
        if filters.is_empty() {
            "no filters".to_owned()
        } else {
            filters.join(" ")
        },
    );
    for note in &out.capabilities.notes {
        println!("               note: {note}");
    }

    if let Some(registers) = &out.registers {
        println!();
        println!("registers, in programming order (PMSCR_EL1 last: it enables sampling):");
        for (register, value) in registers.in_programming_order() {
            println!("  {:<13} = {value:#018x}", register.name());
            if register.fields(value).next().is_none() {
                println!("      (no event bit set)");
            }
            let mut hidden = 0;
            for f in register.fields(value) {
                let extension = EXTENSION_FIELDS
                    .iter()
                    .any(|&(reg, name)| reg == register && name == f.name);
                if extension && f.value == 0 && !all_fields {
                    hidden += 1;
                    continue;
                }
                let bits = if f.msb == f.lsb {
                    format!("[{}]", f.msb)
                } else {
                    format!("[{}:{}]", f.msb, f.lsb)
                };
                let value = if f.value >= 10 {
                    format!("{} ({:#x})", f.value, f.value)
                } else {
                    f.value.to_string()
                };
                let meaning = f
                    .value_meaning
                    .map(|m| format!(" -> {m}"))
                    .unwrap_or_default();
                println!(
                    "      {bits:<8} {:<12} = {value:<12} {}{meaning}",
                    f.name, f.description
                );
            }
            if hidden > 0 {
                println!(
                    "      ({hidden} extension field{} at 0 not shown; --all-fields shows them)",
                    if hidden == 1 { "" } else { "s" }
                );
            }
        }
    }

    if !out.errors.is_empty() {
        println!();
        for e in &out.errors {
            eprintln!("error: {}", e);
        }
    }
    if !out.warnings.is_empty() {
        println!();
        for w in &out.warnings {
            println!("warning: {}", w);
        }
    }

    if let Some(p) = &out.perf {
        println!();
        println!(
            "perf event, under Linux {}'s arm_spe rules ({}), in {}:",
            p.kernel, p.kernel_detail, p.format_detail
        );
        if let Some(a) = &p.attr {
            for word in [
                ConfigWord::Config,
                ConfigWord::Config1,
                ConfigWord::Config2,
                ConfigWord::Config3,
                ConfigWord::Config4,
            ] {
                if word == ConfigWord::Config4 && a.attr.config4 == 0 {
                    // Only Linux 7.3 has a config4 term; no need to show an empty word.
                    continue;
                }
                let value = format!("{:#x}", a.attr.word(word));
                let here: Vec<String> = a
                    .terms
                    .iter()
                    .filter(|t| t.format.split(':').next() == Some(word.name()))
                    .map(|t| {
                        if t.field.ends_with("_filter") && t.field.starts_with("inv_")
                            || t.field == "event_filter"
                        {
                            format!("{}={:#x} ({})", t.field, t.value, t.format)
                        } else {
                            format!("{}={} ({})", t.field, t.value, t.format)
                        }
                    })
                    .collect();
                let line = format!(
                    "  attr.{:<8} = {value:<14} {}",
                    word.name(),
                    here.join(", ")
                );
                println!("{}", line.trim_end());
            }
            println!(
                "  attr.sample_period = {}, exclude_user = {}, exclude_kernel = {}",
                a.attr.sample_period, a.attr.exclude_user as u8, a.attr.exclude_kernel as u8
            );
        }
        if let Some(command) = &p.command {
            println!("  {command}");
        }
        for w in &p.warnings {
            println!("warning (perf): {}", w);
        }
        if let Some(e) = &p.error {
            println!(
                "warning (perf): the registers above are valid, but perf cannot express them: {}",
                e
            );
        }
        if let Some(h) = &p.hint {
            println!("note (perf): {h}");
        }
        if let Some(i) = &p.instead {
            println!("instead, record the broader event the kernel accepts:");
            println!("  {}", i.command);
            println!("and keep the matching records when decoding:");
            println!("  {}", i.decode_command);
        }
    }
}
