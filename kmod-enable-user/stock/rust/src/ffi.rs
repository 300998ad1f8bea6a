//! The C side of the object, for every flavour: the errnos the functions return, the
//! refusal (an errno and the static sentence the glue logs), and the two buffers the
//! glue hands over (a parameter's NUL-terminated text, and room for a text to write
//! back). Nothing here touches a register.
//!
//! Errnos are the kernel's, negative on return (include/uapi/asm-generic/errno-base.h
//! and errno.h, the same on arm and arm64).

use core::ffi::{c_char, CStr};

/// `EIO`: I/O error (include/uapi/asm-generic/errno-base.h).
pub const EIO: i32 = 5;
/// `EBUSY`: device or resource busy (include/uapi/asm-generic/errno-base.h).
pub const EBUSY: i32 = 16;
/// `ENODEV`: no such device (include/uapi/asm-generic/errno-base.h).
pub const ENODEV: i32 = 19;
/// `EINVAL`: invalid argument (include/uapi/asm-generic/errno-base.h).
pub const EINVAL: i32 = 22;
/// `EOPNOTSUPP`: operation not supported (include/uapi/asm-generic/errno.h).
pub const EOPNOTSUPP: i32 = 95;

/// Why a call refused: the negative errno it returns and the sentence it leaves in the
/// glue's `why` out-parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The negative errno.
    pub errno: i32,
    /// A static sentence naming the rule that was broken.
    pub why: &'static CStr,
}

impl Refusal {
    /// `-EINVAL`: a parameter is wrong.
    pub const fn invalid(why: &'static CStr) -> Self {
        Self {
            errno: -EINVAL,
            why,
        }
    }

    /// `-ENODEV`: this CPU cannot do it.
    pub const fn no_device(why: &'static CStr) -> Self {
        Self {
            errno: -ENODEV,
            why,
        }
    }

    /// `-EOPNOTSUPP`: this CPU can, but not as asked.
    pub const fn not_supported(why: &'static CStr) -> Self {
        Self {
            errno: -EOPNOTSUPP,
            why,
        }
    }
}

/// The bytes of the NUL-terminated string `text` before its NUL; empty for null;
/// `None` when it is longer than `max` bytes. Scanned by hand: `CStr::from_ptr` would
/// need the C library's `strlen`, which the object must not import.
///
/// # Safety
///
/// `text` is null or a NUL-terminated string that stays valid and unchanged for `'a`.
pub unsafe fn c_bytes<'a>(text: *const c_char, max: usize) -> Option<&'a [u8]> {
    let mut length = 0;
    if !text.is_null() {
        // SAFETY: a NUL-terminated string by the caller's contract; the scan stops at the
        // NUL or at `max + 1` bytes, within the string.
        while length <= max && unsafe { *text.add(length) } != 0 {
            length += 1;
        }
    }
    if length > max {
        return None;
    }
    Some(if length == 0 {
        b""
    } else {
        // SAFETY: `length` bytes before the NUL, read above, valid for `'a`.
        unsafe { core::slice::from_raw_parts(text.cast::<u8>(), length) }
    })
}

/// Lets `write` fill the `size` bytes at `buffer` but the last, and NUL-terminates what it
/// wrote (`write` returns the length; the text is cut at `size - 1` bytes). Nothing
/// happens for a null `buffer` or a `size` of 0.
///
/// # Safety
///
/// `buffer` is null or valid for `size` bytes of writes.
pub unsafe fn write_c_text(
    buffer: *mut c_char,
    size: usize,
    write: impl FnOnce(&mut [u8]) -> usize,
) {
    if buffer.is_null() || size == 0 {
        return;
    }
    // SAFETY: `buffer` is valid for `size` bytes (the caller's contract).
    let out = unsafe { core::slice::from_raw_parts_mut(buffer.cast::<u8>(), size) };
    if let Some((nul, text)) = out.split_last_mut() {
        let len = write(text);
        *text.get_mut(len).unwrap_or(nul) = 0;
    }
}
