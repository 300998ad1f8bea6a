// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! arm64: the grant of PMUSERENR_EL0 and the module's counters, per CPU.
//!
//! The per-CPU register work is the stock flavour's Rust object
//! (kmod-enable-user/stock/rust over `pmu_armv8::user_enable`), linked into this
//! module, so both flavours run the same code; this file is the kernel glue around it,
//! as kmod-enable-user/stock/kmod_enable_user_glue.c is for stock kernels: the
//! parameters, CPU hotplug, CPU PM, `regrant`, and the log lines (the same in both).

use super::*;
use core::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU32, Ordering};

/// The module-wide settings (C: `struct kmod_eu_config`, Rust object:
/// `arm64::KmodEuConfig`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Config {
    user_access: u32,
    events: [u16; 6],
    n_events: u8,
    event_counters: u8,
    cycle_counter: bool,
    el0_programming: bool,
    pmuver: u8,
    sentinel: bool,
    sentinel_event: u8,
    kernel_at_el2: bool,
}
const _: () = assert!(core::mem::size_of::<Config>() == 24);

/// One CPU's grant (C: `struct kmod_eu_cpu`, Rust object: `arm64::KmodEuCpu`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CpuState {
    old_userenr: u64,
    found_userenr: u64,
    new_userenr: u64,
    owned: u64,
    zeroed: u64,
    kept: u64,
    released: u64,
    taken: u64,
    busy_config: u64,
    error: i32,
    error_detail: u32,
    applied: bool,
    enabled_pmu: bool,
    pmuver: u8,
    reserved: [u8; 5],
    perf_used: u64,
    new_acr: u64,
    outside_userenr: u64,
    outside_acr: u64,
}
const _: () = assert!(core::mem::size_of::<CpuState>() == 120);

/// The layout text's size with its NUL (`pmu_armv8::user_enable::LAYOUT_TEXT_MAX` + 1).
const LAYOUT_SIZE: usize = 97;

extern "C" {
    fn kmod_eu_arm64_configure(
        cfg: *mut Config,
        user_access: u32,
        el0_programming: bool,
        events: *const c_char,
        cycle_counter: bool,
        sentinel: bool,
        layout: *mut c_char,
        layout_size: usize,
        why: *mut *const c_char,
    ) -> c_int;
    fn kmod_eu_arm64_apply(st: *mut CpuState, cfg: *const Config);
    fn kmod_eu_arm64_restore(st: *mut CpuState, cfg: *const Config);
    fn kmod_eu_arm64_access_names(bits: u64) -> *const c_char;
    fn kmod_eu_arm64_grant_words(bits: u64) -> *const c_char;
}

// perf's bookkeeping, in C (stock/kmod_enable_user_perf.c, linked into this module
// too: struct arm_pmu and struct perf_event have no Rust bindings): the layout's
// counters taken out of perf's counter mask, one keeper event per CPU that keeps
// perf's PMCR_EL0.E on, and perf's used_mask of this CPU.
extern "C" {
    fn kmod_eu_perf_init() -> c_int;
    fn kmod_eu_perf_cpu_up(
        cpu: c_uint,
        layout_mask: u64,
        keeper: bool,
        why: *mut *const c_char,
    ) -> c_int;
    fn kmod_eu_perf_cpu_down(cpu: c_uint);
    fn kmod_eu_perf_grant_check_here(granted: u64) -> c_int;
    fn kmod_eu_perf_keeper_revive(cpu: c_uint);
    fn kmod_eu_perf_cpu_pm_exit(granted: bool);
    fn kmod_eu_perf_used_here() -> u64;
    fn kmod_eu_perf_kernel_data_locked_down() -> bool;
    fn kmod_eu_perf_exit();
}

/// `kmod_eu_perf_cpu_up`'s answer for a CPU `cpus=` leaves out
/// (stock/kmod_enable_user_owners.h `KMOD_EU_CPU_NOT_NAMED`).
const CPU_NOT_NAMED: c_int = 1;

/// The layout's event counters (the top `n_events + cycle_counter + sentinel` of
/// PMCR_EL0.N), as PMCNTENSET_EL0 bits.
fn layout_mask(cfg: &Config) -> u64 {
    let k = u32::from(cfg.n_events) + u32::from(cfg.cycle_counter) + u32::from(cfg.sentinel);
    let n = u32::from(cfg.event_counters);
    if k == 0 || k > n {
        return 0;
    }
    ((1u64 << k) - 1) << (n - k)
}

/// The Rust object's panic handler calls this (a panic path survives only if the
/// object's check missed one: stock/check-object.sh rejects objects that import it).
#[no_mangle]
extern "C" fn kmod_enable_user_rust_panic() -> ! {
    panic!("kmod_enable_user: panic in the grant object");
}

