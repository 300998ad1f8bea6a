//! Reading the `arm_spe` PMUs the running kernel publishes under
//! `/sys/bus/event_source/devices/` (feature `std`): their perf `type`, their `format/`
//! entries and their `caps/`.
//!
//! Layout, from Linux 6.12 and 7.3 drivers/perf/arm_spe_pmu.c: one directory per SPE PMU
//! instance (`arm_spe_0`, ...), with `type` (the `perf_event_attr.type` number),
//! `format/<field>` (`config1:0-63`), `caps/{arch_inst, ernd, count_size, min_interval}`
//! (decimal) and `cpumask`. `format/inv_event_filter` exists only on PEs with FEAT_SPE_FnE.
//! Linux 7.3 adds `caps/event_filter` (hex, `0x…`: the PMSEVFR_EL1 bits that read 1 after its
//! probe wrote all ones) and publishes `format/discard` only from FEAT_SPEv1p2, the
//! FEAT_SPE_EFT fields (`simd_filter`, `float_filter`, the `*_filter_mask` bits) only with
//! PMSIDR_EL1.EFT and `format/inv_data_src_filter` only with PMSIDR_EL1.FDS
//! (`arm_spe_pmu_format_attr_is_visible()`), so the format tells which of these the PE has.

extern crate std;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::string::String;
use std::vec::Vec;

use super::{LinuxSpeDriver, PerfFormat, PerfTarget};
use crate::spe::capabilities::SpeCapabilities;
use crate::spe::error::SpeError;
use crate::spe::perf::PerfField;
use crate::spe::version::SpeVersion;

/// Where Linux lists PMUs.
pub const DEVICES: &str = "/sys/bus/event_source/devices";

/// Why reading a PMU from sysfs failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum SysfsError {
    /// A file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: io::Error,
    },
    /// A format entry did not parse.
    Format(SpeError),
    /// A `type` or `caps/` file did not hold a number (decimal; `caps/event_filter`: hex).
    NotANumber {
        /// The file.
        path: PathBuf,
    },
}

impl core::fmt::Display for SysfsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Io { path, error } => write!(f, "cannot read {}: {error}", path.display()),
            Self::Format(e) => e.fmt(f),
            Self::NotANumber { path } => write!(
                f,
                "{} does not hold a number: is this an arm_spe PMU directory?",
                path.display()
            ),
        }
    }
}

impl std::error::Error for SysfsError {}

/// Where a [`SpePmu`]'s format came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatSource {
    /// The PMU's `format/` directory.
    Sysfs,
    /// No `format/` directory: the documented Linux 6.12 layout.
    Documented,
}

/// The `caps/` files of an SPE PMU (each `None` when its file is missing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SysfsCaps {
    /// `caps/arch_inst`: PMSIDR_EL1.ArchInst.
    pub arch_inst: Option<bool>,
    /// `caps/ernd`: PMSIDR_EL1.ERnd.
    pub ernd: Option<bool>,
    /// `caps/count_size`: latency counter width in bits (12 or 16).
    pub count_size: Option<u32>,
    /// `caps/min_interval`: minimum sampling interval.
    pub min_interval: Option<u32>,
    /// `caps/event_filter` (Linux 7.3): the PMSEVFR_EL1 bits that read 1 after the driver
    /// wrote all ones, the event filter bits it accepts.
    pub event_filter: Option<u64>,
}

/// One `arm_spe` PMU instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpePmu {
    /// The directory name, which is also the PMU name in event strings (`arm_spe_0`).
    pub name: String,
    /// The directory.
    pub dir: PathBuf,
    /// `type`: the `perf_event_attr.type` value.
    pub pmu_type: u32,
    /// The format the kernel publishes (or the documented one).
    pub format: PerfFormat,
    /// Where `format` came from.
    pub format_source: FormatSource,
    /// The published capabilities.
    pub caps: SysfsCaps,
}

impl SpePmu {
    /// Whether the kernel publishes the inverted event filter (so the PE has FEAT_SPE_FnE).
    pub fn has_inverted_filter(&self) -> bool {
        self.format.field(PerfField::InvEventFilter).is_some()
    }

    /// Whether the kernel publishes the FEAT_SPE_EFT type filters (Linux 7.3 on a PE with
    /// PMSIDR_EL1.EFT).
    pub fn has_extended_type_filter(&self) -> bool {
        PerfField::EXTENDED_TYPE
            .iter()
            .any(|&f| self.format.field(f).is_some())
    }

