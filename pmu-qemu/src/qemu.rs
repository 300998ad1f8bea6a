//! Starting QEMU and carrying the program's stdio between the host and the guest.
//!
//! The guest's stdout, stderr, exit status and console are QEMU `pipe` character
//! devices: FIFO pairs in a per-run directory. QEMU writes to a FIFO with blocking
//! writes in the virtual CPU's thread, so when the program's `write` returns its bytes
//! are in the host's FIFO, and nothing is lost when the guest powers off right after.
//! stdin is a Unix socket QEMU connects to: closing it at the host's end of input is
//! what tells the guest "end of file" (virtio-console reads return 0 once the host side
//! is disconnected).

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::args::Options;
use crate::guest;

/// The QEMU program.
pub const QEMU: &str = "qemu-system-aarch64";

/// Whether `program` is an executable file on `PATH`.
pub fn on_path(program: &str) -> bool {
    find_on_path(program).is_some()
}

/// The first executable file named `program` on `PATH`, as the shell would run it.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            fs::metadata(candidate).is_ok_and(|m| {
                m.is_file()
                    && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
            })
        })
}

/// A path inside a QEMU option value: its commas doubled (QEMU's option syntax).
fn opt_path(path: &Path) -> OsString {
    let bytes = path.as_os_str().as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        out.push(b);
        if b == b',' {
            out.push(b',');
        }
    }
    OsString::from(std::ffi::OsStr::from_bytes(&out))
}

fn joined(parts: &[&OsStr]) -> OsString {
    let mut s = OsString::new();
    for p in parts {
        s.push(p);
    }
    s
}

/// How the machine starts.
#[derive(Clone, Copy, Debug)]
pub enum Boot<'a> {
    /// From the kernel and the initrd.
    Fresh {
        /// The kernel image.
        kernel: &'a Path,
        /// The initramfs.
        initrd: &'a Path,
    },
    /// From the kernel and the initrd, to be saved (`crate::snapshot`): the guest's
    /// memory is the file `ram`, mapped shared (what the guest writes lands in it), the
    /// ports' host ends are files (`<name>.txt` in the run directory) or nothing, a human
    /// monitor listens on `monitor.sock` there, and `empty_share` stands for the
    /// program's directory.
    Save {
        /// The kernel image.
        kernel: &'a Path,
        /// The initramfs.
        initrd: &'a Path,
        /// An empty directory.
        empty_share: &'a Path,
        /// The file that becomes the guest's memory.
        ram: &'a Path,
    },
    /// From a [`Boot::Save`] run with the same options: its memory file `ram`, mapped
    /// private (the guest reads the saved pages from the host's page cache and its
    /// writes stay in this QEMU), and `-incoming defer`: QEMU loads the rest of the
    /// saved machine when told on its monitor (`monitor.sock`: [`restore_commands`]);
    /// `program_dir` is shared read-only. No kernel or initrd: the saved memory holds
    /// them, and loading the kernel image costs QEMU about 50 ms a start
    /// (docs/pmu-qemu.md, "A saved guest").
    Restore {
        /// The saved memory.
        ram: &'a Path,
        /// The program's directory.
        program_dir: &'a Path,
    },
}

/// The id of the guest's memory object: the name of its RAM block in a saved state,
/// the same whether the memory is mapped shared (saving) or private (restoring).
const RAM_ID: &str = "pmu-qemu.ram";

/// What a restoring QEMU (`-incoming defer`) is told on its monitor, `state` being the
/// saved devices: skip the RAM block that the state's `x-ignore-shared` save left out
/// (its contents are the memory file), then load.
pub fn restore_commands(state: &Path) -> Vec<u8> {
    migration_commands("migrate_incoming", state)
}

/// What a saving QEMU is told on its monitor: save the devices and the CPU into
/// `state`, leaving out the memory, which is the file mapped shared that the guest
/// wrote as it ran (`x-ignore-shared`); a restoring QEMU maps the same file.
pub fn save_commands(state: &Path) -> Vec<u8> {
    migration_commands("migrate", state)
}

