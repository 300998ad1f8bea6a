//! Event names → `perf_event_attr` type and config words.
//!
//! The names perf users know, in this order:
//!
//! 1. perf's generic hardware and software names and their aliases (`cycles`,
//!    `cpu-cycles`, `instructions`, `branches`, `task-clock`, `cs`, …), as
//!    tools/perf/util/parse-events.c `event_symbols_hw`/`event_symbols_sw` spell them;
//! 2. hardware cache events `<cache>-<op>[-<result>]` (`L1-dcache-load-misses`,
//!    `LLC-loads`, `dTLB-load-misses`, …) with the cache, op and result names of
//!    tools/perf/util/evsel.c `evsel__hw_cache*`; config = cache | op << 8 | result << 16
//!    (include/uapi/linux/perf_event.h, PERF_TYPE_HW_CACHE);
//! 3. raw events `r<hex>`: PERF_TYPE_RAW with the code as config (1 to 16 hex digits);
//! 4. `<pmu>/term=value,…/`: the PMU's sysfs `type`, each term placed by its `format/`
//!    file; a bare term is a 1-bit flag from `format/` or an alias from `events/`
//!    (expanded in place); `config`, `config1`, `config2`, `config3` set whole words; on
//!    core PMUs that take the extended type (hybrid x86, arm_pmu) a generic name such as
//!    `cpu_atom/cycles/` is PERF_TYPE_HARDWARE with `config |= type << 32`;
//! 5. a bare sysfs alias (`mem-loads`, `inst_retired`) of a core PMU, then of any PMU,
//!    in name order, spelt exactly as the kernel publishes it;
//! 6. the running core's own event names (the `pmu-events` table its MIDR picks,
//!    [`crate::machine::Cores`]), case-insensitive (`l1d_cache_refill`,
//!    `L2D_CACHE_WB`): the core PMU's raw event, `PERF_TYPE_RAW` with the event
//!    number as config; on a heterogeneous machine the type of the core PMU of the
//!    CPU the thread runs on, whose `cpus` file lists it (a per-thread event on it
//!    counts while the thread runs on that kind of core).
//!
//! perf's own names come first so that they mean what they mean to perf users; a sysfs
//! alias before the table because it is the kernel's own word, and where both have a
//! name (arm64's common events: `inst_retired`, `l1d_cache_refill`) they give the same
//! event number. The table adds the IMPLEMENTATION DEFINED events sysfs does not list
//! and the manuals' upper-case spelling. The direct backend takes generic names,
//! `r<hex>` and step 6, each as the event number it programs.
//!
//! Anything else is [`crate::error::EventError::Unknown`], or, where the running core
//! has a table, [`crate::error::EventError::Misspelt`] (with its nearest name) and
//! [`crate::error::EventError::NotOnThisCore`] (an event of other cores); on a core
//! without a table, an event of other cores' tables is
//! [`crate::error::EventError::NoCoreTable`]. The other name errors are distinct
//! variants (see [`crate::Error`]).

use std::fmt;

use std::str::FromStr;

use pmu_core::GenericEvent;

use crate::error::{Error, RawProblem, Result, TermProblem};
use crate::machine::cpu::CoreKind;
use crate::machine::sysfs::{ConfigWord, FormatField, Pmu, Sysfs};

pub(crate) mod kind;
pub use kind::EventKind;

/// `perf_event_attr.type` values (include/uapi/linux/perf_event.h `perf_type_id`).
pub(crate) mod perf_type {
    /// PERF_TYPE_HARDWARE.
    pub(crate) const HARDWARE: u32 = 0;
    /// PERF_TYPE_SOFTWARE.
    pub(crate) const SOFTWARE: u32 = 1;
    /// PERF_TYPE_HW_CACHE.
    pub(crate) const HW_CACHE: u32 = 3;
    /// PERF_TYPE_RAW.
    pub(crate) const RAW: u32 = 4;
}

/// PERF_PMU_TYPE_SHIFT: the extended type sits in config bits 63:32.
pub(crate) const PMU_TYPE_SHIFT: u32 = 32;

/// The generic hardware events (`perf_hw_id`), with perf's aliases.
pub(crate) const HARDWARE: &[(&str, u64)] = &[
    ("cycles", 0),
    ("cpu-cycles", 0),
    ("instructions", 1),
    ("cache-references", 2),
    ("cache-misses", 3),
    ("branches", 4),
    ("branch-instructions", 4),
    ("branch-misses", 5),
    ("bus-cycles", 6),
    ("stalled-cycles-frontend", 7),
    ("idle-cycles-frontend", 7),
    ("stalled-cycles-backend", 8),
    ("idle-cycles-backend", 8),
    ("ref-cycles", 9),
];

/// PERF_COUNT_SW_CONTEXT_SWITCHES.
pub(crate) const SW_CONTEXT_SWITCHES: u64 = 3;
/// PERF_COUNT_SW_CPU_MIGRATIONS.
pub(crate) const SW_CPU_MIGRATIONS: u64 = 4;

/// The software events (`perf_sw_ids`), with perf's aliases.
pub(crate) const SOFTWARE: &[(&str, u64)] = &[
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("faults", 2),
    ("context-switches", SW_CONTEXT_SWITCHES),
    ("cs", SW_CONTEXT_SWITCHES),
    ("cpu-migrations", SW_CPU_MIGRATIONS),
    ("migrations", SW_CPU_MIGRATIONS),
    ("minor-faults", 5),
    ("major-faults", 6),
    ("alignment-faults", 7),
    ("emulation-faults", 8),
    ("dummy", 9),
    ("bpf-output", 10),
    ("cgroup-switches", 11),
];

/// Cache names (`perf_hw_cache_id`) and perf's aliases.
const CACHES: &[(&str, u64)] = &[
    ("L1-dcache", 0),
    ("l1-d", 0),
    ("l1d", 0),
    ("L1-data", 0),
    ("L1-icache", 1),
    ("l1-i", 1),
    ("l1i", 1),
    ("L1-instruction", 1),
    ("LLC", 2),
    ("L2", 2),
    ("dTLB", 3),
    ("d-tlb", 3),
    ("Data-TLB", 3),
    ("iTLB", 4),
    ("i-tlb", 4),
    ("Instruction-TLB", 4),
    ("branch", 5),
    ("branches", 5),
    ("bpu", 5),
    ("btb", 5),
    ("bpc", 5),
    ("node", 6),
];

/// Cache operations (`perf_hw_cache_op_id`).
const CACHE_OPS: &[(&str, u64)] = &[
    ("load", 0),
    ("loads", 0),
    ("read", 0),
    ("store", 1),
    ("stores", 1),
    ("write", 1),
    ("prefetch", 2),
    ("prefetches", 2),
];

/// Cache results (`perf_hw_cache_op_result_id`).
const CACHE_RESULTS: &[(&str, u64)] = &[
    ("refs", 0),
    ("access", 0),
    ("ops", 0),
    ("misses", 1),
    ("miss", 1),
];

/// An event to count.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event {
    /// A generic event (perf's generic hardware and cache events; the direct backend's
    /// architecture crates encode each for their PMU).
    Generic(GenericEvent),
    /// A raw event code of the CPU's PMU, as its manual gives it (perf `r<hex>`).
    Raw(u64),
    /// Any name perf understands: a software event (`task-clock`, `page-faults`), a
    /// cache event (`LLC-loads`), a sysfs event (`armv8_pmuv3_0/event=0x08/`,
    /// `cpu/event=0x3c,umask=0x00/`) or a bare sysfs alias; resolved when the meter is
    /// built.
    Named(String),
}