/// A static C string from the Rust object, for the log.
fn text(ptr: *const c_char) -> &'static CStr {
    // SAFETY: the Rust object returns pointers to static NUL-terminated strings.
    unsafe { CStr::from_char_ptr(ptr) }
}

static USER_ACCESS: param::Value<c_uint> = param::Value::new(8);
static EL0_PROGRAMMING: param::Value<bool> = param::Value::new(false);
static EVENTS: param::Value<*mut c_char> = param::Value::new(c"0x8".as_ptr() as *mut c_char);
static CYCLE_COUNTER: param::Value<bool> = param::Value::new(true);
static SENTINEL: param::Value<bool> = param::Value::new(false);

#[link_section = "__param"]
#[used(compiler)]
static USER_ACCESS_PARAM: param::Param =
    param::describe(c"user_access", &raw const bindings::param_ops_uint, USER_ACCESS.as_arg());
#[link_section = "__param"]
#[used(compiler)]
static EL0_PROGRAMMING_PARAM: param::Param = param::describe(
    c"el0_programming",
    &raw const bindings::param_ops_bool,
    EL0_PROGRAMMING.as_arg()
);
#[link_section = "__param"]
#[used(compiler)]
static EVENTS_PARAM: param::Param =
    param::describe(c"events", &raw const bindings::param_ops_charp, EVENTS.as_arg());
#[link_section = "__param"]
#[used(compiler)]
static CYCLE_COUNTER_PARAM: param::Param = param::describe(
    c"cycle_counter",
    &raw const bindings::param_ops_bool,
    CYCLE_COUNTER.as_arg()
);

modinfo!(
    PARM_USER_ACCESS,
    "parm=user_access:PMUSERENR_EL0 read bits to grant on every CPU: SW=2 (software increment), CR=4 (perf's cycle counter), ER=8 (event counters: every one, perf's too); default 8 = ER, read-only. Write access (EN=1) only through el0_programming=1"
);
modinfo!(PARMTYPE_USER_ACCESS, "parmtype=user_access:uint");
modinfo!(
    PARM_EL0_PROGRAMMING,
    "parm=el0_programming:Also let EL0 program the PMU (PMUSERENR_EL0.EN): every process may then count at EL1 (a side channel into the kernel) and stop or reset perf's counters; default 0"
);
modinfo!(PARMTYPE_EL0_PROGRAMMING, "parmtype=el0_programming:bool");
modinfo!(
    PARM_EVENTS,
    "parm=events:Events the module counts for EL0 (EL0 only) on the highest-numbered event counters: comma-separated numbers, e.g. 0x8,0x3; default 0x8 (INST_RETIRED); empty for none"
);
modinfo!(PARMTYPE_EVENTS, "parmtype=events:charp");
modinfo!(
    PARM_CYCLE_COUNTER,
    "parm=cycle_counter:Also count CPU_CYCLES for EL0, EL0 only, on one of the module's event counters (PMCCNTR_EL0 stays perf's); default 1"
);
modinfo!(PARMTYPE_CYCLE_COUNTER, "parmtype=cycle_counter:bool");
#[link_section = "__param"]
#[used(compiler)]
static SENTINEL_PARAM: param::Param =
    param::describe(c"sentinel", &raw const bindings::param_ops_bool, SENTINEL.as_arg());
modinfo!(
    PARM_SENTINEL,
    "parm=sentinel:Also run the kernel-entry sentinel: an event counter counting INST_RETIRED at the kernel's level only (:k in layout), so a region read at EL0 sees the kernel run in it. Tells every process how much the kernel did on its CPU (perf allows that only with perf_event_paranoid <= 1); default 0"
);
modinfo!(PARMTYPE_SENTINEL, "parmtype=sentinel:bool");

/// The settings every CPU gets: written once by `enable` before any reader exists
/// (the hotplug state, the CPU PM notifier and `regrant` all come after).
struct Shared<T>(UnsafeCell<T>);
// SAFETY: written only in `enable`, before the callbacks that read it are installed,
// and never again while the module is loaded.
unsafe impl<T> Sync for Shared<T> {}
static CONFIG: Shared<Config> = Shared(UnsafeCell::new(Config {
    user_access: 0,
    events: [0; 6],
    n_events: 0,
    event_counters: 0,
    cycle_counter: false,
    el0_programming: false,
    pmuver: 0,
    sentinel: false,
    sentinel_event: 0,
    kernel_at_el2: false,
}));
static LAYOUT: Shared<[u8; LAYOUT_SIZE]> = Shared(UnsafeCell::new(layout_none()));

/// `none` and NULs: the `layout` text before the module is configured.
const fn layout_none() -> [u8; LAYOUT_SIZE] {
    let mut text = [0u8; LAYOUT_SIZE];
    text[0] = b'n';
    text[1] = b'o';
    text[2] = b'n';
    text[3] = b'e';
    text
}

fn config() -> *const Config {
    CONFIG.0.get()
}

