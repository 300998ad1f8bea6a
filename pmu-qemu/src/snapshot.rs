//! A booted guest, saved once and restored for every run: booting Debian's kernel under
//! TCG costs seconds of translation per run, restoring a saved machine does not.
//!
//! The guest is booted with a marker in its initramfs (`pmu-qemu/snapshot`): /init
//! does everything that is the same for every run (modules, perf_user_access, the
//! ports), says `ready` on the status port and waits there for the run's archive
//! (guest::INIT). Its memory is a file in the cache (`snapshot-<key>.ram`, mapped
//! shared, so what the guest writes lands there). The host then saves the rest of the
//! machine with QEMU's monitor (`migrate file:…` with the `x-ignore-shared`
//! capability: the devices, the CPU, icount's instruction count and the virtual clock;
//! not the memory, which is the file) into `snapshot-<key>.state`. A run starts QEMU
//! with the same options and devices, the memory file mapped private (the run's writes
//! stay in its QEMU; the file is not changed) and `-incoming defer` (no kernel or
//! initrd: the saved memory holds them), tells it on the monitor to load the state
//! (`qemu::restore_commands`), and sends the archive it would have appended to the
//! initramfs: the guest unpacks it and goes on as a booted one does.
//!
//! Why a memory file rather than memory in the state: a state with the memory in it
//! has QEMU copy every saved page into memory it allocates at each start, and check
//! each of the others for zeros; with the file mapped private, a run reads saved pages
//! from the page cache that the previous run left there and allocates only the pages
//! the guest writes (docs/pmu-qemu.md, "The saved guest's memory").
//!
//! The file is keyed by what the saved machine depends on: QEMU's version, the kernel,
//! the initramfs (whose name carries its contents' key), and the options that shape the
//! machine or the kernel's command line ([`key`]).

use std::fs;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pmu_qemu::cpio;

use crate::args::Options;
use crate::debian::{self, Guest};
use crate::qemu::{self, Boot};

/// Bumped when the saved machine's layout changes in a way the key does not see (the
/// key sees the saving boot's command line and the initramfs, the init script in it).
const FORMAT: &[u8] = b"pmu-qemu snapshot 3";

/// How long the saving boot may take to reach `ready`, and the save itself.
const PATIENCE: Duration = Duration::from_secs(300);

/// A saved machine.
pub struct Snapshot {
    /// The migration stream, less the memory.
    pub state: PathBuf,
    /// The guest's memory (`--memory` MiB, sparse: the pages never written are holes).
    pub ram: PathBuf,
    /// An empty directory: the share's host side when the run shares nothing (the
    /// restored machine has the 9p device either way).
    pub empty_share: PathBuf,
}

/// The cache key of a saved machine: QEMU's version, the initramfs (whose name is a key
/// of its contents) and the saving boot's whole command line as QEMU gets it (the CPU
/// model, memory, devices, kernel and its command line), with fixed stand-ins for the
/// paths that differ between runs, so that whatever shapes the machine is in the key
/// without being listed here.
pub fn key(qemu_version: &[u8], guest: &Guest, options: &Options) -> String {
    let share = Path::new("/share");
    let line = qemu::command_line(
        options,
        Path::new("/run"),
        Some(share),
        Boot::Save {
            kernel: &guest.kernel,
            initrd: Path::new("/run/initrd.cpio"),
            empty_share: share,
            ram: Path::new("/run/ram"),
        },
    );
    let mut parts = vec![
        FORMAT,
        qemu_version,
        guest.initramfs.as_os_str().as_encoded_bytes(),
    ];
    parts.extend(line.iter().map(|word| word.as_encoded_bytes()));
    debian::key(&parts)
}

/// The saved machine for `guest` and `options`, saved now if the cache has none.
///
/// # Errors
/// QEMU's version unknown, the saving boot or the save failing (with the guest's
/// console).
pub fn ensure(guest: &Guest, options: &Options) -> Result<Snapshot, String> {
    let dir = debian::cache_dir();
    let binary =
        qemu::find_on_path(qemu::QEMU).ok_or_else(|| format!("{} is not on PATH", qemu::QEMU))?;
    let version = qemu_version(&dir, &binary)?;
    let k = key(&version, guest, options);
    let snapshot = Snapshot {
        state: dir.join(format!("snapshot-{k}.state")),
        ram: dir.join(format!("snapshot-{k}.ram")),
        empty_share: dir.join("snapshot-share"),
    };
    fs::create_dir_all(&snapshot.empty_share)
        .map_err(|e| format!("{}: {e}", snapshot.empty_share.display()))?;
    // The state is renamed into place after the memory file: with the state there, the
    // memory file is whole. Saves take the cache's lock, and a save starts only where
    // the two are missing: a run that found them keeps a matching pair (a run's QEMU
    // opens the memory file at its start and the state a moment later).
    let whole = |s: &Snapshot| s.state.is_file() && s.ram.is_file();
    if whole(&snapshot) {
        return Ok(snapshot);
    }
    let _lock = debian::Lock::take(&dir)?;
    if whole(&snapshot) {
        return Ok(snapshot);
    }
    let t = Instant::now();
    eprintln!(
        "pmu-qemu: booting the guest once to save it ({})",
        snapshot.state.display()
    );
    save(guest, options, &snapshot)?;
    eprintln!("pmu-qemu: saved in {:.1} s", t.elapsed().as_secs_f64());
    Ok(snapshot)
}

