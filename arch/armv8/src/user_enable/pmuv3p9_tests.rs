//! Host tests of the grant on a PMUv3p9 CPU next to Linux 6.13+'s perf, against
//! [`FakeUserAccess`], whose EL0 reads follow the Arm ARM rules for PMUSERENR_EL0.UEN and
//! PMUACR_EL1 ([`crate::registers::pmuacr_el1::el0_counter_read`]).
//!
//! perf's side is played as Linux 7.3.4 drivers/perf/arm_pmuv3.c does it (the sequences
//! below name the functions; arch/armv8/tests/pmuv3p9_kernel_source.rs checks them
//! against that source): `armv8pmu_start()` calls `armv8pmu_enable_user_access()` when
//! `sysctl_perf_user_access` is set and the task that runs now has user-readable events
//! (`ctx->nr_user`), else `armv8pmu_disable_user_access()`. The first, on PMUv3p9, writes
//! PMUACR_EL1 = the used counters whose event has user read (`write_pmuacr(mask)`),
//! then PMUSERENR_EL0 = ER | UEN | CR (CR unless `avoid_pmccntr`), and zeroes no
//! counter; the second writes PMUSERENR_EL0 = 0 and leaves PMUACR_EL1.

use super::*;
use crate::fake::{FakeUserAccess, UserAccessOp};
use crate::registers::pmuacr_el1::El0CounterRead;

/// ID_AA64DFR0_EL1.PMUVer = 0b1001: FEAT_PMUv3p9 (Arm ARM, ID_AA64DFR0_EL1; Linux 7.3.4
/// `ARMV8_PMU_DFR_VER_V3P9`, `is_pmuv3p9()`).
const DFR0_PMUV3P9: u64 = 0x9 << 8;
/// PMCR_EL0 with N (bits 15:11) = 6, as QEMU `-cpu max` reports it (0x41013000).
const PMCR_N6: u64 = 0x4101_3000;
/// PMCEID0_EL0 with 0x08 INST_RETIRED and 0x11 CPU_CYCLES (and 0x00 SW_INCR).
const PMCEID0: u64 = 0x2_0101;
/// PMUSERENR_EL0.ER | CR (Arm ARM; Linux `ARMV8_PMU_USERENR_ER`, `_CR`).
const ER_CR: u64 = 0b1100;
/// What Linux 7.3.4 `armv8pmu_enable_user_access()` writes on PMUv3p9:
/// `ARMV8_PMU_USERENR_ER | ARMV8_PMU_USERENR_UEN`, then `| ARMV8_PMU_USERENR_CR`.
const PERF_UEN_GRANT: u64 = UEN | ER_CR;
/// The module's grant on PMUv3p9: UEN | TID | ER | CR.
const MODULE_GRANT: u64 = UEN | TID | ER_CR;
/// The module's default layout for N = 6: INST_RETIRED on PMEVCNTR5_EL0, CPU_CYCLES on
/// PMEVCNTR4_EL0.
const MODULE_COUNTERS: u64 = 0b11_0000;
/// perf's counters in these tests: the rdpmc task's event on PMEVCNTR0_EL0 and its
/// cycles on PMCCNTR_EL0 (perf puts CPU_CYCLES there first, `armv8pmu_get_event_idx`),
/// and a CPU-wide session's event without user read on PMEVCNTR1_EL0.
const RDPMC_TASK: u64 = 1 | 1 << 31;
const CPU_WIDE: u64 = 1 << 1;

fn v3p9_cpu() -> FakeUserAccess {
    let cpu = FakeUserAccess::new(DFR0_PMUV3P9, PMCR_N6, PMCEID0, 0);
    // Counts the reads below tell apart from 0.
    for (n, value) in [(0, 100), (1, 200), (31, 300)] {
        cpu.set_counter(n, value);
    }
    cpu
}

fn default_request() -> Request {
    Request {
        user_access: UserAccess::new(DEFAULT_USER_ACCESS, false).unwrap(),
        layout: Layout::new(6, ModuleEvents::from_slice(&[0x08]).unwrap(), true).unwrap(),
    }
}

/// The module's counters count: values the reads below tell apart from 0.
fn play_module_counts(cpu: &FakeUserAccess) {
    cpu.set_counter(5, 500);
    cpu.set_counter(4, 400);
}