fn layout() -> &'static CStr {
    // SAFETY: NUL-terminated (the Rust object writes the NUL; the initial text has
    // one) and not written after `enable`.
    unsafe { CStr::from_char_ptr(LAYOUT.0.get().cast()) }
}

static SLOTS: AtomicPtr<percpu::Slot<CpuState>> = AtomicPtr::new(core::ptr::null_mut());
/// True while `enable()` installs the hotplug state: a CPU that cannot be granted
/// then fails the load; later it only stays without a grant.
static INSTALLING: AtomicBool = AtomicBool::new(false);
/// 0: not loaded (no `regrant`), 1: loaded, 2: a `regrant` is running. Unload waits
/// for 1 and sets 0, so no `regrant` outlives the slots.
static STATE: AtomicU32 = AtomicU32::new(0);
static CPU_PM_REGRANTS: AtomicI64 = AtomicI64::new(0);
static CPU_PM_FAILURES: AtomicI64 = AtomicI64::new(0);

/// A grant or restore run on one CPU with interrupts off: the slot is reached and
/// written only there, and what the log line needs is copied out before interrupts come
/// back on (the CPU PM notifier may rewrite the slot at any later point, so the caller
/// never reads the slot itself).
struct OnCpu {
    /// The slot of the CPU the function runs on (`percpu::slot_ptr`).
    slot: *mut CpuState,
    /// A CPU that came online: start from an empty slot. Otherwise act only if the slot
    /// holds a grant.
    fresh: bool,
    /// Whether the slot held a grant (or `fresh`) and the function acted.
    acted: bool,
    /// PMUSERENR_EL0 as granted, before a restore.
    granted: u64,
    /// The slot after the function.
    after: CpuState,
}

impl OnCpu {
    fn new(slot: *mut CpuState, fresh: bool) -> Self {
        Self {
            slot,
            fresh,
            acted: false,
            granted: 0,
            after: CpuState::default(),
        }
    }
}

/// On the CPU, interrupts off: the grant (or re-grant) of its slot.
///
/// # Safety
///
/// `info` is a `*mut OnCpu` valid for the call whose `slot` is the slot of the CPU this
/// runs on, with interrupts disabled (through [`percpu::run_on`]).
unsafe extern "C" fn apply_on_cpu(info: *mut c_void) {
    // SAFETY: the caller's contract; `OnCpu` is this call's own.
    let work = unsafe { &mut *info.cast::<OnCpu>() };
    // SAFETY: this CPU's slot, on this CPU with interrupts off: no hotplug callback,
    // notifier or `regrant` of the slot runs meanwhile, so this is the only reference.
    let st = unsafe { &mut *work.slot };
    if work.fresh {
        // A fresh grant: what this CPU holds now is what the restore goes back to.
        *st = CpuState::default();
    } else if !st.applied {
        return;
    }
    apply_here(st);
    work.acted = true;
    work.after = *st;
}

/// The apply of this CPU's slot `st`, on its CPU with interrupts off: perf's used_mask,
/// then no grant over a keeper perf evicted (stock/kmod_enable_user_perf.c), then the
/// grant.
fn apply_here(st: &mut CpuState) {
    let granted = if st.applied { st.new_userenr } else { 0 };
    // SAFETY: every caller runs on the slot's CPU with interrupts off (where perf's
    // used_mask is read and the keeper's state checked); `config()` was accepted by
    // `kmod_eu_arm64_configure`.
    unsafe {
        st.perf_used = kmod_eu_perf_used_here();
        st.error = kmod_eu_perf_grant_check_here(granted);
        if st.error == 0 {
            kmod_eu_arm64_apply(st, config());
        }
    }
}

/// On the CPU, interrupts off: the restore of its slot, if it holds a grant.
///
/// # Safety
///
/// As for [`apply_on_cpu`].
unsafe extern "C" fn restore_on_cpu(info: *mut c_void) {
    // SAFETY: as in `apply_on_cpu`.
    let work = unsafe { &mut *info.cast::<OnCpu>() };
    // SAFETY: as in `apply_on_cpu`.
    let st = unsafe { &mut *work.slot };
    if !st.applied {
        return;
    }
    work.granted = st.new_userenr;
    // SAFETY: as in `apply_on_cpu`.
    unsafe {
        st.perf_used = kmod_eu_perf_used_here();
        kmod_eu_arm64_restore(st, config());
    }
    work.acted = true;
    work.after = *st;
}

