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

use crate::{common, recommended, Core, CoreId, Event, Family};

// Its IMPLEMENTATION DEFINED events (Table 12.28; names as Linux spells them, above).
events! {
    EXT_MEM_REQ = 0xC0, "Request sent to external memory.";
    EXT_MEM_REQ_NC = 0xC1, "Request sent to external memory for a non-cacheable access.";
    PREFETCH_LINEFILL = 0xC2, "Cache linefill started by the data prefetcher.";
    PREFETCH_LINEFILL_DROP = 0xC3, "Instruction cache throttled: a prefetch linefill held back.";
    READ_ALLOC_ENTER = 0xC4, "Data cache switched to read-allocate mode (streaming stores detected).";
    READ_ALLOC = 0xC5, "Data cache in read-allocate mode: stores do not allocate lines.";
    PRE_DECODE_ERR = 0xC6, "Instruction pre-decode error.";
    STALL_SB_FULL = 0xC7, "Data write that stalled the pipeline on a full store buffer.";
    EXT_SNOOP = 0xC8, "Data for this core supplied by the SCU from another core's cache.";
    BR_COND = 0xC9, "Conditional branch executed.";
    BR_INDIRECT_MISPRED = 0xCA, "Indirect branch mispredicted.";
    BR_INDIRECT_MISPRED_ADDR = 0xCB, "Indirect branch mispredicted because its predicted target was wrong.";
    BR_COND_MISPRED = 0xCC, "Conditional branch mispredicted.";
    L1I_CACHE_ERR = 0xD0, "Memory error in the L1 instruction cache's data or tag RAM.";
    L1D_CACHE_ERR = 0xD1, "Memory error in the L1 data cache's data, tag or dirty RAM, correctable or not.";
    TLB_ERR = 0xD2, "Memory error in a TLB RAM.";
    OTHER_IQ_DEP_STALL = 0xE0, "Cycle with an empty issue queue not explained by an instruction cache or micro-TLB miss or a pre-decode error.";
    IC_DEP_STALL = 0xE1, "Cycle with an empty issue queue while an instruction cache miss is handled.";
    IUTLB_DEP_STALL = 0xE2, "Cycle with an empty issue queue while an instruction micro-TLB miss is handled.";
    DECODE_DEP_STALL = 0xE3, "Cycle with an empty issue queue while a pre-decode error is handled.";
    OTHER_INTERLOCK_STALL = 0xE4, "Cycle stalled by an interlock other than on a SIMD/floating-point or load/store instruction.";
    AGU_DEP_STALL = 0xE5, "Cycle a load or store waits for the register its address is computed from.";
    SIMD_DEP_STALL = 0xE6, "Cycle stalled by an interlock on an Advanced SIMD or floating-point operation.";
    LD_DEP_STALL = 0xE7, "Cycle the write stage stalls on a load miss.";
    ST_DEP_STALL = 0xE8, "Cycle the write stage stalls on a store.";
}

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
    EXT_MEM_REQ,
    EXT_MEM_REQ_NC,
    PREFETCH_LINEFILL,
    PREFETCH_LINEFILL_DROP,
    READ_ALLOC_ENTER,
    READ_ALLOC,
    PRE_DECODE_ERR,
    STALL_SB_FULL,
    EXT_SNOOP,
    BR_COND,
    BR_INDIRECT_MISPRED,
    BR_INDIRECT_MISPRED_ADDR,
    BR_COND_MISPRED,
    L1I_CACHE_ERR,
    L1D_CACHE_ERR,
    TLB_ERR,
    OTHER_IQ_DEP_STALL,
    IC_DEP_STALL,
    IUTLB_DEP_STALL,
    DECODE_DEP_STALL,
    OTHER_INTERLOCK_STALL,
    AGU_DEP_STALL,
    SIMD_DEP_STALL,
    LD_DEP_STALL,
    ST_DEP_STALL,
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