/// Linux 7.3.4 `armv8pmu_enable_user_access()`, PMUv3p9 branch: PMUACR_EL1 = the used
/// counters with user read, then `update_pmuserenr(ER | UEN | CR)`.
fn perf_enable_user_access(cpu: &FakeUserAccess, user_read: u64) {
    cpu.preset_user_access(PERF_UEN_GRANT, user_read);
}

/// Linux 7.3.4 `armv8pmu_disable_user_access()`: `update_pmuserenr(0)`, PMUACR_EL1 left.
fn perf_disable_user_access(cpu: &FakeUserAccess) {
    cpu.preset_user_access(0, cpu.user_access_control());
}

/// Linux 7.3.4 `armv8pmu_start()`, with `kernel.perf_user_access=1`: the task that runs
/// now has `user_read` counters (none: `nr_user` = 0).
fn perf_start(cpu: &FakeUserAccess, user_read: u64) {
    if user_read != 0 {
        perf_enable_user_access(cpu, user_read);
    } else {
        perf_disable_user_access(cpu);
    }
}

/// What EL0 gets from counter `n`: the count, 0 (RAZ) or a trap (`None`).
fn el0(cpu: &FakeUserAccess, n: u8) -> Option<u64> {
    cpu.el0_value(n)
}

/// Linux 7.3.4 perf has `armv8pmu_start()` rewrite PMUSERENR_EL0 at every switch; on a
/// PMUv3p9 CPU the module grants with UEN and PMUACR_EL1 = its own counters: EL0 reads
/// them, and every other counter — perf's — reads as 0. (Before: PMUSERENR_EL0 = ER,
/// which opens every event counter, perf's included.)
#[test]
fn grant_on_pmuv3p9_opens_the_modules_counters_and_nothing_else() {
    let cpu = v3p9_cpu();
    let applied = apply(&cpu, default_request(), None, CPU_WIDE).unwrap();
    play_module_counts(&cpu);
    assert_eq!(
        (cpu.user_enable(), cpu.user_access_control()),
        (MODULE_GRANT, MODULE_COUNTERS)
    );
    assert_eq!((el0(&cpu, 5), el0(&cpu, 4)), (Some(500), Some(400)));
    for perfs in [0, 1, 31] {
        assert_eq!(cpu.el0_read(perfs), El0CounterRead::ReadsAsZero, "{perfs}");
    }
    assert_eq!(
        (applied.outside_pmuserenr, applied.new_pmuacr),
        (0, MODULE_COUNTERS)
    );
    // PMUACR_EL1 is written before the UEN that makes it count.
    let writes: std::vec::Vec<_> = cpu.ops().filter(UserAccessOp::is_write).collect();
    let acr = writes
        .iter()
        .position(|op| *op == UserAccessOp::WritePmuacr(0b11_0000));
    let userenr = writes
        .iter()
        .position(|op| *op == UserAccessOp::WritePmuserenr(MODULE_GRANT));
    assert!(acr.is_some() && acr < userenr, "{writes:?}");
}

/// A re-grant (`regrant`, CPU PM) while perf's rdpmc task runs (its
/// `armv8pmu_enable_user_access()` left PMUACR_EL1 = PMEVCNTR0 | PMCCNTR): that task
/// keeps reading its counters, the module's are added, the CPU-wide session's counter
/// stays closed. (Before: ER alone: the task's PMCCNTR_EL0 read trapped, SIGILL, and
/// PMEVCNTR1_EL0 opened to everyone.)
#[test]
fn grant_beside_perfs_rdpmc_task_keeps_its_counters_and_adds_the_modules() {
    let cpu = v3p9_cpu();
    perf_start(&cpu, RDPMC_TASK);
    apply(&cpu, default_request(), None, RDPMC_TASK | CPU_WIDE).unwrap();
    play_module_counts(&cpu);
    assert_eq!(
        (cpu.user_enable(), cpu.user_access_control()),
        (MODULE_GRANT, RDPMC_TASK | MODULE_COUNTERS)
    );
    assert_eq!((el0(&cpu, 0), el0(&cpu, 31)), (Some(100), Some(300)));
    assert_eq!((el0(&cpu, 5), el0(&cpu, 4)), (Some(500), Some(400)));
    assert_eq!(cpu.el0_read(1), El0CounterRead::ReadsAsZero);
}

