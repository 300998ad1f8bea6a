// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! Per-CPU bookkeeping shared by both architectures (see the crate root).

use super::*;
use core::sync::atomic::{AtomicPtr, Ordering};

/// One CPU's slot. Only code running on that CPU touches it: its hotplug callbacks (one
/// at a time), and on arm64, with interrupts off there, the CPU PM notifier and
/// `regrant`'s function.
pub(crate) struct Slot<T>(UnsafeCell<T>);

// SAFETY: a slot is only touched by code running on its own CPU (see `Slot`): by the
// hotplug callbacks, one at a time, and on arm64 only with interrupts off there, so no
// two accesses overlap and sharing the array between CPUs is sound.
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

/// The address of `cpu`'s slot, or `None` before the slots are published or for a CPU
/// number past `nr_cpu_ids`. Making a reference from it is the caller's business: one
/// `&mut` at a time, which on arm64 means only on `cpu` with interrupts off (the CPU PM
/// notifier may run there whenever they are on).
pub(crate) fn slot_ptr<T>(published: &AtomicPtr<Slot<T>>, cpu: c_uint) -> Option<*mut T> {
    let base = published.load(Ordering::Acquire);
    // SAFETY: `nr_cpu_ids` is constant after boot.
    let n = unsafe { bindings::nr_cpu_ids };
    if base.is_null() || cpu >= n {
        return None;
    }
    // SAFETY: `base` points to `nr_cpu_ids` slots (published by `Slots::new`) and
    // `cpu < nr_cpu_ids`: the offset stays inside that allocation. No reference is made.
    Some(unsafe { (*base.add(cpu as usize)).0.get() })
}

/// The slot of `cpu`, from a hotplug callback, where nothing else touches it (x86: no
/// CPU PM notifier, no `regrant`).
///
/// # Safety
///
/// Call only from the hotplug callbacks of `cpu` while the slots are published (between
/// `Slots::new` and the removal of the hotplug state), nothing but those callbacks may
/// touch the slot, and do not keep the reference past the callback.
#[cfg_attr(target_arch = "aarch64", allow(dead_code))]
pub(crate) unsafe fn slot<'a, T>(
    published: &AtomicPtr<Slot<T>>,
    cpu: c_uint,
) -> Option<&'a mut T> {
    // SAFETY: the slots are alive (the caller's contract); only this CPU's hotplug
    // callbacks use this slot, one at a time, so the mutable reference is unique.
    slot_ptr(published, cpu).map(|p| unsafe { &mut *p })
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
