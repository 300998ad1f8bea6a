//! The guest's initramfs: newc ("070701") cpio archives, the format Linux unpacks into
//! its rootfs (Documentation/driver-api/early-userspace/buffer-format.rst). Linux
//! unpacks archives laid end to end one after another, so a run appends its own small
//! archive (its script, the program) to the cached base one.

/// One member of an archive; paths are relative to the guest's `/` (no leading `/`).
pub enum Entry<'a> {
    /// A directory (mode 0755).
    Dir(&'a [u8]),
    /// A regular file with its permission bits.
    File {
        /// Where it goes.
        path: &'a [u8],
        /// Permission bits (0o755, 0o644).
        mode: u32,
        /// Its contents.
        data: &'a [u8],
    },
    /// A character device node (mode 0600).
    CharDev {
        /// Where it goes.
        path: &'a [u8],
        /// Device major number.
        major: u32,
        /// Device minor number.
        minor: u32,
    },
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

/// One newc header and name: thirteen 8-digit hex fields after the magic; owner root,
/// time 0, one link (so that Linux never takes two members for hard links).
fn header(out: &mut Vec<u8>, ino: u32, mode: u32, size: u32, rdev: (u32, u32), name: &[u8]) {
    out.extend_from_slice(b"070701");
    let fields = [
        ino,
        mode,
        0, // uid
        0, // gid
        1, // nlink
        0, // mtime
        size,
        0, // devmajor
        0, // devminor
        rdev.0,
        rdev.1,
        name.len() as u32 + 1,
        0, // check
    ];
    for f in fields {
        out.extend_from_slice(format!("{f:08x}").as_bytes());
    }
    out.extend_from_slice(name);
    out.push(0);
    pad4(out);
}

/// The archive of `entries`, ending with the `TRAILER!!!` member; the same entries give
/// the same bytes. Fails on a file of 4 GiB or more (newc's sizes are 32 bits).
pub fn archive(entries: &[Entry]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let ino = i as u32 + 1;
        match entry {
            Entry::Dir(path) => header(&mut out, ino, 0o040_755, 0, (0, 0), path),
            Entry::File { path, mode, data } => {
                let size = u32::try_from(data.len()).map_err(|_| {
                    format!(
                        "{} is {} bytes: an initramfs member must be under 4 GiB",
                        String::from_utf8_lossy(path),
                        data.len()
                    )
                })?;
                header(&mut out, ino, 0o100_000 | mode, size, (0, 0), path);
                out.extend_from_slice(data);
                pad4(&mut out);
            }
            Entry::CharDev { path, major, minor } => {
                header(&mut out, ino, 0o020_600, 0, (*major, *minor), path)
            }
        }
    }
    header(&mut out, 0, 0, 0, (0, 0), b"TRAILER!!!");
    Ok(out)
}

/// The directories above `path` (`a/b/c` -> `a`, `a/b`), outermost first.
pub fn parents(path: &[u8]) -> Vec<&[u8]> {
    path.iter()
        .enumerate()
        .filter(|(i, &b)| b == b'/' && *i > 0)
        .map(|(i, _)| &path[..i])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header layout of buffer-format.rst: "070701", then ino, mode, uid, gid,
    /// nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor, namesize,
    /// check, each 8 hex digits; the name with its NUL padded to 4 bytes, then the data
    /// padded to 4 bytes.
    #[test]
    fn a_file_member_is_laid_out_as_buffer_format_says() {
        let a = archive(&[Entry::File {
            path: b"init",
            mode: 0o755,
            data: b"abc",
        }])
        .unwrap();
        let head = std::str::from_utf8(&a[..110]).unwrap();
        let fields = [
            "00000001", "000081ed", "00000000", "00000000", "00000001", "00000000", "00000003",
            "00000000", "00000000", "00000000", "00000000", "00000005", "00000000",
        ];
        assert_eq!(head, format!("070701{}", fields.concat()));
        // 110 + "init\0" = 115, padded to 116; data 3 padded to 4.
        assert_eq!(&a[110..116], b"init\0\0");
        assert_eq!(&a[116..120], b"abc\0");
        assert_eq!(&a[120..126], b"070701");
        assert!(a.windows(10).any(|w| w == b"TRAILER!!!"));
        assert_eq!(a.len() % 4, 0);
    }

    /// /dev/console as Linux's Documentation/admin-guide/devices.txt numbers it (5, 1).
    #[test]
    fn a_device_node_carries_its_numbers_in_rdev() {
        let a = archive(&[Entry::CharDev {
            path: b"dev/console",
            major: 5,
            minor: 1,
        }])
        .unwrap();
        let head = std::str::from_utf8(&a[..110]).unwrap();
        assert_eq!(&head[14..22], "00002180");
        assert_eq!(&head[78..86], "00000005");
        assert_eq!(&head[86..94], "00000001");
    }

    #[test]
    fn parents_are_listed_outermost_first() {
        assert_eq!(
            parents(b"work/target/debug/x"),
            vec![&b"work"[..], b"work/target", b"work/target/debug"]
        );
        assert!(parents(b"init").is_empty());
    }
}
