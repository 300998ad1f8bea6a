//! The built-in workloads `pmu-demo measure` runs: code whose instruction count is known
//! exactly, so a measurement can be checked, and whose cycle count teaches something
//! (FMA latency and throughput, memory latency with a pointer chase).
//!
//! Each workload runs `units` units of work; the measurement subtracts a run of 0 units
//! through the same code ([`Prepared::region`]), so what is left is the units' own cost.

use std::fmt;

/// A built-in workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// `units` iterations of a two-instruction loop (`sub`, `jnz` / `subs`, `b.ne`).
    Loop,
    /// `units` iterations of 12 dependent FMAs (AVX2 `vfmadd231ps ymm` on x86_64,
    /// `fmla v.4s` on aarch64): cycles per FMA is the FMA latency.
    FmaLatency,
    /// `units` iterations of 12 independent FMAs on 12 accumulators: FMAs per cycle is
    /// the FMA throughput.
    FmaThroughput,
    /// `units` dependent loads through a random cycle of pointers in a buffer: cycles
    /// per load is the load latency of the level that holds the buffer.
    PointerChase,
}

/// FMAs per loop iteration of the FMA workloads.
pub const FMAS_PER_ITERATION: u64 = 12;

impl Workload {
    /// Every workload, in `--help` order.
    pub const ALL: [Workload; 4] = [
        Workload::Loop,
        Workload::FmaLatency,
        Workload::FmaThroughput,
        Workload::PointerChase,
    ];

    /// The name on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Workload::Loop => "loop",
            Workload::FmaLatency => "fma-latency",
            Workload::FmaThroughput => "fma-throughput",
            Workload::PointerChase => "pointer-chase",
        }
    }

    /// What one unit of work is.
    pub const fn unit(self) -> &'static str {
        match self {
            Workload::Loop => "iteration",
            Workload::FmaLatency | Workload::FmaThroughput => "FMA",
            Workload::PointerChase => "load",
        }
    }

    /// The workload called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The units actually run for a request of `units`: the FMA workloads run whole
    /// iterations of 12 FMAs.
    pub const fn effective_units(self, units: u64) -> u64 {
        match self {
            Workload::FmaLatency | Workload::FmaThroughput => {
                units / FMAS_PER_ITERATION * FMAS_PER_ITERATION
            }
            _ => units,
        }
    }

    /// Instructions `units` units retire beyond a run of 0 units, exactly, from the code
    /// below (the loop branch included): what a calibrated instruction count must show.
    pub const fn instructions(self, units: u64) -> u64 {
        match self {
            // sub + jnz per iteration.
            Workload::Loop => 2 * units,
            // 12 FMAs + sub + jnz per 12 FMAs.
            Workload::FmaLatency | Workload::FmaThroughput => {
                units / FMAS_PER_ITERATION * (FMAS_PER_ITERATION + 2)
            }
            // load + sub + jnz per load.
            Workload::PointerChase => 3 * units,
        }
    }

    /// Why the workload cannot run on this CPU, if it cannot.
    pub fn unavailable(self) -> Option<&'static str> {
        match self {
            Workload::FmaLatency | Workload::FmaThroughput => fma_unavailable(),
            _ => None,
        }
    }

    /// Sets the workload up: `bytes` is the pointer-chase buffer size (ignored by the
    /// others).
    ///
    /// # Errors
    /// [`WorkloadError`] when the CPU lacks the instructions or the size is unusable.
    pub fn prepare(self, bytes: usize) -> Result<Prepared, WorkloadError> {
        if let Some(why) = self.unavailable() {
            return Err(WorkloadError::Unavailable {
                workload: self,
                why,
            });
        }
        let chase = if self == Workload::PointerChase {
            Some(Chase::new(bytes)?)
        } else {
            None
        };
        Ok(Prepared {
            workload: self,
            chase,
        })
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a workload cannot be prepared.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkloadError {
    /// The CPU lacks the instructions.
    Unavailable {
        /// The workload.
        workload: Workload,
        /// Why.
        why: &'static str,
    },
    /// The pointer-chase buffer must hold at least two pointers.
    BufferTooSmall {
        /// The size asked for, in bytes.
        bytes: usize,
    },
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unavailable { workload, why } => write!(f, "workload `{workload}` cannot run here: {why}"),
            Self::BufferTooSmall { bytes } => write!(
                f,
                "a pointer-chase buffer of {bytes} bytes holds fewer than 2 pointers: use --bytes {} or more",
                2 * std::mem::size_of::<usize>()
            ),
        }
    }
}