impl Event {
    /// The name perf knows the event by.
    pub fn name(&self) -> String {
        match self {
            Self::Generic(g) => g.perf_name().to_owned(),
            Self::Raw(code) => format!("r{code:x}"),
            Self::Named(name) => name.clone(),
        }
    }

    rig_pub! {
        /// The event as the direct backend counts it (hardware events only): a name of the
        /// running core's table is its event number.
        ///
        /// # Errors
        /// [`crate::error::EventError::NotDirect`] for software, cache and sysfs events; name errors.
        pub fn direct(&self) -> Result<pmu_core::Event> {
            self.direct_on(&Sysfs::system(), crate::machine::sched::current_cpu())
        }
    }

    /// As `Event::direct`, the core's table that of `cpu` among `sysfs`'s cores.
    pub(crate) fn direct_on(&self, sysfs: &Sysfs, cpu: Option<u32>) -> Result<pmu_core::Event> {
        match self {
            Self::Generic(g) => Ok(pmu_core::Event::Generic(*g)),
            Self::Raw(code) => Ok(pmu_core::Event::Raw(*code)),
            Self::Named(name) => direct_event_on(name, sysfs, cpu),
        }
    }
}

impl From<GenericEvent> for Event {
    fn from(event: GenericEvent) -> Self {
        Self::Generic(event)
    }
}

impl FromStr for Event {
    type Err = Error;

    /// A generic event's perf name (or alias: `cpu-cycles`), `r<hex>`, or any other
    /// name, kept as [`Event::Named`] and resolved at build.
    ///
    /// # Errors
    /// [`crate::error::EventError::MalformedRaw`] for `r` followed by something that is not 1 to 16 hex
    /// digits, [`crate::error::EventError::Unknown`] for an empty name.
    fn from_str(text: &str) -> Result<Self> {
        let name = text.trim();
        if name.is_empty() {
            return Err(Error::Event(crate::error::EventError::Unknown {
                name: text.to_owned(),
            }));
        }
        if name.contains('/') {
            return Ok(Self::Named(name.to_owned()));
        }
        match direct_event(name) {
            Ok(pmu_core::Event::Generic(g)) => return Ok(Self::Generic(g)),
            Ok(pmu_core::Event::Raw(code)) => return Ok(Self::Raw(code)),
            Err(e @ Error::Event(crate::error::EventError::MalformedRaw { .. })) => return Err(e),
            Err(_) => {}
        }
        Ok(Self::Named(name.to_owned()))
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A resolved event: everything `perf_event_open` needs besides the flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// The name as given.
    pub name: String,
    /// Where it comes from.
    pub kind: EventKind,
    /// The sysfs PMU, for [`EventKind::Sysfs`] and extended-type generic events.
    pub pmu: Option<String>,
    /// `perf_event_attr.type`.
    pub perf_type: u32,
    /// `config`, `config1`, `config2`, `config3`.
    pub config: [u64; 4],
    /// The PMU's `rdpmc` format field (arm64: `config1:1`), set to ask for user-space
    /// counter reads.
    pub user_read_field: Option<FormatField>,
    /// Whether the event needs the CPU's PMU (hardware counters).
    pub needs_cpu_pmu: bool,
}

impl EventSpec {
    fn builtin(name: &str, kind: EventKind, perf_type: u32, config: u64) -> Self {
        Self {
            name: name.to_owned(),
            kind,
            pmu: None,
            perf_type,
            config: [config, 0, 0, 0],
            user_read_field: None,
            needs_cpu_pmu: kind != EventKind::Software,
        }
    }

    /// Whether this counts retired instructions or CPU cycles: the generic hardware
    /// events (`PERF_COUNT_HW_INSTRUCTIONS`, `PERF_COUNT_HW_CPU_CYCLES`, whatever the
    /// extended type in the upper bits), or an Armv8 PMU's INST_RETIRED (0x08) or
    /// CPU_CYCLES (0x11) as a raw or sysfs event (Arm ARM D17.11 "Common event
    /// numbers"; the event field is config:0-15, drivers/perf/arm_pmuv3.c).
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    pub(crate) fn counts_instructions_or_cycles(&self) -> bool {
        match self.kind {
            EventKind::Hardware => matches!(self.config[0] & 0xffff_ffff, 0 | 1),
            EventKind::Raw => matches!(self.config[0], 0x08 | 0x11),
            EventKind::Sysfs => {
                self.pmu.as_deref().is_some_and(|p| p.starts_with("armv8"))
                    && matches!(self.config[0], 0x08 | 0x11)
            }
            _ => false,
        }
    }

    /// The software event id when this is a software event.
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    pub(crate) fn software_id(&self) -> Option<u64> {
        (self.kind == EventKind::Software).then_some(self.config[0])
    }

    /// The config words with user-space reads requested, as arm64 wants it
    /// (drivers/perf/arm_pmuv3.c: `rdpmc` = config1 bit 1; only honoured with
    /// `sysctl kernel.perf_user_access=1`): through the PMU's `rdpmc` format field,
    /// or config1 bit 1 for generic hardware, cache and raw events, which go to the
    /// CPU PMU. Other events are left alone.
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    pub(crate) fn config_with_user_read(&self) -> [u64; 4] {
        let mut config = self.config;
        if let Some(field) = &self.user_read_field {
            if let Some(bits) = field.encode(1) {
                config[field.word as usize] |= bits;
            }
        } else if matches!(
            self.kind,
            EventKind::Hardware | EventKind::HwCache | EventKind::Raw
        ) {
            config[1] |= 1 << 1;
        }
        config
    }
}

/// Resolves `name` (perf names, `r<hex>`, `<pmu>/term=…/`, sysfs aliases), with sysfs at `sysfs`.
///
/// # Errors
/// [`crate::error::EventError::Unknown`], [`crate::error::EventError::MalformedRaw`], [`crate::error::EventError::UnknownPmu`],
/// [`crate::error::EventError::UnknownFormatTerm`], [`crate::error::EventError::MalformedTerm`], [`crate::error::EventError::ValueTooWide`],
/// or a sysfs read error.
pub fn resolve(name: &str, sysfs: &Sysfs) -> Result<EventSpec> {
    let name = name.trim();
    if name.contains('/') {
        return resolve_pmu_event(name, sysfs);
    }
    if let Some(spec) = resolve_builtin(name) {
        return Ok(spec);
    }
    if let Some(raw) = parse_raw(name)? {
        return Ok(EventSpec::builtin(
            name,
            EventKind::Raw,
            perf_type::RAW,
            raw,
        ));
    }
    if let Some(spec) = resolve_bare_alias(name, sysfs)? {
        return Ok(spec);
    }
    if let Some((kind, event)) = core_event(name, sysfs, crate::machine::sched::current_cpu())? {
        return Ok(core_spec(name, &kind, event, sysfs));
    }
    Err(Error::Event(crate::error::EventError::Unknown {
        name: name.to_owned(),
    }))
}

/// Step 6: the event called `name` (case-insensitive) in the table of the core `cpu`
/// is (the first kind when `cpu` is `None` or not listed), with that kind of core.
/// `Ok(None)` where no table has anything to say: no Arm cores, or a name no table
/// has and none is near.
///
/// # Errors
/// [`crate::error::EventError::NotOnThisCore`], [`crate::error::EventError::Misspelt`],
/// [`crate::error::EventError::NoCoreTable`].
fn core_event(
    name: &str,
    sysfs: &Sysfs,
    cpu: Option<u32>,
) -> Result<Option<(CoreKind, &'static pmu_events::Event)>> {
    // Table names are letters, digits and underscores; anything else is not one.
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Ok(None);
    }
    let cores = sysfs.cores();
    let Some(kind) = cores.kind_of(cpu) else {
        return Ok(None);
    };
    let others = || {
        pmu_events::cores_with(name)
            .map(|c| c.name)
            .collect::<Vec<_>>()
    };
    let Some(table) = kind.table else {
        let cores = others();
        if cores.is_empty() {
            return Ok(None);
        }
        return Err(Error::Event(crate::error::EventError::NoCoreTable {
            name: name.to_owned(),
            midr: kind.midr,
            cores,
        }));
    };
    if let Some(event) = table.event(name) {
        return Ok(Some((kind.clone(), event)));
    }
    let cores = others();
    if !cores.is_empty() {
        return Err(Error::Event(crate::error::EventError::NotOnThisCore {
            name: name.to_owned(),
            core: table.name,
            cores,
        }));
    }
    if let Some(nearest) = table.nearest(name) {
        return Err(Error::Event(crate::error::EventError::Misspelt {
            name: name.to_owned(),
            core: table.name,
            nearest: nearest.name,
        }));
    }
    Ok(None)
}