/// `binary --version`'s output, remembered in `dir` per binary (its path, size and
/// modification time): starting QEMU only to ask costs 15 ms a run.
fn qemu_version(dir: &Path, binary: &Path) -> Result<Vec<u8>, String> {
    let meta = fs::metadata(binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default();
    let memo = dir.join(format!(
        "qemu-version-{}",
        debian::key(&[
            binary.as_os_str().as_encoded_bytes(),
            meta.len().to_string().as_bytes(),
            modified.as_nanos().to_string().as_bytes(),
        ])
    ));
    if let Ok(version) = fs::read(&memo) {
        return Ok(version);
    }
    let version = Command::new(binary)
        .arg("--version")
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("{} --version: {e}", binary.display()))?
        .stdout;
    if version.is_empty() {
        return Err(format!("{} --version said nothing", binary.display()));
    }
    // Written whole or not at all: a reader never sees a part.
    let part = partial(&memo);
    if fs::write(&part, &version)
        .and_then(|()| fs::rename(&part, &memo))
        .is_err()
    {
        let _ = fs::remove_file(&part);
    }
    Ok(version)
}

/// A file of this process next to `path`, renamed over it when complete.
fn partial(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".partial-{}", std::process::id()));
    PathBuf::from(name)
}

fn save(guest: &Guest, options: &Options, snapshot: &Snapshot) -> Result<(), String> {
    let io = |p: &Path| {
        let p = p.to_owned();
        move |e: std::io::Error| format!("{}: {e}", p.display())
    };
    let mut initrd = fs::read(&guest.initramfs).map_err(io(&guest.initramfs))?;
    initrd.extend(cpio::archive(&[
        cpio::Entry::Dir(b"pmu-qemu"),
        cpio::Entry::File {
            path: b"pmu-qemu/snapshot",
            mode: 0o644,
            data: b"",
        },
    ])?);
    let run_dir = qemu::RunDir::new()?;
    // Only this boot reads the initrd: a restored machine has it in its memory.
    let initrd_path = run_dir.0.join("initrd.cpio");
    fs::write(&initrd_path, &initrd).map_err(io(&initrd_path))?;
    let ram_partial = partial(&snapshot.ram);
    let line = qemu::command_line(
        options,
        &run_dir.0,
        Some(&snapshot.empty_share),
        Boot::Save {
            kernel: &guest.kernel,
            initrd: &initrd_path,
            empty_share: &snapshot.empty_share,
            ram: &ram_partial,
        },
    );
    let log = run_dir.0.join("qemu.log");
    let log_file = fs::File::create(&log).map_err(io(&log))?;
    let mut child = Command::new(qemu::QEMU)
        .args(&line)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().map_err(|e| e.to_string())?)
        .stderr(log_file)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", qemu::QEMU))?;
    let state_partial = partial(&snapshot.state);
    let result = drive_save(&mut child, &run_dir.0, &state_partial);
    let _ = child.kill();
    let _ = child.wait();
    if let Err(e) = result {
        let _ = fs::remove_file(&state_partial);
        let _ = fs::remove_file(&ram_partial);
        let console = fs::read_to_string(run_dir.0.join("console.txt")).unwrap_or_default();
        let lines: Vec<&str> = console.lines().collect();
        let tail = lines[lines.len().saturating_sub(15)..].join("\n    ");
        return Err(format!(
            "{e}\n  QEMU: {}\n  the guest's console (last lines):\n    {tail}",
            fs::read_to_string(&log).unwrap_or_default().trim()
        ));
    }
    // A new name for each: a run that maps the memory file now keeps the file it
    // mapped (another process's save never writes into it).
    fs::rename(&ram_partial, &snapshot.ram).map_err(io(&snapshot.ram))?;
    fs::rename(&state_partial, &snapshot.state).map_err(io(&snapshot.state))
}