/// The log line of an apply on `cpu` (`why`: online, regrant); its errno.
fn report_apply(cpu: c_uint, st: &CpuState, why: &str) -> c_int {
    // SAFETY: reading the settings written before any callback ran.
    let event_counters = unsafe { (*config()).event_counters };
    match st.error {
        0 => pr_info!(
            "cpu{cpu}: PMUSERENR_EL0 {:#x} -> {:#x} ({}: {}) [{why}]; counters for EL0: {}, started {:#x}, kept running {:#x}; perf holds {:#x}\n",
            st.found_userenr,
            st.new_userenr,
            // SAFETY: static strings of the Rust object.
            text(unsafe { kmod_eu_arm64_access_names(st.new_userenr) }),
            // SAFETY: as above.
            text(unsafe { kmod_eu_arm64_grant_words(st.new_userenr) }),
            layout(),
            st.owned & !st.kept,
            st.kept,
            st.perf_used
        ),
        e if e == -(bindings::EBUSY as i32) => pr_err!(
            "cpu{cpu}: counter {} is perf's (in its used_mask {:#x}; config {:#x}): no grant on this CPU [{why}]\n",
            st.error_detail,
            st.perf_used,
            st.busy_config
        ),
        e if e == -(bindings::ENOLINK as i32) => pr_err!(
            "cpu{cpu}: perf evicted the module's keeper event (an older pinned perf group took its counter): the grant is withdrawn on this CPU until `regrant` finds room for the keeper [{why}]\n"
        ),
        e if e == -(bindings::EOPNOTSUPP as i32) => pr_err!(
            "cpu{cpu}: event {:#x} is not implemented by this CPU (PMCEID0/1_EL0): no grant on this CPU [{why}]\n",
            st.error_detail
        ),
        e if e == -(bindings::ENODEV as i32) && st.error_detail != 0 => pr_err!(
            "cpu{cpu}: {} event counters (PMCR_EL0.N), the layout needs {event_counters}: no grant on this CPU [{why}]\n",
            st.error_detail
        ),
        e if e == -(bindings::ENODEV as i32) => pr_err!(
            "cpu{cpu}: no PMUv3 (ID_AA64DFR0_EL1.PMUVer={:#x}): no grant on this CPU [{why}]\n",
            st.pmuver
        ),
        e => pr_err!("cpu{cpu}: grant failed ({:?}) [{why}]\n", Error::from_errno(e)),
    }
    st.error
}

/// Hotplug startup: runs on `cpu` when it comes online, and on every online CPU when
/// the state is installed.
///
/// # Safety
///
/// Called by the CPU-hotplug core only, for `cpu`, while the state is installed.
unsafe extern "C" fn cpu_online(cpu: c_uint) -> c_int {
    let Some(slot) = percpu::slot_ptr(&SLOTS, cpu) else {
        return 0;
    };
    let mut why: *const c_char = core::ptr::null();
    // No keeper under el0_programming=1 (stock/kmod_enable_user_perf.c).
    // SAFETY: process context (the CPU's hotplug thread); `config()` is set.
    let ret = unsafe {
        kmod_eu_perf_cpu_up(
            cpu,
            layout_mask(&*config()),
            !(*config()).el0_programming,
            &mut why,
        )
    };
    if ret == CPU_NOT_NAMED {
        pr_info!("cpu{cpu}: not in cpus=: no grant and no keeper on this CPU [online]\n");
        return 0;
    }
    if ret != 0 {
        pr_err!(
            "cpu{cpu}: {} ({:?}): no grant on this CPU [online]\n",
            text(why),
            Error::from_errno(ret)
        );
        return if INSTALLING.load(Ordering::Acquire) { ret } else { 0 };
    }
    let mut work = OnCpu::new(slot, true);
    let ret = match percpu::run_on(cpu, apply_on_cpu, &mut work) {
        Ok(()) => report_apply(cpu, &work.after, "online"),
        Err(e) => {
            pr_err!("cpu{cpu}: cannot run on the CPU ({e:?})\n");
            e.to_errno()
        }
    };
    if ret != 0 {
        // No grant here: the keeper's counter goes back to perf.
        // SAFETY: process context; the keeper of `cpu` was created above.
        unsafe { kmod_eu_perf_cpu_down(cpu) };
        if INSTALLING.load(Ordering::Acquire) {
            pr_err!("cpu{cpu}: refusing to load\n");
            return ret;
        }
    }
    0
}

/// Hotplug teardown: runs on `cpu` when it goes offline, and on every online CPU when
/// the state is removed.
///
/// # Safety
///
/// As for [`cpu_online`].
unsafe extern "C" fn cpu_offline(cpu: c_uint) -> c_int {
    let Some(slot) = percpu::slot_ptr(&SLOTS, cpu) else {
        return 0;
    };
    let mut work = OnCpu::new(slot, false);
    if let Err(e) = percpu::run_on(cpu, restore_on_cpu, &mut work) {
        pr_err!("cpu{cpu}: cannot run on the CPU to restore it ({e:?})\n");
        return 0;
    }
    // After the restore: the keeper's counter goes back to perf last (a no-op without a
    // keeper).
    // SAFETY: process context (hotplug teardown).
    unsafe { kmod_eu_perf_cpu_down(cpu) };
    if !work.acted {
        return 0;
    }
    let st = &work.after;
    let note = if st.found_userenr != work.granted {
        " (perf had rewritten it: left as perf wrote it)"
    } else {
        ""
    };
    pr_info!(
        "cpu{cpu}: PMUSERENR_EL0 {:#x} -> {:#x} ({}){note}; counters released {:#x}, left to perf {:#x}\n",
        st.found_userenr,
        st.new_userenr,
        // SAFETY: a static string of the Rust object.
        text(unsafe { kmod_eu_arm64_access_names(st.new_userenr) }),
        st.released,
        st.taken
    );
    0
}