    /// Whether the kernel publishes `inv_data_src_filter` (Linux 7.3 on a PE with
    /// PMSIDR_EL1.FDS).
    pub fn has_data_source_filter(&self) -> bool {
        self.format.field(PerfField::InvDataSrcFilter).is_some()
    }

    /// The SPE version to assume: sysfs does not publish PMSVer. FEAT_SPE_FnE implies
    /// FEAT_SPEv1p2, and so does `discard` (Linux 7.3 publishes it from PMSVer V1P2 on);
    /// otherwise the conservative FEAT_SPE.
    pub fn assumed_version(&self) -> SpeVersion {
        if self.has_inverted_filter() || self.format.field(PerfField::Discard).is_some() {
            SpeVersion::V1p2
        } else {
            SpeVersion::V1p0
        }
    }

    /// The kernel this PMU's files show at least: Linux 7.3 when it publishes anything 6.12
    /// does not (`caps/event_filter`, a 7.3 format field), else `None` (6.12, or a 7.3
    /// kernel on a PE without the new features: sysfs cannot tell those apart).
    pub fn newer_kernel_evidence(&self) -> Option<LinuxSpeDriver> {
        let only_7_3 = self.caps.event_filter.is_some()
            || PerfField::ALL.iter().any(|&f| {
                self.format.field(f).is_some()
                    && LinuxSpeDriver::Linux6_12.rules().format.field(f).is_none()
            });
        only_7_3.then_some(LinuxSpeDriver::Linux7_3)
    }

    /// The perf target for `driver`'s rules on this PMU: its published format, the
    /// capabilities for `version`, and (where the kernel publishes it) the PMSEVFR_EL1
    /// read-back.
    pub fn target(&self, driver: LinuxSpeDriver, version: SpeVersion) -> PerfTarget {
        let target = PerfTarget::new(driver, &self.capabilities(version)).with_format(self.format);
        match self.caps.event_filter {
            Some(read_back) => target.with_event_filter_read_back(read_back),
            None => target,
        }
    }

    /// Capabilities for validating a configuration in user space, built from what sysfs
    /// publishes. Linux's driver refuses PEs without the event, type and latency filters, so
    /// FE/FT/FL are set; FnE, EFT and FDS follow the format fields the kernel shows only with
    /// them; MaxSize (not published) is taken as 64 bytes; the buffer is EL1's.
    pub fn capabilities(&self, version: SpeVersion) -> SpeCapabilities {
        let interval_code: u64 = match self.caps.min_interval {
            Some(512) => 0b0010,
            Some(768) => 0b0011,
            Some(1024) => 0b0100,
            Some(1536) => 0b0101,
            Some(2048) => 0b0110,
            Some(3072) => 0b0111,
            Some(4096) => 0b1000,
            _ => 0b0000,
        };
        let count_size_code: u64 = match self.caps.count_size {
            Some(16) => 0b0011,
            _ => 0b0010,
        };
        // PMSIDR_EL1 fields (Arm ARM D24.7.14): FE 0, FT 1, FL 2, ArchInst 3, ERnd 5, FnE 6,
        // FDS 7, Interval 11:8, MaxSize 15:12 (0b0110 = 64 B), CountSize 19:16, EFT 26.
        let pmsidr = 0b111
            | u64::from(self.caps.arch_inst.unwrap_or(false)) << 3
            | u64::from(self.caps.ernd.unwrap_or(false)) << 5
            | u64::from(self.has_inverted_filter()) << 6
            | u64::from(self.has_data_source_filter()) << 7
            | interval_code << 8
            | 0b0110 << 12
            | count_size_code << 16
            | u64::from(self.has_extended_type_filter()) << 26;
        SpeCapabilities::decode_raw(version, pmsidr, 0)
    }
}

fn read(path: &Path) -> Result<String, SysfsError> {
    fs::read_to_string(path).map_err(|error| SysfsError::Io {
        path: path.to_path_buf(),
        error,
    })
}

fn read_number(path: &Path) -> Result<u32, SysfsError> {
    read(path)?
        .trim()
        .parse()
        .map_err(|_| SysfsError::NotANumber {
            path: path.to_path_buf(),
        })
}

fn read_optional_number(path: &Path) -> Result<Option<u32>, SysfsError> {
    if path.exists() {
        read_number(path).map(Some)
    } else {
        Ok(None)
    }
}

/// A `0x…` file (Linux 7.3 `arm_spe_pmu_cap_show_hex()`: `"0x%llx\n"`), if present.
fn read_optional_hex(path: &Path) -> Result<Option<u64>, SysfsError> {
    if !path.exists() {
        return Ok(None);
    }
    let text = read(path)?;
    let text = text.trim();
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    u64::from_str_radix(digits, 16)
        .map(Some)
        .map_err(|_| SysfsError::NotANumber {
            path: path.to_path_buf(),
        })
}

