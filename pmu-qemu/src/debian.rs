//! The guest's kernel and busybox from Debian 12's arm64 packages, fetched with apt and
//! cached; the base initramfs built from them once.
//!
//! apt runs in a private state ([`pmu_qemu::apt`]: its own sources list, lists and cache
//! under the cache directory; the host's apt configuration is never read or changed), for
//! arm64 only, from deb.debian.org's bookworm, bookworm-updates and bookworm-security,
//! checked against `/usr/share/keyrings/debian-archive-keyring.gpg`. Its output goes to
//! `apt.log` in the cache directory.
//!
//! The cache directory (`$PMU_CACHE_DIR/pmu-qemu`, else
//! `$XDG_CACHE_HOME/pmu-workspace/pmu-qemu`, else `~/.cache/pmu-workspace/pmu-qemu`):
//! - `kernel/<package>_<version>/`: `vmlinuz` (arm64 `Image`) and the modules the guest
//!   loads (`modules/*.ko`, their order in `modules/order`), keyed by the Debian package
//!   version, so a new Debian upload is a new directory;
//! - `busybox/<version>/busybox`;
//! - `initramfs-<key>.cpio`, keyed by the kernel, busybox and init script;
//! - `guest-<key>`: which kernel and initramfs a run uses, written last: a run that finds
//!   it starts QEMU without asking apt anything.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pmu_qemu::apt::{Apt, Config, Package, KEYRING};
use pmu_qemu::cpio::{self, Entry};

use crate::guest;

/// Debian's release whose arm64 kernel the guest boots (its default kernel metapackage).
const SUITE: &str = "bookworm";
const KERNEL_METAPACKAGE: &str = "linux-image-arm64";
const BUSYBOX_PACKAGE: &str = "busybox-static";

/// The modules the guest needs (Debian builds them as modules, not into the image):
/// the virtio-mmio transport of QEMU's `virt` board, the serial ports for stdio, the
/// 9p share. Their dependencies are read from each module's `.modinfo`.
const WANTED_MODULES: [&str; 4] = ["virtio_mmio", "virtio_console", "9pnet_virtio", "9p"];

/// Where the modules (and what they depend on) lie in the image package, under
/// `lib/modules/<release>/kernel/`.
const MODULE_TREES: [&str; 4] = ["fs", "net/9p", "drivers/virtio", "drivers/char"];

/// What a run boots.
#[derive(Debug, Clone)]
pub struct Guest {
    /// The kernel image.
    pub kernel: PathBuf,
    /// The base initramfs (busybox, /init, the modules).
    pub initramfs: PathBuf,
    /// `<package> <version>` of the kernel, for messages.
    pub kernel_package: String,
}

/// The cache directory.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PMU_CACHE_DIR") {
        return PathBuf::from(dir).join("pmu-qemu");
    }
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"))
        .join("pmu-workspace")
        .join("pmu-qemu")
}

