//! The Cortex-A7 MPCore (Raspberry Pi 2 Model B v1.1): the ARMv7 architectural events it
//! implements and its IMPLEMENTATION DEFINED ones, as PMXEVTYPER.evtCount takes them.
//!
//! Source: Cortex-A7 MPCore Technical Reference Manual (ARM DDI 0464F), chapter 11
//! "Performance Monitoring Unit", its table of PMU events: the architectural events
//! 0x00-0x19 and 0x1D (0x1A-0x1C are not implemented), and 0x60, 0x61, 0x86, 0x87,
//! 0xC0-0xC5, 0xC7-0xCA. ARMv7 numbers its architectural events as ARMv8 does (ARMv7
//! ARM, DDI 0406C, C12.8), so those entries are [`crate::common`]'s. The
//! IMPLEMENTATION DEFINED ones are named as Arm names the same events of later cores
//! (the ARMv8 Arm ARM's BUS_ACCESS_RD, EXC_IRQ, …; the Cortex-A53's EXT_MEM_REQ,
//! PREFETCH_LINEFILL, … in Linux 6.12 tools/perf/pmu-events/arch/arm64/arm/cortex-a53).

use crate::common::*;
use crate::{CoreId, Family};

events! {
    BUS_ACCESS_RD = 0x60, "Bus access, read.";
    BUS_ACCESS_WR = 0x61, "Bus access, write.";
    EXC_IRQ = 0x86, "IRQ exception taken.";
    EXC_FIQ = 0x87, "FIQ exception taken.";
    EXT_MEM_REQ = 0xC0, "Request to external memory.";
    EXT_MEM_REQ_NC = 0xC1, "Request to external memory for a non-cacheable location.";
    PREFETCH_LINEFILL = 0xC2, "Cache line fill started by the prefetcher.";
    PREFETCH_LINEFILL_DROP = 0xC3, "Prefetcher line fill dropped.";
    READ_ALLOC_ENTER = 0xC4, "Data cache switched into read-allocate mode (a streaming write pattern seen).";
    READ_ALLOC = 0xC5, "Cycle in read-allocate mode (stores not allocating in the data cache).";
    ETM_EXT_OUT0 = 0xC7, "ETM external output 0 asserted.";
    ETM_EXT_OUT1 = 0xC8, "ETM external output 1 asserted.";
    STALL_SB_FULL = 0xC9, "Pipeline stalled by a data write because the store buffer was full.";
    EXT_SNOOP = 0xCA, "Data read served by a snoop of another core of the cluster instead of the L2 or an external read.";
}

/// The Cortex-A7 and its events, in numeric order.
pub static CORTEX_A7: crate::Core = crate::Core {
    name: "Cortex-A7",
    found_in: "Raspberry Pi 2",
    // MIDR 0x410FC075 (r0p5): implementer 0x41 (Arm), part 0xC07 (TRM, "Main ID Register").
    id: CoreId {
        implementer: 0x41,
        part: 0xC07,
    },
    family: Family::Armv7,
    events: &[
        SW_INCR,
        L1I_CACHE_REFILL,
        L1I_TLB_REFILL,
        L1D_CACHE_REFILL,
        L1D_CACHE,
        L1D_TLB_REFILL,
        LD_RETIRED,
        ST_RETIRED,
        INST_RETIRED,
        EXC_TAKEN,
        EXC_RETURN,
        CID_WRITE_RETIRED,
        PC_WRITE_RETIRED,
        BR_IMMED_RETIRED,
        BR_RETURN_RETIRED,
        UNALIGNED_LDST_RETIRED,
        BR_MIS_PRED,
        CPU_CYCLES,
        BR_PRED,
        MEM_ACCESS,
        L1I_CACHE,
        L1D_CACHE_WB,
        L2D_CACHE,
        L2D_CACHE_REFILL,
        L2D_CACHE_WB,
        BUS_ACCESS,
        BUS_CYCLES,
        BUS_ACCESS_RD,
        BUS_ACCESS_WR,
        EXC_IRQ,
        EXC_FIQ,
        EXT_MEM_REQ,
        EXT_MEM_REQ_NC,
        PREFETCH_LINEFILL,
        PREFETCH_LINEFILL_DROP,
        READ_ALLOC_ENTER,
        READ_ALLOC,
        ETM_EXT_OUT0,
        ETM_EXT_OUT1,
        STALL_SB_FULL,
        EXT_SNOOP,
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The TRM's PMU events table (chapter 11): 27 architectural events (0x00-0x19,
    /// 0x1D) and 14 IMPLEMENTATION DEFINED ones, in numeric order; 0x1A-0x1C and 0xC6
    /// are not events of this core.
    #[test]
    fn trm_events_table_in_numeric_order() {
        assert_eq!(CORTEX_A7.events.len(), 41);
        assert!(CORTEX_A7.events.windows(2).all(|w| w[0].code < w[1].code));
        let architectural = CORTEX_A7.events.iter().filter(|e| e.code < 0x40);
        assert_eq!(architectural.clone().count(), 27);
        // The architectural entries are the common table's, word for word.
        for e in architectural {
            assert!(ALL.contains(e), "{}", e.name);
        }
        for absent in [0x1A, 0x1B, 0x1C, 0xC6] {
            assert_eq!(CORTEX_A7.event_by_code(absent), None, "{absent:#x}");
        }
        assert_eq!(
            crate::for_midr(0x410F_C075).map(|c| c.name),
            Some("Cortex-A7")
        );
    }
}