/// The perf event for `event` of `kind`'s table: `PERF_TYPE_RAW`, or on a machine with
/// several core PMUs the one whose `cpus` lists the kind's first CPU (raw events on
/// arm_pmu are the event number in config: drivers/perf/arm_pmuv3.c
/// `armv8pmu_map_event`, `ARMV8_PMU_EVTYPE_EVENT`).
fn core_spec(name: &str, kind: &CoreKind, event: &pmu_events::Event, sysfs: &Sysfs) -> EventSpec {
    let code = u64::from(event.code);
    let raw = EventSpec::builtin(name, EventKind::Raw, perf_type::RAW, code);
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        use crate::perf::topology::parse_cpu_list;
        let pmus = sysfs.pmus().unwrap_or_default();
        let core: Vec<&Pmu> = pmus.iter().filter(|p| p.is_core()).collect();
        if core.len() < 2 {
            return raw;
        }
        let Some(first) = kind.cpus.first() else {
            return raw;
        };
        let covering = core.into_iter().find(|p| {
            p.cpus
                .as_deref()
                .and_then(parse_cpu_list)
                .is_some_and(|cpus| cpus.contains(first))
        });
        match covering {
            Some(pmu) => EventSpec {
                name: name.to_owned(),
                kind: EventKind::Sysfs,
                pmu: Some(pmu.name.clone()),
                perf_type: pmu.perf_type,
                config: [code, 0, 0, 0],
                user_read_field: pmu.formats.get("rdpmc").cloned(),
                needs_cpu_pmu: true,
            },
            None => raw,
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (kind, sysfs);
        raw
    }
}

/// A generic hardware, software or cache name; `None` for anything else.
pub fn resolve_builtin(name: &str) -> Option<EventSpec> {
    let lookup = |table: &[(&str, u64)]| table.iter().find(|(n, _)| *n == name).map(|&(_, c)| c);
    if let Some(c) = lookup(HARDWARE) {
        return Some(EventSpec::builtin(
            name,
            EventKind::Hardware,
            perf_type::HARDWARE,
            c,
        ));
    }
    if let Some(c) = lookup(SOFTWARE) {
        return Some(EventSpec::builtin(
            name,
            EventKind::Software,
            perf_type::SOFTWARE,
            c,
        ));
    }
    parse_cache(name).map(|c| EventSpec::builtin(name, EventKind::HwCache, perf_type::HW_CACHE, c))
}

/// `<cache>[-<op>][-<result>]` → cache | op << 8 | result << 16 (op defaults to load,
/// result to access, as in perf).
fn parse_cache(name: &str) -> Option<u64> {
    let (cache, rest) = CACHES
        .iter()
        .filter_map(|&(c, id)| {
            let rest = name.strip_prefix(c)?;
            (rest.is_empty() || rest.starts_with('-')).then_some((id, rest))
        })
        .min_by_key(|(_, rest)| rest.len())?;
    let (mut op, mut result) = (None, None);
    for token in rest.split('-').skip(1) {
        let find = |table: &[(&str, u64)]| table.iter().find(|(n, _)| *n == token).map(|&(_, v)| v);
        if let (None, Some(o)) = (op, find(CACHE_OPS)) {
            op = Some(o);
        } else if let (None, Some(r)) = (result, find(CACHE_RESULTS)) {
            result = Some(r);
        } else {
            return None;
        }
    }
    if op.is_none() && result.is_none() {
        // A bare cache name is not an event name users mean.
        return None;
    }
    Some(cache | op.unwrap_or(0) << 8 | result.unwrap_or(0) << 16)
}

/// `r<hex>` → the code. `Ok(None)` when `name` is not meant as a raw event: not `r`
/// followed by a decimal digit, and not `r` followed only by hex digits (`ref-cycles`,
/// `rebar` are names, `r12xyz` is a malformed raw event).
pub fn parse_raw(name: &str) -> Result<Option<u64>> {
    let Some(hex) = name.strip_prefix('r') else {
        return Ok(None);
    };
    let looks_raw = hex.starts_with(|c: char| c.is_ascii_digit())
        || (!hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()));
    if !looks_raw {
        return Ok(None);
    }
    let malformed = |problem| {
        Error::Event(crate::error::EventError::MalformedRaw {
            name: name.to_owned(),
            problem,
        })
    };
    if let Some(found) = hex.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(malformed(RawProblem::NotHex { found }));
    }
    if hex.len() > 16 {
        return Err(malformed(RawProblem::TooLong { digits: hex.len() }));
    }
    u64::from_str_radix(hex, 16)
        .map(Some)
        .map_err(|_| malformed(RawProblem::TooLong { digits: hex.len() }))
}

fn resolve_pmu_event(text: &str, sysfs: &Sysfs) -> Result<EventSpec> {
    let syntax = || {
        Error::Event(crate::error::EventError::MalformedTerm {
            event: text.to_owned(),
            term: text.to_owned(),
            problem: TermProblem::Syntax,
        })
    };
    let inner = text.strip_suffix('/').ok_or_else(syntax)?;
    let (pmu_name, terms) = inner.split_once('/').ok_or_else(syntax)?;
    if pmu_name.is_empty() || terms.contains('/') {
        return Err(syntax());
    }
    let pmu = sysfs.pmu(pmu_name)?;
    if terms.trim().is_empty() {
        return Err(Error::Event(crate::error::EventError::MalformedTerm {
            event: text.to_owned(),
            term: String::new(),
            problem: TermProblem::Empty,
        }));
    }
    // `cpu_atom/cycles/`: a generic event on one core PMU of a heterogeneous system.
    if !terms.contains(['=', ','])
        && !pmu.formats.contains_key(terms)
        && !pmu.events.contains_key(terms)
    {
        if let Some(generic) = resolve_builtin(terms).filter(|s| s.kind != EventKind::Software) {
            if pmu.takes_extended_hw_type() {
                let mut spec = generic;
                spec.name = text.to_owned();
                spec.config[0] |= u64::from(pmu.perf_type) << PMU_TYPE_SHIFT;
                spec.pmu = Some(pmu.name.clone());
                spec.user_read_field = pmu.formats.get("rdpmc").cloned();
                return Ok(spec);
            }
        }
    }
    let mut config = [0u64; 4];
    apply_terms(text, &pmu, terms, &mut config, true)?;
    Ok(EventSpec {
        name: text.to_owned(),
        kind: EventKind::Sysfs,
        pmu: Some(pmu.name.clone()),
        perf_type: pmu.perf_type,
        config,
        user_read_field: pmu.formats.get("rdpmc").cloned(),
        needs_cpu_pmu: pmu.is_core(),
    })
}

