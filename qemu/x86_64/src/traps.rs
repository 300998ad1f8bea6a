//! Exceptions, ring 3, and probes whose faults are results rather than crashes.
//!
//! Every exception vector (0..32) and the ring-3 return gate `int 0x80` enter through
//! a small stub that pushes the vector (and a zero where the CPU pushes no error code,
//! SDM Vol. 3A §6.13), saves all general registers into a [`TrapFrame`] and calls
//! [`trap_handler`].
//!
//! A *guarded call* runs a probe, in ring 0 or in ring 3, with the handler armed: a
//! fault in the probe (say `rdpmc` raising #GP) or the probe's `int 0x80` ends the
//! probe, and the guarded call returns the fault or the value. This works like
//! `setjmp`/`longjmp`: `guarded_enter` saves the callee-saved registers and RSP, runs
//! the probe (through `iretq` for ring 3), and `guarded_leave` restores them and
//! returns from `guarded_enter`, abandoning the probe's frames. Ring 3 enters the
//! handler on TSS.RSP0 (see [`crate::cpu`]), so the ring-0 stack the guarded call saved
//! is intact.
//!
//! Any other exception is unexpected: the handler prints the vector, its name, the
//! error code, RIP and the registers, and ends the run with [`ExitCode::Crash`].

use core::arch::{asm, global_asm};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use x86::bits64::segmentation::Descriptor64;
use x86::dtables::DescriptorTablePointer;
use x86::segmentation::{BuildDescriptor, DescriptorBuilder, GateDescriptorBuilder};
use x86::Ring;

use crate::cpu::{self, CpuOwned};
use crate::exit::{exit, ExitCode};
use crate::println;

/// The gate ring 3 uses to hand a value back to the guarded call (DPL 3).
pub const USER_RETURN_VECTOR: u8 = 0x80;

/// #UD, invalid opcode.
pub const INVALID_OPCODE: u8 = x86::irq::INVALID_OPCODE_VECTOR;
/// #GP, general protection.
pub const GENERAL_PROTECTION: u8 = x86::irq::GENERAL_PROTECTION_FAULT_VECTOR;

/// Stubs in the order of `TRAP_STUBS`: vectors 0..32, then [`USER_RETURN_VECTOR`].
const STUB_COUNT: usize = 33;

global_asm!(
    r#"
    // Vectors for which the CPU pushes an error code (SDM Vol. 3A Table 6-1).
    .macro TRAP_STUB vec
    .if \vec == 8 || \vec == 10 || \vec == 11 || \vec == 12 || \vec == 13 || \vec == 14 || \vec == 17 || \vec == 21 || \vec == 29 || \vec == 30
    .else
    push 0
    .endif
    push \vec
    jmp trap_common
    .endm

    .section .text.traps, "ax"
    .irp vec, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,128
    .balign 16
trap_stub_\vec:
    TRAP_STUB \vec
    .endr

trap_common:
    // Build the TrapFrame: rax at the lowest address.
    push r15
    push r14
    push r13
    push r12
    push r11
    push r10
    push r9
    push r8
    push rbp
    push rdi
    push rsi
    push rdx
    push rcx
    push rbx
    push rax
    // The CPU aligned RSP to 16 before its 5-word frame; with vector, error code and
    // 15 registers RSP is 16-byte aligned again for the call.
    mov rdi, rsp
    cld
    call {handler}
    pop rax
    pop rbx
    pop rcx
    pop rdx
    pop rsi
    pop rdi
    pop rbp
    pop r8
    pop r9
    pop r10
    pop r11
    pop r12
    pop r13
    pop r14
    pop r15
    add rsp, 16                  // vector and error code
    iretq

    // extern "C" fn guarded_enter(probe: u64, user_rsp: u64, arg: u64) -> Outcome
    // Runs probe(arg): user_rsp == 0: called in ring 0; otherwise entered in ring 3
    // through iretq.
    .global guarded_enter
guarded_enter:
    push rbx
    push rbp
    push r12
    push r13
    push r14
    push r15
    mov [rip + GUARD_RSP], rsp
    mov rax, rdi
    mov rdi, rdx                 // the probe's argument
    test rsi, rsi
    jz .Lring0_probe
    push {user_ss}
    push rsi                     // RSP
    push 0x2                     // RFLAGS: IF=0, IOPL=0 (bit 1 is reserved, set)
    push {user_cs}
    push rax                     // RIP
    iretq
.Lring0_probe:
    sub rsp, 8                   // RSP + 8 16-byte aligned at the probe's entry
    call rax
    mov rsi, rax
    xor edi, edi                 // status 0: the probe returned a value
    // fall through

    // extern "C" fn guarded_leave(status: u64, value: u64) -> !
    .global guarded_leave
guarded_leave:
    mov rsp, [rip + GUARD_RSP]
    mov ax, {kernel_ds}
    mov ss, ax                   // a ring-3 exit left SS null
    mov ds, ax
    mov es, ax
    mov rax, rdi
    mov rdx, rsi
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbp
    pop rbx
    ret

    .section .rodata.traps, "a"
    .balign 8
TRAP_STUBS:
    .irp vec, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,128
    .quad trap_stub_\vec
    .endr

    .section .bss.traps, "aw", @nobits
    .balign 8
GUARD_RSP:
    .skip 8
    "#,
    handler = sym trap_handler,
    user_ss = const cpu::USER_DATA.bits(),
    user_cs = const cpu::USER_CODE.bits(),
    kernel_ds = const cpu::KERNEL_DATA.bits(),
);

