//! The AArch64 scenarios. Each prints its RESULT lines and counts checks into a
//! [`Tally`]; `exact` and `overflow` are the shared ones of `pmu_scenarios_common`.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use aarch64_cpu::registers::{Readable, ID_AA64DFR0_EL1, MIDR_EL1};
use pmu_armv8::registers::pmuserenr_el0::PmuserenrEl0;
use pmu_armv8::{generic_event, spe, El1Pmu, EventNumber, PmuOptions};
use pmu_core::{Counter, CounterPool, Event, GenericEvent, Pmu, PrivilegeFilter, Slot};
use pmu_scenarios_common::blocks;
use pmu_scenarios_common::{exact, overflow, Arch, Tally, OVERFLOW_DISTANCE};

use crate::blocks::el0_nops;
use crate::boot::at_el0;
use crate::el0_probes::{PROBES, SETTINGS};
use crate::exceptions::{self, take_el0_trap};
use crate::{print, println, Armv8, Board};

/// Runs every scenario; returns (passed, failed) checks.
pub fn run_all(board: &Board) -> (u32, u32) {
    let mut t = Tally::default();
    // SAFETY: this image runs alone at EL1 on one PE; nothing else touches the PMU.
    let pmu = match unsafe { El1Pmu::take(PmuOptions::new()) } {
        Ok(pmu) => pmu,
        Err(e) => {
            println!("RESULT probe pmu=absent pass=0");
            println!("no usable PMU: {e}");
            return (0, 1);
        }
    };
    let pool = CounterPool::new(pmu);
    probe(&pool, &mut t);
    spe_probe(&mut t);
    spe_config(&mut t);
    let named = |generic| generic_event(generic).map_or("?", |e| event_name(e.preferred()));
    println!(
        "  exact and overflow count {} on an event counter and {} on PMCCNTR_EL0",
        named(GenericEvent::Instructions),
        named(GenericEvent::CpuCycles)
    );
    exact::<Armv8, _>(&pool, &mut t);
    if let Some(width) = overflow::<Armv8, _>(&pool, &mut t) {
        println!(
            "  overflow: counter preset {OVERFLOW_DISTANCE} below its {}-bit wrap; the wrapped run is flagged and still counts 100 after subtracting the empty window",
            width.bits()
        );
    }
    cycle_interrupt(&pool, board, &mut t);
    filters(&pool, &mut t);
    el0_access(&mut t);
    t.counts()
}

fn probe(pool: &CounterPool<El1Pmu>, t: &mut Tally) {
    let pmu = pool.pmu();
    let caps = pool.capabilities();
    let dfr0 = ID_AA64DFR0_EL1.get();
    let midr = MIDR_EL1.get();
    let core = this_core();
    let events = pmu.implemented_events();
    let ok = t.check(caps.programmable >= 1 && pmu.version().is_pmuv3());
    println!(
        "RESULT probe midr={midr:#x} core={} id_aa64dfr0={dfr0:#x} pmuver={:#x} version={:?} counters={} event_width={} cycle_width={} implemented={} pass={ok}",
        core.map_or("none", |c| c.name),
        pmu.version().pmuver(),
        pmu.version(),
        caps.programmable,
        caps.programmable_width.bits(),
        caps.fixed_width.bits(),
        events.iter().count(),
    );
    match core {
        Some(c) => println!(
            "  core: {} ({}), {} events named by its manual",
            c.name,
            c.found_in,
            c.events.len()
        ),
        None => println!("  core: MIDR {midr:#x} has no event table; events by their common names"),
    }
    println!(
        "  PMU {:?}: {} event counters + cycle counter; implemented common events:",
        pmu.version(),
        caps.programmable
    );
    for e in events.iter() {
        println!("    {:#06x} {}", e.get(), event_name(e));
    }
}

/// The event table of the core this runs on, picked by MIDR_EL1 (None: a core
/// pmu-events has no table for, such as QEMU's `max`).
fn this_core() -> Option<&'static pmu_events::Core> {
    // MIDR_EL1 bits 63:32 are RES0: the 32-bit MIDR is the whole register.
    pmu_events::for_midr(MIDR_EL1.get() as u32)
}

/// Event `number`'s name in this core's table, else its common name, else "?".
fn event_name(number: EventNumber) -> &'static str {
    this_core()
        .and_then(|core| core.event_by_code(number.get()))
        .map(|e| e.name)
        .or_else(|| number.name())
        .unwrap_or("?")
}

fn spe_probe(t: &mut Tally) {
    match spe::capabilities::probe() {
        Err(spe::SpeError::NotImplemented) => {
            let ok = t.check(true);
            println!("RESULT spe present=0 pmsver=0 pass={ok}");
            println!("  {}", spe::SpeError::NotImplemented);
        }
        Ok(caps) => {
            let ok = t.check(true);
            println!("RESULT spe present=1 pass={ok}");
            println!("  SPE: {caps:?}");
        }
        Err(e) => {
            let ok = t.check(false);
            println!("RESULT spe present=error pass={ok}");
            println!("  SPE probe failed: {e}");
        }
    }
}

