//! The C side of the object, for every flavour: the errnos the functions return, the
//! refusal (an errno and the static sentence the glue logs), and the two buffers the
//! glue hands over (a parameter's NUL-terminated text, and room for a text to write
//! back). Nothing here touches a register, so the host tests check it.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The values of include/uapi/asm-generic/errno-base.h and errno.h (Linux 6.12).
    #[test]
    fn errnos_are_the_kernels() {
        assert_eq!(
            (EIO, EBUSY, ENODEV, EINVAL, EOPNOTSUPP),
            (5, 16, 19, 22, 95)
        );
        assert_eq!(Refusal::invalid(c"x").errno, -22);
        assert_eq!(Refusal::no_device(c"x").errno, -19);
        assert_eq!(Refusal::not_supported(c"x").errno, -95);
    }

    /// The `events` parameter's text: the bytes before the NUL (a C string literal).
    #[test]
    fn c_bytes_stops_at_the_nul() {
        // SAFETY: a NUL-terminated literal.
        let list = unsafe { c_bytes(c"0x8,0x3".as_ptr(), 41) };
        assert_eq!(list, Some(&b"0x8,0x3"[..]));
        // SAFETY: as above.
        assert_eq!(unsafe { c_bytes(c"".as_ptr(), 41) }, Some(&b""[..]));
        // SAFETY: null is allowed.
        assert_eq!(unsafe { c_bytes(core::ptr::null(), 41) }, Some(&b""[..]));
    }

    /// Exactly `max` bytes are taken, one more is refused, and the scan reads no byte
    /// past `max + 1` (the buffer below has no NUL after them).
    #[test]
    fn c_bytes_refuses_longer_than_max() {
        let text = [b'1' as c_char, b'2' as c_char, b'3' as c_char, 0];
        // SAFETY: NUL-terminated array.
        assert_eq!(unsafe { c_bytes(text.as_ptr(), 3) }, Some(&b"123"[..]));
        // SAFETY: as above.
        assert_eq!(unsafe { c_bytes(text.as_ptr(), 2) }, None);
        let unterminated = [b'1' as c_char; 3];
        // SAFETY: the scan stops after max + 1 = 3 bytes, all inside the array.
        assert_eq!(unsafe { c_bytes(unterminated.as_ptr(), 2) }, None);
    }

    /// The text ends with a NUL; a longer one is cut to `size - 1` bytes and the last
    /// byte is the NUL (the `layout` buffer of kmod_enable_user_stock.h).
    #[test]
    fn write_c_text_terminates_and_cuts() {
        let write = |out: &mut [u8]| {
            let text = b"5=0x8 4=0x11";
            let n = text.len().min(out.len());
            out[..n].copy_from_slice(&text[..n]);
            n
        };
        let mut buffer = [0x55 as c_char; 16];
        // SAFETY: 16 writable bytes.
        unsafe { write_c_text(buffer.as_mut_ptr(), buffer.len(), write) };
        // SAFETY: terminated by the call above.
        let written = unsafe { CStr::from_ptr(buffer.as_ptr()) };
        assert_eq!(written, c"5=0x8 4=0x11");
        let mut short = [0x55 as c_char; 6];
        // SAFETY: 6 writable bytes.
        unsafe { write_c_text(short.as_mut_ptr(), short.len(), write) };
        // SAFETY: as above.
        assert_eq!(unsafe { CStr::from_ptr(short.as_ptr()) }, c"5=0x8");
        let mut none = [0x55 as c_char; 1];
        // SAFETY: one writable byte: room for the NUL only.
        unsafe { write_c_text(none.as_mut_ptr(), 1, write) };
        assert_eq!(none[0], 0);
        // SAFETY: size 0 and null: nothing is written.
        unsafe { write_c_text(none.as_mut_ptr(), 0, |_| unreachable!()) };
        // SAFETY: as above.
        unsafe { write_c_text(core::ptr::null_mut(), 8, |_| unreachable!()) };
    }
}
