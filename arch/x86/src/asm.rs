//! Every x86 instruction this crate executes, one small function each.
//!
//! Sources: Intel SDM Vol. 2 (RDPMC, RDTSC, RDTSCP, LFENCE, RDMSR, WRMSR, MOV to/from CR4),
//! Vol. 3B "Performance Monitoring" (RDPMC at CPL > 0 needs CR4.PCE), AMD APM Vol. 3 (the
//! same instructions). Only this file contains `asm!`; it is compiled on `x86_64` only (the
//! host and `x86_64-unknown-none`), so the rest of the crate builds anywhere.
//!
//! None of the plain reads uses `options(nomem)`: without it the compiler treats each
//! instruction as touching memory and does not move the loads and stores of a measured
//! region across it. That orders the *compiler*; ordering the *CPU* is what the `lfence`
//! of the `_fenced` variants is for.

use core::arch::asm;

pub use crate::access::RDPMC_FIXED;

/// Reads performance counter `ecx` with RDPMC.
///
/// General-purpose counter `n` is `ecx = n`; fixed counter `n` is `ecx = RDPMC_FIXED | n`
/// (Intel). On AMD core counter `n` is `ecx = n` (APM Vol. 3, RDPMC).
///
/// RDPMC is not serializing: the CPU may execute it before earlier instructions finish
/// or after later ones start. Use [`rdpmc_fenced`] around a measured region.
///
/// # Safety
/// Needs CPL 0, or CR4.PCE = 1 at CPL 3 (else #GP); `ecx` must name a counter this CPU
/// implements (else #GP).
#[inline(always)]
pub unsafe fn rdpmc(ecx: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: the caller guarantees the privilege (CPL 0 or CR4.PCE) and that `ecx` names
    // an implemented counter; RDPMC writes only EAX/EDX and touches no memory or flags.
    unsafe {
        asm!("rdpmc", in("ecx") ecx, out("eax") lo, out("edx") hi,
             options(nostack, preserves_flags));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// [`rdpmc`] with an LFENCE before and after.
///
/// The SDM (RDPMC) says RDPMC "is not a serializing instruction; that is, it does not
/// imply that all the events caused by the preceding instructions have been completed or
/// that events caused by subsequent instructions have not begun". The first LFENCE waits
/// until every earlier instruction (the region being measured) has completed locally, so
/// its events are counted; the second keeps later instructions from starting before the
/// counter is read, so theirs are not. LFENCE is cheaper than the fully serializing CPUID
/// the SDM also allows, but does not wait for earlier stores to drain.
///
/// # Safety
/// As [`rdpmc`].
#[inline(always)]
pub unsafe fn rdpmc_fenced(ecx: u32) -> u64 {
    lfence();
    // SAFETY: forwarded from the caller.
    let value = unsafe { rdpmc(ecx) };
    lfence();
    value
}

/// LFENCE: no later instruction starts executing until every earlier one has completed
/// locally (SDM Vol. 2A, LFENCE). Also a compiler barrier (no `nomem`).
///
/// Always present: LFENCE is SSE2, part of x86-64.
#[inline(always)]
pub fn lfence() {
    // SAFETY: LFENCE has no operands, exists on every x86-64 CPU and at every privilege
    // level; it is left without `nomem` on purpose so it is also a compiler barrier.
    unsafe { asm!("lfence", options(nostack, preserves_flags)) };
}

/// Reads the time-stamp counter (RDTSC).
///
/// Not ordered with surrounding instructions; see [`rdtsc_fenced`]. At CPL > 0 it traps
/// (#GP, a signal in user space) when an OS sets CR4.TSD, which is a defined fault, not
/// undefined behaviour, so the function is safe.
#[inline(always)]
pub fn rdtsc() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: RDTSC exists on every x86-64 CPU; it writes only EAX/EDX. If CR4.TSD forbids
    // it the CPU raises #GP before any state changes.
    unsafe { asm!("rdtsc", out("eax") lo, out("edx") hi, options(nostack, preserves_flags)) };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// [`rdtsc`] between two LFENCEs.
///
/// The SDM (RDTSC) recommends "LFENCE; RDTSC" so the read waits for earlier instructions,
/// and "RDTSC; LFENCE" so later ones do not start before it; both together bracket a
/// region exactly like [`rdpmc_fenced`].
#[inline(always)]
pub fn rdtsc_fenced() -> u64 {
    lfence();
    let value = rdtsc();
    lfence();
    value
}

/// Reads the time-stamp counter and IA32_TSC_AUX (RDTSCP): `(tsc, aux)`.
///
/// RDTSCP waits for earlier instructions to execute before reading (but later ones may
/// start before it: follow it with [`lfence`] where that matters). Linux stores the CPU
/// number in the low 12 bits of `aux`, which detects a migration between two reads.
///
/// # Safety
/// The CPU must implement RDTSCP (CPUID.80000001H:EDX\[27\], see
/// [`crate::cpuid::has_rdtscp`]); otherwise it raises #UD, which bare metal without a
/// handler does not survive.
#[inline(always)]
pub unsafe fn rdtscp() -> (u64, u32) {
    let (lo, hi, aux): (u32, u32, u32);
    // SAFETY: the caller guarantees RDTSCP exists; it writes only EAX/EDX/ECX.
    unsafe {
        asm!("rdtscp", out("eax") lo, out("edx") hi, out("ecx") aux,
             options(nostack, preserves_flags));
    }
    ((u64::from(hi) << 32) | u64::from(lo), aux)
}

/// Reads model-specific register `msr` (RDMSR, through the `x86` crate).
///
/// # Safety
/// Needs CPL 0; `msr` must exist on this CPU (else #GP).
#[inline]
pub unsafe fn rdmsr(msr: u32) -> u64 {
    // SAFETY: forwarded from the caller (CPL 0, implemented MSR).
    unsafe { x86::msr::rdmsr(msr) }
}

/// Writes `value` to model-specific register `msr` (WRMSR, through the `x86` crate).
///
/// # Safety
/// Needs CPL 0; `msr` must exist and accept `value` (else #GP), and the write must not
/// break what the rest of the system relies on (an MSR can redirect system calls or
/// disable paging features: this crate only writes performance-monitoring MSRs).
#[inline]
pub unsafe fn wrmsr(msr: u32, value: u64) {
    // SAFETY: forwarded from the caller.
    unsafe { x86::msr::wrmsr(msr, value) }
}

/// Reads CR4 with every bit.
///
/// Not `x86::controlregs::cr4`: that one builds its `Cr4` with `from_bits_truncate`, which
/// drops the bits its flag list does not know (CET 23, PKS 24, LAM_SUP 28, …); writing
/// such a value back would switch those features off.
///
/// # Safety
/// Needs CPL 0 (MOV from CR4 raises #GP at CPL > 0).
#[inline]
pub unsafe fn read_cr4() -> u64 {
    let value: u64;
    // SAFETY: the caller guarantees CPL 0; the MOV only writes the output register.
    unsafe { asm!("mov {}, cr4", out(reg) value, options(nomem, nostack, preserves_flags)) };
    value
}

/// Writes CR4.
///
/// # Safety
/// Needs CPL 0; `value` must be a CR4 the system can run with (normally the value just
/// read with [`read_cr4`] with one documented bit changed), and nothing else may change
/// CR4 concurrently on this CPU (interrupts that do so must be masked).
#[inline]
pub unsafe fn write_cr4(value: u64) {
    // SAFETY: forwarded from the caller. No `nomem`: a CR4 write can change how memory
    // is accessed, so the compiler must not move memory accesses across it.
    unsafe { asm!("mov cr4, {}", in(reg) value, options(nostack, preserves_flags)) };
}