/// Waits for the guest's `ready`, then saves the machine to `state` through the
/// monitor and ends QEMU.
fn drive_save(child: &mut std::process::Child, run_dir: &Path, state: &Path) -> Result<(), String> {
    let start = Instant::now();
    let status = run_dir.join("status.txt");
    loop {
        if fs::read(&status).is_ok_and(|b| b.starts_with(b"ready")) {
            break;
        }
        if let Ok(Some(s)) = child.try_wait() {
            return Err(format!("the saving guest ended before it was ready ({s})"));
        }
        if start.elapsed() > PATIENCE {
            return Err("the saving guest was not ready in time".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let sock = run_dir.join("monitor.sock");
    let mut monitor = UnixStream::connect(&sock).map_err(|e| format!("{}: {e}", sock.display()))?;
    monitor
        .set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(|e| e.to_string())?;
    let mut said = Vec::new();
    let send = |m: &mut UnixStream, line: &[u8]| -> Result<(), String> {
        m.write_all(line)
            .map_err(|e| format!("QEMU's monitor: {e}"))
    };
    send(&mut monitor, &qemu::save_commands(state))?;
    loop {
        send(&mut monitor, b"info migrate\n")?;
        let mut buf = [0u8; 4096];
        loop {
            match monitor.read(&mut buf) {
                Ok(0) => return Err("QEMU's monitor closed during the save".into()),
                Ok(n) => said.extend_from_slice(&buf[..n]),
                Err(_) => break,
            }
        }
        let text = String::from_utf8_lossy(&said);
        if text.contains("Migration status: completed") || text.contains("Status: completed") {
            break;
        }
        if text.contains("failed") || text.contains("Error") || text.contains("error") {
            return Err(format!("QEMU could not save the machine: {}", text.trim()));
        }
        if start.elapsed() > PATIENCE {
            return Err("the save did not complete in time".into());
        }
    }
    let _ = send(&mut monitor, b"quit\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each input of the key changes it: another QEMU, kernel, initramfs, CPU model,
    /// CPU count, memory size or console setting is another machine.
    #[test]
    fn the_key_changes_with_what_the_saved_machine_depends_on() {
        let guest = Guest {
            kernel: "/c/vmlinuz-6.1".into(),
            initramfs: "/c/initramfs-00.cpio".into(),
            kernel_package: String::new(),
        };
        let options = Options::default();
        let base = key(b"QEMU 10.0.2", &guest, &options);
        assert_eq!(base, key(b"QEMU 10.0.2", &guest, &options));
        let mut keys = vec![base.clone(), key(b"QEMU 10.1.0", &guest, &options)];
        let other = |f: &dyn Fn(&mut Guest)| {
            let mut g = Guest {
                kernel: guest.kernel.clone(),
                initramfs: guest.initramfs.clone(),
                kernel_package: String::new(),
            };
            f(&mut g);
            key(b"QEMU 10.0.2", &g, &options)
        };
        keys.push(other(&|g| g.kernel = "/c/vmlinuz-6.2".into()));
        keys.push(other(&|g| g.initramfs = "/c/initramfs-01.cpio".into()));
        for o in [
            Options {
                cpu: "cortex-a72".into(),
                ..Options::default()
            },
            Options {
                smp: 2,
                ..Options::default()
            },
            Options {
                memory_mib: 2048,
                ..Options::default()
            },
            Options {
                console: true,
                ..Options::default()
            },
        ] {
            keys.push(key(b"QEMU 10.0.2", &guest, &o));
        }
        // Options that do not shape the machine leave it.
        let same = Options {
            share: false,
            update: true,
            snapshot: false,
            profile: Some(1000),
            ..Options::default()
        };
        assert_eq!(key(b"QEMU 10.0.2", &guest, &same), base);
        // The key is made from what QEMU is given: `--cpu max` is given to QEMU as
        // `max,pauth-impdef=on` (qemu::command_line), so the two spellings are one
        // machine, and a change to what a default stands for is a new key.
        let spelled_out = Options {
            cpu: "max,pauth-impdef=on".into(),
            ..Options::default()
        };
        assert_eq!(key(b"QEMU 10.0.2", &guest, &spelled_out), base);
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n, "every change is a new key");
    }

    /// The version is asked once per binary: a stand-in QEMU (a script that counts its
    /// runs) answers the first call; the second reads the cache; a changed binary (other
    /// size) is asked again.
    #[test]
    fn qemu_s_version_is_asked_once_per_binary() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("pmu-qemu-version-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let runs = dir.join("runs");
        let fake = dir.join("qemu");
        let write_fake = |extra: &str| {
            let script = format!(
                "#!/bin/sh\necho run >> '{}'\necho 'QEMU emulator version 9.9.9'{extra}\n",
                runs.display()
            );
            fs::write(&fake, script).unwrap();
            fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
        };
        // A script just written can be "busy" for a moment while another test's child
        // (forked before its exec closed our descriptor) holds it: asked again then.
        let ask = || {
            (0..20)
                .map(|_| qemu_version(&dir, &fake))
                .find(|r| {
                    let busy = r.as_ref().is_err_and(|e| e.contains("Text file busy"));
                    if busy {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    !busy
                })
                .unwrap()
                .unwrap()
        };
        write_fake("");
        let count = || {
            fs::read_to_string(&runs)
                .unwrap_or_default()
                .lines()
                .count()
        };
        let first = ask();
        assert_eq!(first, b"QEMU emulator version 9.9.9\n");
        assert_eq!(ask(), first);
        assert_eq!(count(), 1, "the second answer came from the cache");
        write_fake(" # another build");
        ask();
        assert_eq!(count(), 2, "another binary is asked again");
        let _ = fs::remove_dir_all(&dir);
    }
}
