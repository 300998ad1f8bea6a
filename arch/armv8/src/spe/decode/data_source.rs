//! What a Data Source packet's value means. Before FEAT_SPE_FDS the encoding is
//! IMPLEMENTATION DEFINED (Arm ARM DDI 0487 D18.2 Data Source packet), so it is read by the
//! core that wrote the record: its MIDR_EL1 picks the encoding ([`DataSourceEncoding::for_midr`]).
//!
//! The three encodings and the cores that use them are those Linux 7.3's perf decodes
//! (tools/perf/util/arm-spe.c `data_source_handles`, `arm_spe__synth_data_source_common`,
//! `_ampereone`, `_hisi_hip`; values from arm-spe-decoder.h `enum arm_spe_common_data_source`,
//! `arm_spe_ampereone_data_source`, `arm_spe_hisi_hip_data_source`), which follow the cores'
//! Technical Reference Manuals; `tests/spe_decoder_vs_perf.rs` reads the tables back from
//! that source. Like perf, no encoding says anything for a store: only loads are decoded.

use pmu_events::CoreId;

/// A core family's Data Source encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum DataSourceEncoding {
    /// Arm's Neoverse and Cortex cores (and NVIDIA Olympus): 0x0 L1D, 0x8 L2, 0x9 peer core,
    /// 0xA local cluster, 0xB system cache, 0xC peer cluster, 0xD remote, 0xE DRAM.
    ArmCommon,
    /// AmpereOne (Ampere1A): 0x0 local chip cache or device, 0x3 SLC, 0x5 remote chip cache,
    /// 0x7 DDR, 0x8 L1D, 0x9 L2D; perf reads them as the common levels.
    AmpereOne,
    /// HiSilicon HIP12: peer CPU, L3, peer cluster, remote socket (each with a HITM
    /// variant), local and remote memory, non-cacheable device, L2 (with HITM), L1.
    HisiliconHip,
}

/// The cores whose encoding is known (MIDR implementer and part number; every variant and
/// revision, perf's `MIDR_ALL_VERSIONS`).
pub const DATA_SOURCE_CORES: &[(CoreId, DataSourceEncoding)] = &[
    (arm(0xD4D), DataSourceEncoding::ArmCommon), // Cortex-A715
    (arm(0xD81), DataSourceEncoding::ArmCommon), // Cortex-A720
    (arm(0xD89), DataSourceEncoding::ArmCommon), // Cortex-A720AE
    (arm(0xD87), DataSourceEncoding::ArmCommon), // Cortex-A725
    (arm(0xD4B), DataSourceEncoding::ArmCommon), // Cortex-A78C
    (arm(0xD44), DataSourceEncoding::ArmCommon), // Cortex-X1
    (arm(0xD4C), DataSourceEncoding::ArmCommon), // Cortex-X1C
    (arm(0xD4E), DataSourceEncoding::ArmCommon), // Cortex-X3
    (arm(0xD82), DataSourceEncoding::ArmCommon), // Cortex-X4
    (arm(0xD85), DataSourceEncoding::ArmCommon), // Cortex-X925
    (arm(0xD0C), DataSourceEncoding::ArmCommon), // Neoverse-N1
    (arm(0xD49), DataSourceEncoding::ArmCommon), // Neoverse-N2
    (arm(0xD40), DataSourceEncoding::ArmCommon), // Neoverse-V1
    (arm(0xD4F), DataSourceEncoding::ArmCommon), // Neoverse-V2
    (arm(0xD84), DataSourceEncoding::ArmCommon), // Neoverse-V3
    (
        CoreId {
            implementer: 0x4E,
            part: 0x010,
        },
        DataSourceEncoding::ArmCommon,
    ), // NVIDIA Olympus
    (
        CoreId {
            implementer: 0xC0,
            part: 0xAC4,
        },
        DataSourceEncoding::AmpereOne,
    ), // Ampere1A
    (
        CoreId {
            implementer: 0x48,
            part: 0xD06,
        },
        DataSourceEncoding::HisiliconHip,
    ), // HiSilicon HIP12
];

const fn arm(part: u16) -> CoreId {
    CoreId {
        implementer: 0x41,
        part,
    }
}