/// What a guarded call returns through `rax:rdx` (System V: a 16-byte struct of two
/// integers).
#[repr(C)]
struct Outcome {
    /// 0: `value` is the probe's result; 1: the probe faulted (the `FAULT_*` statics say
    /// how).
    status: u64,
    value: u64,
}

extern "C" {
    static TRAP_STUBS: [u64; STUB_COUNT];
    fn guarded_enter(probe: u64, user_rsp: u64, arg: u64) -> Outcome;
    fn guarded_leave(status: u64, value: u64) -> !;
}

/// The registers saved on every trap, lowest address first.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct TrapFrame {
    /// General registers, as the stub pushed them (`rax` … `r15`).
    pub rax: u64,
    pub rbx: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub rbp: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    /// Pushed by the stub.
    pub vector: u64,
    /// Pushed by the CPU, or 0 by the stub for vectors without one.
    pub error_code: u64,
    /// The interrupted instruction (a fault) or the one after it (`int`).
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

/// A fault that ended a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The exception vector.
    pub vector: u8,
    /// The error code (0 for vectors without one).
    pub error_code: u64,
    /// The faulting instruction.
    pub rip: u64,
    /// The privilege level the fault came from.
    pub cpl: u8,
}

impl Fault {
    /// The vector's mnemonic, `#GP` style.
    pub fn mnemonic(&self) -> &'static str {
        mnemonic(self.vector)
    }
}

/// The mnemonic of exception `vector` (`#UD`, `#GP`, …), `int` for others.
pub fn mnemonic(vector: u8) -> &'static str {
    x86::irq::EXCEPTIONS
        .get(usize::from(vector))
        .map_or("int", |e| e.mnemonic)
}

static IDT: CpuOwned<[Descriptor64; 256]> = CpuOwned::new([Descriptor64::NULL; 256]);

/// Whether a guarded call is running: faults end it instead of the run.
static GUARD_ARMED: AtomicBool = AtomicBool::new(false);
static FAULT_VECTOR: AtomicU64 = AtomicU64::new(0);
static FAULT_ERROR_CODE: AtomicU64 = AtomicU64::new(0);
static FAULT_RIP: AtomicU64 = AtomicU64::new(0);
static FAULT_CS: AtomicU64 = AtomicU64::new(0);

/// Fills and loads the IDT. Needs [`cpu::init`] first (the gates name its selectors).
pub fn init() {
    // SAFETY: the stub table is immutable data defined in the asm above.
    let stubs = unsafe { &*core::ptr::addr_of!(TRAP_STUBS) };
    let idt = IDT.get();
    for (i, &stub) in stubs.iter().enumerate() {
        let (vector, dpl) = if i < 32 {
            (i, Ring::Ring0)
        } else {
            (usize::from(USER_RETURN_VECTOR), Ring::Ring3)
        };
        let mut gate = <DescriptorBuilder as GateDescriptorBuilder<u64>>::interrupt_descriptor(
            cpu::KERNEL_CODE,
            stub,
        )
        .present()
        .dpl(dpl);
        if vector == usize::from(x86::irq::DOUBLE_FAULT_VECTOR) {
            gate = gate.ist(cpu::DOUBLE_FAULT_IST);
        }
        // SAFETY: one CPU, interrupts off, IDTR not yet pointing here.
        unsafe { (*idt)[vector] = gate.finish() };
    }
    // SAFETY: every present gate points at a stub above, in the code segment of the
    // loaded GDT; the IDT is static.
    unsafe { x86::dtables::lidt(&DescriptorTablePointer::new(&*idt)) };
}

/// A probe run in ring 0 by [`run_ring0`]: takes an argument, returns a value.
pub type Ring0Probe = extern "C" fn(u64) -> u64;
/// A probe run in ring 3 by [`run_ring3`]: takes an argument and ends with
/// [`return_to_ring0`].
pub type Ring3Probe = extern "C" fn(u64) -> !;