impl std::error::Error for WorkloadError {}

/// A workload ready to run.
#[derive(Debug)]
pub struct Prepared {
    workload: Workload,
    chase: Option<Chase>,
}

impl Prepared {
    /// The workload.
    pub fn workload(&self) -> Workload {
        self.workload
    }

    /// Runs `units` units of work.
    pub fn run(&self, units: u64) {
        match self.workload {
            Workload::Loop => arch::spin(units),
            // SAFETY: prepare() checked that the CPU has the instructions.
            Workload::FmaLatency => unsafe { arch::fma_latency(units / FMAS_PER_ITERATION) },
            // SAFETY: as above.
            Workload::FmaThroughput => unsafe { arch::fma_throughput(units / FMAS_PER_ITERATION) },
            Workload::PointerChase => {
                if let Some(chase) = &self.chase {
                    chase.run(units);
                }
            }
        }
    }

    /// A region of `units` units of work as a closure. Called twice, for the region and
    /// for the 0-unit baseline, it returns the same closure type: the harness runs both
    /// through the same machine code (`Harness::calibrated_against`).
    pub fn region(&self, units: u64) -> impl FnMut() + '_ {
        move || self.run(units)
    }
}

/// The pointer-chase buffer: slot i holds the address of the next slot of a random
/// cycle through all slots, so every load depends on the previous one and the hardware
/// prefetchers cannot guess the next address.
#[derive(Debug)]
struct Chase {
    slots: Vec<usize>,
}

impl Chase {
    fn new(bytes: usize) -> Result<Self, WorkloadError> {
        let n = bytes / std::mem::size_of::<usize>();
        if n < 2 {
            return Err(WorkloadError::BufferTooSmall { bytes });
        }
        // A random permutation (xorshift-driven Fisher-Yates, fixed seed: repeatable),
        // then slot order[i] points to slot order[i + 1].
        let mut order: Vec<usize> = (0..n).collect();
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in (1..n).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            order.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let mut slots = vec![0usize; n];
        let base = slots.as_ptr() as usize;
        for w in 0..n {
            let (from, to) = (order[w], order[(w + 1) % n]);
            slots[from] = base + to * std::mem::size_of::<usize>();
        }
        Ok(Self { slots })
    }

    fn run(&self, loads: u64) {
        arch::chase(self.slots.as_ptr() as usize, loads);
    }
}

fn fma_unavailable() -> Option<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            None
        } else {
            Some("the CPU has no AVX2/FMA (vfmadd231ps ymm)")
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        // Advanced SIMD (FMLA .4s) is mandatory in AArch64.
        None
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Some("FMA workloads exist for x86_64 and aarch64 only (the ARM1176 has VFPv2, no fused multiply-add)")
    }
}

#[cfg(target_arch = "x86_64")]
mod arch {
    use std::arch::asm;

    /// `n` iterations of `sub; jnz`, skipped entirely for n = 0 (`test; jz`).
    #[inline(never)]
    pub fn spin(n: u64) {
        // SAFETY: register arithmetic and branches only.
        unsafe {
            asm!(
                "test {n}, {n}",
                "jz 3f",
                "2:",
                "sub {n}, 1",
                "jnz 2b",
                "3:",
                n = inout(reg) n => _,
                options(nomem, nostack),
            );
        }
    }

