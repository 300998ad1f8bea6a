//! The common events of the Arm PMU architecture: numbers 0x0000..=0x003F and
//! 0x4000..=0x403F, whose presence a PE reports in PMCEID0/1 (Arm ARM, DDI 0487, "PMU
//! Event Descriptions", "Common event numbers"). ARMv7's PMUv2 numbers its architectural
//! events the same way (0x00..=0x1D; ARMv7 ARM, DDI 0406C, C12.8 "Event numbers and
//! mnemonics"), so the ARMv7 and ARMv8 cores' tables share these entries.
//!
//! Each event is a constant so a core's table names the ones it implements, and
//! [`ALL`] lists them in numeric order.

use crate::{Event, Placement};

macro_rules! common {
    ($($name:ident = $code:literal, $about:literal;)*) => {
        $(
            #[doc = $about]
            pub const $name: Event = Event {
                name: stringify!($name),
                code: $code,
                about: $about,
                placement: common!(@placement $name),
            };
        )*

        /// Every common event this crate names, in numeric order.
        pub const ALL: &[Event] = &[$($name,)*];
    };
    (@placement CHAIN) => { Placement::OddCounter };
    (@placement $name:ident) => { Placement::AnyCounter };
}

common! {
    SW_INCR = 0x0000, "Instruction architecturally executed, software increment (a PMSWINC_EL0 write).";
    L1I_CACHE_REFILL = 0x0001, "Level 1 instruction cache refill.";
    L1I_TLB_REFILL = 0x0002, "Level 1 instruction TLB refill.";
    L1D_CACHE_REFILL = 0x0003, "Level 1 data cache refill.";
    L1D_CACHE = 0x0004, "Level 1 data cache access.";
    L1D_TLB_REFILL = 0x0005, "Level 1 data TLB refill.";
    LD_RETIRED = 0x0006, "Instruction architecturally executed, load.";
    ST_RETIRED = 0x0007, "Instruction architecturally executed, store.";
    INST_RETIRED = 0x0008, "Instruction architecturally executed.";
    EXC_TAKEN = 0x0009, "Exception taken.";
    EXC_RETURN = 0x000a, "Instruction architecturally executed, exception return.";
    CID_WRITE_RETIRED = 0x000b, "Instruction architecturally executed, write to CONTEXTIDR.";
    PC_WRITE_RETIRED = 0x000c, "Instruction architecturally executed, software change of the PC.";
    BR_IMMED_RETIRED = 0x000d, "Instruction architecturally executed, immediate branch.";
    BR_RETURN_RETIRED = 0x000e, "Instruction architecturally executed, procedure return.";
    UNALIGNED_LDST_RETIRED = 0x000f, "Instruction architecturally executed, unaligned load or store.";
    BR_MIS_PRED = 0x0010, "Branch speculatively executed, mispredicted or not predicted.";
    CPU_CYCLES = 0x0011, "Cycle.";
    BR_PRED = 0x0012, "Predictable branch speculatively executed.";
    MEM_ACCESS = 0x0013, "Data memory access.";
    L1I_CACHE = 0x0014, "Level 1 instruction cache access.";
    L1D_CACHE_WB = 0x0015, "Level 1 data cache write-back.";
    L2D_CACHE = 0x0016, "Level 2 data cache access.";
    L2D_CACHE_REFILL = 0x0017, "Level 2 data cache refill.";
    L2D_CACHE_WB = 0x0018, "Level 2 data cache write-back.";
    BUS_ACCESS = 0x0019, "Bus access.";
    MEMORY_ERROR = 0x001a, "Local memory error.";
    INST_SPEC = 0x001b, "Operation speculatively executed.";
    TTBR_WRITE_RETIRED = 0x001c, "Instruction architecturally executed, write to TTBR.";
    BUS_CYCLES = 0x001d, "Bus cycle.";
    CHAIN = 0x001e, "Odd counter: overflow of the preceding even counter (counter chaining).";
    L1D_CACHE_ALLOCATE = 0x001f, "Level 1 data cache allocation without refill.";
    L2D_CACHE_ALLOCATE = 0x0020, "Level 2 data cache allocation without refill.";
    BR_RETIRED = 0x0021, "Instruction architecturally executed, branch.";
    BR_MIS_PRED_RETIRED = 0x0022, "Branch instruction architecturally executed, mispredicted.";
    STALL_FRONTEND = 0x0023, "No operation issued because of the frontend.";
    STALL_BACKEND = 0x0024, "No operation issued because of the backend.";
    L1D_TLB = 0x0025, "Level 1 data TLB access.";
    L1I_TLB = 0x0026, "Level 1 instruction TLB access.";
    L2I_CACHE = 0x0027, "Level 2 instruction cache access.";
    L2I_CACHE_REFILL = 0x0028, "Level 2 instruction cache refill.";
    L3D_CACHE_ALLOCATE = 0x0029, "Level 3 data cache allocation without refill.";
    L3D_CACHE_REFILL = 0x002a, "Level 3 data cache refill.";
    L3D_CACHE = 0x002b, "Level 3 data cache access.";
    L3D_CACHE_WB = 0x002c, "Level 3 data cache write-back.";
    L2D_TLB_REFILL = 0x002d, "Level 2 data TLB refill.";
    L2I_TLB_REFILL = 0x002e, "Level 2 instruction TLB refill.";
    L2D_TLB = 0x002f, "Level 2 data TLB access.";
    L2I_TLB = 0x0030, "Level 2 instruction TLB access.";
    REMOTE_ACCESS = 0x0031, "Access to another socket in a multi-socket system.";
    LL_CACHE = 0x0032, "Last level cache access.";
    LL_CACHE_MISS = 0x0033, "Last level cache miss.";
    DTLB_WALK = 0x0034, "Data TLB access with at least one translation table walk.";
    ITLB_WALK = 0x0035, "Instruction TLB access with at least one translation table walk.";
    LL_CACHE_RD = 0x0036, "Last level cache access, read.";
    LL_CACHE_MISS_RD = 0x0037, "Last level cache miss, read.";
    REMOTE_ACCESS_RD = 0x0038, "Access to another socket in a multi-socket system, read.";
    L1D_CACHE_LMISS_RD = 0x0039, "Level 1 data cache long-latency read miss.";
    OP_RETIRED = 0x003a, "Micro-operation architecturally executed.";
    OP_SPEC = 0x003b, "Micro-operation speculatively executed.";
    STALL = 0x003c, "No operation sent for execution.";
    STALL_SLOT_BACKEND = 0x003d, "No operation sent for execution on a slot, because of the backend.";
    STALL_SLOT_FRONTEND = 0x003e, "No operation sent for execution on a slot, because of the frontend.";
    STALL_SLOT = 0x003f, "No operation sent for execution on a slot.";
    SAMPLE_POP = 0x4000, "Statistical Profiling sample population.";
    SAMPLE_FEED = 0x4001, "Statistical Profiling sample taken.";
    SAMPLE_FILTRATE = 0x4002, "Statistical Profiling sample taken and not removed by filtering.";
    SAMPLE_COLLISION = 0x4003, "Statistical Profiling sample collided with a previous sample.";
    CNT_CYCLES = 0x4004, "Constant frequency cycles (AMUv1).";
    STALL_BACKEND_MEM = 0x4005, "Memory stall cycles (AMUv1).";
    L1I_CACHE_LMISS = 0x4006, "Level 1 instruction cache long-latency miss.";
    L2D_CACHE_LMISS_RD = 0x4009, "Level 2 data cache long-latency read miss.";
    L2I_CACHE_LMISS = 0x400a, "Level 2 instruction cache long-latency miss.";
    L3D_CACHE_LMISS_RD = 0x400b, "Level 3 data cache long-latency read miss.";
    TRB_WRAP = 0x400c, "Trace buffer current write pointer wrapped.";
    TRB_TRIG = 0x400e, "Trace buffer Trigger Event.";
    TRCEXTOUT0 = 0x4010, "Trace unit external output 0.";
    TRCEXTOUT1 = 0x4011, "Trace unit external output 1.";
    TRCEXTOUT2 = 0x4012, "Trace unit external output 2.";
    TRCEXTOUT3 = 0x4013, "Trace unit external output 3.";
    CTI_TRIGOUT4 = 0x4018, "Cross-trigger interface output trigger 4.";
    CTI_TRIGOUT5 = 0x4019, "Cross-trigger interface output trigger 5.";
    CTI_TRIGOUT6 = 0x401a, "Cross-trigger interface output trigger 6.";
    CTI_TRIGOUT7 = 0x401b, "Cross-trigger interface output trigger 7.";
    LDST_ALIGN_LAT = 0x4020, "Access with additional latency from alignment.";
    LD_ALIGN_LAT = 0x4021, "Load with additional latency from alignment.";
    ST_ALIGN_LAT = 0x4022, "Store with additional latency from alignment.";
    MEM_ACCESS_CHECKED = 0x4024, "Checked data memory access (Memory Tagging).";
    MEM_ACCESS_CHECKED_RD = 0x4025, "Checked data memory access, read (Memory Tagging).";
    MEM_ACCESS_CHECKED_WR = 0x4026, "Checked data memory access, write (Memory Tagging).";
}