/// The profiling buffer the SPE scenario would hand to the hardware (4 KiB aligned, as
/// PMBPTR_EL1/PMBLIMITR_EL1 need).
#[repr(C, align(4096))]
struct SpeBuffer([u8; 64 * 1024]);
static mut SPE_BUFFER: SpeBuffer = SpeBuffer([0; 64 * 1024]);

/// The usual memory-latency configuration (loads of at least 120 cycles that missed the
/// last-level cache: event bit 9, Arm ARM D24.7.11) applied
/// through the SPE programming sequence: probes first, so without SPE it must end in
/// "SPE not implemented" having touched no SPE register (which would be UNDEFINED and
/// end the image with a FATAL exception).
fn spe_config(t: &mut Tally) {
    use pmu_armv8::spe::config::{OperationTypes, SpeConfigBuilder};
    use pmu_armv8::spe::SpeEvents;
    let request = SpeConfigBuilder::new()
        .operation_types(OperationTypes::LOADS)
        .min_latency(120)
        .require_events(SpeEvents::LLC_MISS);
    let base = core::ptr::addr_of!(SPE_BUFFER) as u64;
    let size = core::mem::size_of::<SpeBuffer>() as u64;
    // SAFETY: EL1; the static buffer is reserved for the profiling unit and never touched
    // by the image otherwise; sampling is stopped below before returning when it started.
    match unsafe { spe::program::apply_if_present(&request, base, size) } {
        Err(spe::SpeError::NotImplemented) => {
            let ok = t.check(true);
            println!("RESULT spe_config outcome=not-implemented pass={ok}");
            println!(
                "  memory-latency filter (loads, >= 120 cycles, LLC miss) not applied: {}",
                spe::SpeError::NotImplemented
            );
        }
        Ok(session) => {
            // SAFETY: sampling was started by apply_if_present on this PE.
            let end = unsafe { spe::program::stop(&mut spe::program::El1Spe) };
            let ok = t.check(true);
            println!("RESULT spe_config outcome=applied pass={ok}");
            println!("  applied {:?}; stopped: {end:?}", session.config);
        }
        Err(e) => {
            let ok = t.check(false);
            println!("RESULT spe_config outcome=error pass={ok}");
            println!("  {e}");
        }
    }
}

static PMU_IRQS: AtomicU32 = AtomicU32::new(0);
/// The identifier of the last PMU interrupt taken (u32::MAX: none).
static PMU_IRQ_ID: AtomicU32 = AtomicU32::new(u32::MAX);
static PMU_IRQ_OVERFLOWS: AtomicU64 = AtomicU64::new(0);

