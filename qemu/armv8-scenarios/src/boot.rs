//! Boot code, the exception vector table and the EL1 <-> EL0 switch.
//!
//! `_start` is where the loader jumps on the boot core, with the MMU off:
//!
//! - at EL1 on QEMU `-M virt`;
//! - at EL2 on a Raspberry Pi 3/4/5 (the firmware's armstub, or on the Pi 5 its
//!   trusted firmware, drops from EL3 to EL2 before the kernel: the Linux arm64 boot
//!   protocol, Documentation/arch/arm64/booting.rst, "CPU mode") and on QEMU's
//!   `raspi3b`/`raspi4b` (hw/arm/boot.c starts a Linux-style kernel at EL2 where the
//!   CPU has EL2). From EL2 `_start` hands over to EL1 the way Linux's `init_el2`
//!   does for a non-VHE kernel (arch/arm64/kernel/head.S, arch/arm64/include/asm/
//!   el2_setup.h): EL1 in AArch64 (HCR_EL2.RW), MIDR/MPIDR passed through
//!   (VPIDR_EL2/VMPIDR_EL2: EL1 reads of MIDR_EL1 return VPIDR_EL2 when EL2 exists),
//!   every event counter to EL1 (MDCR_EL2.HPMN = PMCR_EL0.N) and no PMU trap to EL2
//!   (MDCR_EL2.TPM/TPMCR = 0), no FP/SIMD trap (CPTR_EL2), the EL1 timers, SCTLR_EL1
//!   with the MMU and caches off.
//!
//! A core other than core 0 that arrives here (a loader that starts every core at the
//! entry point) parks in `wfi` with interrupts masked. The MMU stays off: every data
//! access is then Device-nGnRnE, correct for the MMIO we touch and good enough for RAM
//! (the target is built with strict alignment). No exclusive (LDXR/STXR) is used on
//! this memory: without a cacheable mapping their behaviour is IMPLEMENTATION DEFINED.

use core::arch::global_asm;

/// Saved registers of an exception, as the vector stubs lay them out on the stack.
#[repr(C)]
#[derive(Debug)]
pub struct Frame {
    /// x0..x30.
    pub x: [u64; 31],
    /// ELR_EL1: where to return.
    pub elr: u64,
    /// SPSR_EL1: the interrupted PSTATE.
    pub spsr: u64,
    /// ESR_EL1: the syndrome.
    pub esr: u64,
    /// FAR_EL1: the faulting address, for aborts.
    pub far: u64,
    _pad: u64,
}

