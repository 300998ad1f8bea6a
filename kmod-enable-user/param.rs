// SPDX-License-Identifier: GPL-2.0-only OR MIT

//! Module parameters written out as `module_param()` lays them out (see the crate root).

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