/// FNV-1a, 64 bits: a short stable key for cache file names.
pub fn key(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(b"\0") {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// Holds an exclusive `flock` on the cache directory's lock file while alive: two
/// first runs at once (parallel test binaries) prepare the guest once, and save it once
/// (`crate::snapshot`).
pub struct Lock {
    _file: fs::File,
}

impl Lock {
    /// Waits for the lock of the cache directory `dir`.
    ///
    /// # Errors
    /// The lock file cannot be made or locked.
    pub fn take(dir: &Path) -> Result<Self, String> {
        let path = dir.join("lock");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor this function owns; it blocks until the lock is ours.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(format!(
                "{}: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(Self { _file: file })
    }
}

/// The guest, from the cache, or fetched and built first (with progress lines on
/// stderr). `update` asks apt for the newest kernel even when one is cached.
pub fn prepare(update: bool) -> Result<Guest, String> {
    let dir = cache_dir();
    fs::create_dir_all(&dir).map_err(io(&dir))?;
    let _lock = Lock::take(&dir)?;
    let pointer = dir.join(format!("guest-{}", key(&[guest::INIT.as_bytes()])));
    if !update {
        if let Some(guest) = read_pointer(&pointer) {
            return Ok(guest);
        }
    }
    eprintln!(
        "pmu-qemu: preparing the guest in {} (once: later runs reuse it)",
        dir.display()
    );
    let apt = open_apt(&dir, update)?;
    let meta = apt.show(KERNEL_METAPACKAGE)?;
    let image_name = meta
        .depends
        .iter()
        .find(|d| d.starts_with("linux-image-") && d.ends_with("-arm64"))
        .ok_or_else(|| {
            format!(
                "{KERNEL_METAPACKAGE} {} depends on no linux-image-*-arm64",
                meta.version
            )
        })?
        .clone();
    let release = image_name.trim_start_matches("linux-image-").to_string();
    let image = apt.show(&image_name)?;
    let kernel_dir = dir
        .join("kernel")
        .join(sanitize(&format!("{}_{}", image.name, image.version)));
    let order = kernel_dir.join("modules/order");
    if !order.is_file() {
        let deb = download(&apt, &image)?;
        eprintln!(
            "pmu-qemu: unpacking the kernel and its virtio and 9p modules from {}",
            deb.display()
        );
        unpack_kernel(&deb, &release, &kernel_dir)?;
        let _ = fs::remove_file(&deb);
    }
    let busybox = apt.show(BUSYBOX_PACKAGE)?;
    let busybox_dir = dir.join("busybox").join(sanitize(&busybox.version));
    let busybox_bin = busybox_dir.join("busybox");
    if !busybox_bin.is_file() {
        let deb = download(&apt, &busybox)?;
        let tmp = busybox_dir.with_extension("partial");
        let _ = fs::remove_dir_all(&tmp);
        unpack(&deb, &tmp, &["./bin/busybox"])?;
        fs::create_dir_all(&busybox_dir).map_err(io(&busybox_dir))?;
        fs::rename(tmp.join("bin/busybox"), &busybox_bin).map_err(io(&busybox_bin))?;
        let _ = fs::remove_dir_all(&tmp);
        let _ = fs::remove_file(&deb);
    }
    let modules = fs::read_to_string(&order).map_err(io(&order))?;
    let initramfs = dir.join(format!(
        "initramfs-{}.cpio",
        key(&[
            guest::INIT.as_bytes(),
            kernel_dir.as_os_str().as_encoded_bytes(),
            busybox.version.as_bytes(),
            modules.as_bytes(),
        ])
    ));
    if !initramfs.is_file() {
        eprintln!("pmu-qemu: writing the initramfs {}", initramfs.display());
        let archive = base_initramfs(&busybox_bin, &kernel_dir.join("modules"), &modules)?;
        write_atomically(&initramfs, &archive)?;
    }
    let guest = Guest {
        kernel: kernel_dir.join("vmlinuz"),
        initramfs,
        kernel_package: format!("{} {}", image.name, image.version),
    };
    let text = format!(
        "{}\n{}\n{}\n",
        guest.kernel.display(),
        guest.initramfs.display(),
        guest.kernel_package
    );
    write_atomically(&pointer, text.as_bytes())?;
    // apt's lists and caches (about 90 MB) are not needed to boot: a CI cache of this
    // directory stays small; the next preparation fetches them again (seconds).
    for path in ["apt/lists", "apt/pkgcache.bin", "apt/srcpkgcache.bin"] {
        let path = dir.join(path);
        let _ = fs::remove_dir_all(&path).or_else(|_| fs::remove_file(&path));
    }
    eprintln!(
        "pmu-qemu: the guest is ready: {} ({})",
        guest.kernel_package,
        guest.kernel.display()
    );
    Ok(guest)
}

fn read_pointer(path: &Path) -> Option<Guest> {
    let text = fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let guest = Guest {
        kernel: PathBuf::from(lines.next()?),
        initramfs: PathBuf::from(lines.next()?),
        kernel_package: lines.next()?.to_string(),
    };
    (guest.kernel.is_file() && guest.initramfs.is_file()).then_some(guest)
}

fn write_atomically(path: &Path, data: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    fs::write(&tmp, data).map_err(io(&tmp))?;
    fs::rename(&tmp, path).map_err(io(path))
}

/// `name` with only path-safe characters (`:` `+` `~` become `_`).
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The base archive: busybox, /init, /dev/console (Debian's kernel does not mount
/// devtmpfs by itself, and init's stdio is /dev/console), the modules and their order.
fn base_initramfs(busybox: &Path, modules: &Path, order: &str) -> Result<Vec<u8>, String> {
    let busybox = fs::read(busybox).map_err(io(busybox))?;
    let mut kos = Vec::new();
    for name in order.lines() {
        let path = modules.join(format!("{name}.ko"));
        kos.push((
            format!("{}/{name}.ko", guest::MODULE_DIR),
            fs::read(&path).map_err(io(&path))?,
        ));
    }
    let order_path = format!("{}/modules", guest::MODULE_DIR);
    let mut entries = vec![
        Entry::Dir(b"bin"),
        Entry::Dir(b"dev"),
        Entry::Dir(b"proc"),
        Entry::Dir(b"sys"),
        Entry::Dir(b"tmp"),
        Entry::Dir(b"root"),
        Entry::Dir(b"lib"),
        Entry::Dir(guest::MODULE_DIR.as_bytes()),
        Entry::Dir(b"pmu-qemu"),
        Entry::CharDev {
            path: b"dev/console",
            major: 5,
            minor: 1,
        },
        Entry::File {
            path: b"bin/busybox",
            mode: 0o755,
            data: &busybox,
        },
        Entry::File {
            path: b"init",
            mode: 0o755,
            data: guest::INIT.as_bytes(),
        },
        Entry::File {
            path: order_path.as_bytes(),
            mode: 0o644,
            data: order.as_bytes(),
        },
    ];
    for (path, data) in &kos {
        entries.push(Entry::File {
            path: path.as_bytes(),
            mode: 0o644,
            data,
        });
    }
    cpio::archive(&entries)
}

/// Unpacks the kernel image and the modules the guest loads into `into`.
fn unpack_kernel(deb: &Path, release: &str, into: &Path) -> Result<(), String> {
    let tmp = into.with_extension("partial");
    let _ = fs::remove_dir_all(&tmp);
    let image = format!("./boot/vmlinuz-{release}");
    let mut members = vec![image.clone()];
    for tree in MODULE_TREES {
        members.push(format!("./lib/modules/{release}/kernel/{tree}"));
    }
    let members: Vec<&str> = members.iter().map(String::as_str).collect();
    unpack(deb, &tmp, &members)?;
    let tree = tmp.join(format!("lib/modules/{release}/kernel"));
    let mut found = std::collections::BTreeMap::new();
    walk(&tree, &mut |path| {
        if path.extension().is_some_and(|e| e == "ko") {
            if let Some(stem) = path.file_stem() {
                // Linux names a module after its file, with `-` read as `_`.
                let name = stem.to_string_lossy().replace('-', "_");
                found.insert(name, path.to_path_buf());
            }
        }
    })?;
    let mut depends = |name: &str| -> Result<Vec<String>, String> {
        let path = found.get(name).ok_or_else(|| {
            format!(
                "module {name} is not under {} in {}",
                MODULE_TREES.join(", "),
                deb.display()
            )
        })?;
        let ko = fs::read(path).map_err(io(path))?;
        crate::elf::module_depends(&ko)
            .ok_or_else(|| format!("{}: no depends= in .modinfo", path.display()))
    };
    let order = load_order(&WANTED_MODULES, &mut depends)?;
    let modules = tmp.join("modules");
    fs::create_dir_all(&modules).map_err(io(&modules))?;
    for name in &order {
        let to = modules.join(format!("{name}.ko"));
        fs::copy(&found[name], &to).map_err(io(&to))?;
    }
    fs::write(modules.join("order"), order.join("\n") + "\n").map_err(io(&modules))?;
    fs::rename(tmp.join(&image[2..]), tmp.join("vmlinuz")).map_err(io(&tmp))?;
    fs::remove_dir_all(tmp.join("lib")).map_err(io(&tmp))?;
    let _ = fs::remove_dir_all(tmp.join("boot"));
    let _ = fs::remove_dir_all(into);
    if let Some(parent) = into.parent() {
        fs::create_dir_all(parent).map_err(io(parent))?;
    }
    fs::rename(&tmp, into).map_err(io(into))
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) -> Result<(), String> {
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            walk(&path, f)?;
        } else {
            f(&path);
        }
    }
    Ok(())
}

/// `wanted` and everything they depend on, each after its dependencies (a depth-first
/// order); a dependency cycle is an error.
pub fn load_order(
    wanted: &[&str],
    depends: &mut dyn FnMut(&str) -> Result<Vec<String>, String>,
) -> Result<Vec<String>, String> {
    fn visit(
        name: &str,
        depends: &mut dyn FnMut(&str) -> Result<Vec<String>, String>,
        on_path: &mut Vec<String>,
        order: &mut Vec<String>,
    ) -> Result<(), String> {
        if order.iter().any(|n| n == name) {
            return Ok(());
        }
        if on_path.iter().any(|n| n == name) {
            return Err(format!(
                "modules depend on each other: {} -> {name}",
                on_path.join(" -> ")
            ));
        }
        on_path.push(name.to_string());
        for d in depends(name)? {
            visit(&d, depends, on_path, order)?;
        }
        on_path.pop();
        order.push(name.to_string());
        Ok(())
    }
    let mut order = Vec::new();
    for w in wanted {
        visit(w, depends, &mut Vec::new(), &mut order)?;
    }
    Ok(order)
}

/// `dpkg-deb --fsys-tarfile deb | tar -x -C into members…`, logged.
fn unpack(deb: &Path, into: &Path, members: &[&str]) -> Result<(), String> {
    fs::create_dir_all(into).map_err(io(into))?;
    let mut dpkg = Command::new("dpkg-deb")
        .arg("--fsys-tarfile")
        .arg(deb)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run dpkg-deb: {e}"))?;
    let tar_in = dpkg.stdout.take().ok_or("dpkg-deb: no stdout")?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(into)
        .args(members)
        .stdin(tar_in)
        .output()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    let dpkg = dpkg.wait_with_output().map_err(|e| e.to_string())?;
    if !dpkg.status.success() || !tar.status.success() {
        return Err(format!(
            "unpacking {} failed: {}{}",
            deb.display(),
            String::from_utf8_lossy(&dpkg.stderr),
            String::from_utf8_lossy(&tar.stderr)
        ));
    }
    Ok(())
}

/// The private apt state in the cache directory `cache`: arm64 only, from
/// deb.debian.org's [`SUITE`], its `-updates` and its `-security`; lists fetched when
/// missing or when `update` asks.
fn open_apt(cache: &Path, update: bool) -> Result<Apt, String> {
    for program in ["apt-get", "apt-cache", "dpkg-deb", "tar"] {
        if !crate::qemu::on_path(program) {
            return Err(format!(
                "{program} is not installed: pmu-qemu fetches Debian's arm64 kernel with apt on its first run (on Debian or Ubuntu: `sudo apt-get install apt dpkg tar debian-archive-keyring`)"
            ));
        }
    }
    if !Path::new(KEYRING).is_file() {
        return Err(format!(
            "{KEYRING} is missing: pmu-qemu checks Debian's packages with it (`sudo apt-get install debian-archive-keyring`)"
        ));
    }
    Apt::open(
        Config {
            dir: cache.join("apt"),
            debs: cache.join("debs"),
            log: cache.join("apt.log"),
            archs: vec!["arm64".into()],
            suites: vec![
                format!("http://deb.debian.org/debian {SUITE} main"),
                format!("http://deb.debian.org/debian {SUITE}-updates main"),
                format!("http://deb.debian.org/debian-security {SUITE}-security main"),
            ],
            progress: "pmu-qemu: ".into(),
        },
        update,
    )
}

/// The `.deb` of `package` (its candidate, as [`Apt::show`] gave it).
fn download(apt: &Apt, package: &Package) -> Result<PathBuf, String> {
    let mut debs = apt.fetch(std::slice::from_ref(&package.name))?;
    debs.pop()
        .ok_or_else(|| format!("apt-get download {}: no .deb", package.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dependencies first; shared ones once; the wanted order kept otherwise.
    #[test]
    fn modules_load_after_what_they_depend_on() {
        let mut deps = |name: &str| -> Result<Vec<String>, String> {
            Ok(match name {
                "9p" => vec!["9pnet".into(), "netfs".into(), "fscache".into()],
                "fscache" => vec!["netfs".into()],
                "9pnet_virtio" => vec!["9pnet".into()],
                _ => vec![],
            })
        };
        let order = load_order(&["9pnet_virtio", "9p"], &mut deps).unwrap();
        assert_eq!(order, ["9pnet", "9pnet_virtio", "netfs", "fscache", "9p"]);
        let mut cycle = |name: &str| -> Result<Vec<String>, String> {
            Ok(vec![if name == "a" { "b" } else { "a" }.to_string()])
        };
        assert!(load_order(&["a"], &mut cycle)
            .unwrap_err()
            .contains("a -> b"));
    }

    #[test]
    fn keys_are_stable_and_tell_inputs_apart() {
        assert_eq!(key(&[b"a", b"b"]), key(&[b"a", b"b"]));
        assert_ne!(key(&[b"ab"]), key(&[b"a", b"b"]));
        assert_eq!(sanitize("1:1.35.0-4+deb12u1"), "1_1.35.0-4_deb12u1");
    }
}
