//! kmod-enable-user's per-thread grant interface, mirrored from its C header
//! (kmod-enable-user/stock/kmod_enable_user_uapi.h; a host test reads the header and
//! checks every number, size and errno here against it): the device, the two ioctls,
//! the GRANT argument, and what each errno the module documents means.
//!
//! ioctl numbers are composed by the libc crate's `_IO` and `_IOWR`, Linux's
//! include/uapi/asm-generic/ioctl.h macros (arm and arm64 use the generic layout).

use std::fmt;

/// The device node the module creates in per-thread mode.
pub const DEVICE: &str = "/dev/kmod_enable_user";

/// The device's name under /dev (`KMOD_EU_DEVICE_NAME`), which [`DEVICE`] must end in.
#[cfg(test)]
pub const DEVICE_NAME: &str = "kmod_enable_user";

/// The ioctl type (`KMOD_EU_IOC_MAGIC`).
pub const IOC_MAGIC: u32 = 0xB9;

/// `struct kmod_eu_grant`, KMOD_EU_IOC_GRANT's argument.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KmodEuGrant {
    /// In: `size_of::<KmodEuGrant>()`, 24.
    pub size: u32,
    /// In: 0 (no flag is defined yet).
    pub flags: u32,
    /// In: the counters asked for (bit n = event counter n; 0: every counter of the
    /// module's layout). Out: the counters granted.
    pub counters: u64,
    /// Out: `GRANTED_*` bits.
    pub granted: u32,
    /// Out: 0.
    pub reserved: u32,
}

impl KmodEuGrant {
    /// A request for every counter of the module's layout.
    pub const fn every_counter() -> Self {
        Self {
            size: core::mem::size_of::<Self>() as u32,
            flags: 0,
            counters: 0,
            granted: 0,
            reserved: 0,
        }
    }
}

/// `KMOD_EU_GRANTED_FOLLOW`: the module's counters follow the thread (saved and
/// restored at each switch).
pub const GRANTED_FOLLOW: u32 = 1 << 0;
/// `KMOD_EU_GRANTED_PROGRAM`: the grant includes programming access (el0_programming=1).
pub const GRANTED_PROGRAM: u32 = 1 << 1;

/// `KMOD_EU_IOC_GRANT`: `_IOWR(0xB9, 0x00, struct kmod_eu_grant)`.
pub const IOC_GRANT: libc::Ioctl = libc::_IOWR::<KmodEuGrant>(IOC_MAGIC, 0x00);
/// `KMOD_EU_IOC_REGRANT`: `_IO(0xB9, 0x01)`.
pub const IOC_REGRANT: libc::Ioctl = libc::_IO(IOC_MAGIC, 0x01);
/// `KMOD_EU_REGRANT_LOST`: REGRANT's result when the thread had run where the module's
/// counters did not count for it (a CPU `cpus=` leaves out, one where perf holds a
/// layout counter, or perf had stopped the PMU): re-granted, and a count taken across
/// that gap is short.
pub const REGRANT_LOST: i32 = 1;

/// Which call on the device failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrantCall {
    /// `open(/dev/kmod_enable_user)`.
    Open,
    /// `ioctl(KMOD_EU_IOC_GRANT)`.
    Grant,
    /// `ioctl(KMOD_EU_IOC_REGRANT)`.
    Regrant,
}

impl fmt::Display for GrantCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Open => "open(/dev/kmod_enable_user)",
            Self::Grant => "ioctl(KMOD_EU_IOC_GRANT)",
            Self::Regrant => "ioctl(KMOD_EU_IOC_REGRANT)",
        })
    }
}

