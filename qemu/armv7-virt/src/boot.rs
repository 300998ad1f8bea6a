//! Boot code, the exception vectors and the PL1 <-> PL0 switch.
//!
//! QEMU `-M virt` (secure=off, virtualization=off) enters `_start` in Non-secure SVC
//! mode with the MMU off. The MMU stays off: no permission checks, every data access
//! Strongly-ordered (the target is built with strict alignment). Exceptions go through
//! VBAR to [`exception_vectors`]: the Undefined Instruction exception of a PL0 probe
//! and the SVC that ends PL0 code return to [`at_pl0`]'s caller; every other exception
//! is fatal.

use core::arch::global_asm;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::{console, println};

/// The stack pointer [`at_pl0`] left in SVC mode, for the way back.
#[no_mangle]
static PL0_SAVED_SP: AtomicU32 = AtomicU32::new(0);

/// The address of the PL0 instruction that took an Undefined Instruction exception, 0
/// when none did.
#[no_mangle]
static PL0_TRAP_ADDRESS: AtomicU32 = AtomicU32::new(0);

global_asm!(
    r#"
.arm
.section .text.boot, "ax"
.global _start
_start:
    cpsid aif
    ldr sp, =__stack_svc_top
    ldr r0, =exception_vectors
    mcr p15, 0, r0, c12, c0, 0
    // VBAR must be in effect before any exception.
    isb
    ldr r0, =__bss_start
    ldr r1, =__bss_end
    mov r2, #0
1:  cmp r0, r1
    strlo r2, [r0], #4
    blo 1b
    bl kernel_main
2:  wfe
    b 2b

.section .text
.balign 32
.global exception_vectors
exception_vectors:
    b fatal_reset
    b undef_entry
    b svc_entry
    b fatal_prefetch_abort
    b fatal_data_abort
    b fatal_hyp
    b fatal_irq
    b fatal_fiq

// at_pl0_raw(entry: r0, arg: r1) -> r0: runs `entry(arg)` in User mode until it ends
// with `svc #0` (its r0 is returned) or takes an Undefined Instruction exception
// (0 returned, PL0_TRAP_ADDRESS set).
.global at_pl0_raw
at_pl0_raw:
    push {{r4-r11, lr}}
    ldr r2, =PL0_SAVED_SP
    str sp, [r2]
    // System mode shares sp with User mode: set the User stack from there.
    cps #0x1f
    ldr sp, =__stack_usr_top
    cps #0x13
    // User mode, ARM state, IRQ and FIQ masked.
    mov r2, #0xd0
    msr spsr_cxsf, r2
    mov lr, r0
    mov r0, r1
    movs pc, lr

svc_entry:
    mrs r1, spsr
    and r1, r1, #0x1f
    cmp r1, #0x10
    bne fatal_svc
    ldr r2, =PL0_SAVED_SP
    ldr sp, [r2]
    pop {{r4-r11, pc}}

undef_entry:
    mrs r1, spsr
    and r1, r1, #0x1f
    cmp r1, #0x10
    bne fatal_undef
    // ARM state: the undefined instruction is at lr - 4.
    sub r0, lr, #4
    ldr r2, =PL0_TRAP_ADDRESS
    str r0, [r2]
    cps #0x13
    ldr r2, =PL0_SAVED_SP
    ldr sp, [r2]
    mov r0, #0
    pop {{r4-r11, pc}}

.macro FATAL name, kind
\name:
    mov r1, lr
    mrs r2, spsr
    mov r0, #\kind
    cps #0x13
    bl fatal_exception
.endm
    FATAL fatal_reset, 0
    FATAL fatal_undef, 1
    FATAL fatal_svc, 2
    FATAL fatal_prefetch_abort, 3
    FATAL fatal_data_abort, 4
    FATAL fatal_hyp, 5
    FATAL fatal_irq, 6
    FATAL fatal_fiq, 7
"#
);

extern "C" {
    fn at_pl0_raw(entry: extern "C" fn(u32) -> !, arg: u32) -> u32;
}

/// How PL0 code ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pl0Outcome {
    /// It returned this value through [`pl0_exit`].
    Returned(u32),
    /// An instruction at this address was UNDEFINED at PL0 (a PMU access PMUSERENR
    /// does not grant).
    Trapped(u32),
}

/// Runs `entry(arg)` in User mode; it must end with [`pl0_exit`].
pub fn at_pl0(entry: extern "C" fn(u32) -> !, arg: u32) -> Pl0Outcome {
    PL0_TRAP_ADDRESS.store(0, Ordering::SeqCst);
    // SAFETY: `at_pl0_raw` saves the callee-saved registers and the SVC stack pointer
    // and restores them on the way back (SVC or Undefined Instruction from User mode);
    // `entry` runs on its own User stack and can reach nothing but memory (MMU off).
    let value = unsafe { at_pl0_raw(entry, arg) };
    match PL0_TRAP_ADDRESS.load(Ordering::SeqCst) {
        0 => Pl0Outcome::Returned(value),
        address => Pl0Outcome::Trapped(address),
    }
}

/// Ends PL0 code, handing `value` back to [`at_pl0`].
pub fn pl0_exit(value: u32) -> ! {
    // SAFETY: only PL0 code started by `at_pl0` calls this; `svc_entry` restores the
    // PL1 context.
    unsafe { core::arch::asm!("svc #0", in("r0") value, options(noreturn, nostack)) }
}

/// Every unexpected exception ends here (in SVC mode, on the SVC stack).
#[no_mangle]
extern "C" fn fatal_exception(kind: u32, lr: u32, spsr: u32) -> ! {
    const NAMES: [&str; 8] = [
        "reset",
        "undefined instruction at PL1",
        "SVC from PL1",
        "prefetch abort",
        "data abort",
        "hyp trap",
        "IRQ",
        "FIQ",
    ];
    let name = NAMES.get(kind as usize).copied().unwrap_or("?");
    println!("FATAL exception: {name} lr={lr:#x} spsr={spsr:#x}");
    console::exit(3)
}
