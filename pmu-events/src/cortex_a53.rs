//! Cortex-A53 (Raspberry Pi 3, Zero 2 W): the events of the Cortex-A53 MPCore Technical
//! Reference Manual (ARM DDI 0500), 12.9 "Events", Table 12.28 "PMU events".
//!
//! The TRM gives no mnemonic for the IMPLEMENTATION DEFINED events 0xC0..=0xE8; their
//! names here are the ones Linux's perf uses for this core
//! (tools/perf/pmu-events/arch/arm64/arm/cortex-a53 in Linux 6.12). The TRM spells 0x60 and
//! 0x61 BUS_ACCESS_LD and BUS_ACCESS_ST; the Arm ARM's names for those numbers,
//! BUS_ACCESS_RD and BUS_ACCESS_WR, are used, as Linux does.
//!
//! Table 12.28 lists 0x0E BR_RETURN_RETIRED without a bit on the PMU event bus; a
//! program that must know whether this core counts it reads PMCEID0_EL0 bit 14.

use crate::{common, implementation_defined as own, recommended, Core, CoreId, Event, Family};

/// The Cortex-A53's events, in numeric order.
static EVENTS: &[Event] = &[
    common::SW_INCR,
    common::L1I_CACHE_REFILL,
    common::L1I_TLB_REFILL,
    common::L1D_CACHE_REFILL,
    common::L1D_CACHE,
    common::L1D_TLB_REFILL,
    common::LD_RETIRED,
    common::ST_RETIRED,
    common::INST_RETIRED,
    common::EXC_TAKEN,
    common::EXC_RETURN,
    common::CID_WRITE_RETIRED,
    common::PC_WRITE_RETIRED,
    common::BR_IMMED_RETIRED,
    common::BR_RETURN_RETIRED,
    common::UNALIGNED_LDST_RETIRED,
    common::BR_MIS_PRED,
    common::CPU_CYCLES,
    common::BR_PRED,
    common::MEM_ACCESS,
    common::L1I_CACHE,
    common::L1D_CACHE_WB,
    common::L2D_CACHE,
    common::L2D_CACHE_REFILL,
    common::L2D_CACHE_WB,
    common::BUS_ACCESS,
    common::MEMORY_ERROR,
    common::BUS_CYCLES,
    common::CHAIN,
    recommended::BUS_ACCESS_RD,
    recommended::BUS_ACCESS_WR,
    recommended::BR_INDIRECT_SPEC,
    recommended::EXC_IRQ,
    recommended::EXC_FIQ,
    own(0xc0, "EXT_MEM_REQ", "Request sent to external memory."),
    own(0xc1, "EXT_MEM_REQ_NC", "Request sent to external memory for a non-cacheable access."),
    own(0xc2, "PREFETCH_LINEFILL", "Cache linefill started by the data prefetcher."),
    own(0xc3, "PREFETCH_LINEFILL_DROP", "Instruction cache throttled: a prefetch linefill held back."),
    own(0xc4, "READ_ALLOC_ENTER", "Data cache switched to read-allocate mode (streaming stores detected)."),
    own(0xc5, "READ_ALLOC", "Data cache in read-allocate mode: stores do not allocate lines."),
    own(0xc6, "PRE_DECODE_ERR", "Instruction pre-decode error."),
    own(0xc7, "STALL_SB_FULL", "Data write that stalled the pipeline on a full store buffer."),
    own(0xc8, "EXT_SNOOP", "Data for this core supplied by the SCU from another core's cache."),
    own(0xc9, "BR_COND", "Conditional branch executed."),
    own(0xca, "BR_INDIRECT_MISPRED", "Indirect branch mispredicted."),
    own(0xcb, "BR_INDIRECT_MISPRED_ADDR", "Indirect branch mispredicted because its predicted target was wrong."),
    own(0xcc, "BR_COND_MISPRED", "Conditional branch mispredicted."),
    own(0xd0, "L1I_CACHE_ERR", "Memory error in the L1 instruction cache's data or tag RAM."),
    own(0xd1, "L1D_CACHE_ERR", "Memory error in the L1 data cache's data, tag or dirty RAM, correctable or not."),
    own(0xd2, "TLB_ERR", "Memory error in a TLB RAM."),
    own(0xe0, "OTHER_IQ_DEP_STALL", "Cycle with an empty issue queue not explained by an instruction cache or micro-TLB miss or a pre-decode error."),
    own(0xe1, "IC_DEP_STALL", "Cycle with an empty issue queue while an instruction cache miss is handled."),
    own(0xe2, "IUTLB_DEP_STALL", "Cycle with an empty issue queue while an instruction micro-TLB miss is handled."),
    own(0xe3, "DECODE_DEP_STALL", "Cycle with an empty issue queue while a pre-decode error is handled."),
    own(0xe4, "OTHER_INTERLOCK_STALL", "Cycle stalled by an interlock other than on a SIMD/floating-point or load/store instruction."),
    own(0xe5, "AGU_DEP_STALL", "Cycle a load or store waits for the register its address is computed from."),
    own(0xe6, "SIMD_DEP_STALL", "Cycle stalled by an interlock on an Advanced SIMD or floating-point operation."),
    own(0xe7, "LD_DEP_STALL", "Cycle the write stage stalls on a load miss."),
    own(0xe8, "ST_DEP_STALL", "Cycle the write stage stalls on a store."),
];

/// Cortex-A53: MIDR implementer 0x41 (Arm), part number 0xD03 (TRM, "Main ID Register,
/// EL1").
pub static CORTEX_A53: Core = Core {
    name: "Cortex-A53",
    found_in: "Raspberry Pi 3, Zero 2 W",
    id: CoreId {
        implementer: 0x41,
        part: 0xD03,
    },
    family: Family::PmuV3,
    events: EVENTS,
};