/// Reads a `format/` directory into a [`PerfFormat`] (see [`PerfFormat::from_entries`]).
pub fn read_format(format_dir: &Path) -> Result<PerfFormat, SysfsError> {
    let entries = fs::read_dir(format_dir).map_err(|error| SysfsError::Io {
        path: format_dir.to_path_buf(),
        error,
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| SysfsError::Io {
            path: format_dir.to_path_buf(),
            error,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        files.push((name, read(&entry.path())?));
    }
    PerfFormat::from_entries(files.iter().map(|(n, t)| (n.as_str(), t.as_str())))
        .map_err(SysfsError::Format)
}

/// Reads one PMU directory (`/sys/bus/event_source/devices/arm_spe_0`).
pub fn read_pmu(dir: &Path) -> Result<SpePmu, SysfsError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let pmu_type = read_number(&dir.join("type"))?;
    let format_dir = dir.join("format");
    let (format, format_source) = if format_dir.is_dir() {
        (read_format(&format_dir)?, FormatSource::Sysfs)
    } else {
        (PerfFormat::linux_6_12(), FormatSource::Documented)
    };
    let caps_dir = dir.join("caps");
    let flag = |n: Option<u32>| n.map(|v| v != 0);
    let caps = SysfsCaps {
        arch_inst: flag(read_optional_number(&caps_dir.join("arch_inst"))?),
        ernd: flag(read_optional_number(&caps_dir.join("ernd"))?),
        count_size: read_optional_number(&caps_dir.join("count_size"))?,
        min_interval: read_optional_number(&caps_dir.join("min_interval"))?,
        event_filter: read_optional_hex(&caps_dir.join("event_filter"))?,
    };
    Ok(SpePmu {
        name,
        dir: dir.to_path_buf(),
        pmu_type,
        format,
        format_source,
        caps,
    })
}

/// Every `arm_spe*` PMU under `devices` (normally [`DEVICES`]), sorted by name. A missing
/// `devices` directory means no PMU (an empty list), not an error.
pub fn find_spe_pmus_in(devices: &Path) -> Result<Vec<SpePmu>, SysfsError> {
    let entries = match fs::read_dir(devices) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(SysfsError::Io {
                path: devices.to_path_buf(),
                error,
            })
        }
    };
    let mut pmus = Vec::new();
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with("arm_spe") {
            pmus.push(read_pmu(&entry.path())?);
        }
    }
    pmus.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(pmus)
}