fn guarded(probe: u64, user_rsp: u64, arg: u64) -> Result<u64, Fault> {
    GUARD_ARMED.store(true, Ordering::SeqCst);
    // SAFETY: guarded_enter saves and restores the callee-saved registers and RSP
    // around the probe and returns like a normal System V function; the probe is
    // a function of the required kind (callers' signatures ensure it) and runs on this
    // stack (ring 0) or the static user stack (ring 3).
    let outcome = unsafe { guarded_enter(probe, user_rsp, arg) };
    GUARD_ARMED.store(false, Ordering::SeqCst);
    if outcome.status == 0 {
        Ok(outcome.value)
    } else {
        Err(Fault {
            vector: FAULT_VECTOR.load(Ordering::SeqCst) as u8,
            error_code: FAULT_ERROR_CODE.load(Ordering::SeqCst),
            rip: FAULT_RIP.load(Ordering::SeqCst),
            cpl: (FAULT_CS.load(Ordering::SeqCst) & 3) as u8,
        })
    }
}

/// Runs `probe(arg)` in ring 0; a fault in it is returned instead of ending the run.
///
/// # Safety
/// A fault abandons the probe's frames without unwinding: it must own nothing that
/// needs dropping and must leave no state half-changed that a fault could interrupt.
pub unsafe fn run_ring0(probe: Ring0Probe, arg: u64) -> Result<u64, Fault> {
    guarded(probe as usize as u64, 0, arg)
}

/// Runs `probe(arg)` in ring 3 on the user stack; returns the value it passes to
/// [`return_to_ring0`] or the fault that ended it.
///
/// Safe: ring 3 cannot change privileged state, its faults come back here, and the
/// identity map lets it touch only this image's memory.
pub fn run_ring3(probe: Ring3Probe, arg: u64) -> Result<u64, Fault> {
    // The probe starts as if called: RSP + 8 is 16-byte aligned (System V).
    guarded(probe as usize as u64, cpu::user_stack_top() - 8, arg)
}

/// Ends a ring-3 probe, handing `value` to [`run_ring3`].
pub fn return_to_ring0(value: u64) -> ! {
    // SAFETY: the DPL-3 gate 0x80 enters trap_handler, which returns `value` from the
    // armed guarded call and never comes back here.
    unsafe {
        asm!("int {v}", v = const USER_RETURN_VECTOR, in("rax") value, options(noreturn, nostack));
    }
}

extern "C" fn trap_handler(frame: &mut TrapFrame) {
    let vector = frame.vector as u8;
    let from_user = frame.cs & 3 == 3;
    if GUARD_ARMED.load(Ordering::SeqCst) {
        if vector == USER_RETURN_VECTOR && from_user {
            // SAFETY: a guarded call is running (armed): guarded_leave returns from it.
            unsafe { guarded_leave(0, frame.rax) };
        }
        // A double fault or a machine check is never a probe's result.
        if vector < 32
            && vector != x86::irq::DOUBLE_FAULT_VECTOR
            && vector != x86::irq::MACHINE_CHECK_VECTOR
        {
            FAULT_VECTOR.store(frame.vector, Ordering::SeqCst);
            FAULT_ERROR_CODE.store(frame.error_code, Ordering::SeqCst);
            FAULT_RIP.store(frame.rip, Ordering::SeqCst);
            FAULT_CS.store(frame.cs, Ordering::SeqCst);
            // SAFETY: as above.
            unsafe { guarded_leave(1, 0) };
        }
    }
    unexpected(frame)
}

fn unexpected(frame: &TrapFrame) -> ! {
    let vector = frame.vector as u8;
    let name = x86::irq::EXCEPTIONS
        .get(usize::from(vector))
        .map_or("interrupt", |e| e.description);
    println!(
        "UNEXPECTED EXCEPTION: vector {} ({} {}) error_code={:#x} at rip={:#x} cs={:#x} rflags={:#x} rsp={:#x} ss={:#x} cpl={}",
        vector,
        mnemonic(vector),
        name,
        frame.error_code,
        frame.rip,
        frame.cs,
        frame.rflags,
        frame.rsp,
        frame.ss,
        frame.cs & 3
    );
    if vector == x86::irq::PAGE_FAULT_VECTOR {
        // SAFETY: reading CR2 has no side effects (ring 0).
        let cr2 = unsafe { x86::controlregs::cr2() };
        println!("  page fault address (CR2) = {cr2:#x}");
    }
    println!(
        "  rax={:#x} rbx={:#x} rcx={:#x} rdx={:#x} rsi={:#x} rdi={:#x} rbp={:#x}",
        frame.rax, frame.rbx, frame.rcx, frame.rdx, frame.rsi, frame.rdi, frame.rbp
    );
    println!(
        "  r8={:#x} r9={:#x} r10={:#x} r11={:#x} r12={:#x} r13={:#x} r14={:#x} r15={:#x}",
        frame.r8, frame.r9, frame.r10, frame.r11, frame.r12, frame.r13, frame.r14, frame.r15
    );
    println!(
        "RESULT crash reason=exception vector={vector} exception={} error_code={:#x} rip={:#x} cpl={}",
        mnemonic(vector),
        frame.error_code,
        frame.rip,
        frame.cs & 3
    );
    exit(ExitCode::Crash)
}