/// The `x-ignore-shared` capability on, then `verb "file:<state>"`. QEMU 10.0 takes
/// that capability on the monitor only (a `-global migration.x-ignore-shared` came
/// later), and both sides of a migration must have it.
fn migration_commands(verb: &str, state: &Path) -> Vec<u8> {
    let mut c = format!("migrate_set_capability x-ignore-shared on\n{verb} ").into_bytes();
    c.extend(monitor_string(b"file:", state));
    c.push(b'\n');
    c
}

/// `prefix` and `path` as one argument of QEMU's human monitor: in double quotes, a `"`
/// or `\` escaped with a backslash (the monitor's string syntax, so that a space in a
/// path does not end the argument).
fn monitor_string(prefix: &[u8], path: &Path) -> Vec<u8> {
    let mut s = vec![b'"'];
    for &b in prefix.iter().chain(path.as_os_str().as_bytes()) {
        if b == b'"' || b == b'\\' {
            s.push(b'\\');
        }
        s.push(b);
    }
    s.push(b'"');
    s
}

/// QEMU's command line: the `virt` board with `-icount shift=0,align=off,sleep=off`
/// (one instruction per virtual nanosecond, so INST_RETIRED and CPU_CYCLES count
/// exactly), the kernel's console on a FIFO, the four virtio-serial ports, the share.
pub fn command_line(
    options: &Options,
    run_dir: &Path,
    share: Option<&Path>,
    boot: Boot,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |parts: &[&OsStr]| a.push(joined(parts));
    // pauth-impdef: QEMU's own pointer-authentication hash instead of QARMA5, much
    // faster under emulation (Debian's kernel signs every return address); the program's
    // instructions are the same.
    let cpu = if options.cpu == "max" {
        "max,pauth-impdef=on".to_string()
    } else {
        options.cpu.clone()
    };
    let smp = options.smp.to_string();
    let mem = format!("{}M", options.memory_mib);
    let ram = match boot {
        Boot::Fresh { .. } => None,
        Boot::Save { ram, .. } => Some((ram, "on")),
        Boot::Restore { ram, .. } => Some((ram, "off")),
    };
    for word in ["-M", "virt", "-cpu", &cpu, "-smp", &smp, "-m", &mem] {
        push(&[OsStr::new(word)]);
    }
    if let Some((path, share)) = ram {
        // The saved guest's memory is a file: a restoring QEMU maps it private, so
        // nothing is copied or cleared at its start, and pages the guest never reads
        // are never touched (docs/pmu-qemu.md, "The saved guest's memory").
        push(&[OsStr::new("-object")]);
        push(&[
            OsStr::new(&format!(
                "memory-backend-file,id={RAM_ID},size={mem},share={share},mem-path="
            )),
            &opt_path(path),
        ]);
        push(&[OsStr::new("-machine")]);
        push(&[OsStr::new(&format!("memory-backend={RAM_ID}"))]);
    }
    for word in [
        "-nodefaults",
        "-display",
        "none",
        "-no-reboot",
        "-icount",
        "shift=0,align=off,sleep=off",
    ] {
        push(&[OsStr::new(word)]);
    }
    if let Boot::Fresh { kernel, initrd } | Boot::Save { kernel, initrd, .. } = boot {
        push(&[OsStr::new("-append")]);
        // `quiet` unless the console is shown: its bytes are read either way.
        push(&[OsStr::new(if options.console {
            "console=ttyAMA0 panic=-1 rdinit=/init"
        } else {
            "console=ttyAMA0 quiet panic=-1 rdinit=/init"
        })]);
        push(&[OsStr::new("-kernel")]);
        push(&[kernel.as_os_str()]);
        push(&[OsStr::new("-initrd")]);
        push(&[initrd.as_os_str()]);
    }
    let fifo = |name: &str| opt_path(&run_dir.join(name));
    let saving = matches!(boot, Boot::Save { .. });
    push(&[OsStr::new("-chardev")]);
    if saving {
        push(&[OsStr::new("file,id=console,path="), &fifo("console.txt")]);
    } else {
        push(&[OsStr::new("pipe,id=console,path="), &fifo("console")]);
    }
    push(&[OsStr::new("-serial")]);
    push(&[OsStr::new("chardev:console")]);
    push(&[OsStr::new("-device")]);
    push(&[OsStr::new("virtio-serial-device")]);
    for (nr, name) in guest::PORTS.iter().enumerate() {
        let id = name.trim_start_matches("pmu-qemu.");
        push(&[OsStr::new("-chardev")]);
        if saving {
            if id == "status" {
                push(&[OsStr::new("file,id=status,path="), &fifo("status.txt")]);
            } else {
                push(&[OsStr::new(&format!("null,id={id}"))]);
            }
        } else if id == "stdin" {
            push(&[OsStr::new("socket,id=stdin,path="), &fifo("stdin.sock")]);
        } else {
            push(&[OsStr::new(&format!("pipe,id={id},path=")), &fifo(id)]);
        }
        push(&[OsStr::new("-device")]);
        push(&[OsStr::new(&format!(
            "virtserialport,chardev={id},name={name},nr={}",
            nr + 1
        ))]);
    }
    if let Some(dir) = share {
        push(&[OsStr::new("-fsdev")]);
        push(&[
            OsStr::new("local,id=share,security_model=none,path="),
            &opt_path(dir),
        ]);
        push(&[OsStr::new("-device")]);
        push(&[OsStr::new(&format!(
            "virtio-9p-device,fsdev=share,mount_tag={}",
            guest::SHARE_TAG
        ))]);
    }
    if let Boot::Save {
        empty_share: dir, ..
    }
    | Boot::Restore {
        program_dir: dir, ..
    } = boot
    {
        push(&[OsStr::new("-fsdev")]);
        push(&[
            OsStr::new("local,id=prog,security_model=none,readonly=on,path="),
            &opt_path(dir),
        ]);
        push(&[OsStr::new("-device")]);
        push(&[OsStr::new(&format!(
            "virtio-9p-device,fsdev=prog,mount_tag={}",
            guest::PROGRAM_TAG
        ))]);
    }
    if let Boot::Restore { .. } = boot {
        push(&[OsStr::new("-incoming")]);
        push(&[OsStr::new("defer")]);
    }
    // A saving run is told to save, a restoring one to load ([`restore_commands`]).
    if !matches!(boot, Boot::Fresh { .. }) {
        push(&[OsStr::new("-monitor")]);
        push(&[
            OsStr::new("unix:"),
            &fifo("monitor.sock"),
            OsStr::new(",server=on,wait=off"),
        ]);
    }
    a
}

