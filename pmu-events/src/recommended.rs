//! The Arm PMU's IMPLEMENTATION DEFINED events with recommended numbers: 0x0040..=0x00BF,
//! which a core may implement under these numbers and names or not at all, and which its
//! PMCEID registers do not report (Arm ARM, DDI 0487, "PMU Event Descriptions",
//! "IMPLEMENTATION DEFINED event numbers", the recommended events). Cortex-A53, -A72,
//! -A76 and Neoverse-N1 each implement a subset, listed in their own tables.
//!
//! [`ALL`] lists them in numeric order.

events! {
    list ALL;
    L1D_CACHE_RD = 0x0040, "Level 1 data cache access by a read.";
    L1D_CACHE_WR = 0x0041, "Level 1 data cache access by a write.";
    L1D_CACHE_REFILL_RD = 0x0042, "Level 1 data cache refill caused by a read.";
    L1D_CACHE_REFILL_WR = 0x0043, "Level 1 data cache refill caused by a write.";
    L1D_CACHE_REFILL_INNER = 0x0044, "Level 1 data cache refill served from inside the cluster.";
    L1D_CACHE_REFILL_OUTER = 0x0045, "Level 1 data cache refill served from outside the cluster.";
    L1D_CACHE_WB_VICTIM = 0x0046, "Level 1 data cache line written back because it was evicted.";
    L1D_CACHE_WB_CLEAN = 0x0047, "Level 1 data cache line written back by a clean or a coherency request.";
    L1D_CACHE_INVAL = 0x0048, "Level 1 data cache line invalidated.";
    L1D_TLB_REFILL_RD = 0x004c, "Level 1 data TLB refill caused by a read.";
    L1D_TLB_REFILL_WR = 0x004d, "Level 1 data TLB refill caused by a write.";
    L1D_TLB_RD = 0x004e, "Level 1 data TLB access by a read.";
    L1D_TLB_WR = 0x004f, "Level 1 data TLB access by a write.";
    L2D_CACHE_RD = 0x0050, "Level 2 data cache access by a read.";
    L2D_CACHE_WR = 0x0051, "Level 2 data cache access by a write.";
    L2D_CACHE_REFILL_RD = 0x0052, "Level 2 data cache refill caused by a read.";
    L2D_CACHE_REFILL_WR = 0x0053, "Level 2 data cache refill caused by a write.";
    L2D_CACHE_WB_VICTIM = 0x0056, "Level 2 data cache line written back because it was evicted.";
    L2D_CACHE_WB_CLEAN = 0x0057, "Level 2 data cache line written back by a clean or a coherency request.";
    L2D_CACHE_INVAL = 0x0058, "Level 2 data cache line invalidated.";
    L2D_TLB_REFILL_RD = 0x005c, "Level 2 data TLB refill caused by a read.";
    L2D_TLB_REFILL_WR = 0x005d, "Level 2 data TLB refill caused by a write.";
    L2D_TLB_RD = 0x005e, "Level 2 data TLB access by a read.";
    L2D_TLB_WR = 0x005f, "Level 2 data TLB access by a write.";
    BUS_ACCESS_RD = 0x0060, "Bus access that reads.";
    BUS_ACCESS_WR = 0x0061, "Bus access that writes.";
    BUS_ACCESS_SHARED = 0x0062, "Bus access to Normal, Cacheable, Shareable memory.";
    BUS_ACCESS_NOT_SHARED = 0x0063, "Bus access to memory that is not Normal, Cacheable and Shareable.";
    BUS_ACCESS_NORMAL = 0x0064, "Bus access to Normal memory.";
    BUS_ACCESS_PERIPH = 0x0065, "Bus access to Device memory (a peripheral).";
    MEM_ACCESS_RD = 0x0066, "Data memory access by a read.";
    MEM_ACCESS_WR = 0x0067, "Data memory access by a write.";
    UNALIGNED_LD_SPEC = 0x0068, "Unaligned load speculatively executed.";
    UNALIGNED_ST_SPEC = 0x0069, "Unaligned store speculatively executed.";
    UNALIGNED_LDST_SPEC = 0x006a, "Unaligned load or store speculatively executed.";
    LDREX_SPEC = 0x006c, "Load-exclusive (LDREX, LDXR) speculatively executed.";
    STREX_PASS_SPEC = 0x006d, "Store-exclusive speculatively executed that succeeded.";
    STREX_FAIL_SPEC = 0x006e, "Store-exclusive speculatively executed that failed.";
    STREX_SPEC = 0x006f, "Store-exclusive speculatively executed.";
    LD_SPEC = 0x0070, "Load operation speculatively executed.";
    ST_SPEC = 0x0071, "Store operation speculatively executed.";
    LDST_SPEC = 0x0072, "Load or store operation speculatively executed.";
    DP_SPEC = 0x0073, "Integer data-processing operation speculatively executed.";
    ASE_SPEC = 0x0074, "Advanced SIMD operation speculatively executed.";
    VFP_SPEC = 0x0075, "Floating-point operation speculatively executed.";
    PC_WRITE_SPEC = 0x0076, "Software change of the PC speculatively executed.";
    CRYPTO_SPEC = 0x0077, "Cryptographic operation speculatively executed.";
    BR_IMMED_SPEC = 0x0078, "Immediate branch speculatively executed.";
    BR_RETURN_SPEC = 0x0079, "Procedure return speculatively executed.";
    BR_INDIRECT_SPEC = 0x007a, "Indirect branch speculatively executed.";
    ISB_SPEC = 0x007c, "ISB barrier speculatively executed.";
    DSB_SPEC = 0x007d, "DSB barrier speculatively executed.";
    DMB_SPEC = 0x007e, "DMB barrier speculatively executed.";
    EXC_UNDEF = 0x0081, "Exception taken locally: undefined instruction or another synchronous exception.";
    EXC_SVC = 0x0082, "Exception taken locally: supervisor call (SVC).";
    EXC_PABORT = 0x0083, "Exception taken locally: instruction abort.";
    EXC_DABORT = 0x0084, "Exception taken locally: data abort or SError.";
    EXC_IRQ = 0x0086, "Exception taken locally: IRQ.";
    EXC_FIQ = 0x0087, "Exception taken locally: FIQ.";
    EXC_SMC = 0x0088, "Exception taken locally: secure monitor call (SMC).";
    EXC_HVC = 0x008a, "Exception taken locally: hypervisor call (HVC).";
    EXC_TRAP_PABORT = 0x008b, "Instruction abort trapped to a higher Exception level.";
    EXC_TRAP_DABORT = 0x008c, "Data abort or SError trapped to a higher Exception level.";
    EXC_TRAP_OTHER = 0x008d, "Other synchronous exception trapped to a higher Exception level.";
    EXC_TRAP_IRQ = 0x008e, "IRQ trapped to a higher Exception level.";
    EXC_TRAP_FIQ = 0x008f, "FIQ trapped to a higher Exception level.";
    RC_LD_SPEC = 0x0090, "Load-acquire speculatively executed (release consistency).";
    RC_ST_SPEC = 0x0091, "Store-release speculatively executed (release consistency).";
    L3D_CACHE_RD = 0x00a0, "Level 3 cache access by a read.";
    L3D_CACHE_WR = 0x00a1, "Level 3 cache access by a write.";
    L3D_CACHE_REFILL_RD = 0x00a2, "Level 3 cache refill caused by a read.";
    L3D_CACHE_REFILL_WR = 0x00a3, "Level 3 cache refill caused by a write.";
    L3D_CACHE_WB_VICTIM = 0x00a6, "Level 3 cache line written back because it was evicted.";
    L3D_CACHE_WB_CLEAN = 0x00a7, "Level 3 cache line written back by a clean or a coherency request.";
    L3D_CACHE_INVAL = 0x00a8, "Level 3 cache line invalidated.";
}