    /// `iterations` × 12 dependent `vfmadd231ps ymm0, ymm1, ymm1`: a chain, one FMA's latency each.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[inline(never)]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma_latency(iterations: u64) {
        // SAFETY: the caller checked AVX2/FMA; only the declared registers change.
        unsafe {
            asm!(
                "vxorps ymm0, ymm0, ymm0",
                "vxorps ymm1, ymm1, ymm1",
                "test {n}, {n}",
                "jz 3f",
                "2:",
                ".rept 12",
                "vfmadd231ps ymm0, ymm1, ymm1",
                ".endr",
                "sub {n}, 1",
                "jnz 2b",
                "3:",
                n = inout(reg) iterations => _,
                out("ymm0") _, out("ymm1") _,
                options(nomem, nostack),
            );
        }
    }

    /// `iterations` × 12 independent `vfmadd231ps ymm{1..12}, ymm0, ymm0`: independent, the FMA units' throughput.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[inline(never)]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma_throughput(iterations: u64) {
        // SAFETY: the caller checked AVX2/FMA; only the declared registers change.
        unsafe {
            asm!(
                "vxorps ymm0, ymm0, ymm0",
                "test {n}, {n}",
                "jz 3f",
                "2:",
                "vfmadd231ps ymm1, ymm0, ymm0",
                "vfmadd231ps ymm2, ymm0, ymm0",
                "vfmadd231ps ymm3, ymm0, ymm0",
                "vfmadd231ps ymm4, ymm0, ymm0",
                "vfmadd231ps ymm5, ymm0, ymm0",
                "vfmadd231ps ymm6, ymm0, ymm0",
                "vfmadd231ps ymm7, ymm0, ymm0",
                "vfmadd231ps ymm8, ymm0, ymm0",
                "vfmadd231ps ymm9, ymm0, ymm0",
                "vfmadd231ps ymm10, ymm0, ymm0",
                "vfmadd231ps ymm11, ymm0, ymm0",
                "vfmadd231ps ymm12, ymm0, ymm0",
                "sub {n}, 1",
                "jnz 2b",
                "3:",
                n = inout(reg) iterations => _,
                out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _, out("ymm4") _,
                out("ymm5") _, out("ymm6") _, out("ymm7") _, out("ymm8") _, out("ymm9") _,
                out("ymm10") _, out("ymm11") _, out("ymm12") _,
                options(nomem, nostack),
            );
        }
    }

    /// `loads` dependent loads starting at `start` (`mov p, [p]; sub; jnz`).
    #[inline(never)]
    pub fn chase(start: usize, loads: u64) {
        // SAFETY: `start` is a slot of a Chase buffer whose every slot holds the address
        // of another slot of the same live buffer; only loads from it happen.
        unsafe {
            asm!(
                "test {n}, {n}",
                "jz 3f",
                "2:",
                "mov {p}, [{p}]",
                "sub {n}, 1",
                "jnz 2b",
                "3:",
                n = inout(reg) loads => _,
                p = inout(reg) start => _,
                options(nostack, readonly),
            );
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    use std::arch::asm;

    /// `n` iterations of `subs; b.ne`, skipped entirely for n = 0 (`cbz`).
    #[inline(never)]
    pub fn spin(n: u64) {
        // SAFETY: register arithmetic and branches only.
        unsafe {
            asm!(
                "cbz {n}, 3f",
                "2:",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                "3:",
                n = inout(reg) n => _,
                options(nomem, nostack),
            );
        }
    }

    /// `iterations` × 12 dependent `fmla v0.4s, v1.4s, v1.4s`.
    ///
    /// # Safety
    /// None beyond AArch64 (Advanced SIMD is mandatory); `unsafe` to match x86_64.
    #[inline(never)]
    pub unsafe fn fma_latency(iterations: u64) {
        // SAFETY: only the declared registers change.
        unsafe {
            asm!(
                "movi v0.4s, #0",
                "movi v1.4s, #0",
                "cbz {n}, 3f",
                "2:",
                ".rept 12",
                "fmla v0.4s, v1.4s, v1.4s",
                ".endr",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                "3:",
                n = inout(reg) iterations => _,
                out("v0") _, out("v1") _,
                options(nomem, nostack),
            );
        }
    }

    /// `iterations` × 12 independent `fmla v{1..12}.4s, v0.4s, v0.4s`.
    ///
    /// # Safety
    /// As [`fma_latency`].
    #[inline(never)]
    pub unsafe fn fma_throughput(iterations: u64) {
        // SAFETY: only the declared registers change.
        unsafe {
            asm!(
                "movi v0.4s, #0",
                "cbz {n}, 3f",
                "2:",
                "fmla v1.4s, v0.4s, v0.4s",
                "fmla v2.4s, v0.4s, v0.4s",
                "fmla v3.4s, v0.4s, v0.4s",
                "fmla v4.4s, v0.4s, v0.4s",
                "fmla v5.4s, v0.4s, v0.4s",
                "fmla v6.4s, v0.4s, v0.4s",
                "fmla v7.4s, v0.4s, v0.4s",
                "fmla v16.4s, v0.4s, v0.4s",
                "fmla v17.4s, v0.4s, v0.4s",
                "fmla v18.4s, v0.4s, v0.4s",
                "fmla v19.4s, v0.4s, v0.4s",
                "fmla v20.4s, v0.4s, v0.4s",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                "3:",
                n = inout(reg) iterations => _,
                out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _,
                out("v6") _, out("v7") _, out("v16") _, out("v17") _, out("v18") _,
                out("v19") _, out("v20") _,
                options(nomem, nostack),
            );
        }
    }

    /// `loads` dependent loads starting at `start` (`ldr p, [p]; subs; b.ne`).
    #[inline(never)]
    pub fn chase(start: usize, loads: u64) {
        // SAFETY: as on x86_64: every slot holds the address of a slot of the live buffer.
        unsafe {
            asm!(
                "cbz {n}, 3f",
                "2:",
                "ldr {p}, [{p}]",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                "3:",
                n = inout(reg) loads => _,
                p = inout(reg) start => _,
                options(nostack, readonly),
            );
        }
    }
}

/// 32-bit ARM (ARMv6, ARM mode: the Raspberry Pi 1 / Zero): the same loops as on
/// aarch64, `subs; bne` per iteration, on 32-bit counts. A request above 2^32 - 1 units
/// runs in chunks of at most that many, each adding the loop's few entry instructions:
/// [`Workload::instructions`] is exact up to 2^32 - 1 units (about 6 s of the loop at
/// 700 MHz, where the 32-bit counters wrap anyway).
#[cfg(target_arch = "arm")]
mod arch {
    use std::arch::asm;

    /// Splits `n` into 32-bit chunks.
    fn chunks(n: u64) -> impl Iterator<Item = u32> {
        let whole = n / u64::from(u32::MAX);
        // Lossless: the remainder of a division by u32::MAX is below it.
        let rest = (n % u64::from(u32::MAX)) as u32;
        (0..whole)
            .map(|_| u32::MAX)
            .chain((rest > 0 || n == 0).then_some(rest))
    }

    /// `n` iterations of `subs; bne`, skipped entirely for n = 0 (`cmp; beq`).
    #[inline(never)]
    pub fn spin(n: u64) {
        for n in chunks(n) {
            // SAFETY: register arithmetic and branches only.
            unsafe {
                asm!(
                    "cmp {n}, #0",
                    "beq 3f",
                    "2:",
                    "subs {n}, {n}, #1",
                    "bne 2b",
                    "3:",
                    n = inout(reg) n => _,
                    options(nomem, nostack),
                );
            }
        }
    }

    /// Not available (see `fma_unavailable`).
    ///
    /// # Safety
    /// None; `unsafe` to match x86_64.
    pub unsafe fn fma_latency(_: u64) {}

    /// Not available (see `fma_unavailable`).
    ///
    /// # Safety
    /// None; `unsafe` to match x86_64.
    pub unsafe fn fma_throughput(_: u64) {}

    /// `loads` dependent `ldr`s starting at `start` (`ldr; subs; bne` per load).
    #[inline(never)]
    pub fn chase(start: usize, loads: u64) {
        let mut p = start;
        for n in chunks(loads) {
            // SAFETY: `start` is a slot of a live `Chase` whose slots all hold addresses
            // of slots of the same buffer (Chase::new), so every load is in bounds and
            // aligned; the loop only reads memory.
            unsafe {
                asm!(
                    "cmp {n}, #0",
                    "beq 3f",
                    "2:",
                    "ldr {p}, [{p}]",
                    "subs {n}, {n}, #1",
                    "bne 2b",
                    "3:",
                    n = inout(reg) n => _,
                    p = inout(reg) p,
                    options(nostack, readonly),
                );
            }
        }
        std::hint::black_box(p);
    }

    #[cfg(test)]
    mod tests {
        /// The chunks add up to the request, each fits the 32-bit loop counter, and 0
        /// units is one empty run (the calibration baseline's shape).
        #[test]
        fn chunks_cover_the_request() {
            for n in [0, 1, 1000, u64::from(u32::MAX), u64::from(u32::MAX) + 5] {
                let c: Vec<u32> = super::chunks(n).collect();
                assert_eq!(c.iter().map(|&x| u64::from(x)).sum::<u64>(), n);
                assert!(!c.is_empty());
            }
        }
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "arm")))]
mod arch {
    /// Portable stand-in: a counted loop the optimizer cannot remove.
    pub fn spin(n: u64) {
        let mut i = 0;
        while std::hint::black_box(i) < n {
            i += 1;
        }
    }
    /// Not available (see `fma_unavailable`).
    pub unsafe fn fma_latency(_: u64) {}
    /// Not available (see `fma_unavailable`).
    pub unsafe fn fma_throughput(_: u64) {}
    /// Portable chase.
    pub fn chase(start: usize, loads: u64) {
        let mut p = start;
        for _ in 0..loads {
            // SAFETY: as on x86_64.
            p = unsafe { *(p as *const usize) };
        }
        std::hint::black_box(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in Workload::ALL {
            assert_eq!(Workload::from_name(k.name()), Some(k));
        }
        assert_eq!(Workload::from_name("fma"), None);
    }

    /// The chase visits every slot once per cycle: following n pointers from slot 0
    /// returns to slot 0 and touches each slot exactly once.
    #[test]
    fn chase_is_one_cycle_through_all_slots() {
        let chase = Chase::new(4096).unwrap();
        let n = chase.slots.len();
        let base = chase.slots.as_ptr() as usize;
        let mut seen = vec![false; n];
        let mut p = base;
        for _ in 0..n {
            let i = (p - base) / std::mem::size_of::<usize>();
            assert!(!seen[i], "slot {i} visited twice");
            seen[i] = true;
            p = chase.slots[i];
        }
        assert_eq!(p, base);
        assert!(seen.iter().all(|&s| s));
    }

    /// A cycle needs two pointers: one pointer's worth of bytes is too small (8 on
    /// 64-bit targets, 4 on the ARMv6 build), and the message names the minimum.
    #[test]
    fn bad_sizes_are_errors() {
        let one = std::mem::size_of::<usize>();
        let err = Workload::PointerChase.prepare(one).err();
        assert_eq!(err, Some(WorkloadError::BufferTooSmall { bytes: one }));
        assert!(err
            .unwrap()
            .to_string()
            .ends_with(&format!("use --bytes {} or more", 2 * one)));
        assert!(Workload::PointerChase.prepare(2 * one).is_ok());
    }

    /// Every workload runs (and terminates) for 0 and a few units on this CPU.
    #[test]
    fn kernels_run() {
        for k in Workload::ALL {
            match k.prepare(1 << 16) {
                Ok(p) => {
                    p.run(0);
                    p.run(24);
                    let mut r = p.region(12);
                    r();
                }
                Err(e) => assert!(k.unavailable().is_some(), "{k}: {e}"),
            }
        }
    }
}