/// perf's next rdpmc task (`armv8pmu_start()` → `armv8pmu_enable_user_access()` with its
/// own PMUACR_EL1) closes the module's counters: they read as 0, and EL0 can tell from
/// PMUSERENR_EL0 alone (UEN without the module's TID), which is what the direct backend
/// checks (`GrantedLayout::reads_granted`) before and after every region. The old check
/// (ER, and CR for a cycle counter) passed here and the reads gave 0.
#[test]
fn perfs_next_rdpmc_task_closes_the_modules_counters_and_el0_can_tell() {
    use crate::granted::{GrantedLayout, ReadsNotGranted};
    let cpu = v3p9_cpu();
    apply(&cpu, default_request(), None, 0).unwrap();
    play_module_counts(&cpu);
    let layout = GrantedLayout::parse("5=0x8 4=0x11").unwrap();
    assert_eq!(layout.reads_granted(cpu.user_enable()), Ok(()));
    perf_start(&cpu, CPU_WIDE);
    assert_eq!(el0(&cpu, 5), Some(0));
    // The check before PMUv3p9 (ER for event counters) would pass here.
    assert_eq!(cpu.user_enable() & ER_CR, ER_CR);
    assert_eq!(
        layout.reads_granted(cpu.user_enable()),
        Err(ReadsNotGranted::PerfPerCounterGrant)
    );
    // A task without rdpmc events: 0, a trap-free "revoked".
    perf_start(&cpu, 0);
    assert_eq!(el0(&cpu, 5), None);
    assert_eq!(
        layout.reads_granted(cpu.user_enable()),
        Err(ReadsNotGranted::Revoked)
    );
}

/// Unloading while perf's rdpmc grant was found and nothing rewrote the registers since
/// (perf's `armv8pmu_start()` did not run: the same task still runs) puts perf's grant
/// back exactly: PMUSERENR_EL0 = UEN | ER | CR, PMUACR_EL1 = the task's counters. (Before:
/// 0, and the task's next rdpmc read trapped.)
#[test]
fn restore_puts_back_perfs_grant_exactly() {
    let cpu = v3p9_cpu();
    perf_start(&cpu, RDPMC_TASK);
    let request = default_request();
    let applied = apply(&cpu, request, None, RDPMC_TASK).unwrap();
    // A re-grant that finds its own grant carries perf's over.
    let applied = apply(&cpu, request, Some(&applied), RDPMC_TASK).unwrap();
    assert_eq!(
        (applied.outside_pmuserenr, applied.outside_pmuacr),
        (PERF_UEN_GRANT, RDPMC_TASK)
    );
    let restored = restore(&cpu, &applied, &request.layout, RDPMC_TASK);
    assert_eq!(restored.new_pmuserenr, PERF_UEN_GRANT);
    assert_eq!(
        (cpu.user_enable(), cpu.user_access_control()),
        (PERF_UEN_GRANT, RDPMC_TASK)
    );
    assert_eq!((el0(&cpu, 0), el0(&cpu, 31)), (Some(100), Some(300)));
    assert_eq!(cpu.el0_read(5), El0CounterRead::ReadsAsZero);
}

/// Unloading on a CPU where nobody had a grant: its own absence, exactly (0, and
/// PMUACR_EL1 as found).
#[test]
fn restore_without_perf_leaves_nothing_open() {
    let cpu = v3p9_cpu();
    cpu.preset_user_access(0, 0);
    let request = default_request();
    let applied = apply(&cpu, request, None, 0).unwrap();
    restore(&cpu, &applied, &request.layout, 0);
    assert_eq!((cpu.user_enable(), cpu.user_access_control()), (0, 0));
    assert_eq!(el0(&cpu, 5), None);
}