/// The per-run directory, removed when dropped.
pub struct RunDir(pub PathBuf);

impl RunDir {
    /// A fresh directory under the system's temporary directory (short: a Unix socket's
    /// path must fit in 108 bytes).
    pub fn new() -> Result<Self, String> {
        let base = std::env::temp_dir();
        for n in 0..1000u32 {
            let dir = base.join(format!("pmu-qemu-{}-{n}", std::process::id()));
            match fs::create_dir(&dir) {
                Ok(()) => return Ok(Self(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("{}: {e}", dir.display())),
            }
        }
        Err(format!("no fresh directory in {}", base.display()))
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn mkfifo(path: &Path) -> Result<(), String> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(format!(
            "mkfifo {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// What the guest sent back.
pub struct Outcome {
    /// The exit status port's bytes (empty when the guest never got that far).
    pub status: Vec<u8>,
    /// The console: the kernel's and init's messages.
    pub console: Vec<u8>,
    /// How QEMU ended.
    pub qemu: Ended,
    /// QEMU's own messages (its stderr).
    pub qemu_log: String,
}

/// How QEMU ended.
#[derive(Debug)]
pub enum Ended {
    /// Stopped by this side once the program's status and every byte it wrote had come
    /// back: the guest had nothing left to say, and its power-off would only have cost
    /// time (18 ms of the 0.38 s a run took on this project's machine).
    Stopped,
    /// On its own (the guest powered off, or it failed): its exit status.
    Exited(std::process::ExitStatus),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stopped => f.write_str("stopped once the run was over"),
            Self::Exited(status) => status.fmt(f),
        }
    }
}

/// Where each FIFO's bytes go.
enum Sink {
    Stdout,
    Stderr,
    Keep(usize),
}

/// Boots the guest (`program`: QEMU, or a stand-in in tests) and relays until it exits:
/// the program's stdout and stderr to `out` and `err`, the console to `err` too when
/// `console_to_stderr`. `monitor`: what QEMU is told on its monitor socket
/// (`monitor.sock` in `run_dir`) once it listens ([`restore_commands`]).
#[allow(clippy::too_many_arguments)]
pub fn run(
    program: &OsStr,
    args: &[OsString],
    run_dir: &Path,
    console_to_stderr: bool,
    payload: Option<Vec<u8>>,
    monitor: Option<Vec<u8>>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Outcome, String> {
    let mut sinks = Vec::new();
    for (name, sink) in [
        ("stdout", Sink::Stdout),
        ("stderr", Sink::Stderr),
        ("status", Sink::Keep(0)),
        ("console", Sink::Keep(1)),
    ] {
        for end in ["in", "out"] {
            mkfifo(&run_dir.join(format!("{name}.{end}")))?;
        }
        sinks.push((name, sink));
    }
    let stdin_path = run_dir.join("stdin.sock");
    let listener =
        UnixListener::bind(&stdin_path).map_err(|e| format!("{}: {e}", stdin_path.display()))?;
    let qemu_log_path = run_dir.join("qemu.log");
    let qemu_log = fs::File::create(&qemu_log_path)
        .map_err(|e| format!("{}: {e}", qemu_log_path.display()))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(qemu_log.try_clone().map_err(|e| e.to_string())?)
        .stderr(qemu_log)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program.to_string_lossy()))?;
    // Held until the run ends: QEMU reads what it was told before it sees the hang-up
    // either way, but its answers then have somewhere to go.
    let _monitor = match monitor {
        Some(commands) => {
            match tell_monitor(&mut child, &run_dir.join("monitor.sock"), &commands) {
                Ok(m) => Some(m),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let log = fs::read_to_string(&qemu_log_path).unwrap_or_default();
                    return Err(format!("{e}\n  QEMU: {}", log.trim()));
                }
            }
        }
        None => None,
    };
    std::thread::spawn(move || {
        if let Ok((mut socket, _)) = listener.accept() {
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut socket);
            // End of input: QEMU reads it after the data and tells the guest, whose next
            // read returns 0. Only our sending side is shut: a hang-up would make QEMU
            // drop what it has not read yet.
            let _ = socket.shutdown(std::net::Shutdown::Write);
            let _ = socket.read(&mut [0u8; 1]);
        }
    });
    if let Some(payload) = payload {
        // A restored guest waits for the run's archive on the status port, whose cpio
        // reads it up to its trailer (guest::INIT). QEMU holds the FIFO open both ways,
        // so this writer may come and go, as the acknowledgement's does.
        let path = run_dir.join("status.in");
        std::thread::spawn(move || {
            if let Ok(mut f) = fs::OpenOptions::new().write(true).open(&path) {
                let _ = f.write_all(&payload);
            }
        });
    }
    let mut files = Vec::new();
    for (name, _) in &sinks {
        let path = run_dir.join(format!("{name}.out"));
        // Non-blocking: opening a FIFO for reading would otherwise wait for QEMU.
        let f = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        files.push(Some(f));
    }
    let mut kept = [Vec::new(), Vec::new()];
    let ack = run_dir.join("status.in");
    let mut ends = Ends {
        out,
        err,
        console_to_stderr,
    };
    let result = relay(&mut child, &sinks, &mut files, &mut kept, &ack, &mut ends);
    let qemu = match result {
        Ok(s) => s,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    let [status, console] = kept;
    Ok(Outcome {
        status,
        console,
        qemu,
        qemu_log: fs::read_to_string(&qemu_log_path).unwrap_or_default(),
    })
}

/// Connects to QEMU's monitor at `sock` once QEMU listens there (it makes the socket
/// early in its start, before it loads anything) and writes `commands`.
fn tell_monitor(child: &mut Child, sock: &Path, commands: &[u8]) -> Result<UnixStream, String> {
    let start = std::time::Instant::now();
    let mut monitor = loop {
        match UnixStream::connect(sock) {
            Ok(m) => break m,
            Err(e) => {
                if let Ok(Some(s)) = child.try_wait() {
                    return Err(format!("QEMU ended before its monitor listened ({s})"));
                }
                if start.elapsed() > Duration::from_secs(30) {
                    return Err(format!("QEMU's monitor {}: {e}", sock.display()));
                }
                std::thread::sleep(Duration::from_micros(250));
            }
        }
    };
    monitor
        .write_all(commands)
        .map_err(|e| format!("QEMU's monitor: {e}"))?;
    Ok(monitor)
}

/// Where the guest's streams go on this side.
struct Ends<'a> {
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    console_to_stderr: bool,
}

