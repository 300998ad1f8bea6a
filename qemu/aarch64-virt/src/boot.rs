//! Boot code, the exception vector table and the EL1 <-> EL0 switch.
//!
//! QEMU `-M virt` enters `_start` at EL1 with the MMU off. The MMU stays off: every
//! data access is then Device-nGnRnE, which is correct for the MMIO we touch and good
//! enough for RAM in an emulator (the target is built with strict alignment).

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
2:  bl kernel_main
3:  wfe
    b 3b

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
