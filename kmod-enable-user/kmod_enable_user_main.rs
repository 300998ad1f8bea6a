// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! kmod_enable_user: lets user-space programs read the hardware performance counters with
//! one instruction, without perf.
//!
//! - arm64: on every online CPU, and on every CPU that comes online later (a CPU-hotplug
//!   state), program the `events` (default INST_RETIRED) on the top event counters and the
//!   cycle counter, all counting at EL0 only, and grant EL0 read access to them
//!   (PMUSERENR_EL0 = `user_access`, default CR|ER: read-only). Write access (EN) only with
//!   `el0_programming=1`. Counters perf uses are never touched; the grant is put back
//!   after every CPU PM exit and on `regrant`; unload releases the module's counters and
//!   revokes the grant. The per-CPU register work is the stock flavour's Rust object over
//!   `pmu_armv8::user_enable`, linked into this module (see `mod arch` below and
//!   kmod-enable-user/README.md).
//! - x86_64: perf owns CR4.PCE and sets it per process from its `rdpmc` policy. That
//!   policy file (`/sys/bus/event_source/devices/cpu/rdpmc`, or the one `rdpmc_policy=`
//!   names: only `/sys/bus/event_source/devices/<pmu>/rdpmc` on sysfs) is switched to 2
//!   ("always") and restored on unload. Where none exists (no x86 PMU driver, as in a VM
//!   without a virtual PMU) the module refuses with `-ENODEV`, unless
//!   `cr4_pce_until_switch=1` asks for CR4.PCE on every CPU, which the kernel clears again
//!   at the CPU's next switch to another process, as the log says.
//! - Any other architecture, or an arm64 CPU without a PMUv3: the module refuses to load
//!   with `-ENODEV` and a one-line reason.
//!
//! Security: once loaded, any process can read the granted counters, a timing side
//! channel. Load it only where that is acceptable (kmod-enable-user/README.md).

use core::cell::UnsafeCell;
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_uint, c_void};
use kernel::prelude::*;

module! {
    type: EnableUser,
    name: "kmod_enable_user",
    author: "PMU workspace contributors",
    description: "Lets user space read the PMU counters directly (arm64: PMUSERENR_EL0, read-only by default; x86_64: perf's rdpmc policy)",
    license: "Dual MIT/GPL",
}

/// The module's state: what was changed, so that `Drop` can undo exactly that.
struct EnableUser {
    arch: arch::Enabled,
}

impl kernel::Module for EnableUser {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(EnableUser {
            arch: arch::enable()?,
        })
    }
}

impl Drop for EnableUser {
    fn drop(&mut self) {
        self.arch.disable();
    }
}

/// Module parameters.
///
/// The `module!` macro of Linux 6.12 has no `params:` key, so each parameter is written out
/// the way `module_param()` lays it out in C: a `struct kernel_param` in the `__param`
/// section, where `load_module()` finds it, and `parm`/`parmtype` strings in `.modinfo`,
/// which `modinfo` prints.
mod param {
    use super::*;

    /// The storage of one parameter.
    #[repr(transparent)]
    pub(crate) struct Value<T>(UnsafeCell<T>);

    // SAFETY: the kernel writes the value only while it parses the load arguments, before
    // `init` runs and before any code of this module can read it; the sysfs file is
    // read-only (permission 0444), so nothing writes it later.
    unsafe impl<T: Copy> Sync for Value<T> {}

    impl<T: Copy> Value<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(UnsafeCell::new(value))
        }

        /// The address the kernel's parser writes to.
        pub(crate) const fn as_arg(&self) -> *mut c_void {
            self.0.get().cast()
        }

        pub(crate) fn get(&self) -> T {
            // SAFETY: no writer after load (see the `Sync` impl), so a plain read is fine.
            unsafe { *self.0.get() }
        }
    }

    /// A `struct kernel_param`, placed by its `static` in the `__param` section.
    #[repr(transparent)]
    pub(crate) struct Param(pub(crate) bindings::kernel_param);

    // SAFETY: a constant description (name, ops, address of the storage) that neither this
    // module nor the kernel writes.
    unsafe impl Sync for Param {}

    /// `struct kernel_param` for a read-only (0444) parameter of this module.
    pub(crate) const fn describe(
        name: &'static core::ffi::CStr,
        ops: *const bindings::kernel_param_ops,
        arg: *mut c_void,
    ) -> Param {
        Param(bindings::kernel_param {
            name: name.as_ptr().cast::<c_char>(),
            mod_: &raw mut bindings::__this_module,
            ops,
            perm: 0o444,
            // -1: a module's parameters are parsed at load, not at an init level.
            level: -1,
            flags: 0,
            __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 { arg },
        })
    }

    /// `struct kernel_param` for a parameter of this module with permission `perm`
    /// (sysfs mode: 0444 read-only, 0200 write-only for root).
    #[cfg(target_arch = "aarch64")]
    pub(crate) const fn describe_perm(
        name: &'static core::ffi::CStr,
        ops: *const bindings::kernel_param_ops,
        arg: *mut c_void,
        perm: u16,
    ) -> Param {
        let mut param = describe(name, ops, arg);
        param.0.perm = perm;
        param
    }

    /// `text` as a NUL-terminated byte array of length `N` (= `text.len() + 1`).
    pub(crate) const fn nul_terminated<const N: usize>(text: &str) -> [u8; N] {
        let bytes = text.as_bytes();
        let mut out = [0u8; N];
        let mut i = 0;
        while i < bytes.len() {
            out[i] = bytes[i];
            i += 1;
        }
        out
    }
}