fn relay(
    child: &mut Child,
    sinks: &[(&str, Sink)],
    files: &mut [Option<fs::File>],
    kept: &mut [Vec<u8>; 2],
    ack: &Path,
    ends: &mut Ends,
) -> Result<Ended, String> {
    let mut buf = vec![0u8; 1 << 16];
    let mut exited = None;
    // Bytes passed on to our stdout and stderr.
    let mut passed = (0u64, 0u64);
    let mut acknowledged = false;
    loop {
        if !acknowledged {
            match guest::parse_status(&kept[0]).map(|s| s.sent) {
                Some(Some(sent)) if sent == passed => {
                    // Every byte the program wrote has come back and the guest has only
                    // its power-off left: stop QEMU here instead (the program's files in
                    // the share are written already: a 9p write returns once QEMU wrote
                    // the host's file, and the guest ran `sync` before its status).
                    let _ = child.kill();
                    child.wait().map_err(|e| format!("{QEMU}: {e}"))?;
                    return Ok(Ended::Stopped);
                }
                Some(None) => {
                    // No byte counts (no debugfs): the guest waits for this line before
                    // it powers off, and QEMU passes on what it still holds meanwhile.
                    let mut f = fs::OpenOptions::new()
                        .write(true)
                        .open(ack)
                        .map_err(|e| format!("{}: {e}", ack.display()))?;
                    f.write_all(b"ok\n")
                        .map_err(|e| format!("{}: {e}", ack.display()))?;
                    acknowledged = true;
                }
                _ => {}
            }
        }
        if exited.is_none() && files.iter().all(Option::is_none) {
            // Every FIFO has hung up, which QEMU's exit does: wait for it here rather
            // than in poll's timeout (50 ms a turn, twice, on every run).
            let status = child.wait().map_err(|e| format!("{QEMU}: {e}"))?;
            return Ok(Ended::Exited(status));
        }
        let mut fds: Vec<libc::pollfd> = files
            .iter()
            .map(|f| libc::pollfd {
                fd: f.as_ref().map_or(-1, |f| f.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // A FIFO reports POLLHUP only after a writer came and went, so before QEMU has
        // opened them this waits; the timeout lets QEMU's exit be noticed.
        // SAFETY: `fds` is a live array of `fds.len()` pollfd structures.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("poll: {e}"));
            }
        }
        for (i, pfd) in fds.iter().enumerate() {
            let drain = exited.is_some();
            if pfd.revents == 0 && !drain {
                continue;
            }
            let Some(file) = files[i].as_mut() else {
                continue;
            };
            loop {
                match file.read(&mut buf) {
                    Ok(0) => {
                        // Every writer has closed it (QEMU exited).
                        if pfd.revents & libc::POLLHUP != 0 || drain {
                            files[i] = None;
                        }
                        break;
                    }
                    Ok(k) => {
                        let data = &buf[..k];
                        let written = match &sinks[i].1 {
                            Sink::Stdout => {
                                passed.0 += k as u64;
                                ends.out.write_all(data).and_then(|()| ends.out.flush())
                            }
                            Sink::Stderr => {
                                passed.1 += k as u64;
                                ends.err.write_all(data)
                            }
                            Sink::Keep(j) => {
                                kept[*j].extend_from_slice(data);
                                if *j == 1 && ends.console_to_stderr {
                                    let _ = ends.err.write_all(data);
                                }
                                Ok(())
                            }
                        };
                        if let Err(e) = written {
                            // Our reader went away (a closed pipe): stop the guest, as a
                            // program writing there would stop.
                            if e.kind() == std::io::ErrorKind::BrokenPipe {
                                return Err(format!("{}: {e}", sinks[i].0));
                            }
                        }
                        if !drain {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("{}: {e}", sinks[i].0)),
                }
            }
        }
        if let Some(status) = exited {
            return Ok(Ended::Exited(status));
        }
        if let Some(status) = child.try_wait().map_err(|e| format!("{QEMU}: {e}"))? {
            // One more pass reads what is left in the FIFOs.
            exited = Some(status);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for QEMU (a shell script given the run directory): it holds the
    /// acknowledgement FIFO open as QEMU does, writes what a guest would to the FIFOs in
    /// `order`, then waits for the acknowledgement (which a status without byte counts
    /// gets) and exits 0 only when it got `ok`; with byte counts it is stopped first.
    fn fake_guest(order: &str) -> (Outcome, Vec<u8>, Vec<u8>) {
        fake_guest_with(order, None)
    }

    fn fake_guest_with(order: &str, payload: Option<Vec<u8>>) -> (Outcome, Vec<u8>, Vec<u8>) {
        let dir = RunDir::new().unwrap();
        let script = dir.0.join("fake-qemu");
        let body = format!(
            "#!/bin/sh\nd=$1\nexec 3<> $d/status.in\n{order}\nread ack <&3\n[ \"$ack\" = ok ]\n"
        );
        fs::write(&script, body).unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let outcome = run(
            OsStr::new("sh"),
            &[script.into_os_string(), dir.0.clone().into_os_string()],
            &dir.0,
            false,
            payload,
            None,
            &mut out,
            &mut err,
        )
        .unwrap();
        (outcome, out, err)
    }

    const OUT: &str = "printf 'out bytes' > $d/stdout.out";
    const ERR: &str = "printf 'err' > $d/stderr.out";
    const CONSOLE: &str = "printf 'Linux booted\\n' > $d/console.out";
    const STATUS: &str = "printf '7 9 3\\n' > $d/status.out";

    /// A restored guest's archive arrives on the status port whole (here 100 000 bytes,
    /// more than a FIFO holds); the guest here echoes what it read to stdout.
    #[test]
    fn the_run_s_archive_reaches_a_restored_guest_whole() {
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let (o, out, _) = fake_guest_with(
            &[
                "head -c 100000 <&3 > $d/stdout.out",
                "printf \"0 100000 0\\n\" > $d/status.out",
            ]
            .join("\n"),
            Some(payload.clone()),
        );
        assert_eq!(out, payload);
        assert_eq!(
            guest::parse_status(&o.status).unwrap().sent,
            Some((100_000, 0))
        );
    }

    #[test]
    fn output_status_and_console_come_back_apart() {
        let (o, out, err) = fake_guest(&[CONSOLE, OUT, ERR, STATUS].join("\n"));
        assert_eq!(out, b"out bytes");
        assert_eq!(err, b"err");
        assert_eq!(o.console, b"Linux booted\n");
        let status = guest::parse_status(&o.status).unwrap();
        assert_eq!(status.code, 7);
        assert_eq!(status.sent, Some((9, 3)));
        assert!(matches!(o.qemu, Ended::Stopped), "{}", o.qemu);
    }

    /// A status without byte counts (a guest without debugfs) cannot tell whether QEMU
    /// still holds output: the guest is acknowledged and powers off, and what QEMU
    /// passes on meanwhile still comes back.
    #[test]
    fn without_byte_counts_the_guest_is_acknowledged_and_ends_itself() {
        let (o, out, _) = fake_guest(&["printf '3\\n' > $d/status.out", OUT].join("\n"));
        assert_eq!(guest::parse_status(&o.status).unwrap().code, 3);
        assert_eq!(out, b"out bytes");
        assert!(
            matches!(o.qemu, Ended::Exited(s) if s.success()),
            "the guest got its acknowledgement: {}",
            o.qemu
        );
    }

    /// The status line can come before the output (another port): the output still
    /// comes back whole, and only then is QEMU stopped.
    #[test]
    fn the_status_may_come_before_the_output() {
        let (o, out, err) = fake_guest(&[STATUS, ERR, OUT].join("\n"));
        assert_eq!(
            (out.as_slice(), err.as_slice()),
            (&b"out bytes"[..], &b"err"[..])
        );
        assert!(matches!(o.qemu, Ended::Stopped), "{}", o.qemu);
    }

    #[test]
    fn a_guest_that_dies_leaves_no_status() {
        let dir = RunDir::new().unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let o = run(
            OsStr::new("sh"),
            &[
                "-c".into(),
                "printf 'Kernel panic\\n' > $0/console.out; exit 1".into(),
                dir.0.clone().into_os_string(),
            ],
            &dir.0,
            false,
            None,
            None,
            &mut out,
            &mut err,
        )
        .unwrap();
        assert!(o.status.is_empty());
        assert_eq!(o.console, b"Kernel panic\n");
        assert!(
            matches!(o.qemu, Ended::Exited(s) if !s.success()),
            "{}",
            o.qemu
        );
    }

    fn text(args: &[OsString]) -> String {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn the_guest_counts_exactly_on_one_cpu_by_default() {
        let args = command_line(
            &Options::default(),
            Path::new("/r"),
            Some(Path::new("/home/me/crate")),
            Boot::Fresh {
                kernel: Path::new("/c/vmlinuz"),
                initrd: Path::new("/r/initrd"),
            },
        );
        let t = text(&args);
        assert!(
            t.starts_with("-M virt -cpu max,pauth-impdef=on -smp 1 -m 1024M"),
            "{t}"
        );
        assert!(t.contains("-icount shift=0,align=off,sleep=off"), "{t}");
        assert!(t.contains("-kernel /c/vmlinuz -initrd /r/initrd"), "{t}");
        assert!(t.contains("-chardev socket,id=stdin,path=/r/stdin.sock -device virtserialport,chardev=stdin,name=pmu-qemu.stdin,nr=1"), "{t}");
        assert!(t.contains("-chardev pipe,id=status,path=/r/status -device virtserialport,chardev=status,name=pmu-qemu.status,nr=4"), "{t}");
        assert!(t.contains("-fsdev local,id=share,security_model=none,path=/home/me/crate -device virtio-9p-device,fsdev=share,mount_tag=pmu-qemu.cwd"), "{t}");
    }

    #[test]
    fn commas_in_paths_are_doubled_and_no_share_means_no_fsdev() {
        let options = Options {
            cpu: "cortex-a72".into(),
            ..Options::default()
        };
        let args = command_line(
            &options,
            Path::new("/r"),
            None,
            Boot::Fresh {
                kernel: Path::new("/c/vm,linuz"),
                initrd: Path::new("/r/i"),
            },
        );
        let t = text(&args);
        assert!(t.contains("-cpu cortex-a72 "), "{t}");
        assert!(t.contains("-kernel /c/vm,linuz"), "{t}");
        assert!(!t.contains("-fsdev"), "{t}");
        assert_eq!(opt_path(Path::new("/a,b/c")), OsString::from("/a,,b/c"));
    }

    /// A saving run's memory is a file mapped shared, its ports write to files or
    /// nowhere and a monitor listens; a restoring run maps the same file private, has
    /// the usual ports and no kernel (its memory is the saved one), and waits for its
    /// state on the monitor (`-incoming defer`).
    #[test]
    fn saved_and_restored_machines_differ_only_in_their_host_ends() {
        let line = |boot| {
            text(&command_line(
                &Options::default(),
                Path::new("/r"),
                Some(Path::new("/s")),
                boot,
            ))
        };
        let (kernel, initrd) = (Path::new("/c/vmlinuz"), Path::new("/r/initrd"));
        let save = line(Boot::Save {
            kernel,
            initrd,
            empty_share: Path::new("/e"),
            ram: Path::new("/c/ram,1"),
        });
        let memory = |share: &str, path: &str| {
            format!(" -m 1024M -object memory-backend-file,id=pmu-qemu.ram,size=1024M,share={share},mem-path={path} -machine memory-backend=pmu-qemu.ram -nodefaults ")
        };
        assert!(save.contains(&memory("on", "/c/ram,,1")), "{save}");
        assert!(
            save.contains("-chardev null,id=stdin -device virtserialport,chardev=stdin"),
            "{save}"
        );
        assert!(
            save.contains("-chardev file,id=status,path=/r/status.txt -device"),
            "{save}"
        );
        assert!(save.contains("-fsdev local,id=prog,security_model=none,readonly=on,path=/e -device virtio-9p-device,fsdev=prog,mount_tag=pmu-qemu.prog"), "{save}");
        assert!(
            save.ends_with("-monitor unix:/r/monitor.sock,server=on,wait=off"),
            "{save}"
        );
        let restore = line(Boot::Restore {
            ram: Path::new("/c/ram,1"),
            program_dir: Path::new("/t/release"),
        });
        assert!(restore.contains(&memory("off", "/c/ram,,1")), "{restore}");
        assert!(
            restore.ends_with("-incoming defer -monitor unix:/r/monitor.sock,server=on,wait=off"),
            "{restore}"
        );
        let kernel_words = " -append console=ttyAMA0 quiet panic=-1 rdinit=/init -kernel /c/vmlinuz -initrd /r/initrd";
        assert_eq!(
            restore
                .replacen(&memory("off", "/c/ram,,1"), " -m 1024M -nodefaults ", 1)
                .strip_suffix(" -fsdev local,id=prog,security_model=none,readonly=on,path=/t/release -device virtio-9p-device,fsdev=prog,mount_tag=pmu-qemu.prog -incoming defer -monitor unix:/r/monitor.sock,server=on,wait=off"),
            Some(line(Boot::Fresh { kernel, initrd }).replacen(kernel_words, "", 1).as_str())
        );
        assert!(!restore.contains("-kernel"), "{restore}");
    }

    /// The restoring and saving monitors' two commands, with the state's path as one
    /// quoted argument (QEMU's human monitor reads a bare argument up to a space).
    #[test]
    fn the_restore_commands_quote_the_state_s_path() {
        assert_eq!(
            restore_commands(Path::new("/c/my \"saved\" \\state")),
            b"migrate_set_capability x-ignore-shared on\nmigrate_incoming \"file:/c/my \\\"saved\\\" \\\\state\"\n"
        );
        // The saving side asks for the same capability (both sides of a migration must).
        assert_eq!(
            save_commands(Path::new("/c/a b")),
            b"migrate_set_capability x-ignore-shared on\nmigrate \"file:/c/a b\"\n"
        );
    }

    /// The commands reach QEMU's monitor once it listens, however late: here a
    /// listener made 50 ms after the stand-in QEMU (`sh`, then `sleep`) starts. A QEMU
    /// that ends before it listens is an error that says so, not a wait.
    #[test]
    fn the_monitor_is_told_once_it_listens_and_an_early_end_is_an_error() {
        let dir = RunDir::new().unwrap();
        let sock = dir.0.join("monitor.sock");
        let mut qemu = Command::new("sh")
            .args(["-c", "exec sleep 10"])
            .spawn()
            .unwrap();
        let listening = {
            let sock = sock.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                let listener = UnixListener::bind(&sock).unwrap();
                let (mut conn, _) = listener.accept().unwrap();
                let mut got = Vec::new();
                conn.read_to_end(&mut got).unwrap();
                got
            })
        };
        let conn = tell_monitor(&mut qemu, &sock, b"info status\n").unwrap();
        drop(conn);
        assert_eq!(listening.join().unwrap(), b"info status\n");
        let _ = qemu.kill();
        let _ = qemu.wait();

        let mut gone = Command::new("sh").args(["-c", "exit 0"]).spawn().unwrap();
        let e = tell_monitor(&mut gone, &dir.0.join("none.sock"), b"x\n").unwrap_err();
        assert!(
            e.starts_with("QEMU ended before its monitor listened"),
            "{e}"
        );
    }
}
