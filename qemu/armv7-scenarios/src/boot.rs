//! Boot code, the exception vectors and the PL1 <-> PL0 switch.
//!
//! `_start` is entered with the MMU off, in SVC mode (QEMU `-M virt`, secure=off,
//! virtualization=off; QEMU `raspi2b`) or in HYP mode (the Raspberry Pi 2's firmware
//! starts a 32-bit kernel in HYP where the CPU has the Virtualization Extensions, as
//! Linux's arch/arm/kernel/hyp-stub.S expects). From HYP it hands over to SVC the way
//! that stub does: no HYP trap (HCR, HSTR, HCPTR), every event counter to PL1 (HDCR.HPMN
//! = PMCR.N, no PMU trap), MIDR/MPIDR passed through (VPIDR/VMPIDR: PL1 reads of MIDR
//! return VPIDR when the Virtualization Extensions exist), the PL1 timers. A core other
//! than core 0 (MPIDR.Aff0 != 0) that arrives here parks in `wfi`. The MMU stays off: no permission checks, every data access
//! Strongly-ordered (the target is built with strict alignment). Exceptions go through
//! VBAR to `exception_vectors`: the Undefined Instruction exception of a PL0 probe
//! and the SVC that ends PL0 code return to [`at_pl0`]'s caller; every other exception
//! is fatal.

use core::arch::global_asm;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::{println, semihosting};

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
.arch_extension virt
.section .text.boot, "ax"
.global _start
_start:
    cpsid aif
    // Only core 0 runs the image.
    mrc p15, 0, r0, c0, c0, 5
    ands r0, r0, #0xff
    bne park_core
    // r8: the mode we were entered in (CPSR.M), for boot_main.
    mrs r8, cpsr
    and r8, r8, #0x1f
    cmp r8, #0x1a
    bne at_svc
    // HYP -> SVC (see the module doc).
    mov r0, #0
    mcr p15, 4, r0, c1, c1, 0
    mcr p15, 4, r0, c1, c1, 3
    mrc p15, 0, r0, c9, c12, 0
    ubfx r0, r0, #11, #5
    mcr p15, 4, r0, c1, c1, 1
    ldr r0, =0x33ff
    mcr p15, 4, r0, c1, c1, 2
    mrc p15, 0, r0, c0, c0, 0
    mcr p15, 4, r0, c0, c0, 0
    mrc p15, 0, r0, c0, c0, 5
    mcr p15, 4, r0, c0, c0, 5
    mov r0, #3
    mcr p15, 4, r0, c14, c1, 0
    adr r0, at_svc
    msr elr_hyp, r0
    // SPSR_hyp: SVC mode, A, I and F masked.
    mov r0, #0x1d3
    msr spsr_hyp, r0
    eret
at_svc:
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
    mov r0, r8
    bl boot_main
2:  wfe
    b 2b

// Where the other cores wait: interrupts masked, nothing routed to them, so `wfi`
// sleeps for good (QEMU halts the vCPU: it retires no instruction).
.global park_core
park_core:
    cpsid aif
3:  wfi
    b 3b
.ltorg

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
    bne svc_from_pl1
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

// An SVC from PL1: a semihosting call (`svc 0x123456`, ARM state) where no debugger or
// emulator serves it (a real board): return all ones in r0, a failed call. The caller
// declares r1, r2 and lr clobbered. Any other SVC from PL1 is fatal.
svc_from_pl1:
    ldr r2, [lr, #-4]
    bic r2, r2, #0xff000000
    ldr r1, =0x123456
    cmp r2, r1
    bne fatal_svc
    mvn r0, #0
    movs pc, lr

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

/// The current mode (CPSR.M).
pub fn current_mode() -> u32 {
    let cpsr: u32;
    // SAFETY: reading CPSR has no side effect.
    unsafe {
        core::arch::asm!("mrs {}, cpsr", out(reg) cpsr, options(nomem, nostack, preserves_flags))
    };
    cpsr & 0x1f
}

/// The address of the parking loop, for a board that releases its other cores from
/// the firmware's mailboxes.
pub fn park_address() -> u32 {
    park_core as *const () as u32
}

extern "C" {
    /// The other cores' parking loop (jumped to, never called).
    fn park_core() -> !;
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
    semihosting::exit(3)
}