/// perf rewrote the registers after the grant: its value stays. After
/// `armv8pmu_disable_user_access()` (PMUSERENR_EL0 = 0, PMUACR_EL1 still the module's),
/// PMUACR_EL1 goes back to what the module found; after another rdpmc task's
/// `armv8pmu_enable_user_access()` both registers are perf's and are left alone.
#[test]
fn restore_after_perf_rewrote_leaves_perfs_values() {
    let request = default_request();
    let cpu = v3p9_cpu();
    let applied = apply(&cpu, request, None, 0).unwrap();
    perf_start(&cpu, 0);
    let restored = restore(&cpu, &applied, &request.layout, 0);
    assert_eq!(restored.new_pmuserenr, 0);
    assert_eq!((cpu.user_enable(), cpu.user_access_control()), (0, 0));

    let cpu = v3p9_cpu();
    let applied = apply(&cpu, request, None, 0).unwrap();
    perf_start(&cpu, RDPMC_TASK);
    cpu.clear_ops();
    restore(&cpu, &applied, &request.layout, RDPMC_TASK);
    assert_eq!(
        (cpu.user_enable(), cpu.user_access_control()),
        (PERF_UEN_GRANT, RDPMC_TASK)
    );
    assert!(!cpu.ops().any(|op| matches!(
        op,
        UserAccessOp::WritePmuserenr(_) | UserAccessOp::WritePmuacr(_)
    )));
}

/// After a CPU power-down PMUSERENR_EL0 is 0 (`cpu_do_resume`, arch/arm64/mm/proc.S)
/// and nobody restores PMUACR_EL1 (its value is then not the module's: all ones here).
/// The re-grant writes PMUACR_EL1 afresh: only the module's counters open. (Before: ER.)
#[test]
fn regrant_after_cpu_pm_exit_scopes_again() {
    let cpu = v3p9_cpu();
    let request = default_request();
    let applied = apply(&cpu, request, None, 0).unwrap();
    cpu.preset_user_access(0, u64::MAX);
    apply(&cpu, request, Some(&applied), 0).unwrap();
    assert_eq!(
        (cpu.user_enable(), cpu.user_access_control()),
        (MODULE_GRANT, MODULE_COUNTERS)
    );
    assert_eq!(cpu.el0_read(0), El0CounterRead::ReadsAsZero);
}

/// A kernel before 6.13 on a PMUv3p9 CPU grants its rdpmc task ER | CR without UEN
/// (Linux 6.12 `armv8pmu_enable_user_access()`): every counter is that task's to read
/// already, so the module keeps that grant whole and adds its bits, without UEN
/// (narrowing it with PMUACR_EL1 would turn the task's reads into zeroes). (Before: ER
/// alone, and the task's PMCCNTR_EL0 read trapped.)
#[test]
fn a_grant_without_uen_from_an_older_kernel_is_kept_whole() {
    let cpu = v3p9_cpu();
    cpu.preset_user_access(ER_CR, 0);
    let applied = apply(&cpu, default_request(), None, 0).unwrap();
    assert_eq!((applied.new_pmuserenr, applied.new_pmuacr), (ER_CR, 0));
    assert!(!cpu
        .ops()
        .any(|op| matches!(op, UserAccessOp::WritePmuacr(_))));
    assert_eq!(el0(&cpu, 31), Some(300));
}

/// `el0_programming=1` (EN) opens every counter whatever PMUACR_EL1 says (Arm ARM:
/// PMUACR_EL1 applies when {UEN, EN} == {1, 0}): the grant stays EN | the requested
/// bits, and PMUACR_EL1 is not touched.
#[test]
fn programming_access_is_not_scoped() {
    let cpu = v3p9_cpu();
    let request = Request {
        user_access: UserAccess::new(DEFAULT_USER_ACCESS, true).unwrap(),
        ..default_request()
    };
    let applied = apply(&cpu, request, None, 0).unwrap();
    assert_eq!(applied.new_pmuserenr, EN | DEFAULT_USER_ACCESS);
    assert!(!cpu
        .ops()
        .any(|op| matches!(op, UserAccessOp::ReadPmuacr | UserAccessOp::WritePmuacr(_))));
}

/// Before PMUv3p9 PMUACR_EL1 is UNDEFINED: never read or written (QEMU `-cpu max`,
/// PMUVer = 6).
#[test]
fn before_pmuv3p9_pmuacr_is_never_touched() {
    let cpu = FakeUserAccess::new(0x6 << 8, PMCR_N6, PMCEID0, 0);
    let request = default_request();
    let applied = apply(&cpu, request, None, 0).unwrap();
    restore(&cpu, &applied, &request.layout, 0);
    assert_eq!(applied.new_pmuserenr, DEFAULT_USER_ACCESS);
    assert!(!cpu
        .ops()
        .any(|op| matches!(op, UserAccessOp::ReadPmuacr | UserAccessOp::WritePmuacr(_))));
}