/// Every `arm_spe*` PMU of the running kernel.
pub fn find_spe_pmus() -> Result<Vec<SpePmu>, SysfsError> {
    find_spe_pmus_in(Path::new(DEVICES))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spe::perf::{ConfigWord, FormatField};

    /// A scratch directory under the system temp dir, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Self {
            let dir = std::env::temp_dir()
                .join(std::format!("pmu-armv8-sysfs-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// A tree shaped like Linux 6.12's (sprintf of `ATTR_CFG_FLD_*` strings with "\n", caps as
    /// "%u\n"), on a PE without FnE (no inv_event_filter file) and with a field this crate
    /// does not know.
    #[test]
    fn reads_a_linux_shaped_tree() {
        let scratch = Scratch::new("tree");
        let pmu = scratch.0.join("arm_spe_0");
        write(&pmu.join("type"), "10\n");
        for (name, text) in [
            ("ts_enable", "config:0\n"),
            ("pa_enable", "config:1\n"),
            ("pct_enable", "config:2\n"),
            ("jitter", "config:16\n"),
            ("branch_filter", "config:32\n"),
            ("load_filter", "config:33\n"),
            ("store_filter", "config:34\n"),
            ("event_filter", "config1:0-63\n"),
            ("min_latency", "config2:0-11\n"),
            ("some_future_field", "config:60\n"),
        ] {
            write(&pmu.join("format").join(name), text);
        }
        write(&pmu.join("caps/min_interval"), "1024\n");
        write(&pmu.join("caps/count_size"), "12\n");
        write(&pmu.join("caps/arch_inst"), "0\n");
        write(&pmu.join("caps/ernd"), "1\n");
        write(&scratch.0.join("cpu/type"), "4\n");

        let pmus = find_spe_pmus_in(&scratch.0).unwrap();
        assert_eq!(pmus.len(), 1);
        let p = &pmus[0];
        assert_eq!((p.name.as_str(), p.pmu_type), ("arm_spe_0", 10));
        assert_eq!(p.format_source, FormatSource::Sysfs);
        assert!(!p.has_inverted_filter());
        assert_eq!(
            p.format.field(PerfField::MinLatency),
            Some(FormatField {
                word: ConfigWord::Config2,
                lo: 0,
                hi: 11
            })
        );
        let documented = PerfFormat::linux_6_12().without(PerfField::InvEventFilter);
        assert_eq!(p.format, documented);
        assert_eq!(p.newer_kernel_evidence(), None);
        assert_eq!(p.caps.event_filter, None);
        let caps = p.capabilities(p.assumed_version());
        assert_eq!(caps.version, SpeVersion::V1p0);
        assert_eq!(caps.min_interval, Ok(1024));
        assert!(caps.extended_random && !caps.architectural_instructions);
        assert!(!caps.inverted_event_filter);
        assert_eq!(caps.validate(), Ok(()));
    }

    /// A tree shaped like Linux 7.3's on a FEAT_SPEv1p2 PE with FnE, EFT and FDS: every 7.3
    /// field (arm_spe_pmu_format_attr_is_visible() shows them all there) and
    /// `caps/event_filter` as `arm_spe_pmu_cap_show_hex()` prints it ("0x%llx\n"). The
    /// capabilities rebuilt from it have FnE, EFT and FDS, and the target takes the read-back.
    #[test]
    fn reads_a_linux_7_3_shaped_tree() {
        let scratch = Scratch::new("tree73");
        let pmu = scratch.0.join("arm_spe_0");
        write(&pmu.join("type"), "10\n");
        for (field, place) in PerfFormat::linux_7_3().iter() {
            write(
                &pmu.join("format").join(field.name()),
                &std::format!("{place}\n"),
            );
        }
        write(&pmu.join("caps/min_interval"), "1024\n");
        write(&pmu.join("caps/count_size"), "12\n");
        // E[1], E[3], E[5], E[6], E[7], E[9], E[11]: v1p2's architected events plus LLC miss.
        write(&pmu.join("caps/event_filter"), "0xaea\n");
        let p = read_pmu(&pmu).unwrap();
        assert_eq!(p.format, PerfFormat::linux_7_3());
        assert_eq!(p.caps.event_filter, Some(0xAEA));
        assert_eq!(p.newer_kernel_evidence(), Some(LinuxSpeDriver::Linux7_3));
        assert_eq!(p.assumed_version(), SpeVersion::V1p2);
        let caps = p.capabilities(p.assumed_version());
        assert!(caps.inverted_event_filter && caps.extended_type_filter && caps.data_source_filter);
        let target = p.target(LinuxSpeDriver::Linux7_3, SpeVersion::V1p2);
        assert_eq!(target.pmsevfr_res0, !0xAEA);
        // 6.12's rules ignore the read-back: its table still refuses E[9].
        let old = p.target(LinuxSpeDriver::Linux6_12, SpeVersion::V1p2);
        assert_ne!(old.pmsevfr_res0 & (1 << 9), 0);
        write(&pmu.join("caps/event_filter"), "lots\n");
        assert!(matches!(read_pmu(&pmu), Err(SysfsError::NotANumber { .. })));
    }

    /// No `format/` directory: the documented layout; no devices directory: no PMU.
    #[test]
    fn falls_back_to_documented_layout() {
        let scratch = Scratch::new("fallback");
        write(&scratch.0.join("arm_spe_1/type"), "11\n");
        let pmus = find_spe_pmus_in(&scratch.0).unwrap();
        assert_eq!(pmus[0].format, PerfFormat::linux_6_12());
        assert_eq!(pmus[0].format_source, FormatSource::Documented);
        assert_eq!(pmus[0].assumed_version(), SpeVersion::V1p2);
        assert!(find_spe_pmus_in(&scratch.0.join("missing"))
            .unwrap()
            .is_empty());
    }

    /// A malformed entry of a known field is a typed error naming the field.
    #[test]
    fn malformed_entry_is_an_error() {
        let scratch = Scratch::new("bad");
        let pmu = scratch.0.join("arm_spe_0");
        write(&pmu.join("type"), "10\n");
        write(&pmu.join("format/event_filter"), "config1:63-0\n");
        match read_pmu(&pmu) {
            Err(SysfsError::Format(SpeError::PerfFormatInvalid { field })) => {
                assert_eq!(field, PerfField::EventFilter)
            }
            other => panic!("{other:?}"),
        }
        write(&pmu.join("type"), "ten\n");
        assert!(matches!(read_pmu(&pmu), Err(SysfsError::NotANumber { .. })));
    }
}