#[cfg(CONFIG_CPU_PM)]
mod cpu_pm {
    //! CPU PM: after a CPU power-down (`cpu_do_resume` resets PMUSERENR_EL0) and
    //! after every CPU_PM_EXIT (arm_pmu's `cpu_pm_pmu_notify` resets the PMU:
    //! `armv8pmu_reset`), put the grant back. Runs on the CPU itself with interrupts
    //! off, after arm_pmu's notifier (priority -1 < arm_pmu's 0: the chain runs higher
    //! priorities first).

    use super::*;

    /// `enum cpu_pm_event` (include/linux/cpu_pm.h): CPU_PM_ENTER = 0,
    /// CPU_PM_ENTER_FAILED = 1, CPU_PM_EXIT = 2.
    const CPU_PM_ENTER_FAILED: usize = 1;
    const CPU_PM_EXIT: usize = 2;

    extern "C" {
        fn cpu_pm_register_notifier(nb: *mut bindings::notifier_block) -> c_int;
        fn cpu_pm_unregister_notifier(nb: *mut bindings::notifier_block) -> c_int;
    }

    /// The CPU PM notifier.
    ///
    /// # Safety
    ///
    /// Called by the CPU PM notifier chain only, on the CPU concerned, with
    /// interrupts off.
    unsafe extern "C" fn notify(
        _nb: *mut bindings::notifier_block,
        action: usize,
        _data: *mut c_void,
    ) -> c_int {
        if action != CPU_PM_EXIT && action != CPU_PM_ENTER_FAILED {
            return bindings::NOTIFY_OK as c_int;
        }
        let cpu = this_cpu();
        let Some(slot) = percpu::slot_ptr(&SLOTS, cpu) else {
            return bindings::NOTIFY_OK as c_int;
        };
        // SAFETY: this CPU's slot with interrupts off here: the hotplug callbacks and
        // `regrant` touch it only on this CPU with interrupts off too, so this is the
        // only reference; the notifier is unregistered (and waited for) before the
        // slots go.
        let st = unsafe { &mut *slot };
        // perf's reset skipped the reserved counters (stock/kmod_enable_user_perf.c).
        // SAFETY: on this CPU with interrupts off.
        unsafe { kmod_eu_perf_cpu_pm_exit(st.applied) };
        if !st.applied {
            return bindings::NOTIFY_OK as c_int;
        }
        apply_here(st);
        CPU_PM_REGRANTS.fetch_add(1, Ordering::Relaxed);
        if st.error != 0 {
            CPU_PM_FAILURES.fetch_add(1, Ordering::Relaxed);
        }
        bindings::NOTIFY_OK as c_int
    }

    struct Block(UnsafeCell<bindings::notifier_block>);
    // SAFETY: the kernel's notifier chain owns the block while registered; this
    // module only passes its address.
    unsafe impl Sync for Block {}
    static BLOCK: Block = Block(UnsafeCell::new(bindings::notifier_block {
        notifier_call: Some(notify),
        next: core::ptr::null_mut(),
        priority: -1,
    }));

    pub(super) fn register() -> Result {
        // SAFETY: a static block, unregistered in `unregister` before unload.
        kernel::error::to_result(unsafe { cpu_pm_register_notifier(BLOCK.0.get()) })
    }

    pub(super) fn unregister() {
        // SAFETY: registered by `register`; afterwards `synchronize_rcu` waits for
        // notifiers already running (interrupts off: an RCU read-side section).
        unsafe {
            cpu_pm_unregister_notifier(BLOCK.0.get());
            bindings::synchronize_rcu();
        }
    }
}

#[cfg(not(CONFIG_CPU_PM))]
mod cpu_pm {
    //! A kernel without CONFIG_CPU_PM never powers CPUs down behind the scheduler's
    //! back: nothing to watch.
    use super::*;
    pub(super) fn register() -> Result {
        Ok(())
    }
    pub(super) fn unregister() {}
}

/// `layout` and `cpu_pm_regrants`: read-only parameters with getters.
///
/// # Safety
///
/// Called by the kernel's parameter code only.
unsafe extern "C" fn read_only_set(_val: *const c_char, _kp: *const bindings::kernel_param) -> c_int {
    -(bindings::EPERM as c_int)
}