/// Applies comma-separated `terms` of `pmu` to `config`; aliases are expanded when
/// `expand` (one level: an alias of aliases is not a thing sysfs publishes).
fn apply_terms(
    event: &str,
    pmu: &Pmu,
    terms: &str,
    config: &mut [u64; 4],
    expand: bool,
) -> Result<()> {
    for term in terms.split(',') {
        let term = term.trim();
        let malformed = |problem| {
            Error::Event(crate::error::EventError::MalformedTerm {
                event: event.to_owned(),
                term: term.to_owned(),
                problem,
            })
        };
        if term.is_empty() {
            return Err(malformed(TermProblem::Empty));
        }
        let (key, value) = match term.split_once('=') {
            Some((key, value)) => {
                let value = value.trim();
                if value == "?" {
                    return Err(malformed(TermProblem::NeedsValue));
                }
                let number = parse_number(value).ok_or_else(|| {
                    malformed(TermProblem::BadNumber {
                        value: value.to_owned(),
                    })
                })?;
                (key.trim(), Some(number))
            }
            None => (term, None),
        };
        if let Some(word) = ConfigWord::from_name(key) {
            config[word as usize] = value.unwrap_or(1);
        } else if let Some(field) = pmu.formats.get(key) {
            let value = value.unwrap_or(1);
            let bits = field.encode(value).ok_or_else(|| {
                Error::Event(crate::error::EventError::ValueTooWide {
                    pmu: pmu.name.clone(),
                    term: key.to_owned(),
                    value,
                    bits: field.bits(),
                })
            })?;
            let word = &mut config[field.word as usize];
            *word = (*word & !field.mask()) | bits;
        } else if let (true, None, Some(alias)) = (expand, value, pmu.events.get(key)) {
            apply_terms(event, pmu, alias, config, false)?;
        } else {
            return Err(Error::Event(crate::error::EventError::UnknownFormatTerm {
                pmu: pmu.name.clone(),
                term: key.to_owned(),
                known: pmu.formats.keys().cloned().collect(),
            }));
        }
    }
    Ok(())
}

/// A bare name found in some PMU's `events/`: core PMUs first, then the others, each
/// in name order.
fn resolve_bare_alias(name: &str, sysfs: &Sysfs) -> Result<Option<EventSpec>> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Ok(None);
    }
    let mut pmus = sysfs.pmus().unwrap_or_default();
    pmus.sort_by_key(|p| !p.is_core());
    for pmu in pmus {
        if pmu.events.contains_key(name) {
            let mut spec = resolve_pmu_event(&format!("{}/{name}/", pmu.name), sysfs)?;
            spec.name = name.to_owned();
            return Ok(Some(spec));
        }
    }
    Ok(None)
}

/// Decimal, or hex with `0x`.
fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Every built-in name: generic hardware and software names with aliases, and the
/// common cache events.
#[cfg(test)]
pub(crate) fn builtin_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = HARDWARE.iter().chain(SOFTWARE).map(|(n, _)| *n).collect();
    names.extend([
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "L1-dcache-stores",
        "L1-dcache-store-misses",
        "L1-dcache-prefetches",
        "L1-icache-loads",
        "L1-icache-load-misses",
        "LLC-loads",
        "LLC-load-misses",
        "LLC-stores",
        "LLC-store-misses",
        "dTLB-loads",
        "dTLB-load-misses",
        "dTLB-stores",
        "dTLB-store-misses",
        "iTLB-loads",
        "iTLB-load-misses",
        "branch-loads",
        "branch-load-misses",
        "node-loads",
        "node-load-misses",
    ]);
    names
}

/// An event name for the direct backend, which counts hardware events only: a generic
/// name (any perf alias of a [`GenericEvent`]) or `r<hex>`.
///
/// # Errors
/// [`crate::error::EventError::MalformedRaw`]; [`crate::error::EventError::NotDirect`] for software, sysfs and cache
/// events the architecture crates have no encoding for; [`crate::error::EventError::Unknown`].
pub fn direct_event(name: &str) -> Result<pmu_core::Event> {
    let name = name.trim();
    if let Some(spec) = resolve_builtin(name) {
        let generic = GenericEvent::ALL.into_iter().find(|g| {
            resolve_builtin(g.perf_name())
                .is_some_and(|s| (s.perf_type, s.config) == (spec.perf_type, spec.config))
        });
        return generic.map(pmu_core::Event::Generic).ok_or(Error::Event(
            crate::error::EventError::NotDirect {
                name: name.to_owned(),
                kind: spec.kind,
            },
        ));
    }
    if let Some(raw) = parse_raw(name)? {
        return Ok(pmu_core::Event::Raw(raw));
    }
    if name.contains('/') {
        return Err(Error::Event(crate::error::EventError::NotDirect {
            name: name.to_owned(),
            kind: EventKind::Sysfs,
        }));
    }
    Err(Error::Event(crate::error::EventError::Unknown {
        name: name.to_owned(),
    }))
}