/// The cycle counter preset 1000 cycles before its 64-bit wrap, its overflow interrupt
/// enabled and routed through the board's interrupt controller (QEMU `virt`: GIC PPI
/// 23); 10000 instructions later exactly one interrupt must have arrived.
fn cycle_interrupt(pool: &CounterPool<El1Pmu>, board: &Board, t: &mut Tally) {
    let Ok(cyc) = pool.counter(GenericEvent::CpuCycles.into(), PrivilegeFilter::ALL) else {
        let ok = t.check(false);
        println!("RESULT irq error=counter-allocation pass={ok}");
        return;
    };
    let slot = cyc.slot();
    fn on_irq(intid: u32) {
        if crate::board().is_some_and(|b| (b.irq.is_pmu)(intid)) {
            PMU_IRQS.store(PMU_IRQS.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            PMU_IRQ_ID.store(intid, Ordering::Relaxed);
            // The handler cannot reach the pool; it records the flag state and clears
            // the cycle counter's flag through the registers' owner below.
            irq_clear_cycle_overflow();
        }
    }
    IRQ_POOL.store(
        pool as *const CounterPool<El1Pmu> as usize as u64,
        Ordering::Relaxed,
    );
    exceptions::set_irq_handler(on_irq);
    (board.irq.enable_pmu)();
    let enabled = pool.pmu().enable_overflow_interrupt(slot);
    cyc.preset_before_wrap(1000);
    cyc.start();
    // SAFETY: unmasking IRQs at EL1; the vector table and GIC are set up.
    unsafe { core::arch::asm!("msr daifclr, #2", options(nomem, nostack)) };
    blocks::nops::<10000>();
    // SAFETY: masking IRQs again.
    unsafe { core::arch::asm!("msr daifset, #2", options(nomem, nostack)) };
    cyc.stop();
    let _ = pool.pmu().disable_overflow_interrupt(slot);
    let irqs = PMU_IRQS.load(Ordering::Relaxed);
    let flagged = PMU_IRQ_OVERFLOWS.load(Ordering::Relaxed);
    let flag_after = cyc.overflowed();
    let ok = t.check(enabled.is_ok() && irqs == 1 && flagged == 1 && !flag_after);
    let intid = PMU_IRQ_ID.load(Ordering::Relaxed);
    print!(
        "RESULT irq counter={} controller={} intid=",
        slot_name(slot),
        board.irq.name
    );
    if intid == u32::MAX {
        print!("none");
    } else {
        print!("{intid}");
    }
    println!(
        " interrupts={irqs} overflow_seen_in_handler={flagged} flag_after={} pass={ok}",
        u8::from(flag_after),
    );
    if irqs == 0 {
        println!(
            "  no interrupt arrived; the overflow flag is {} (the counter {} wrap)",
            if flag_after { "set" } else { "clear" },
            if flag_after { "did" } else { "did not" }
        );
        // The handler did not clear it: leave the counter clean for what follows.
        pool.pmu().clear_overflow(slot);
    }
}

static IRQ_POOL: AtomicU64 = AtomicU64::new(0);

fn irq_clear_cycle_overflow() {
    let ptr = IRQ_POOL.load(Ordering::Relaxed) as usize as *const CounterPool<El1Pmu>;
    // SAFETY: `cycle_interrupt` stores the pool's address before enabling the
    // interrupt and the pool outlives it (the interrupt is disabled before returning).
    let Some(pool) = (unsafe { ptr.as_ref() }) else {
        return;
    };
    let slot = Slot::Fixed(0);
    if pool.pmu().overflowed(slot) {
        PMU_IRQ_OVERFLOWS.store(
            PMU_IRQ_OVERFLOWS.load(Ordering::Relaxed) + 1,
            Ordering::Relaxed,
        );
        pool.pmu().clear_overflow(slot);
    }
}

/// One counter counting only EL0, one only EL1, around EL0 blocks of 100 and 0
/// instructions: the EL0 counter sees the difference of 100, the EL1 one 0.
fn filters(pool: &CounterPool<El1Pmu>, t: &mut Tally) {
    let inst = Event::Raw(u64::from(EventNumber::INST_RETIRED.get()));
    let (user, kernel) = match (
        pool.counter(inst, PrivilegeFilter::USER),
        pool.counter(inst, PrivilegeFilter::KERNEL),
    ) {
        (Ok(u), Ok(k)) => (u, k),
        _ => {
            let ok = t.check(false);
            println!("RESULT filter error=counter-allocation pass={ok}");
            return;
        }
    };
    user.start();
    kernel.start();
    let (u100, k100) = el0_window(&user, &kernel, el0_nops::<100>);
    let (u0, k0) = el0_window(&user, &kernel, el0_nops::<0>);
    let user_only = u100 as i64 - u0 as i64;
    let kernel_only = k100 as i64 - k0 as i64;
    let ok_u = t.check(user_only == 100);
    let event = event_name(EventNumber::INST_RETIRED);
    println!("RESULT filter mode=el0-only event={event} block=100 delta={user_only} raw={u100} raw_empty={u0} pass={ok_u}");
    let ok_k = t.check(kernel_only == 0 && k100 > 0);
    println!("RESULT filter mode=el1-only event={event} block=100 delta={kernel_only} raw={k100} raw_empty={k0} pass={ok_k}");
}

/// Deltas of the two counters around one EL0 call; one copy of the machine code for
/// every entry, so the EL1 instructions around the call are the same each time.
#[inline(never)]
fn el0_window(
    user: &Counter<'_, El1Pmu>,
    kernel: &Counter<'_, El1Pmu>,
    entry: extern "C" fn(u64) -> !,
) -> (u64, u64) {
    let (u0, k0) = (user.read(), kernel.read());
    at_el0(entry, 0);
    let (u1, k1) = (user.read(), kernel.read());
    (
        user.width().wrapping_delta(u0, u1),
        kernel.width().wrapping_delta(k0, k1),
    )
}

/// Each PMUSERENR_EL0 setting against each EL0 access: allowed or trapped (EC 0x18).
fn el0_access(t: &mut Tally) {
    for (name, bits) in SETTINGS {
        // SAFETY: EL1 with PMUv3 (checked by El1Pmu::take); this image decides alone
        // what its EL0 code may do.
        unsafe { pmu_armv8::el1::set_user_access(PmuserenrEl0::new(bits)) };
        for probe in &PROBES {
            let _ = take_el0_trap();
            at_el0(probe.entry, 0);
            let trap = take_el0_trap();
            let allowed = probe.allowed_by & bits != 0;
            let ok = t.check(match trap {
                None => allowed,
                Some(ec) => !allowed && ec == exceptions::ec::SYSREG,
            });
            let (outcome, ec) = match trap {
                None => ("ok", 0),
                Some(ec) => ("trap", ec),
            };
            println!(
                "RESULT el0_access pmuserenr={name} access={} outcome={outcome} ec={ec:#x} expected={} pass={ok}",
                probe.name,
                if allowed { "ok" } else { "trap" },
            );
        }
    }
    // SAFETY: as above; EL0 loses all access again.
    unsafe { pmu_armv8::el1::set_user_access(PmuserenrEl0::new(0)) };
}

fn slot_name(slot: Slot) -> &'static str {
    Armv8::slot_name(slot)
}