/// A `.modinfo` entry such as `parm=name:description`.
macro_rules! modinfo {
    ($static:ident, $text:expr) => {
        #[link_section = ".modinfo"]
        #[used(compiler)]
        static $static: [u8; $text.len() + 1] = param::nul_terminated($text);
    };
}

/// Per-CPU bookkeeping shared by both architectures: one slot per possible CPU number,
/// filled and emptied by the CPU-hotplug callbacks.
mod percpu {
    use super::*;
    use core::sync::atomic::{AtomicPtr, Ordering};

    /// One CPU's slot. Only the hotplug callbacks of that CPU touch it, and the hotplug
    /// core runs those one at a time.
    pub(crate) struct Slot<T>(UnsafeCell<T>);

    // SAFETY: a slot is only touched by the hotplug callbacks of its own CPU, which the
    // hotplug core runs one at a time, so sharing the array between CPUs is sound.
    unsafe impl<T: Send> Sync for Slot<T> {}

    /// The slots, indexed by CPU number, `nr_cpu_ids` of them.
    pub(crate) struct Slots<T: 'static> {
        /// Owns the memory; the callbacks reach it through `published` only.
        _storage: KVec<Slot<T>>,
        published: &'static AtomicPtr<Slot<T>>,
    }

    impl<T: Default + 'static> Slots<T> {
        /// Allocates the slots and publishes them to the callbacks through `published`.
        pub(crate) fn new(published: &'static AtomicPtr<Slot<T>>) -> Result<Self> {
            // SAFETY: `nr_cpu_ids` is set during boot and constant afterwards.
            let n = unsafe { bindings::nr_cpu_ids } as usize;
            let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
            for _ in 0..n {
                slots.push(Slot(UnsafeCell::new(T::default())), GFP_KERNEL)?;
            }
            published.store(slots.as_mut_ptr(), Ordering::Release);
            Ok(Self {
                _storage: slots,
                published,
            })
        }
    }

    impl<T: 'static> Drop for Slots<T> {
        fn drop(&mut self) {
            self.published.store(core::ptr::null_mut(), Ordering::Release);
        }
    }

    /// The slot of `cpu`, from a hotplug callback.
    ///
    /// # Safety
    ///
    /// Call only from the hotplug callbacks of `cpu` while the slots are published (between
    /// `Slots::new` and the removal of the hotplug state), and do not keep the reference
    /// past the callback.
    pub(crate) unsafe fn slot<'a, T>(
        published: &AtomicPtr<Slot<T>>,
        cpu: c_uint,
    ) -> Option<&'a mut T> {
        let base = published.load(Ordering::Acquire);
        // SAFETY: `nr_cpu_ids` is constant after boot.
        let n = unsafe { bindings::nr_cpu_ids };
        if base.is_null() || cpu >= n {
            return None;
        }
        // SAFETY: `base` points to `nr_cpu_ids` slots (published by `Slots::new`, still
        // alive per the caller's contract) and `cpu < nr_cpu_ids`; only this CPU's
        // callback uses this slot, one at a time, so the mutable reference is unique.
        Some(unsafe { &mut *(*base.add(cpu as usize)).0.get() })
    }

    /// Runs `func(info)` on `cpu` with interrupts disabled and waits for it.
    ///
    /// Called from `cpu`'s own hotplug callback, this runs it right there, with interrupts
    /// off (`smp_call_function_single()` on the current CPU).
    pub(crate) fn run_on<T>(cpu: c_uint, func: unsafe extern "C" fn(*mut c_void), info: &mut T) -> Result {
        // SAFETY: `func` takes `info` as `*mut T`, which lives until this call returns
        // (wait = 1).
        let ret = unsafe {
            bindings::smp_call_function_single(
                cpu as c_int,
                Some(func),
                (info as *mut T).cast(),
                1,
            )
        };
        kernel::error::to_result(ret)
    }

    /// A dynamic CPU-hotplug state in the "online" section: `startup` runs on every CPU
    /// that is online now and on every CPU that comes online later, `teardown` on every
    /// CPU that goes offline and, at removal, on every online CPU.
    pub(crate) struct HotplugState(c_int);

    impl HotplugState {
        pub(crate) fn install(
            name: &'static core::ffi::CStr,
            startup: unsafe extern "C" fn(c_uint) -> c_int,
            teardown: unsafe extern "C" fn(c_uint) -> c_int,
        ) -> Result<Self> {
            // SAFETY: `name` is a static C string; the callbacks stay valid until the state
            // is removed in `drop`, before the module's code goes away.
            let ret = unsafe {
                bindings::__cpuhp_setup_state(
                    bindings::cpuhp_state_CPUHP_AP_ONLINE_DYN,
                    name.as_ptr().cast::<c_char>(),
                    true,
                    Some(startup),
                    Some(teardown),
                    false,
                )
            };
            if ret < 0 {
                return Err(Error::from_errno(ret));
            }
            // For CPUHP_AP_ONLINE_DYN the positive return value is the allocated state.
            Ok(Self(ret))
        }
    }

    impl Drop for HotplugState {
        fn drop(&mut self) {
            // SAFETY: `self.0` is the state `install` allocated; `invoke = true` runs the
            // teardown callback on every online CPU before the state is freed.
            unsafe { bindings::__cpuhp_remove_state(self.0, true) };
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
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
    }
    const _: () = assert!(core::mem::size_of::<CpuState>() == 88);

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

    static USER_ACCESS: param::Value<c_uint> = param::Value::new(12);
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
        "parm=user_access:PMUSERENR_EL0 read bits to grant on every CPU: SW=2 (software increment), CR=4 (cycle counter), ER=8 (event counters); default 12 = CR|ER, read-only. Write access (EN=1) only through el0_programming=1"
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
        "parm=cycle_counter:Also run the cycle counter for EL0, EL0 only (PMCCFILTR_EL0.P); default 1"
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

    /// On the CPU, interrupts off: the grant (or re-grant) of its slot.
    ///
    /// # Safety
    ///
    /// `info` is the `*mut CpuState` of the CPU this runs on, valid for the call, with
    /// interrupts disabled (through [`percpu::run_on`]).
    unsafe extern "C" fn apply_on_cpu(info: *mut c_void) {
        // SAFETY: `percpu::run_on` passes a `&mut CpuState` that outlives the call, on its
        // CPU with interrupts off; `config()` was accepted by `kmod_eu_arm64_configure`.
        unsafe { kmod_eu_arm64_apply(info.cast(), config()) };
    }

    /// On the CPU, interrupts off: the restore of its slot.
    ///
    /// # Safety
    ///
    /// As for [`apply_on_cpu`].
    unsafe extern "C" fn restore_on_cpu(info: *mut c_void) {
        // SAFETY: as in `apply_on_cpu`.
        unsafe { kmod_eu_arm64_restore(info.cast(), config()) };
    }

    /// The log line of an apply on `cpu` (`why`: online, regrant); its errno.
    fn report_apply(cpu: c_uint, st: &CpuState, why: &str) -> c_int {
        // SAFETY: reading the settings written before any callback ran.
        let event_counters = unsafe { (*config()).event_counters };
        match st.error {
            0 => pr_info!(
                "cpu{cpu}: PMUSERENR_EL0 {:#x} -> {:#x} ({}: {}) [{why}]; counters for EL0: {}, started {:#x}, kept running {:#x}; idle counters zeroed {:#x}\n",
                st.found_userenr,
                st.new_userenr,
                // SAFETY: static strings of the Rust object.
                text(unsafe { kmod_eu_arm64_access_names(st.new_userenr) }),
                // SAFETY: as above.
                text(unsafe { kmod_eu_arm64_grant_words(st.new_userenr) }),
                layout(),
                st.owned & !st.kept,
                st.kept,
                st.zeroed
            ),
            e if e == -(bindings::EBUSY as i32) => pr_err!(
                "cpu{cpu}: counter {} is in use by another owner (perf; its config {:#x}): no grant on this CPU [{why}]\n",
                st.error_detail,
                st.busy_config
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
        // SAFETY: a hotplug callback of `cpu`, while the state (and so the slots) exists.
        let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
            return 0;
        };
        // A fresh grant: what this CPU holds now is what the restore goes back to.
        *st = CpuState::default();
        if let Err(e) = percpu::run_on(cpu, apply_on_cpu, st) {
            pr_err!("cpu{cpu}: cannot run on the CPU ({e:?})\n");
            return e.to_errno();
        }
        let ret = report_apply(cpu, st, "online");
        if ret != 0 && INSTALLING.load(Ordering::Acquire) {
            pr_err!("cpu{cpu}: refusing to load\n");
            return ret;
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
        // SAFETY: a hotplug callback of `cpu`, while the state (and so the slots) exists.
        let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
            return 0;
        };
        if !st.applied {
            return 0;
        }
        let granted = st.new_userenr;
        if let Err(e) = percpu::run_on(cpu, restore_on_cpu, st) {
            pr_err!("cpu{cpu}: cannot run on the CPU to restore it ({e:?})\n");
            return 0;
        }
        let note = if st.found_userenr != granted {
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
            // SAFETY: interrupts are off on `cpu`, so no hotplug callback or `regrant` of
            // this CPU runs meanwhile (they run there with interrupts off too), and the
            // notifier is unregistered (and waited for) before the slots go.
            let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
                return bindings::NOTIFY_OK as c_int;
            };
            if !st.applied {
                return bindings::NOTIFY_OK as c_int;
            }
            // SAFETY: on this CPU with interrupts off, as `kmod_eu_arm64_apply` requires.
            unsafe { kmod_eu_arm64_apply(st, config()) };
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

    /// `regrant` (write-only, root): put the grant back on every online CPU, after perf's
    /// `armv8pmu_start()` wrote PMUSERENR_EL0 = 0 there. `-EBUSY` when a CPU's layout
    /// counter is perf's now.
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
            // SAFETY: hotplug is held off and `STATE` keeps unload away, so the slots
            // exist; the slot is only touched on its CPU with interrupts off, which
            // `run_on` does.
            let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
                continue;
            };
            let err = match percpu::run_on(cpu, apply_on_cpu, st) {
                Ok(()) => report_apply(cpu, st, "regrant"),
                Err(e) => e.to_errno(),
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
        "parm=layout:Read-only: the counters the module runs for EL0, as <counter>=<event> pairs (31 = PMCCNTR_EL0), e.g. 5=0x8 31=0x11"
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
        let slots = percpu::Slots::new(&SLOTS)?;
        // Before the grants: an idle exit right after a CPU's grant must find it.
        cpu_pm::register()?;
        INSTALLING.store(true, Ordering::Release);
        let state = percpu::HotplugState::install(c"perf/kmod_enable_user:online", cpu_online, cpu_offline);
        INSTALLING.store(false, Ordering::Release);
        let state = match state {
            Ok(state) => state,
            Err(e) => {
                cpu_pm::unregister();
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
        if el0_programming {
            pr_warn!("el0_programming=1: every process may now program the PMU: count at EL1 (a side channel into the kernel), and stop or reset perf's counters and the watchdog\n");
        } else {
            pr_warn!("every process may now read the counters listed in the layout (EL0 events only; a timing side channel)\n");
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
            pr_info!("unloaded: EL0 access revoked, the module's counters released on every online CPU\n");
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod arch {
    //! x86_64: perf's `rdpmc` policy; CR4.PCE per CPU only as a named, short-lived opt-in.
    //!
    //! Linux owns CR4.PCE. arch/x86/mm/tlb.c (Linux 6.12): `switch_mm_irqs_off()` calls
    //! `cr4_update_pce_mm()` whenever a CPU switches to another address space, and that
    //! sets or clears the bit from perf's rdpmc policy, the sysfs file
    //! `/sys/bus/event_source/devices/<pmu>/rdpmc` of an x86 core PMU
    //! (arch/x86/events/core.c, `set_attr_rdpmc()`: 0 never, 1 while the process has a
    //! perf event mmapped, 2 always). So:
    //!
    //! - The policy is the lasting route and the default one: the module writes 2 to it and
    //!   writes the old value back on unload. `rdpmc_policy=` may name the file of another
    //!   PMU, but only a path of exactly that shape (`<pmu>`: one path component, not `.`
    //!   or `..`) that lies on sysfs; anything else is refused with -EINVAL before it is
    //!   opened for writing.
    //! - Without a policy file (no x86 PMU driver: a VM without a virtual PMU) there is
    //!   nothing lasting to enable: the module refuses with -ENODEV and says so.
    //!   `cr4_pce_until_switch=1` sets CR4.PCE on every CPU instead, which the kernel
    //!   clears at that CPU's next switch to another address space (with
    //!   CONFIG_PERF_EVENTS; without it `cr4_update_pce_mm()` is empty and the bit stays
    //!   until unload). The log says which.
    //! - Errnos are ones user space knows: perf's -ENOTSUPP (524, kernel-internal: insmod
    //!   would print "Unknown error 524") becomes -EOPNOTSUPP.

    use super::*;
    use core::arch::asm;
    use core::ffi::CStr;
    use core::sync::atomic::AtomicPtr;

    /// CR4.PCE, bit 8 (SDM Vol. 3A, 2.5 "Control Registers").
    const X86_CR4_PCE: u64 = 1 << 8;

    /// The only directory whose files the module writes: perf's PMUs on the event_source
    /// bus (Documentation/ABI/testing/sysfs-bus-event_source-devices-rdpmc).
    const EVENT_SOURCE_DEVICES: &[u8] = b"/sys/bus/event_source/devices/";
    /// The policy file's name inside a PMU's directory.
    const RDPMC_FILE: &[u8] = b"/rdpmc";

    /// Where perf's rdpmc policy lives by default: the core PMU is `cpu`, or `cpu_core` on
    /// hybrid Intel parts (both files write the same policy).
    const POLICY_FILES: [&CStr; 2] = [
        c"/sys/bus/event_source/devices/cpu/rdpmc",
        c"/sys/bus/event_source/devices/cpu_core/rdpmc",
    ];

    static RDPMC_POLICY: param::Value<*mut c_char> = param::Value::new(core::ptr::null_mut());
    static CR4_PCE_UNTIL_SWITCH: param::Value<bool> = param::Value::new(false);

    #[link_section = "__param"]
    #[used(compiler)]
    static RDPMC_POLICY_PARAM: param::Param = param::describe(
        c"rdpmc_policy",
        &raw const bindings::param_ops_charp,
        RDPMC_POLICY.as_arg(),
    );

    #[link_section = "__param"]
    #[used(compiler)]
    static CR4_PCE_UNTIL_SWITCH_PARAM: param::Param = param::describe(
        c"cr4_pce_until_switch",
        &raw const bindings::param_ops_bool,
        CR4_PCE_UNTIL_SWITCH.as_arg(),
    );

    modinfo!(
        PARM_RDPMC_POLICY,
        "parm=rdpmc_policy:perf's rdpmc policy file, /sys/bus/event_source/devices/<pmu>/rdpmc only (on sysfs); set to 2 (always) and restored on unload. Default: .../cpu/rdpmc, then .../cpu_core/rdpmc"
    );
    modinfo!(PARMTYPE_RDPMC_POLICY, "parmtype=rdpmc_policy:charp");
    modinfo!(
        PARM_CR4_PCE_UNTIL_SWITCH,
        "parm=cr4_pce_until_switch:Only where no perf rdpmc policy exists: set CR4.PCE on every CPU; the kernel clears it at each CPU's next switch to another process, so only the process running there keeps rdpmc. Default 0: refuse to load (-ENODEV)"
    );
    modinfo!(PARMTYPE_CR4_PCE_UNTIL_SWITCH, "parmtype=cr4_pce_until_switch:bool");

    /// The policy file named by the `rdpmc_policy` parameter, if given.
    fn given_policy_file() -> Option<&'static CStr> {
        let given = RDPMC_POLICY.get();
        // SAFETY: when set, the kernel's charp parser stored a NUL-terminated copy that
        // stays allocated until the module is freed, after `Drop`.
        (!given.is_null()).then(|| unsafe { CStr::from_ptr(given.cast()) })
    }

    /// Why an `rdpmc_policy` path is refused.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[non_exhaustive]
    enum PathRefusal {
        /// Not under `/sys/bus/event_source/devices/`.
        OutsideEventSource,
        /// Under it, but not a PMU's `rdpmc` file.
        NotRdpmc,
        /// The PMU part is empty, `.`, `..` or more than one path component.
        BadPmuName,
    }

    impl PathRefusal {
        fn reason(self) -> &'static str {
            match self {
                Self::OutsideEventSource => "not under /sys/bus/event_source/devices/",
                Self::NotRdpmc => "not a PMU's rdpmc file (the name must end in /rdpmc)",
                Self::BadPmuName => {
                    "the PMU name must be one path component, not empty, '.' or '..'"
                }
            }
        }
    }

    /// The PMU name of a policy path `/sys/bus/event_source/devices/<pmu>/rdpmc`, or why
    /// the path is not of that shape.
    fn policy_path_pmu(path: &[u8]) -> core::result::Result<&[u8], PathRefusal> {
        let rest = path
            .strip_prefix(EVENT_SOURCE_DEVICES)
            .ok_or(PathRefusal::OutsideEventSource)?;
        let pmu = rest.strip_suffix(RDPMC_FILE).ok_or(PathRefusal::NotRdpmc)?;
        if pmu.is_empty() || pmu == b"." || pmu == b".." || pmu.contains(&b'/') {
            return Err(PathRefusal::BadPmuName);
        }
        Ok(pmu)
    }

    /// An errno that user space has a message for. The kernel-internal ones (512 and up,
    /// include/linux/errno.h) print as "Unknown error N": perf's -ENOTSUPP becomes
    /// -EOPNOTSUPP, any other -EIO (the log line before it names the original).
    fn user_visible(e: Error) -> Error {
        if e == ENOTSUPP {
            Error::from_errno(-(bindings::EOPNOTSUPP as c_int))
        } else if -e.to_errno() >= 512 {
            EIO
        } else {
            e
        }
    }

    /// Policy value "always": every process may execute rdpmc.
    const ALWAYS: u8 = b'2';

    fn read_cr4() -> u64 {
        let value: u64;
        // SAFETY: reading CR4 at CPL 0 has no side effect.
        unsafe { asm!("mov {}, cr4", out(reg) value, options(nomem, nostack)) };
        value
    }

    /// A file opened in the kernel, closed on drop.
    struct KernelFile(*mut bindings::file);

    impl KernelFile {
        fn open(path: &CStr, flags: u32) -> Result<Self> {
            // SAFETY: `path` is a NUL-terminated string; the call may sleep (we are in
            // process context: module init or exit).
            let file = unsafe { bindings::filp_open(path.as_ptr().cast::<c_char>(), flags as c_int, 0) };
            let value = file as isize;
            if (-(bindings::MAX_ERRNO as isize)..0).contains(&value) {
                return Err(Error::from_errno(value as c_int));
            }
            Ok(Self(file))
        }

        /// The magic number of the file system the file lies on (include/uapi/linux/magic.h).
        fn fs_magic(&self) -> u64 {
            // SAFETY: `self.0` is an open file: its inode, and the inode's super block,
            // stay alive at least as long as the file.
            unsafe { (*(*(*self.0).f_inode).i_sb).s_magic as u64 }
        }

        /// The first line of the file (up to 15 bytes).
        fn read_value(&self) -> Result<([u8; 16], usize)> {
            let mut buf = [0u8; 16];
            let mut pos: bindings::loff_t = 0;
            // SAFETY: `self.0` is an open file; `buf` is writable for 15 bytes.
            let n = unsafe { bindings::kernel_read(self.0, buf.as_mut_ptr().cast(), 15, &mut pos) };
            if n < 0 {
                return Err(Error::from_errno(n as c_int));
            }
            let n = buf[..n as usize].iter().position(|&b| b == b'\n').unwrap_or(n as usize);
            Ok((buf, n))
        }

        fn write_value(&self, value: &[u8]) -> Result {
            let mut pos: bindings::loff_t = 0;
            // SAFETY: `self.0` is an open file; `value` is readable for its length.
            let n = unsafe { bindings::kernel_write(self.0, value.as_ptr().cast(), value.len(), &mut pos) };
            if n < 0 {
                return Err(Error::from_errno(n as c_int));
            }
            Ok(())
        }
    }

    impl Drop for KernelFile {
        fn drop(&mut self) {
            // SAFETY: `self.0` was opened by `filp_open` and is closed once.
            unsafe { bindings::filp_close(self.0, core::ptr::null_mut()) };
        }
    }

    /// Opens perf's policy file `path` for writing, after proving it is one: the path has
    /// the shape `/sys/bus/event_source/devices/<pmu>/rdpmc` (-EINVAL otherwise), and the
    /// file lies on sysfs (-EINVAL otherwise; looked at through an `O_PATH` handle, which
    /// opens nothing, so no device or FIFO is ever opened for writing). A missing file
    /// is -ENOENT; the caller logs it (the default paths may be missing).
    fn open_policy(path: &CStr) -> Result<KernelFile> {
        let pmu = match policy_path_pmu(path.to_bytes()) {
            Ok(pmu) => pmu,
            Err(refusal) => {
                pr_err!(
                    "rdpmc_policy={path:?} refused: {}; only perf's rdpmc policy file /sys/bus/event_source/devices/<pmu>/rdpmc is written\n",
                    refusal.reason()
                );
                return Err(EINVAL);
            }
        };
        let handle = KernelFile::open(path, bindings::O_PATH).inspect_err(|e| {
            if *e != ENOENT {
                pr_err!("cannot look up {path:?} ({e:?}): refusing to load\n");
            }
        })?;
        let magic = handle.fs_magic();
        if magic != u64::from(bindings::SYSFS_MAGIC) {
            pr_err!(
                "{path:?} refused: not a sysfs file (file system magic {magic:#x}, sysfs is {:#x}), so not perf's rdpmc policy of PMU '{}'\n",
                bindings::SYSFS_MAGIC,
                text(pmu)
            );
            return Err(EINVAL);
        }
        drop(handle);
        KernelFile::open(path, bindings::O_RDWR).inspect_err(|e| {
            pr_err!("cannot open {path:?} for writing ({e:?}): refusing to load\n");
        })
    }

    /// Switches the policy in `file` to "always", returning what was there.
    fn switch_policy(path: &'static CStr, file: KernelFile) -> Result<Enabled> {
        let (old, old_len) = file.read_value().map_err(|e| {
            pr_err!("cannot read {path:?} ({e:?}): refusing to load\n");
            user_visible(e)
        })?;
        if let Err(e) = file.write_value(&[ALWAYS, b'\n']) {
            if e == ENOTSUPP {
                pr_err!(
                    "perf refuses to change {path:?}: rdpmc is marked broken on this CPU (x86_pmu.attr_rdpmc_broken, arch/x86/events/core.c); refusing to load (-EOPNOTSUPP)\n"
                );
            } else {
                pr_err!("cannot write 2 to {path:?} ({e:?}): refusing to load\n");
            }
            return Err(user_visible(e));
        }
        pr_info!(
            "loaded: perf rdpmc policy {path:?} {} -> 2 (always): every process may execute rdpmc, on every CPU, now and after process switches\n",
            text(&old[..old_len])
        );
        pr_warn!("any process can now read the PMU counters (a timing side channel)\n");
        Ok(Enabled::Policy { path, old, old_len })
    }

    /// One CPU's CR4.PCE before and after.
    #[derive(Default, Clone, Copy)]
    pub(crate) struct CpuState {
        applied: bool,
        old_pce: bool,
        found_pce: bool,
    }

    static SLOTS: AtomicPtr<percpu::Slot<CpuState>> = AtomicPtr::new(core::ptr::null_mut());

    /// On the CPU, interrupts off: set CR4.PCE, remembering the previous value.
    ///
    /// # Safety
    ///
    /// `info` is a `*mut CpuState` valid for the call; run with interrupts disabled on the
    /// CPU whose state it records (through [`percpu::run_on`]).
    unsafe extern "C" fn set_pce(info: *mut c_void) {
        // SAFETY: `percpu::run_on` passes a `&mut CpuState` that outlives the call.
        let st = unsafe { &mut *info.cast::<CpuState>() };
        st.old_pce = read_cr4() & X86_CR4_PCE != 0;
        // SAFETY: interrupts are off (smp_call_function_single), as
        // `cr4_update_irqsoff()` requires; it keeps the kernel's per-CPU CR4 shadow in step.
        unsafe { bindings::cr4_update_irqsoff(X86_CR4_PCE as _, 0) };
        st.applied = true;
    }

    /// On the CPU, interrupts off: clear CR4.PCE again if it was clear before `set_pce`.
    ///
    /// # Safety
    ///
    /// As for [`set_pce`].
    unsafe extern "C" fn restore_pce(info: *mut c_void) {
        // SAFETY: `percpu::run_on` passes a `&mut CpuState` that outlives the call.
        let st = unsafe { &mut *info.cast::<CpuState>() };
        st.found_pce = read_cr4() & X86_CR4_PCE != 0;
        if !st.old_pce {
            // SAFETY: as in `set_pce`.
            unsafe { bindings::cr4_update_irqsoff(0, X86_CR4_PCE as _) };
        }
        st.applied = false;
    }

    /// How long a CR4.PCE set by the module lasts on this kernel (arch/x86/mm/tlb.c,
    /// Linux 6.12: `cr4_update_pce_mm()` is empty without CONFIG_PERF_EVENTS).
    #[cfg(CONFIG_PERF_EVENTS)]
    const PCE_LASTS: &str = "until this CPU switches to another process";
    #[cfg(not(CONFIG_PERF_EVENTS))]
    const PCE_LASTS: &str = "until unload: this kernel has no CONFIG_PERF_EVENTS, nothing clears it";

    /// Hotplug startup: runs on `cpu` when it comes online, and on every online CPU when
    /// the state is installed.
    ///
    /// # Safety
    ///
    /// Called by the CPU-hotplug core only, for `cpu`, while the state is installed.
    unsafe extern "C" fn cpu_online(cpu: c_uint) -> c_int {
        // SAFETY: a hotplug callback of `cpu`, while the state (and so the slots) exists.
        let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
            return 0;
        };
        *st = CpuState::default();
        if let Err(e) = percpu::run_on(cpu, set_pce, st) {
            pr_err!("cpu{cpu}: cannot run on the CPU ({e:?})\n");
            return e.to_errno();
        }
        pr_info!(
            "cpu{cpu}: CR4.PCE {} -> 1 (rdpmc allowed at CPL 3 {PCE_LASTS})\n",
            st.old_pce as u8
        );
        0
    }

    /// Hotplug teardown: runs on `cpu` when it goes offline, and on every online CPU when
    /// the state is removed.
    ///
    /// # Safety
    ///
    /// As for [`cpu_online`].
    unsafe extern "C" fn cpu_offline(cpu: c_uint) -> c_int {
        // SAFETY: a hotplug callback of `cpu`, while the state (and so the slots) exists.
        let Some(st) = (unsafe { percpu::slot(&SLOTS, cpu) }) else {
            return 0;
        };
        if !st.applied {
            return 0;
        }
        if let Err(e) = percpu::run_on(cpu, restore_pce, st) {
            pr_err!("cpu{cpu}: cannot run on the CPU to restore it ({e:?})\n");
            return 0;
        }
        let note = if st.found_pce { "" } else { " (the kernel had already cleared it)" };
        pr_info!(
            "cpu{cpu}: CR4.PCE {} -> {} restored{note}\n",
            st.found_pce as u8,
            (st.found_pce && st.old_pce) as u8
        );
        0
    }

    /// Sets CR4.PCE on every CPU (the `cr4_pce_until_switch=1` opt-in).
    fn set_cr4_pce() -> Result<Enabled> {
        #[cfg(CONFIG_PERF_EVENTS)]
        pr_warn!(
            "cr4_pce_until_switch=1: setting CR4.PCE on every CPU; it lasts only until each CPU's next switch to another process (arch/x86/mm/tlb.c: switch_mm_irqs_off() -> cr4_update_pce_mm() clears it, there being no perf rdpmc policy): only the process running there keeps rdpmc, not a lasting grant\n"
        );
        #[cfg(not(CONFIG_PERF_EVENTS))]
        pr_warn!(
            "cr4_pce_until_switch=1: setting CR4.PCE on every CPU; this kernel has no CONFIG_PERF_EVENTS, so nothing clears it: every process may execute rdpmc until unload\n"
        );
        let slots = percpu::Slots::new(&SLOTS)?;
        let state = percpu::HotplugState::install(c"perf/kmod_enable_user:online", cpu_online, cpu_offline)
            .map_err(user_visible)?;
        pr_info!("loaded: CR4.PCE set on every online CPU (mode cr4_pce_until_switch)\n");
        Ok(Enabled::Cr4 {
            state: Some(state),
            _slots: slots,
        })
    }

    /// What `enable` changed.
    pub(crate) enum Enabled {
        /// perf's policy file was switched from `old` to "2".
        Policy {
            path: &'static CStr,
            old: [u8; 16],
            old_len: usize,
        },
        /// CR4.PCE set per CPU; removing the state restores each CPU.
        Cr4 {
            state: Option<percpu::HotplugState>,
            _slots: percpu::Slots<CpuState>,
        },
    }

    fn text(bytes: &[u8]) -> &str {
        core::str::from_utf8(bytes).unwrap_or("?")
    }

    pub(crate) fn enable() -> Result<Enabled> {
        let cr4 = CR4_PCE_UNTIL_SWITCH.get();
        if let Some(path) = given_policy_file() {
            if cr4 {
                pr_err!(
                    "rdpmc_policy= and cr4_pce_until_switch=1 exclude each other (the policy is the lasting route, CR4.PCE the stand-in where there is none): refusing to load\n"
                );
                return Err(EINVAL);
            }
            // ENOENT would read "Unknown symbol in module" in kmod's insmod
            // (tools/insmod.c, `mod_strerror()`): a missing policy is "No such device".
            let file = open_policy(path).map_err(|e| {
                if e == ENOENT {
                    pr_err!(
                        "{path:?} does not exist: no such PMU, or one without an rdpmc policy (only x86 core PMUs have one): refusing to load (-ENODEV)\n"
                    );
                    ENODEV
                } else {
                    user_visible(e)
                }
            })?;
            return switch_policy(path, file);
        }
        for path in POLICY_FILES {
            let file = match open_policy(path) {
                Ok(file) => file,
                Err(e) if e == ENOENT => continue,
                Err(e) => return Err(user_visible(e)),
            };
            if cr4 {
                pr_err!(
                    "cr4_pce_until_switch=1 refused: perf's rdpmc policy {path:?} exists and is the lasting route; load without it\n"
                );
                return Err(EINVAL);
            }
            return switch_policy(path, file);
        }
        if !cr4 {
            pr_err!(
                "no perf rdpmc policy here ({:?} absent: no x86 PMU driver, as in a VM without a virtual PMU): nothing lasting to enable, refusing to load (-ENODEV)\n",
                POLICY_FILES[0]
            );
            pr_err!(
                "cr4_pce_until_switch=1 would set CR4.PCE on every CPU instead; the kernel clears it at each CPU's next switch to another process, so only the process running there could execute rdpmc\n"
            );
            return Err(ENODEV);
        }
        set_cr4_pce()
    }

    impl Enabled {
        pub(crate) fn disable(&mut self) {
            match self {
                Enabled::Policy { path, old, old_len } => {
                    let len = *old_len;
                    old[len] = b'\n';
                    let restored = KernelFile::open(path, bindings::O_RDWR)
                        .and_then(|f| f.write_value(&old[..=len]));
                    let old = &old[..len];
                    match restored {
                        Ok(()) => pr_info!(
                            "unloaded: perf rdpmc policy {path:?} 2 -> {} restored\n",
                            text(old)
                        ),
                        Err(e) => pr_err!(
                            "unloaded, but could not restore {path:?} to {} ({e:?}): write it by hand\n",
                            text(old)
                        ),
                    }
                }
                Enabled::Cr4 { state, .. } => {
                    drop(state.take());
                    pr_info!("unloaded: every online CPU's previous CR4.PCE restored\n");
                }
            }
        }
    }
}

#[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
mod arch {
    //! Any other architecture: nothing this module knows how to enable.

    use super::*;

    pub(crate) struct Enabled;

    pub(crate) fn enable() -> Result<Enabled> {
        pr_err!("unsupported architecture (arm64 and x86_64 only): refusing to load\n");
        Err(ENODEV)
    }

    impl Enabled {
        pub(crate) fn disable(&mut self) {}
    }
}