// Frame: 36 eight-byte slots (288 bytes, 16-byte aligned).
global_asm!(
    r#"
.section .text.boot, "ax"
.global _start
_start:
    // Only core 0 (MPIDR_EL1.Aff0 = 0) runs the image.
    mrs x0, mpidr_el1
    and x0, x0, #0xff
    cbnz x0, park_core
    // x19: the exception level we were entered at (CurrentEL bits 3:2), for boot_main.
    mrs x19, CurrentEL
    lsr x19, x19, #2
    cmp x19, #2
    b.ne at_el1
    // EL2 -> EL1 (see the module doc).
    mov x0, #(1 << 31)
    msr hcr_el2, x0
    mrs x0, midr_el1
    msr vpidr_el2, x0
    mrs x0, mpidr_el1
    msr vmpidr_el2, x0
    mrs x0, pmcr_el0
    ubfx x0, x0, #11, #5
    msr mdcr_el2, x0
    mov x0, #0x33ff
    msr cptr_el2, x0
    msr hstr_el2, xzr
    mov x0, #3
    msr cnthctl_el2, x0
    msr cntvoff_el2, xzr
    ldr x0, =0x30d00800
    msr sctlr_el1, x0
    // SPSR_EL2: EL1h with D, A, I and F masked; return to at_el1.
    mov x0, #0x3c5
    msr spsr_el2, x0
    adr x0, at_el1
    msr elr_el2, x0
    eret
at_el1:
    ldr x0, =__stack_el1_top
    mov sp, x0
    // FP/SIMD at EL1 and EL0 (CPACR_EL1.FPEN = 0b11): compiled code may use q registers.
    mov x0, #(3 << 20)
    msr cpacr_el1, x0
    // Take exceptions through our table from here on.
    ldr x0, =exception_vectors
    msr vbar_el1, x0
    // Make both writes take effect before any FP instruction or exception.
    isb
    ldr x0, =__bss_start
    ldr x1, =__bss_end
1:  cmp x0, x1
    b.hs 2f
    str xzr, [x0], #8
    b 1b
2:  mov x0, x19
    bl boot_main
3:  wfe
    b 3b

// Where the other cores wait: interrupts masked, nothing routed to them, so `wfi`
// sleeps for good (QEMU halts the vCPU: it retires no instruction).
.global park_core
park_core:
    msr daifset, #0xf
1:  wfi
    b 1b

// One vector entry: make room for the frame, save x0/x1, go to the common path with
// the entry number in x0.
.macro VECTOR kind
.balign 0x80
    sub sp, sp, #288
    stp x0, x1, [sp, #0]
    mov x0, #\kind
    b exception_common
.endm

.section .text
.balign 0x800
.global exception_vectors
exception_vectors:
    VECTOR 0
    VECTOR 1
    VECTOR 2
    VECTOR 3
    VECTOR 4
    VECTOR 5
    VECTOR 6
    VECTOR 7
    VECTOR 8
    VECTOR 9
    VECTOR 10
    VECTOR 11
    VECTOR 12
    VECTOR 13
    VECTOR 14
    VECTOR 15

exception_common:
    stp x2, x3, [sp, #16]
    stp x4, x5, [sp, #32]
    stp x6, x7, [sp, #48]
    stp x8, x9, [sp, #64]
    stp x10, x11, [sp, #80]
    stp x12, x13, [sp, #96]
    stp x14, x15, [sp, #112]
    stp x16, x17, [sp, #128]
    stp x18, x19, [sp, #144]
    stp x20, x21, [sp, #160]
    stp x22, x23, [sp, #176]
    stp x24, x25, [sp, #192]
    stp x26, x27, [sp, #208]
    stp x28, x29, [sp, #224]
    mrs x1, elr_el1
    stp x30, x1, [sp, #240]
    mrs x1, spsr_el1
    mrs x2, esr_el1
    stp x1, x2, [sp, #256]
    mrs x1, far_el1
    str x1, [sp, #272]
    mov x1, x0
    mov x0, sp
    bl handle_exception
    // 1: the EL0 code asked to go back to the EL1 caller of run_el0.
    cmp x0, #1
    b.eq el0_return
    ldp x30, x1, [sp, #240]
    msr elr_el1, x1
    ldp x1, x2, [sp, #256]
    msr spsr_el1, x1
    ldp x0, x1, [sp, #0]
    ldp x2, x3, [sp, #16]
    ldp x4, x5, [sp, #32]
    ldp x6, x7, [sp, #48]
    ldp x8, x9, [sp, #64]
    ldp x10, x11, [sp, #80]
    ldp x12, x13, [sp, #96]
    ldp x14, x15, [sp, #112]
    ldp x16, x17, [sp, #128]
    ldp x18, x19, [sp, #144]
    ldp x20, x21, [sp, #160]
    ldp x22, x23, [sp, #176]
    ldp x24, x25, [sp, #192]
    ldp x26, x27, [sp, #208]
    ldp x28, x29, [sp, #224]
    add sp, sp, #288
    eret

// u64 run_el0(entry: x0, arg: x1, stack_top: x2): runs entry(arg) at EL0 with IRQs
// masked until it executes `svc #0`; returns its x0.
.global run_el0
run_el0:
    stp x19, x20, [sp, #-112]!
    stp x21, x22, [sp, #16]
    stp x23, x24, [sp, #32]
    stp x25, x26, [sp, #48]
    stp x27, x28, [sp, #64]
    stp x29, x30, [sp, #80]
    mrs x3, daif
    str x3, [sp, #96]
    mov x3, sp
    ldr x4, =EL1_SAVED_SP
    str x3, [x4]
    msr sp_el0, x2
    msr elr_el1, x0
    // SPSR: M = EL0t, D/A/I/F masked.
    mov x3, #0x3c0
    msr spsr_el1, x3
    mov x0, x1
    eret

// Reached from the vector path with the frame on the EL1 stack: frame.x0 is the result.
el0_return:
    ldr x0, [sp, #0]
    ldr x4, =EL1_SAVED_SP
    ldr x3, [x4]
    mov sp, x3
    ldr x3, [sp, #96]
    msr daif, x3
    ldp x21, x22, [sp, #16]
    ldp x23, x24, [sp, #32]
    ldp x25, x26, [sp, #48]
    ldp x27, x28, [sp, #64]
    ldp x29, x30, [sp, #80]
    ldp x19, x20, [sp], #112
    ret

// EL0 side: the end of every EL0 function.
.global el0_exit
el0_exit:
    svc #0
    b el0_exit
"#
);

/// The exception level the code runs at now (CurrentEL.EL).
pub fn current_el() -> u64 {
    let el: u64;
    // SAFETY: CurrentEL is readable at EL1 and above and has no side effect.
    unsafe {
        core::arch::asm!("mrs {}, CurrentEL", out(reg) el, options(nomem, nostack, preserves_flags))
    };
    el >> 2
}

/// The address of the parking loop (`park_core`'s `wfi`), for a board that releases
/// its other cores from a spin table.
pub fn park_address() -> u64 {
    park_core as *const () as u64
}

unsafe extern "C" {
    /// The other cores' parking loop (never returns; jumped to, not called).
    fn park_core() -> !;
}

/// EL1's stack pointer while EL0 code runs (written by `run_el0`).
#[no_mangle]
static mut EL1_SAVED_SP: u64 = 0;

unsafe extern "C" {
    fn run_el0(entry: extern "C" fn(u64) -> !, arg: u64, stack_top: u64) -> u64;
    /// Ends EL0 code: back to the EL1 caller of [`at_el0`] with `value`.
    pub fn el0_exit(value: u64) -> !;
    static __stack_el0_top: u8;
}

/// Runs `entry(arg)` at EL0 on the EL0 stack and returns the value it passes to
/// [`el0_exit`].
pub fn at_el0(entry: extern "C" fn(u64) -> !, arg: u64) -> u64 {
    // SAFETY: the linker script reserves the EL0 stack; `run_el0` saves every
    // callee-saved register and DAIF and restores them when the EL0 code executes
    // `svc #0` (el0_exit), which handle_exception maps to the return path.
    unsafe { run_el0(entry, arg, core::ptr::addr_of!(__stack_el0_top) as u64) }
}
