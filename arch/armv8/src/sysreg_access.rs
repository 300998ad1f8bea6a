//! The one `PmuRegisters` implementation over the real system registers, shared by the
//! EL1 and the EL0 register files: both access the same `_EL0` registers with the same
//! instructions; only who may construct them, and under which conditions, differs.

/// Implements `PmuRegisters` for `$file` with the `mrs`/`msr` accessors of
/// [`crate::asm`], every method `#[inline]` (one instruction and a bound test: a call
/// would cost more than the access, and the caller's own test of the counter merges
/// with `exists`). `$file` must have a field `event_counters` (PMCR_EL0.N) and a
/// constructor whose safety contract guarantees that every register used here is
/// accessible at the current Exception level, on a pinned PE, owned by the caller.
macro_rules! sysreg_pmu_registers {
    ($file:ty) => {
        impl $file {
            #[inline]
            fn exists(&self, counter: EventCounter) -> bool {
                counter.index() < self.event_counters
            }
        }

        // SAFETY (for every `unsafe` block below): constructing the register file
        // guaranteed access to every register used here (see its `new`); event counters
        // at or above PMCR_EL0.N are never accessed.
        impl PmuRegisters for $file {
            #[inline]
            fn pmcr(&self) -> PmcrEl0 {
                // SAFETY: see above.
                PmcrEl0::new(unsafe { asm::read_pmcr_el0() })
            }

            #[inline]

            fn set_pmcr(&self, value: PmcrEl0) {
                // SAFETY: see above.
                unsafe { asm::write_pmcr_el0(value.get()) }
            }

            #[inline]

            fn pmceid0(&self) -> Pmceid0El0 {
                // SAFETY: see above.
                Pmceid0El0::new(unsafe { asm::read_pmceid0_el0() })
            }

            #[inline]

            fn pmceid1(&self) -> Pmceid1El0 {
                // SAFETY: see above.
                Pmceid1El0::new(unsafe { asm::read_pmceid1_el0() })
            }

            #[inline]

            fn pmcntenset(&self) -> PmcntensetEl0 {
                // SAFETY: see above.
                PmcntensetEl0::new(unsafe { asm::read_pmcntenset_el0() })
            }

            #[inline]

            fn set_pmcntenset(&self, value: PmcntensetEl0) {
                // SAFETY: see above.
                unsafe { asm::write_pmcntenset_el0(value.get()) }
            }

            #[inline]

            fn set_pmcntenclr(&self, value: PmcntenclrEl0) {
                // SAFETY: see above.
                unsafe { asm::write_pmcntenclr_el0(value.get()) }
            }

            #[inline]

            fn pmovsset(&self) -> PmovssetEl0 {
                // SAFETY: see above.
                PmovssetEl0::new(unsafe { asm::read_pmovsset_el0() })
            }

            #[inline]

            fn set_pmovsclr(&self, value: PmovsclrEl0) {
                // SAFETY: see above.
                unsafe { asm::write_pmovsclr_el0(value.get()) }
            }

            #[inline]

            fn set_pmswinc(&self, value: PmswincEl0) {
                // SAFETY: see above.
                unsafe { asm::write_pmswinc_el0(value.get()) }
            }

            #[inline]

            fn pmevtyper(&self, counter: EventCounter) -> PmevtypernEl0 {
                if !self.exists(counter) {
                    return PmevtypernEl0::new(0);
                }
                // SAFETY: see above; n < N was just checked.
                PmevtypernEl0::new(unsafe { asm::read_pmevtyper_el0(counter) })
            }

            #[inline]

            fn set_pmevtyper(&self, counter: EventCounter, value: PmevtypernEl0) {
                if self.exists(counter) {
                    // SAFETY: see above; n < N was just checked.
                    unsafe { asm::write_pmevtyper_el0(counter, value.get()) }
                }
            }

            #[inline]

            fn pmevcntr(&self, counter: EventCounter) -> u64 {
                if !self.exists(counter) {
                    return 0;
                }
                // SAFETY: see above; n < N was just checked.
                unsafe { asm::read_pmevcntr_el0(counter) }
            }

            #[inline]

            fn set_pmevcntr(&self, counter: EventCounter, value: u64) {
                if self.exists(counter) {
                    // SAFETY: see above; n < N was just checked.
                    unsafe { asm::write_pmevcntr_el0(counter, value) }
                }
            }

            #[inline]

            fn pmccfiltr(&self) -> PmccfiltrEl0 {
                // SAFETY: see above.
                PmccfiltrEl0::new(unsafe { asm::read_pmccfiltr_el0() })
            }

            #[inline]

            fn set_pmccfiltr(&self, value: PmccfiltrEl0) {
                // SAFETY: see above.
                unsafe { asm::write_pmccfiltr_el0(value.get()) }
            }

            #[inline]

            fn pmccntr(&self) -> u64 {
                // SAFETY: see above.
                unsafe { asm::read_pmccntr_el0() }
            }

            #[inline]

            fn set_pmccntr(&self, value: u64) {
                // SAFETY: see above.
                unsafe { asm::write_pmccntr_el0(value) }
            }
        }
    };
}
