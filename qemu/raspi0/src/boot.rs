//! Boot code and exception vectors of the ARM1176 image.
//!
//! The Pi 0/1's firmware and QEMU's `raspi0`/`raspi1ap` (hw/arm/boot.c, a raw 32-bit
//! `-kernel` at 0x1_0000) start `_start` in SVC mode with the MMU off; the ARM1176 has
//! one core and no HYP mode. Exceptions go through VBAR (the ARM1176 has the Security
//! Extensions' vector base register: ARM1176JZF-S TRM 3.2.43). An SVC from SVC mode
//! that is a semihosting call (`svc 0x123456`) with nobody serving it (a real board)
//! returns all ones, a failed call; every other exception is fatal.

use core::arch::global_asm;

use crate::{console, println};

global_asm!(
    r#"
.arm
.section .text.boot, "ax"
.global _start
_start:
    cpsid aif
    // r8: the mode we were entered in (CPSR.M), for boot_main.
    mrs r8, cpsr
    and r8, r8, #0x1f
    ldr sp, =__stack_svc_top
    ldr r0, =exception_vectors
    mcr p15, 0, r0, c12, c0, 0
    // VBAR must be in effect before any exception: the ARMv6 "Prefetch Flush" (the
    // ISB of later architectures).
    mov r0, #0
    mcr p15, 0, r0, c7, c5, 4
    ldr r0, =__bss_start
    ldr r1, =__bss_end
    mov r2, #0
1:  cmp r0, r1
    strlo r2, [r0], #4
    blo 1b
    mov r0, r8
    bl boot_main
2:  b 2b
.ltorg

.section .text
.balign 32
exception_vectors:
    b fatal_reset
    b fatal_undef
    b svc_entry
    b fatal_prefetch_abort
    b fatal_data_abort
    b fatal_unused
    b fatal_irq
    b fatal_fiq

// A semihosting call (`svc 0x123456`, ARM state) nobody serves: r0 = all ones. The
// caller declares r1, r2 and lr clobbered.
svc_entry:
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
    FATAL fatal_unused, 5
    FATAL fatal_irq, 6
    FATAL fatal_fiq, 7
"#
);

/// Every unexpected exception ends here (in SVC mode, on the SVC stack).
#[no_mangle]
extern "C" fn fatal_exception(kind: u32, lr: u32, spsr: u32) -> ! {
    const NAMES: [&str; 8] = [
        "reset",
        "undefined instruction",
        "SVC",
        "prefetch abort",
        "data abort",
        "unused vector",
        "IRQ",
        "FIQ",
    ];
    let name = NAMES.get(kind as usize).copied().unwrap_or("?");
    println!("FATAL exception: {name} lr={lr:#x} spsr={spsr:#x}");
    console::exit(3)
}