/// Writes `text` and a newline into the parameter buffer (a page).
fn emit(buffer: *mut c_char, text: &[u8]) -> c_int {
    let n = text.len().min(4094);
    // SAFETY: the kernel passes a PAGE_SIZE buffer to parameter getters.
    unsafe {
        core::ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast::<u8>(), n);
        *buffer.add(n) = b'\n' as c_char;
    }
    n as c_int + 1
}

/// The `layout` getter.
///
/// # Safety
///
/// Called by the kernel's parameter code only, with a PAGE_SIZE `buffer`.
unsafe extern "C" fn layout_get(buffer: *mut c_char, _kp: *const bindings::kernel_param) -> c_int {
    emit(buffer, layout().as_bytes())
}

/// The `cpu_pm_regrants` getter.
///
/// # Safety
///
/// As for [`layout_get`].
unsafe extern "C" fn cpu_pm_regrants_get(
    buffer: *mut c_char,
    _kp: *const bindings::kernel_param,
) -> c_int {
    let mut out = [0u8; 48];
    let mut w = Writer { out: &mut out, len: 0 };
    let _ = write!(
        w,
        "{} {}",
        CPU_PM_REGRANTS.load(Ordering::Relaxed),
        CPU_PM_FAILURES.load(Ordering::Relaxed)
    );
    let len = w.len;
    emit(buffer, &out[..len])
}

use core::fmt::Write as _;

/// A `core::fmt::Write` into a byte array.
struct Writer<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl core::fmt::Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = (self.len + s.len()).min(self.out.len());
        self.out[self.len..end].copy_from_slice(&s.as_bytes()[..end - self.len]);
        self.len = end;
        Ok(())
    }
}

/// Whether `cpu` is in the kernel's online mask (`cpumask_test_cpu()` is a C inline
/// without a binding: the mask is an array of `unsigned long` bits).
fn online(cpu: c_uint) -> bool {
    let bits = usize::BITS;
    // SAFETY: `__cpu_online_mask` is the kernel's exported online mask; read under
    // `cpus_read_lock` (the caller), it is stable; `cpu < nr_cpu_ids` fits it.
    let word = unsafe {
        (*core::ptr::addr_of!(bindings::__cpu_online_mask))
            .bits
            .get((cpu / bits) as usize)
            .copied()
    };
    word.is_some_and(|w| w & (1 << (cpu % bits)) != 0)
}

/// One CPU's `regrant`, run there in process context by `smp_call_on_cpu`.
struct RegrantWork {
    cpu: c_uint,
    apply: OnCpu,
    ret: c_int,
}

/// The `smp_call_on_cpu` function of `regrant`: the apply on this CPU with interrupts
/// off (`smp_call_function_single` to the calling CPU runs the function right there,
/// interrupts disabled: kernel/smp.c).
///
/// # Safety
///
/// `info` is a `*mut RegrantWork` valid for the call, run on `work.cpu`, whose
/// `apply.slot` is that CPU's slot.
unsafe extern "C" fn regrant_on_cpu(info: *mut c_void) -> c_int {
    // SAFETY: the caller's contract.
    let work = unsafe { &mut *info.cast::<RegrantWork>() };
    work.ret = match percpu::run_on(work.cpu, apply_on_cpu, &mut work.apply) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    };
    0
}

/// `regrant` (write-only, root): put the grant back on every online CPU, after perf's
/// `armv8pmu_start()` wrote PMUSERENR_EL0 = 0 there. `-EBUSY` when a CPU's layout
/// counter is perf's now. Another CPU's slot is never read from here: its CPU PM
/// notifier may write it at any time; the log line comes from the copy the apply made
/// there with interrupts off.
///
/// # Safety
///
/// Called by the kernel's parameter code only, in process context.
unsafe extern "C" fn regrant_set(_val: *const c_char, _kp: *const bindings::kernel_param) -> c_int {
    match STATE.compare_exchange(1, 2, Ordering::Acquire, Ordering::Relaxed) {
        Ok(_) => {}
        Err(0) => return -(bindings::ENODEV as c_int),
        Err(_) => return -(bindings::EBUSY as c_int),
    }
    let mut ret = 0;
    // SAFETY: excludes CPU hotplug while the slots of the online CPUs are used.
    unsafe { bindings::cpus_read_lock() };
    // SAFETY: `nr_cpu_ids` is constant after boot.
    let n = unsafe { bindings::nr_cpu_ids };
    for cpu in 0..n {
        if !online(cpu) {
            continue;
        }
        // Hotplug is held off and `STATE` keeps unload away, so the slots exist.
        let Some(slot) = percpu::slot_ptr(&SLOTS, cpu) else {
            continue;
        };
        // Process context: an evicted keeper gets back on the PMU if there is room.
        // SAFETY: process context, `cpu` online and its keeper kept by the hotplug lock.
        unsafe { kmod_eu_perf_keeper_revive(cpu) };
        // A slot without a grant (none since the CPU came online) is left alone there.
        let mut work = RegrantWork {
            cpu,
            apply: OnCpu::new(slot, false),
            ret: 0,
        };
        // In process context on `cpu` (a bound kworker), not in an IPI: on a KVM host an
        // IPI can land while a vCPU is loaded, when PMUSERENR_EL0 holds the guest's trap
        // value (kvm_set_pmuserenr, arch/arm64/kvm/pmu.c 6.12); a thread running there
        // means the vCPU was put.
        // SAFETY: `work` outlives the call (smp_call_on_cpu waits for it).
        let called = unsafe {
            bindings::smp_call_on_cpu(
                cpu,
                Some(regrant_on_cpu),
                (&raw mut work).cast(),
                false,
            )
        };
        let err = if called != 0 {
            called
        } else if work.ret != 0 {
            work.ret
        } else if !work.apply.acted {
            0
        } else {
            report_apply(cpu, &work.apply.after, "regrant")
        };
        if err != 0 && ret == 0 {
            ret = err;
        }
    }
    // SAFETY: taken above.
    unsafe { bindings::cpus_read_unlock() };
    STATE.store(1, Ordering::Release);
    ret
}