/// Every (call, errno) the header documents, with the errno's name: a host test checks
/// this table against the header's "Errors (errno)" list both ways, and grant.rs's
/// `ThreadGrantRefused::from_errno` gives each its own variant.
#[cfg(test)]
pub const DOCUMENTED_ERRNOS: &[(GrantCall, i32, &str)] = &[
    (GrantCall::Open, libc::EACCES, "EACCES"),
    (GrantCall::Grant, libc::EINVAL, "EINVAL"),
    (GrantCall::Grant, libc::EBUSY, "EBUSY"),
    (GrantCall::Grant, libc::EPERM, "EPERM"),
    (GrantCall::Regrant, libc::ENOENT, "ENOENT"),
    (GrantCall::Regrant, libc::EBUSY, "EBUSY"),
    (GrantCall::Grant, libc::ENOTTY, "ENOTTY"),
    (GrantCall::Regrant, libc::ENOTTY, "ENOTTY"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The module's header, the interface's one source.
    fn header() -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../kmod-enable-user/stock/kmod_enable_user_uapi.h");
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (the parity test needs it)", path.display()))
    }

    /// The value of `#define NAME value` in the header.
    fn define<'h>(header: &'h str, name: &str) -> &'h str {
        header
            .lines()
            .find_map(|l| {
                let rest = l.strip_prefix("#define ")?.trim_start();
                let value = rest.strip_prefix(name)?;
                value.starts_with(char::is_whitespace).then(|| value.trim())
            })
            .unwrap_or_else(|| panic!("#define {name} missing from the header"))
    }

    fn number(text: &str) -> u32 {
        let t = text.trim();
        t.strip_prefix("0x")
            .map_or_else(|| t.parse(), |h| u32::from_str_radix(h, 16))
            .unwrap_or_else(|e| panic!("`{t}`: {e}"))
    }

    /// The macro call `KIND(args)` of a define: the kind and its arguments.
    fn call(text: &str) -> (&str, Vec<&str>) {
        let (kind, args) = text.split_once('(').unwrap();
        let args = args.strip_suffix(')').unwrap();
        (kind.trim(), args.split(',').map(str::trim).collect())
    }

    /// Every number of kmod_enable_user_uapi.h equals the Rust mirror's: the device,
    /// the ioctl type, both requests (composed by libc's `_IOWR`/`_IO`, as the header's
    /// own macros from linux/ioctl.h compose them), the GRANTED bits.
    #[test]
    fn numbers_match_the_header() {
        let h = header();
        assert_eq!(
            define(&h, "KMOD_EU_DEVICE_NAME"),
            format!("\"{DEVICE_NAME}\"")
        );
        assert_eq!(DEVICE, format!("/dev/{DEVICE_NAME}"));
        let magic = number(define(&h, "KMOD_EU_IOC_MAGIC"));
        assert_eq!(magic, IOC_MAGIC);

        let (kind, args) = call(define(&h, "KMOD_EU_IOC_GRANT"));
        assert_eq!(
            (kind, args[0], args[2]),
            ("_IOWR", "KMOD_EU_IOC_MAGIC", "struct kmod_eu_grant")
        );
        assert_eq!(
            IOC_GRANT,
            libc::_IOWR::<KmodEuGrant>(magic, number(args[1]))
        );
        let (kind, args) = call(define(&h, "KMOD_EU_IOC_REGRANT"));
        assert_eq!((kind, args[0]), ("_IO", "KMOD_EU_IOC_MAGIC"));
        assert_eq!(IOC_REGRANT, libc::_IO(magic, number(args[1])));
        // The composed values, by hand from asm-generic/ioctl.h (dir 31:30, size
        // 29:16, type 15:8, nr 7:0): _IOWR = dir 3, size 24.
        // `libc::Ioctl` is c_ulong on glibc, c_int on musl and u32 on 32-bit glibc:
        // compare its 32 bits, whatever the target.
        #[allow(clippy::unnecessary_cast)]
        let (grant, regrant) = (IOC_GRANT as u32, IOC_REGRANT as u32);
        assert_eq!(grant, 0xC018_B900);
        assert_eq!(regrant, 0x0000_B901);
        assert_eq!(
            number(define(&h, "KMOD_EU_REGRANT_LOST")),
            REGRANT_LOST as u32
        );

        for (name, value) in [
            ("KMOD_EU_GRANTED_FOLLOW", GRANTED_FOLLOW),
            ("KMOD_EU_GRANTED_PROGRAM", GRANTED_PROGRAM),
        ] {
            let text = define(&h, name);
            let shift = text
                .strip_prefix("(1U << ")
                .and_then(|t| t.strip_suffix(')'))
                .unwrap_or_else(|| panic!("{name}: `{text}`"));
            assert_eq!(1u32 << number(shift), value, "{name}");
        }
    }

    /// `struct kmod_eu_grant` laid out as C lays out the header's fields (each __u32
    /// or __u64 at its natural alignment, the size rounded to the largest) equals the
    /// Rust struct, field by field; the header's own "24" too.
    #[test]
    fn struct_layout_matches_the_header() {
        let h = header();
        let body = h
            .split_once("struct kmod_eu_grant {")
            .and_then(|(_, rest)| rest.split_once("};"))
            .map(|(body, _)| body)
            .expect("struct kmod_eu_grant in the header");
        let fields: Vec<(&str, usize)> = body
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let (ty, name) = l.strip_suffix(';')?.split_once(' ')?;
                let size = match ty {
                    "__u32" => 4,
                    "__u64" => 8,
                    other => panic!("field type {other} not mirrored"),
                };
                Some((name.trim(), size))
            })
            .collect();
        let offsets = [
            ("size", core::mem::offset_of!(KmodEuGrant, size)),
            ("flags", core::mem::offset_of!(KmodEuGrant, flags)),
            ("counters", core::mem::offset_of!(KmodEuGrant, counters)),
            ("granted", core::mem::offset_of!(KmodEuGrant, granted)),
            ("reserved", core::mem::offset_of!(KmodEuGrant, reserved)),
        ];
        assert_eq!(
            fields.iter().map(|f| f.0).collect::<Vec<_>>(),
            offsets.iter().map(|f| f.0).collect::<Vec<_>>()
        );
        let mut at = 0usize;
        let mut align = 1usize;
        for (&(name, size), &(_, offset)) in fields.iter().zip(&offsets) {
            at = at.next_multiple_of(size);
            assert_eq!(at, offset, "{name}");
            at += size;
            align = align.max(size);
        }
        let c_size = at.next_multiple_of(align);
        assert_eq!(c_size, core::mem::size_of::<KmodEuGrant>());
        assert!(h.contains(&format!("sizeof(struct kmod_eu_grant), {c_size}.")));
        assert_eq!(
            KmodEuGrant::every_counter().size as usize,
            core::mem::size_of::<KmodEuGrant>()
        );
    }

    /// The header's "Errors (errno)" list, as (call, errno name): `open:`, `GRANT:`,
    /// `REGRANT:` and `other numbers:` (both requests), continuation lines under the
    /// last call.
    fn documented(h: &str) -> BTreeSet<(String, String)> {
        let block = h
            .split_once("Errors (errno):")
            .and_then(|(_, rest)| rest.split_once("A failed call"))
            .map(|(b, _)| b)
            .expect("the header's Errors (errno) list");
        let mut out = BTreeSet::new();
        let mut calls: Vec<&str> = Vec::new();
        for line in block.lines() {
            let line = line.trim_start().trim_start_matches('*').trim();
            let errno_at = |t: &str| {
                t.split_whitespace()
                    .next()
                    .filter(|w| w.starts_with('E') && w.len() > 2)
                    .map(|w| w.trim_end_matches('.').to_owned())
            };
            let errno = match line.split_once(':') {
                Some((label, rest)) if errno_at(rest).is_some() => {
                    calls = match label.trim() {
                        "open" => vec!["Open"],
                        "GRANT" => vec!["Grant"],
                        "REGRANT" => vec!["Regrant"],
                        "other numbers" => vec!["Grant", "Regrant"],
                        other => panic!("unknown call `{other}` in the header's errors"),
                    };
                    errno_at(rest)
                }
                _ => errno_at(line),
            };
            if let Some(errno) = errno {
                for call in &calls {
                    out.insert(((*call).to_owned(), errno.clone()));
                }
            }
        }
        out
    }

    /// The table lists exactly the header's errnos, each number the errno its name
    /// says.
    #[test]
    fn the_errno_table_is_the_headers() {
        let header_set = documented(&header());
        let ours: BTreeSet<(String, String)> = DOCUMENTED_ERRNOS
            .iter()
            .map(|(call, _, name)| (format!("{call:?}"), (*name).to_owned()))
            .collect();
        assert_eq!(header_set, ours);
        assert_eq!(header_set.len(), 8, "{header_set:?}");
        for &(_, errno, name) in DOCUMENTED_ERRNOS {
            assert_eq!(crate::error::Errno(errno).name(), name);
        }
    }
}
