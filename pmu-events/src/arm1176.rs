//! The ARM1176JZF-S (Raspberry Pi 1, Zero, Zero W): the events its two programmable
//! counters CR0 and CR1 take in the PMCR EvtCount0/EvtCount1 fields, and 0xFF, one count
//! per cycle (what the cycle counter CCR counts).
//!
//! Source: ARM1176JZF-S Technical Reference Manual (ARM DDI 0301H), 3.2.51 "c15,
//! Performance Monitor Control Register", Table 3-137 "Performance monitoring events":
//! 0x00-0x07, 0x09-0x0D, 0x0F-0x12 and 0x20-0x26 are events; 0x08, 0x0E, 0x13-0x1F and
//! 0x27-0xFE are reserved.
//!
//! Names are Linux's where Linux has one (`enum armv6_perf_types` in
//! drivers/perf/arm_v6_pmu.c, Linux 6.12, without the `ARMV6_PERFCTR_` prefix), so they
//! match what perf users of an ARM1176 board know; the events Linux leaves out are named
//! in the same terse style. One exception: Linux calls 0x20 `NOP`, because it parks a
//! stopped counter on it (the ETMEXTOUT\[0\] signal is quiet without an ETM driving
//! it); that is a use, not the event, so this table calls it `ETMEXTOUT0`.

use crate::{CoreId, Family};

events! {
    list EVENTS;
    ICACHE_MISS = 0x00, "Instruction cache miss on a cacheable location (an external fetch follows).";
    IBUF_STALL = 0x01, "Cycle stalled because the instruction buffer had no instruction to issue (an instruction cache or MicroTLB miss).";
    DDEP_STALL = 0x02, "Cycle stalled because of a data dependency between instructions.";
    ITLB_MISS = 0x03, "Instruction MicroTLB miss.";
    DTLB_MISS = 0x04, "Data MicroTLB miss.";
    BR_EXEC = 0x05, "Branch instruction executed, whether or not it changed the program flow.";
    BR_MISPREDICT = 0x06, "Branch mispredicted.";
    INSTR_EXEC = 0x07, "Instruction executed.";
    DCACHE_HIT = 0x09, "Data cache access to a cacheable location, hit or miss, cache maintenance excluded (Linux's name; it counts misses too).";
    DCACHE_ACCESS = 0x0A, "Data cache access to any location, cacheable or not, cache maintenance excluded.";
    DCACHE_MISS = 0x0B, "Data cache miss, cache maintenance excluded.";
    DCACHE_WBACK = 0x0C, "Data cache write-back, once per half line (four words) written.";
    SW_PC_CHANGE = 0x0D, "Software changed the PC without a change of mode.";
    MAIN_TLB_MISS = 0x0F, "Main TLB miss.";
    EXPL_D_ACCESS = 0x10, "Explicit external data or peripheral access.";
    LSU_FULL_STALL = 0x11, "Cycle stalled because the load/store unit's request queue was full.";
    WBUF_DRAINED = 0x12, "Write buffer drained, by a Data Synchronization Barrier or a Strongly Ordered access.";
    ETMEXTOUT0 = 0x20, "Cycle with the ETM output ETMEXTOUT0 asserted (Linux's NOP: where it parks a stopped counter).";
    ETMEXTOUT1 = 0x21, "Cycle with the ETM output ETMEXTOUT1 asserted.";
    ETMEXTOUT_SUM = 0x22, "ETMEXTOUT0 plus ETMEXTOUT1: 2 in a cycle with both asserted.";
    PROC_CALL_EXEC = 0x23, "Procedure call executed (a return address pushed on the return stack).";
    PROC_RET_EXEC = 0x24, "Procedure return executed (a return address popped off the return stack).";
    PROC_RET_PRED = 0x25, "Procedure return executed with its return address predicted correctly.";
    PROC_RET_MISPREDICT = 0x26, "Procedure return executed with its return address mispredicted.";
    CPU_CYCLES = 0xFF, "Cycle (what the cycle counter CCR counts; CR0 and CR1 can count it too).";
}

/// The ARM1176JZF-S and its events, in numeric order.
pub static ARM1176: crate::Core = crate::Core {
    name: "ARM1176JZF-S",
    found_in: "Raspberry Pi 1, Zero, Zero W",
    // Main ID Register 0x410FB767: implementer 0x41 (Arm), part 0xB76 (TRM, "c0, Main ID
    // Register").
    id: CoreId {
        implementer: 0x41,
        part: 0xB76,
    },
    family: Family::Arm1176,
    events: EVENTS,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// TRM Table 3-137: 24 selectable events plus 0xFF, in numeric order, and the
    /// reserved numbers (0x08, 0x0E, 0x13-0x1F, 0x27-0xFE) absent.
    #[test]
    fn table_3_137_has_24_events_and_the_cycle_count() {
        assert_eq!(ARM1176.events.len(), 25);
        assert!(ARM1176.events.windows(2).all(|w| w[0].code < w[1].code));
        for reserved in [0x08, 0x0E, 0x13, 0x1F, 0x27, 0xFE] {
            assert_eq!(ARM1176.event_by_code(reserved), None, "{reserved:#x}");
        }
        assert_eq!(
            crate::for_midr(0x410F_B767).map(|c| c.name),
            Some("ARM1176JZF-S")
        );
        assert_eq!(ARM1176.event("instr_exec").map(|e| e.code), Some(0x07));
    }
}