struct Ops(bindings::kernel_param_ops);
// SAFETY: constant function tables.
unsafe impl Sync for Ops {}
static LAYOUT_OPS: Ops = Ops(bindings::kernel_param_ops {
    flags: 0,
    set: Some(read_only_set),
    get: Some(layout_get),
    free: None,
});
static CPU_PM_REGRANTS_OPS: Ops = Ops(bindings::kernel_param_ops {
    flags: 0,
    set: Some(read_only_set),
    get: Some(cpu_pm_regrants_get),
    free: None,
});
static REGRANT_OPS: Ops = Ops(bindings::kernel_param_ops {
    flags: 0,
    set: Some(regrant_set),
    get: None,
    free: None,
});

#[link_section = "__param"]
#[used(compiler)]
static LAYOUT_PARAM: param::Param =
    param::describe(c"layout", &raw const LAYOUT_OPS.0, core::ptr::null_mut());
#[link_section = "__param"]
#[used(compiler)]
static CPU_PM_REGRANTS_PARAM: param::Param = param::describe(
    c"cpu_pm_regrants",
    &raw const CPU_PM_REGRANTS_OPS.0,
    core::ptr::null_mut()
);
#[link_section = "__param"]
#[used(compiler)]
static REGRANT_PARAM: param::Param =
    param::describe_perm(c"regrant", &raw const REGRANT_OPS.0, core::ptr::null_mut(), 0o200);
modinfo!(
    PARM_LAYOUT,
    "parm=layout:Read-only: the counters the module runs for EL0, as <counter>=<event> pairs, e.g. 5=0x8 4=0x11 (:k the sentinel)"
);
modinfo!(
    PARM_CPU_PM_REGRANTS,
    "parm=cpu_pm_regrants:Read-only: grants put back after CPU PM exits, and how many of those failed"
);
modinfo!(
    PARM_REGRANT,
    "parm=regrant:Write-only (root): write 1 to put the grant back on every online CPU (after perf revoked it)"
);

/// What `enable` set up: the hotplug state (its removal restores every CPU), then the
/// slots it uses.
pub(crate) struct Enabled {
    state: Option<percpu::HotplugState>,
    _slots: percpu::Slots<CpuState>,
}

/// The number of the CPU this code runs on. `current`'s CPU: for the idle task in a
/// CPU PM notifier, and inside an IPI, that is this CPU; elsewhere a CPU the task
/// just ran on. (smp_processor_id() is a C macro without a Rust binding in 6.12:
/// arm64's `task_cpu()` reads the same field, include/linux/sched.h.)
fn this_cpu() -> c_uint {
    // SAFETY: `current` is always a valid task while this code runs.
    unsafe { (*bindings::get_current()).thread_info.cpu }
}

/// The arguments and results of [`configure_on_cpu`].
struct ConfigureArgs {
    user_access: c_uint,
    el0_programming: bool,
    ret: c_int,
    why: *const c_char,
}

/// On one CPU, interrupts off: checks the parameters and fills `CONFIG` and `LAYOUT`.
///
/// # Safety
///
/// `info` is a `*mut ConfigureArgs` valid for the call; runs with interrupts off
/// (through [`percpu::run_on`]) during `enable`, before any reader of the settings.
unsafe extern "C" fn configure_on_cpu(info: *mut c_void) {
    // SAFETY: `percpu::run_on` passes a `&mut ConfigureArgs` that outlives the call.
    let args = unsafe { &mut *info.cast::<ConfigureArgs>() };
    // SAFETY: on one CPU with interrupts off (the object's contract); `CONFIG` and
    // `LAYOUT` are written here, in `enable`, before any reader exists; `EVENTS` is
    // the charp parameter, NUL-terminated (or the default string).
    args.ret = unsafe {
        kmod_eu_arm64_configure(
            CONFIG.0.get(),
            args.user_access,
            args.el0_programming,
            EVENTS.get(),
            CYCLE_COUNTER.get(),
            SENTINEL.get(),
            LAYOUT.0.get().cast(),
            LAYOUT_SIZE,
            &mut args.why,
        )
    };
}

