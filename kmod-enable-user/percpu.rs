// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! Per-CPU bookkeeping shared by both architectures (see the crate root).

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