/// Where a load's data came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum DataSourceLevel {
    /// The level 1 data cache.
    L1d,
    /// The core's level 2 cache.
    L2,
    /// A level 3 cache (HiSilicon).
    L3,
    /// Another core's cache (a cache-to-cache transfer).
    PeerCore,
    /// A cache of the local cluster.
    LocalCluster,
    /// A cache of another cluster.
    PeerCluster,
    /// The system-level cache.
    SystemCache,
    /// Another socket or chip, level unknown.
    Remote,
    /// Local DRAM.
    Dram,
    /// DRAM of another socket (HiSilicon).
    RemoteDram,
    /// A non-cacheable device (HiSilicon).
    Device,
}

impl DataSourceLevel {
    /// The level in a word or two (`L1D`, `peer core`, `system cache`, `DRAM`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Self::L1d => "L1D",
            Self::L2 => "L2",
            Self::L3 => "L3",
            Self::PeerCore => "peer core",
            Self::LocalCluster => "local cluster",
            Self::PeerCluster => "peer cluster",
            Self::SystemCache => "system cache",
            Self::Remote => "remote",
            Self::Dram => "DRAM",
            Self::RemoteDram => "remote DRAM",
            Self::Device => "device",
        }
    }
}

/// A decoded Data Source value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DataSource {
    /// Where the data came from.
    pub level: DataSourceLevel,
    /// The line was modified in the cache it came from (HITM; HiSilicon reports it).
    pub modified: bool,
}

impl DataSourceEncoding {
    /// The encoding of the core `midr` names, `None` for a core whose encoding is not known.
    pub fn for_midr(midr: u32) -> Option<Self> {
        let id = CoreId::from_midr(midr);
        DATA_SOURCE_CORES
            .iter()
            .find(|(core, _)| *core == id)
            .map(|(_, encoding)| *encoding)
    }

    /// What `value` means for a load (`is_store` false); `None` for a store (no encoding
    /// describes stores) or a value the encoding does not define.
    pub const fn decode(self, value: u64, is_store: bool) -> Option<DataSource> {
        if is_store {
            return None;
        }
        let (level, modified) = match (self, value) {
            (Self::ArmCommon, 0x0) | (Self::AmpereOne, 0x8) => (DataSourceLevel::L1d, false),
            (Self::ArmCommon, 0x8) | (Self::AmpereOne, 0x9) => (DataSourceLevel::L2, false),
            // AmpereOne's "local chip cache or device", read as perf reads it.
            (Self::ArmCommon, 0x9) | (Self::AmpereOne, 0x0) => (DataSourceLevel::PeerCore, false),
            (Self::ArmCommon, 0xA) => (DataSourceLevel::LocalCluster, false),
            (Self::ArmCommon, 0xB) | (Self::AmpereOne, 0x3) => {
                (DataSourceLevel::SystemCache, false)
            }
            (Self::ArmCommon, 0xC) => (DataSourceLevel::PeerCluster, false),
            (Self::ArmCommon, 0xD) | (Self::AmpereOne, 0x5) => (DataSourceLevel::Remote, false),
            (Self::ArmCommon, 0xE) | (Self::AmpereOne, 0x7) => (DataSourceLevel::Dram, false),
            (Self::HisiliconHip, 0 | 1) => (DataSourceLevel::PeerCore, value == 1),
            (Self::HisiliconHip, 2 | 3) => (DataSourceLevel::L3, value == 3),
            (Self::HisiliconHip, 4 | 5) => (DataSourceLevel::PeerCluster, value == 5),
            (Self::HisiliconHip, 6 | 7) => (DataSourceLevel::Remote, value == 7),
            (Self::HisiliconHip, 8) => (DataSourceLevel::Dram, false),
            (Self::HisiliconHip, 9) => (DataSourceLevel::RemoteDram, false),
            (Self::HisiliconHip, 13) => (DataSourceLevel::Device, false),
            (Self::HisiliconHip, 16 | 17) => (DataSourceLevel::L2, value == 17),
            (Self::HisiliconHip, 18) => (DataSourceLevel::L1d, false),
            _ => return None,
        };
        Some(DataSource { level, modified })
    }
}
