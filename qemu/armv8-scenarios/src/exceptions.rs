//! What the image does with exceptions.
//!
//! - `svc #0` from EL0: back to the EL1 caller of `boot::at_el0`;
//! - any other synchronous exception from EL0: an expected trap of a probe (PMU
//!   register access without the PMUSERENR_EL0 bit): recorded, the instruction skipped;
//! - IRQ: acknowledged at the board's interrupt controller and passed to the
//!   registered handler;
//! - a semihosting call (`hlt #0xf000`) that is UNDEFINED (a real board, no debugger):
//!   skipped, with x0 = all ones (a failed call);
//! - anything else (a synchronous exception at EL1, FIQ, SError): a bug — print where
//!   and why, exit non-zero.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::boot::Frame;
use crate::{println, semihosting};

/// ESR_EL1 of the last trapped EL0 instruction, or [`NO_TRAP`].
static LAST_EL0_TRAP: AtomicU64 = AtomicU64::new(NO_TRAP);
/// No trap recorded since the last [`take_el0_trap`].
pub const NO_TRAP: u64 = u64::MAX;

/// Called for every IRQ with its INTID (0 = none registered).
static IRQ_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Exception classes (ESR_EL1.EC, Arm ARM D17.2.37).
pub mod ec {
    /// SVC from AArch64.
    pub const SVC64: u64 = 0x15;
    /// Trapped MSR, MRS or system instruction (PMU access from EL0 without permission).
    pub const SYSREG: u64 = 0x18;
    /// Unknown reason: an UNDEFINED instruction.
    pub const UNKNOWN: u64 = 0x00;
}

/// The exception class of the trap recorded since the last call, if any.
pub fn take_el0_trap() -> Option<u64> {
    // A load and a store, not a swap: no exclusive on memory without the MMU (see
    // `boot`); the handler that stores here runs only while EL0 code runs.
    let esr = LAST_EL0_TRAP.load(Ordering::Relaxed);
    LAST_EL0_TRAP.store(NO_TRAP, Ordering::Relaxed);
    (esr != NO_TRAP).then_some(esr >> 26)
}

/// Routes IRQs to `handler` (called with the INTID, before the end of interrupt).
pub fn set_irq_handler(handler: fn(u32)) {
    IRQ_HANDLER.store(handler as usize, Ordering::Relaxed);
}

const CURRENT_EL_SYNC: u64 = 4;
const LOWER_EL_SYNC: u64 = 8;
const CURRENT_EL_IRQ: u64 = 5;
const LOWER_EL_IRQ: u64 = 9;

/// Called by the vector stubs. Returns 1 to go back to the EL1 caller of `at_el0`.
#[no_mangle]
extern "C" fn handle_exception(frame: &mut Frame, kind: u64) -> u64 {
    let class = frame.esr >> 26;
    match kind {
        LOWER_EL_SYNC if class == ec::SVC64 => 1,
        LOWER_EL_SYNC => {
            LAST_EL0_TRAP.store(frame.esr, Ordering::Relaxed);
            // Skip the trapped instruction (A64: always 4 bytes).
            frame.elr += 4;
            0
        }
        CURRENT_EL_SYNC if class == ec::UNKNOWN && is_semihosting_call(frame.elr) => {
            frame.x[0] = u64::MAX;
            frame.elr += 4;
            0
        }
        CURRENT_EL_IRQ | LOWER_EL_IRQ => {
            let Some(board) = crate::board() else {
                return 0;
            };
            if let Some(intid) = (board.irq.acknowledge)() {
                let handler = IRQ_HANDLER.load(Ordering::Relaxed);
                if handler != 0 {
                    // SAFETY: only `set_irq_handler` stores here, always a `fn(u32)`.
                    let handler: fn(u32) = unsafe { core::mem::transmute(handler) };
                    handler(intid);
                }
                (board.irq.end)(intid);
            }
            0
        }
        _ => {
            println!(
                "FATAL unexpected exception: vector entry {kind}, ESR_EL1={:#x} (EC={:#x}), ELR_EL1={:#x}, FAR_EL1={:#x}, SPSR_EL1={:#x}",
                frame.esr, class, frame.elr, frame.far, frame.spsr
            );
            semihosting::exit(3)
        }
    }
}

/// Whether the instruction at `address` is the AArch64 semihosting call `hlt #0xf000`
/// (encoding 0xd45e0000: Arm ARM C6.2 HLT, imm16 = 0xf000).
fn is_semihosting_call(address: u64) -> bool {
    const HLT_F000: u32 = 0xd45e_0000;
    // SAFETY: `address` is ELR_EL1 of a synchronous exception taken at EL1 on an
    // instruction fetch that succeeded: readable memory (MMU off: flat), 4-aligned.
    unsafe { core::ptr::read_volatile(address as *const u32) == HLT_F000 }
}