pub(crate) fn enable() -> Result<Enabled> {
    let user_access = USER_ACCESS.get();
    let el0_programming = EL0_PROGRAMMING.get();
    let mut args = ConfigureArgs {
        user_access,
        el0_programming,
        ret: 0,
        why: core::ptr::null(),
    };
    // On one CPU with interrupts off, so the ID register and PMCR_EL0.N are read
    // there: any CPU will do, this one.
    percpu::run_on(this_cpu(), configure_on_cpu, &mut args)?;
    let (ret, why) = (args.ret, args.why);
    // SAFETY: the settings were just written.
    let cfg = unsafe { *config() };
    if ret != 0 {
        pr_err!("{} (PMUVer={:#x}): refusing to load\n", text(why), cfg.pmuver);
        return Err(Error::from_errno(ret));
    }
    // SAFETY: a query without side effects.
    if cfg.sentinel && unsafe { kmod_eu_perf_kernel_data_locked_down() } {
        pr_err!("sentinel=1 tells every process how much the kernel ran, and the kernel is locked down against kernel-level perf data (lockdown=confidentiality): refusing to load\n");
        return Err(EPERM);
    }
    let slots = percpu::Slots::new(&SLOTS)?;
    // SAFETY: process context (module init), before any hotplug callback.
    kernel::error::to_result(unsafe { kmod_eu_perf_init() })?;
    // Before the grants: an idle exit right after a CPU's grant must find it.
    if let Err(e) = cpu_pm::register() {
        // SAFETY: no CPU is up for the module yet.
        unsafe { kmod_eu_perf_exit() };
        return Err(e);
    }
    INSTALLING.store(true, Ordering::Release);
    let state = percpu::HotplugState::install(c"perf/kmod_enable_user:online", cpu_online, cpu_offline);
    INSTALLING.store(false, Ordering::Release);
    let state = match state {
        Ok(state) => state,
        Err(e) => {
            cpu_pm::unregister();
            // SAFETY: the hotplug core rolled every CPU back.
            unsafe { kmod_eu_perf_exit() };
            return Err(e);
        }
    };
    STATE.store(1, Ordering::Release);
    let granted = u64::from(user_access) | u64::from(el0_programming);
    pr_info!(
        "loaded: PMUSERENR_EL0 = {} ({}) on every online CPU and on CPUs that come online later (PMUVer={:#x}, {} event counters); counting: {} (parameters/layout: at EL0 only, :k at the kernel's level only)\n",
        // SAFETY: static strings of the Rust object.
        text(unsafe { kmod_eu_arm64_access_names(granted) }),
        // SAFETY: as above.
        text(unsafe { kmod_eu_arm64_grant_words(granted) }),
        cfg.pmuver,
        cfg.event_counters,
        layout()
    );
    let left = u32::from(cfg.event_counters) - layout_mask(&cfg).count_ones();
    if el0_programming {
        pr_info!("left to perf: PMCCNTR_EL0 and event counters below {left} (the layout's are taken out of perf's counter mask); no keeper event: with EN, EL0 owns PMCR_EL0.E\n");
    } else {
        pr_info!("left to perf: PMCCNTR_EL0 and event counters below {left} (the layout's are taken out of perf's counter mask), minus one counter per CPU for the module's keeper event, which keeps perf's PMCR_EL0.E on while the module is loaded\n");
    }
    if el0_programming {
        pr_warn!("el0_programming=1: every process may now program the PMU: count at EL1 (a side channel into the kernel), and stop or reset perf's counters and the watchdog\n");
    } else {
        pr_warn!("every process may now read every event counter of its CPU, perf's included, bypassing perf_event_paranoid, LSM and seccomp (a timing side channel)\n");
    }
    Ok(Enabled {
        state: Some(state),
        _slots: slots,
    })
}

impl Enabled {
    pub(crate) fn disable(&mut self) {
        // No `regrant` may run past this point (wait for one in flight).
        while STATE
            .compare_exchange(1, 0, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: process context (module exit): sleeping is allowed.
            unsafe { bindings::msleep(1) };
        }
        // No CPU PM re-grant may follow a CPU's restore.
        cpu_pm::unregister();
        // Removing the state runs `cpu_offline` on every online CPU; the slots are
        // freed after it (field order and this explicit drop).
        drop(self.state.take());
        // SAFETY: every CPU is down for the module: its counters go back to perf.
        unsafe { kmod_eu_perf_exit() };
        pr_info!("unloaded: EL0 access revoked, the module's counters released on every online CPU\n");
    }
}