/// As [`direct_event`], and then step 6: a name of the table of the core `cpu` is
/// (among `sysfs`'s cores) is its event number.
///
/// # Errors
/// As [`direct_event`]; the errors of step 6 ([`core_event`]).
pub(crate) fn direct_event_on(
    name: &str,
    sysfs: &Sysfs,
    cpu: Option<u32>,
) -> Result<pmu_core::Event> {
    match direct_event(name) {
        Err(Error::Event(crate::error::EventError::Unknown { name })) => {
            match core_event(&name, sysfs, cpu)? {
                Some((_, event)) => Ok(pmu_core::Event::Raw(u64::from(event.code))),
                None => Err(Error::Event(crate::error::EventError::Unknown { name })),
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::machine::sysfs::fake;

    /// The arm64 tree with the CPUs of `midrs` (`cpus/`, no cpuinfo).
    fn arm64_with(midrs: &[(u32, u32)]) -> (tempfile::TempDir, Sysfs) {
        let dir = tempfile::tempdir().unwrap();
        fake::arm64(&dir.path().join("pmus"));
        crate::machine::cpu::fake::arm64_cpus(&dir.path().join("cpus"), midrs);
        let sysfs = Sysfs::at(dir.path().join("pmus"))
            .with_cores(dir.path().join("cpus"), dir.path().join("no-cpuinfo"));
        (dir, sysfs)
    }

    /// A Raspberry Pi 3: four Cortex-A53 r0p4 (MIDR 0x410FD034, Cortex-A53 TRM DDI 0500
    /// 4.3.1).
    fn pi3() -> (tempfile::TempDir, Sysfs) {
        arm64_with(&[
            (0, 0x410F_D034),
            (1, 0x410F_D034),
            (2, 0x410F_D034),
            (3, 0x410F_D034),
        ])
    }

    fn event_error(result: Result<impl fmt::Debug>) -> crate::error::EventError {
        match result {
            Err(Error::Event(e)) => e,
            other => panic!("{other:?}"),
        }
    }

    /// The running core's names, any case, are its raw events: L1D_CACHE_REFILL 0x03
    /// and L2D_CACHE_WB 0x18 (Cortex-A53 TRM DDI 0500, Table 12.28), for perf as
    /// PERF_TYPE_RAW (one core PMU), for the direct backend as `Raw`.
    #[test]
    fn core_names_resolve_case_insensitively() {
        let (_dir, sysfs) = pi3();
        for (name, code) in [
            ("L1D_CACHE_REFILL", 0x03),
            ("L2D_CACHE_WB", 0x18),
            ("l2d_cache_wb", 0x18),
            ("Bus_Access", 0x19),
        ] {
            let s = resolve(name, &sysfs).unwrap();
            assert_eq!(
                (s.kind, s.perf_type, s.config, s.name.as_str()),
                (EventKind::Raw, perf_type::RAW, [code, 0, 0, 0], name)
            );
            assert_eq!(s.config_with_user_read(), [code, 2, 0, 0]);
            let direct = direct_event_on(name, &sysfs, Some(1)).unwrap();
            assert_eq!(direct, pmu_core::Event::Raw(code));
            let event: Event = name.parse().unwrap();
            assert_eq!(
                event.direct_on(&sysfs, None).unwrap(),
                pmu_core::Event::Raw(code)
            );
        }
        // perf's own names keep their meaning.
        assert_eq!(resolve("cycles", &sysfs).unwrap().kind, EventKind::Hardware);
        assert!(matches!(
            direct_event_on("instructions", &sysfs, None),
            Ok(pmu_core::Event::Generic(GenericEvent::Instructions))
        ));
    }

    /// A sysfs alias with a table's name gives the same event number: arm64's
    /// `l1d_cache_refill` is `event=0x0003` (drivers/perf/arm_pmuv3.c,
    /// `ARMV8_EVENT_ATTR(l1d_cache_refill, …)`), as the table's L1D_CACHE_REFILL; the
    /// alias (spelt as the kernel does) goes first and keeps its PMU.
    #[test]
    fn a_sysfs_alias_and_the_table_agree() {
        let (_dir, sysfs) = pi3();
        for (alias, upper) in [
            ("l1d_cache_refill", "L1D_CACHE_REFILL"),
            ("inst_retired", "INST_RETIRED"),
            ("cpu_cycles", "CPU_CYCLES"),
        ] {
            let by_alias = resolve(alias, &sysfs).unwrap();
            let by_table = resolve(upper, &sysfs).unwrap();
            assert_eq!(by_alias.kind, EventKind::Sysfs);
            assert_eq!(by_alias.pmu.as_deref(), Some("armv8_pmuv3_0"));
            assert_eq!(by_table.kind, EventKind::Raw);
            assert_eq!(by_alias.config, by_table.config, "{alias}");
            // The direct backend takes both spellings, as the same number.
            assert_eq!(
                direct_event_on(alias, &sysfs, None).unwrap(),
                direct_event_on(upper, &sysfs, None).unwrap()
            );
        }
    }

    /// A typo gets the nearest name of the core; the error is typed and says it.
    #[test]
    fn a_typo_suggests_the_nearest_name() {
        let (_dir, sysfs) = pi3();
        let e = event_error(resolve("L1D_CACHE_REFIL", &sysfs));
        assert_eq!(
            e,
            crate::error::EventError::Misspelt {
                name: "L1D_CACHE_REFIL".into(),
                core: "Cortex-A53",
                nearest: "L1D_CACHE_REFILL"
            }
        );
        assert!(e
            .to_string()
            .starts_with("unknown event `L1D_CACHE_REFIL`; did you mean L1D_CACHE_REFILL?"));
        assert_eq!(
            event_error(direct_event_on("l2d_cache_wbb", &sysfs, None)).to_string(),
            "unknown event `l2d_cache_wbb`; did you mean L2D_CACHE_WB? (the Cortex-A53's events: `pmu-demo list`)"
        );
        // Far from every name: plain unknown, as without a table.
        assert!(matches!(
            event_error(resolve("cyclez", &sysfs)),
            crate::error::EventError::Unknown { .. }
        ));
        assert!(matches!(
            event_error(resolve("COMPLETELY_UNRELATED_NAME", &sysfs)),
            crate::error::EventError::Unknown { .. }
        ));
    }

    /// An event of other cores that this one lacks says which have it: STALL_FRONTEND
    /// (0x23) is in neither the Cortex-A53's Table 12.28 (TRM DDI 0500) nor the
    /// Cortex-A72's (DDI 0488), but in the Cortex-A76's (DDI 0597) and the
    /// Neoverse-N1's (DDI 0590); the Cortex-A7 (DDI 0464, chapter 11) implements
    /// 0x00-0x19 and 0x1D of the architectural events, not MEMORY_ERROR (0x1A), which
    /// the Cortex-A53 has.
    #[test]
    fn an_event_of_other_cores_says_which() {
        let (_dir, sysfs) = pi3();
        let e = event_error(resolve("STALL_FRONTEND", &sysfs));
        assert_eq!(
            e.to_string(),
            "the Cortex-A53 has no event STALL_FRONTEND; Cortex-A76, Neoverse-N1 have it"
        );
        assert_eq!(
            event_error(direct_event_on("stall_frontend", &sysfs, None)).to_string(),
            "the Cortex-A53 has no event STALL_FRONTEND; Cortex-A76, Neoverse-N1 have it"
        );
        // A Raspberry Pi 2 (Cortex-A7, MIDR 0x410FC075) through its /proc/cpuinfo.
        let dir = tempfile::tempdir().unwrap();
        let cpuinfo = dir.path().join("cpuinfo");
        fs::write(
            &cpuinfo,
            "processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 7\n\
             CPU variant\t: 0x0\nCPU part\t: 0xc07\nCPU revision\t: 5\n\n",
        )
        .unwrap();
        let pi2 =
            Sysfs::at(dir.path().join("no-pmus")).with_cores(dir.path().join("no-cpus"), &cpuinfo);
        match event_error(direct_event_on("memory_error", &pi2, Some(0))) {
            crate::error::EventError::NotOnThisCore { core, cores, .. } => {
                assert_eq!(core, "Cortex-A7");
                assert!(cores.contains(&"Cortex-A53"), "{cores:?}");
            }
            other => panic!("{other:?}"),
        }
        // The Cortex-A7's own names: L1D_CACHE_REFILL 0x03, and BUS_ACCESS_RD 0x60 of
        // its IMPLEMENTATION DEFINED ones (TRM DDI 0464, chapter 11).
        assert_eq!(
            direct_event_on("l1d_cache_refill", &pi2, Some(0)).unwrap(),
            pmu_core::Event::Raw(0x03)
        );
        assert_eq!(
            direct_event_on("BUS_ACCESS_RD", &pi2, Some(0)).unwrap(),
            pmu_core::Event::Raw(0x60)
        );
    }

    /// The events exact emulation covers: generic instructions and cycles (PERF_COUNT_HW_
    /// INSTRUCTIONS 1, PERF_COUNT_HW_CPU_CYCLES 0, include/uapi/linux/perf_event.h),
    /// Armv8's INST_RETIRED 0x08 and CPU_CYCLES 0x11 (Arm ARM D17.11) raw or by
    /// alias; not a cache or branch event, not software.
    #[test]
    fn instructions_and_cycles_are_recognised() {
        let dir = tempfile::tempdir().unwrap();
        crate::machine::sysfs::fake::arm64(dir.path());
        let sysfs = Sysfs::at(dir.path());
        for name in [
            "instructions",
            "cycles",
            "r08",
            "r11",
            "inst_retired",
            "cpu_cycles",
        ] {
            assert!(
                resolve(name, &sysfs)
                    .unwrap()
                    .counts_instructions_or_cycles(),
                "{name}"
            );
        }
        for name in [
            "branches",
            "r03",
            "l1d_cache_refill",
            "L1-dcache-loads",
            "task-clock",
        ] {
            assert!(
                !resolve(name, &sysfs)
                    .unwrap()
                    .counts_instructions_or_cycles(),
                "{name}"
            );
        }
    }

    /// QEMU's `-cpu max` (MIDR 0x000F0510: implementer 0, part 0x051, QEMU 10
    /// target/arm/tcg/cpu64.c `aarch64_max_tcg_initfn`) has no table: a table name says
    /// which MIDR it is and that `r<hex>` works; raw codes still do.
    #[test]
    fn a_core_without_a_table_says_so() {
        let (_dir, sysfs) = arm64_with(&[(0, 0x000F_0510), (1, 0x000F_0510)]);
        let e = event_error(resolve("L1D_CACHE_REFILL", &sysfs));
        match &e {
            crate::error::EventError::NoCoreTable { name, midr, cores } => {
                assert_eq!((name.as_str(), *midr), ("L1D_CACHE_REFILL", 0x000F_0510));
                assert!(cores.contains(&"Cortex-A53"), "{cores:?}");
            }
            other => panic!("{other:?}"),
        }
        let text = e.to_string();
        assert!(
            text.contains("MIDR 0x000f0510") && text.contains("r<hex>"),
            "{text}"
        );
        assert_eq!(
            event_error(direct_event_on("L1D_CACHE_REFILL", &sysfs, None)),
            e
        );
        // The sysfs alias still resolves, and raw codes and other names are untouched.
        assert_eq!(resolve("l1d_cache_refill", &sysfs).unwrap().config[0], 3);
        assert_eq!(resolve("r03", &sysfs).unwrap().config[0], 3);
        assert!(matches!(
            event_error(resolve("cyclez", &sysfs)),
            crate::error::EventError::Unknown { .. }
        ));
    }

    /// Without cores (x86, a fake PMU tree alone) a table name is just unknown.
    #[test]
    fn no_cores_no_table_names() {
        let (_dir, sysfs) = tree();
        assert!(matches!(
            event_error(resolve("L2D_CACHE_WB", &sysfs)),
            crate::error::EventError::Unknown { .. }
        ));
        assert!(matches!(
            event_error(direct_event_on("L2D_CACHE_WB", &sysfs, None)),
            crate::error::EventError::Unknown { .. }
        ));
    }

    /// big.LITTLE: two core PMUs, each with its `cpus` (as arm_pmu publishes them:
    /// drivers/perf/arm_pmu.c `armpmu_cpumask_show`); a table name goes to the PMU of
    /// its kind of core, with that PMU's type, not PERF_TYPE_RAW.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn heterogeneous_machines_get_the_kinds_pmu() {
        let dir = tempfile::tempdir().unwrap();
        let pmus = dir.path().join("pmus");
        let formats = [("event", "config:0-15"), ("rdpmc", "config1:1")];
        fake::pmu(&pmus, "armv8_cortex_a53", 8, &formats, &[]);
        fake::pmu(&pmus, "armv8_cortex_a72", 9, &formats, &[]);
        fs::write(pmus.join("armv8_cortex_a53/cpus"), "0-1\n").unwrap();
        fs::write(pmus.join("armv8_cortex_a72/cpus"), "2-3\n").unwrap();
        // Cortex-A72 MIDR 0x410FD083 (Cortex-A72 TRM DDI 0488, 4.3.1).
        let midrs = [
            (0, 0x410F_D034),
            (1, 0x410F_D034),
            (2, 0x410F_D083),
            (3, 0x410F_D083),
        ];
        crate::machine::cpu::fake::arm64_cpus(&dir.path().join("cpus"), &midrs);
        let sysfs = Sysfs::at(&pmus).with_cores(dir.path().join("cpus"), dir.path().join("none"));
        let cores = sysfs.cores();
        let event = &pmu_events::common::L1D_CACHE_REFILL;
        let little = core_spec("L1D_CACHE_REFILL", &cores.kinds()[0], event, &sysfs);
        let big = core_spec("L1D_CACHE_REFILL", &cores.kinds()[1], event, &sysfs);
        assert_eq!(
            (little.perf_type, little.pmu.as_deref(), little.config),
            (8, Some("armv8_cortex_a53"), [3, 0, 0, 0])
        );
        assert_eq!(
            (big.perf_type, big.pmu.as_deref(), big.kind),
            (9, Some("armv8_cortex_a72"), EventKind::Sysfs)
        );
        assert_eq!(big.config_with_user_read(), [3, 2, 0, 0]);
    }

    fn tree() -> (tempfile::TempDir, Sysfs) {
        let dir = tempfile::tempdir().unwrap();
        fake::intel(dir.path());
        fake::hybrid(dir.path());
        fake::arm64(dir.path());
        let sysfs = Sysfs::at(dir.path());
        (dir, sysfs)
    }

    /// The numbers of include/uapi/linux/perf_event.h, checked against the bindings of
    /// perf-event-open-sys where they exist.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn numbers_match_the_uapi_header() {
        use perf_event_open_sys::bindings as b;
        assert_eq!(perf_type::HARDWARE, b::PERF_TYPE_HARDWARE);
        assert_eq!(perf_type::SOFTWARE, b::PERF_TYPE_SOFTWARE);
        assert_eq!(perf_type::HW_CACHE, b::PERF_TYPE_HW_CACHE);
        assert_eq!(perf_type::RAW, b::PERF_TYPE_RAW);
        let hw = |n| resolve_builtin(n).unwrap().config[0];
        assert_eq!(hw("cycles"), u64::from(b::PERF_COUNT_HW_CPU_CYCLES));
        assert_eq!(hw("instructions"), u64::from(b::PERF_COUNT_HW_INSTRUCTIONS));
        assert_eq!(
            hw("cache-references"),
            u64::from(b::PERF_COUNT_HW_CACHE_REFERENCES)
        );
        assert_eq!(hw("cache-misses"), u64::from(b::PERF_COUNT_HW_CACHE_MISSES));
        assert_eq!(
            hw("branches"),
            u64::from(b::PERF_COUNT_HW_BRANCH_INSTRUCTIONS)
        );
        assert_eq!(
            hw("branch-misses"),
            u64::from(b::PERF_COUNT_HW_BRANCH_MISSES)
        );
        assert_eq!(hw("bus-cycles"), u64::from(b::PERF_COUNT_HW_BUS_CYCLES));
        assert_eq!(
            hw("stalled-cycles-frontend"),
            u64::from(b::PERF_COUNT_HW_STALLED_CYCLES_FRONTEND)
        );
        assert_eq!(
            hw("stalled-cycles-backend"),
            u64::from(b::PERF_COUNT_HW_STALLED_CYCLES_BACKEND)
        );
        assert_eq!(hw("ref-cycles"), u64::from(b::PERF_COUNT_HW_REF_CPU_CYCLES));
        assert_eq!(hw("task-clock"), u64::from(b::PERF_COUNT_SW_TASK_CLOCK));
        assert_eq!(hw("cpu-clock"), u64::from(b::PERF_COUNT_SW_CPU_CLOCK));
        assert_eq!(hw("page-faults"), u64::from(b::PERF_COUNT_SW_PAGE_FAULTS));
        assert_eq!(
            SW_CONTEXT_SWITCHES,
            u64::from(b::PERF_COUNT_SW_CONTEXT_SWITCHES)
        );
        assert_eq!(
            SW_CPU_MIGRATIONS,
            u64::from(b::PERF_COUNT_SW_CPU_MIGRATIONS)
        );
        assert_eq!(
            hw("cgroup-switches"),
            u64::from(b::PERF_COUNT_SW_CGROUP_SWITCHES)
        );
        // perf_event_open(2), PERF_TYPE_HW_CACHE: id | op << 8 | result << 16.
        let l1d_miss = u64::from(b::PERF_COUNT_HW_CACHE_L1D)
            | u64::from(b::PERF_COUNT_HW_CACHE_OP_READ) << 8
            | u64::from(b::PERF_COUNT_HW_CACHE_RESULT_MISS) << 16;
        assert_eq!(hw("L1-dcache-load-misses"), l1d_miss);
    }

    /// Every generic event of pmu-core resolves by its perf name, to the kind the
    /// `perf list` categories give it.
    #[test]
    fn pmu_core_generic_names_resolve() {
        for g in GenericEvent::ALL {
            let spec = resolve_builtin(g.perf_name()).unwrap_or_else(|| panic!("{g}"));
            assert!(
                matches!(spec.kind, EventKind::Hardware | EventKind::HwCache),
                "{g}"
            );
            assert!(spec.needs_cpu_pmu);
            assert_eq!(
                format!("{:?}", direct_event(g.perf_name())),
                format!("{:?}", Ok::<_, Error>(pmu_core::Event::Generic(g)))
            );
        }
        for name in builtin_names() {
            assert!(resolve_builtin(name).is_some(), "{name}");
        }
    }

    /// Cache names in perf's forms (tools/perf/util/evsel.c tables).
    #[test]
    fn cache_events() {
        let c = |n: &str| resolve_builtin(n).map(|s| (s.kind, s.config[0]));
        assert_eq!(c("L1-dcache-loads"), Some((EventKind::HwCache, 0)));
        assert_eq!(
            c("L1-dcache-load-misses"),
            Some((EventKind::HwCache, 0x1_00_00))
        );
        assert_eq!(
            c("L1-dcache-store-misses"),
            Some((EventKind::HwCache, 0x1_01_00))
        );
        assert_eq!(c("LLC-loads"), Some((EventKind::HwCache, 2)));
        assert_eq!(c("dTLB-load-misses"), Some((EventKind::HwCache, 0x1_00_03)));
        assert_eq!(c("iTLB-load-misses"), Some((EventKind::HwCache, 0x1_00_04)));
        assert_eq!(
            c("branch-load-misses"),
            Some((EventKind::HwCache, 0x1_00_05))
        );
        assert_eq!(
            c("L1-icache-prefetch-misses"),
            Some((EventKind::HwCache, 0x1_02_01))
        );
        // The hardware alias wins over the cache name `branches`.
        assert_eq!(c("branches"), Some((EventKind::Hardware, 4)));
        assert_eq!(c("L1-dcache"), None);
        assert_eq!(c("L1-dcache-load-load"), None);
        assert_eq!(c("L1-dcache-bogus"), None);
    }

    #[test]
    fn software_events() {
        for (name, id) in [
            ("task-clock", 1),
            ("context-switches", 3),
            ("cs", 3),
            ("cpu-migrations", 4),
            ("page-faults", 2),
        ] {
            let s = resolve_builtin(name).unwrap();
            assert_eq!(
                (s.kind, s.perf_type, s.software_id()),
                (EventKind::Software, 1, Some(id))
            );
            assert!(!s.needs_cpu_pmu);
            assert!(matches!(
                direct_event(name),
                Err(Error::Event(crate::error::EventError::NotDirect { .. }))
            ));
        }
    }

    /// Raw names: perf's `r<hex>` (1..16 hex digits).
    #[test]
    fn raw_events() {
        let (_dir, sysfs) = tree();
        let raw = resolve("r01c2", &sysfs).unwrap();
        assert_eq!(
            (raw.kind, raw.perf_type, raw.config[0]),
            (EventKind::Raw, 4, 0x1c2)
        );
        assert_eq!(resolve("rabc", &sysfs).unwrap().config[0], 0xabc);
        assert_eq!(
            format!("{:?}", direct_event("r11")),
            format!("{:?}", Ok::<_, Error>(pmu_core::Event::Raw(0x11)))
        );
        assert_eq!(
            format!("{:?}", resolve("r12xyz", &sysfs)),
            format!(
                "{:?}",
                Err::<(), Error>(Error::Event(crate::error::EventError::MalformedRaw {
                    name: "r12xyz".into(),
                    problem: RawProblem::NotHex { found: 'x' }
                }))
            )
        );
        assert!(matches!(
            resolve("r12345678901234567", &sysfs),
            Err(Error::Event(crate::error::EventError::MalformedRaw {
                problem: RawProblem::TooLong { digits: 17 },
                ..
            }))
        ));
        assert_eq!(
            format!("{:?}", direct_event("r12xyz")),
            format!(
                "{:?}",
                resolve("r12xyz", &sysfs).map(|_| pmu_core::Event::Raw(0))
            )
        );
        // Names that start with r but are not meant as raw codes.
        assert_eq!(
            resolve("ref-cycles", &sysfs).unwrap().kind,
            EventKind::Hardware
        );
        assert_eq!(
            format!("{:?}", resolve("rebar", &sysfs)),
            format!(
                "{:?}",
                Err::<(), Error>(Error::Event(crate::error::EventError::Unknown {
                    name: "rebar".into()
                }))
            )
        );
        assert_eq!(
            format!("{:?}", resolve("r", &sysfs)),
            format!(
                "{:?}",
                Err::<(), Error>(Error::Event(crate::error::EventError::Unknown {
                    name: "r".into()
                }))
            )
        );
    }

    #[test]
    fn unknown_names() {
        let (_dir, sysfs) = tree();
        assert_eq!(
            format!("{:?}", resolve("cyclez", &sysfs)),
            format!(
                "{:?}",
                Err::<(), Error>(Error::Event(crate::error::EventError::Unknown {
                    name: "cyclez".into()
                }))
            )
        );
        assert_eq!(
            format!("{:?}", direct_event("cyclez")),
            format!(
                "{:?}",
                Err::<(), Error>(Error::Event(crate::error::EventError::Unknown {
                    name: "cyclez".into()
                }))
            )
        );
        assert!(matches!(
            resolve("", &sysfs),
            Err(Error::Event(crate::error::EventError::Unknown { .. }))
        ));
        assert!(resolve("cyclez", &sysfs)
            .unwrap_err()
            .to_string()
            .contains("unknown event `cyclez`"));
    }

    /// The Intel `cpu` PMU: formats from arch/x86/events/intel/core.c; the `cycles`
    /// alias `event=0x3c` is the architectural UnHalted Core Cycles event (Intel SDM
    /// Vol. 3B, "Architectural Performance Monitoring").
    #[test]
    fn pmu_terms() {
        let (_dir, sysfs) = tree();
        let s = resolve("cpu/event=0x3c/", &sysfs).unwrap();
        assert_eq!(
            (s.kind, s.perf_type, s.config),
            (EventKind::Sysfs, 4, [0x3c, 0, 0, 0])
        );
        assert!(s.needs_cpu_pmu);
        let s = resolve("cpu/event=0xc4,umask=0x20,cmask=1,inv/", &sysfs).unwrap();
        assert_eq!(s.config[0], 0xc4 | 0x20 << 8 | 1 << 24 | 1 << 23);
        // An alias, expanded; then a term on top of it.
        assert_eq!(resolve("cpu/cycles/", &sysfs).unwrap().config[0], 0x3c);
        assert_eq!(
            resolve("cpu/cycles,cmask=2/", &sysfs).unwrap().config[0],
            0x3c | 2 << 24
        );
        // ldlat lives in config1.
        assert_eq!(
            resolve("cpu/mem-loads/", &sysfs).unwrap().config,
            [0x1cd, 3, 0, 0]
        );
        // Whole words.
        assert_eq!(
            resolve("cpu/config=0x1234,config2=7/", &sysfs)
                .unwrap()
                .config,
            [0x1234, 0, 7, 0]
        );
        // A later term overrides an earlier one in the same field.
        assert_eq!(
            resolve("cpu/event=0x11,event=0x22/", &sysfs)
                .unwrap()
                .config[0],
            0x22
        );
        // A bare alias name resolves through sysfs.
        let s = resolve("mem-loads", &sysfs).unwrap();
        assert_eq!(
            (s.pmu.as_deref(), s.name.as_str()),
            (Some("cpu"), "mem-loads")
        );
    }

    #[test]
    fn pmu_term_errors() {
        let (_dir, sysfs) = tree();
        match resolve("cpu/event=0x3c,bogus=1/", &sysfs) {
            Err(Error::Event(crate::error::EventError::UnknownFormatTerm { pmu, term, known })) => {
                assert_eq!((pmu.as_str(), term.as_str()), ("cpu", "bogus"));
                assert!(known.contains(&"umask".to_owned()));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            format!("{:?}", resolve("cpu/event=0x1ff/", &sysfs)),
            format!(
                "{:?}",
                Err::<(), Error>(Error::Event(crate::error::EventError::ValueTooWide {
                    pmu: "cpu".into(),
                    term: "event".into(),
                    value: 0x1ff,
                    bits: 8
                }))
            )
        );
        assert!(resolve("cpu/event=0x1ff/", &sysfs)
            .unwrap_err()
            .to_string()
            .contains("8-bit `event` field (largest 0xff)"));
        match resolve("nosuch/event=1/", &sysfs) {
            Err(Error::Event(crate::error::EventError::UnknownPmu { pmu, available })) => {
                assert_eq!(pmu, "nosuch");
                assert!(available.contains(&"cpu_core".to_owned()));
            }
            other => panic!("{other:?}"),
        }
        let problem = |name: &str| match resolve(name, &sysfs) {
            Err(Error::Event(crate::error::EventError::MalformedTerm { problem, .. })) => problem,
            other => panic!("{name}: {other:?}"),
        };
        assert_eq!(problem("cpu/event=0x3c"), TermProblem::Syntax);
        assert_eq!(problem("cpu/event=1/u"), TermProblem::Syntax);
        assert_eq!(problem("/event=1/"), TermProblem::Syntax);
        assert_eq!(problem("cpu//"), TermProblem::Empty);
        assert_eq!(problem("cpu/event=1,,umask=2/"), TermProblem::Empty);
        assert_eq!(
            problem("cpu/event=zz/"),
            TermProblem::BadNumber { value: "zz".into() }
        );
        assert_eq!(
            problem("cpu/event=0x10000000000000000/"),
            TermProblem::BadNumber {
                value: "0x10000000000000000".into()
            }
        );
        assert_eq!(problem("cpu/event=?/"), TermProblem::NeedsValue);
    }

    /// Hybrid x86: one core PMU per core type; a generic name on one of them uses the
    /// extended type (include/uapi/linux/perf_event.h PERF_PMU_TYPE_SHIFT,
    /// kernel/events/core.c perf_init_event).
    #[test]
    fn hybrid_pmus() {
        let (_dir, sysfs) = tree();
        let core = resolve("cpu_core/event=0x3c/", &sysfs).unwrap();
        let atom = resolve("cpu_atom/event=0x3c/", &sysfs).unwrap();
        assert_eq!((core.perf_type, atom.perf_type), (4, 10));
        assert_eq!(
            resolve("cpu_atom/topdown-retiring/", &sysfs)
                .unwrap()
                .config[0],
            0xc2
        );
        let s = resolve("cpu_atom/instructions/", &sysfs).unwrap();
        assert_eq!(
            (s.kind, s.perf_type, s.config[0]),
            (EventKind::Hardware, 0, 10 << 32 | 1)
        );
        let s = resolve("cpu_core/L1-dcache-load-misses/", &sysfs).unwrap();
        assert_eq!(
            (s.kind, s.perf_type, s.config[0]),
            (EventKind::HwCache, 3, 4 << 32 | 0x1_00_00)
        );
        // The plain `cpu` PMU has no extended type: the alias table decides.
        assert!(matches!(resolve("cpu/instructions/", &sysfs), Ok(s) if s.config[0] == 0xc0));
        assert!(matches!(
            resolve("cpu/ref-cycles/", &sysfs),
            Err(Error::Event(
                crate::error::EventError::UnknownFormatTerm { .. }
            ))
        ));
        // Software names are not core-PMU events.
        assert!(matches!(
            resolve("cpu_core/task-clock/", &sysfs),
            Err(Error::Event(
                crate::error::EventError::UnknownFormatTerm { .. }
            ))
        ));
    }

    /// arm64 PMUv3 in sysfs: the `rdpmc` term (config1:1) is what asks for user reads.
    #[test]
    fn arm64_pmu_and_user_read() {
        let (_dir, sysfs) = tree();
        let s = resolve("armv8_pmuv3_0/event=0x11/", &sysfs).unwrap();
        assert_eq!((s.perf_type, s.config), (8, [0x11, 0, 0, 0]));
        assert_eq!(s.config_with_user_read(), [0x11, 2, 0, 0]);
        assert_eq!(
            resolve("armv8_pmuv3_0/inst_retired/", &sysfs)
                .unwrap()
                .config[0],
            8
        );
        assert_eq!(
            resolve("armv8_pmuv3_0/event=0x11,long/", &sysfs)
                .unwrap()
                .config,
            [0x11, 1, 0, 0]
        );
        assert!(matches!(
            resolve("armv8_pmuv3_0/event=0x10000/", &sysfs),
            Err(Error::Event(crate::error::EventError::ValueTooWide {
                bits: 16,
                ..
            }))
        ));
        let cycles = resolve("armv8_pmuv3_0/cycles/", &sysfs).unwrap();
        assert_eq!(cycles.config_with_user_read(), [8 << 32, 2, 0, 0]);
        assert_eq!(
            resolve("inst_retired", &sysfs).unwrap().pmu.as_deref(),
            Some("armv8_pmuv3_0")
        );
        // Generic events ask with config1 bit 1; software events never ask.
        assert_eq!(
            resolve("instructions", &sysfs)
                .unwrap()
                .config_with_user_read(),
            [1, 2, 0, 0]
        );
        assert_eq!(
            resolve("task-clock", &sysfs)
                .unwrap()
                .config_with_user_read(),
            [1, 0, 0, 0]
        );
    }
}
