//! What runs inside the guest: the init script of the cached initramfs (busybox `sh`),
//! and the per-run script that starts the program with the host's arguments,
//! environment and working directory.
//!
//! The program's stdin, stdout and stderr are three virtio-serial ports (named
//! `pmu-qemu.stdin`, `.stdout`, `.stderr`; not ttys: bytes pass unchanged), and its
//! exit status goes to a fourth (`pmu-qemu.status`) as the decimal number `sh` reports
//! (128 + N for a signal N) with the bytes the program wrote to stdout and stderr; the
//! host stops QEMU once it has them all (where the guest cannot count them, it answers
//! and the guest powers off). The kernel's console
//! (ttyAMA0) carries only the kernel's and init's own messages.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// The names of the virtio-serial ports, in their port-number order (1, 2, 3, 4).
pub const PORTS: [&str; 4] = [
    "pmu-qemu.stdin",
    "pmu-qemu.stdout",
    "pmu-qemu.stderr",
    "pmu-qemu.status",
];

/// The 9p mount tag of the shared working directory.
pub const SHARE_TAG: &str = "pmu-qemu.cwd";

/// The 9p mount tag of the program's directory, shared read-only with a restored guest
/// (`crate::snapshot`), which copies the program from there.
pub const PROGRAM_TAG: &str = "pmu-qemu.prog";

/// Where the per-run script lies in the guest.
pub const RUN_SCRIPT: &str = "pmu-qemu/run.sh";

/// Where the modules and their load order lie in the guest.
pub const MODULE_DIR: &str = "lib/pmu-qemu";

/// `/init`: mounts, loads the modules (in the order of `lib/pmu-qemu/modules`), turns
/// on perf_user_access, names the ports, mounts the share, runs the per-run script with
/// the ports as its stdio, reports its status (and powers off if the host answers rather
/// than stops it). A failure of its own is
/// printed on the console and powers off without a status: the host then shows the
/// console.
pub const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
fail() { echo "pmu-qemu init: $*"; sync; poweroff -f; }
mount -t proc proc /proc && mount -t sysfs sysfs /sys && mount -t devtmpfs devtmpfs /dev || fail "mount"
while read m; do insmod /lib/pmu-qemu/$m.ko || fail "insmod $m"; done < /lib/pmu-qemu/modules
# Linux's arm64 perf lets a task read its own events' counters with one instruction
# (Documentation/arch/arm64/perf.rst); pmu-linux's Meter then picks those reads.
echo 1 > /proc/sys/kernel/perf_user_access || fail "kernel.perf_user_access"
# For virtio_console's byte counts at the end (without it, the status alone).
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# virtio_console adds the ports from a work queue after the module loads.
tries=0
while [ "$(cat /sys/class/virtio-ports/*/name 2>/dev/null | wc -l)" -lt 4 ]; do
	tries=$((tries + 1)); [ $tries -gt 500 ] && fail "the virtio-serial ports did not appear"
	sleep 0.01
done
for p in /sys/class/virtio-ports/*; do ln -s /dev/${p##*/} /dev/$(cat $p/name); done
for p in stdin stdout stderr status; do
	tries=0
	while [ ! -c /dev/pmu-qemu.$p ]; do
		tries=$((tries + 1)); [ $tries -gt 500 ] && fail "no device node for pmu-qemu.$p"
		sleep 0.01
	done
done
# Which debugfs file counts the bytes of stdout and of stderr, found once (before a
# save): at the end only those two are read.
outfile= errfile=
for f in /sys/kernel/debug/virtio-ports/*; do
	[ -f "$f" ] || continue
	read -r k name < "$f"
	case $name in
	pmu-qemu.stdout) outfile=$f ;;
	pmu-qemu.stderr) errfile=$f ;;
	esac
done
if [ -f /pmu-qemu/snapshot ]; then
	# The host saves the machine here, once, and restores it for each run
	# (pmu-qemu/src/snapshot.rs); then it sends the run's archive (the run script, the
	# share's path, where the program is) on the status port. busybox's cpio reads an
	# archive in the pieces its headers give and stops at the trailer, so it reads the
	# port itself: no length, no copy. What every run needs is done before the save:
	# each process a run starts costs the host milliseconds (TCG translates its code
	# afresh after a restore), so a run uses the shell's builtins where they do.
	mkdir /pmu-qemu/progdir
	exec 3<> /dev/pmu-qemu.status
	echo ready >&3
	# pmu-qemu/whole is the archive's last member: there only when nothing was cut.
	(cd / && cpio -id <&3 2>/dev/null) && [ -f /pmu-qemu/whole ] || fail "unpack the run's archive"
	exec 3<&-
fi
if [ -f /pmu-qemu/share ]; then
	read -r share < /pmu-qemu/share
	mkdir -p "$share" && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 pmu-qemu.cwd "$share" || fail "mount the working directory $share"
fi
# A restored guest copies the program into its memory: from the share when it lies
# there, else from its directory, shared read-only (virtio-serial carries a few MB/s
# here, 9p far more). With dd's 1 MiB reads, each 9p request carries up to msize bytes;
# busybox's cp copies with sendfile, whose reads from 9p come in smaller pieces, a
# round trip to QEMU each: 24 ms more for a 6.8 MB program here.
if [ -f /pmu-qemu/fetch ]; then
	if [ -f /pmu-qemu/fetch-dir ]; then
		mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro pmu-qemu.prog /pmu-qemu/progdir || fail "mount the program's directory"
	fi
	read -r from < /pmu-qemu/fetch
	read -r to < /pmu-qemu/fetch-to
	to="/$to"
	mkdir -p "${to%/*}" && dd if="$from" of="$to" bs=1048576 2>/dev/null || fail "copy the program"
	chmod 755 "$to" || fail "copy the program"
fi
# In a subshell of this one (a fork, no exec): the script's own `exec` starts the program.
(. /pmu-qemu/run.sh) < /dev/pmu-qemu.stdin > /dev/pmu-qemu.stdout 2> /dev/pmu-qemu.stderr
status=$?
sync
# The bytes the program wrote to each port (virtio_console's debugfs `bytes_sent`, its
# fifth line: drivers/char/virtio_console.c `port_debugfs_show`): the host ends the run
# once it has them all, since QEMU may still hold some it could not pass on yet, and
# ending now would lose them. `read` takes a byte per system call, so each file is read
# only up to that line.
out= err=
if [ -n "$outfile" ] && [ -n "$errfile" ]; then
	while read -r k v; do [ "$k" = bytes_sent: ] && out=$v && break; done < "$outfile"
	while read -r k v; do [ "$k" = bytes_sent: ] && err=$v && break; done < "$errfile"
fi
# One open for both ways: closing a port drops the input it has not read yet. With byte
# counts the host stops the machine once it has them all; without, it acknowledges.
exec 3<> /dev/pmu-qemu.status
echo "$status $out $err" >&3
read ack <&3
poweroff -f
"#;

/// `word` quoted for `sh`: in single quotes, each `'` written `'\''`; every other byte
/// stands for itself there (POSIX XCU 2.2.2).
pub fn quote(word: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(word.len() + 2);
    out.push(b'\'');
    for &b in word {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

/// Environment variables not passed on: the host's search path means nothing in the
/// guest (which has busybox in /bin), and a dynamic loader's variables would not apply.
fn passed_on(name: &OsStr) -> bool {
    let name = name.as_bytes();
    name != b"PATH" && !name.starts_with(b"LD_") && !name.contains(&b'=') && !name.is_empty()
}

/// The per-run script: into the working directory (made when missing), then `exec env -i` with the host's
/// environment (less [`passed_on`]'s exceptions, plus `PATH=/bin`), the `wrapper`'s
/// words (a program that starts the program: the sampler of `--profile`), and the
/// program with its arguments, each quoted.
pub fn run_script<'a>(
    cwd: &[u8],
    env: impl IntoIterator<Item = (&'a OsStr, &'a OsStr)>,
    wrapper: &[&[u8]],
    program: &[u8],
    args: impl IntoIterator<Item = &'a OsStr>,
    copy_in_memory: Option<&[u8]>,
) -> Vec<u8> {
    let mut s = Vec::new();
    if let Some(copy) = copy_in_memory {
        // The program's copy in the initramfs over its path in the share: its code is
        // paged in from memory, never through 9p, whose round trips to the host idle
        // the guest and move its clock by host-dependent amounts mid-run.
        s.extend_from_slice(b"mount --bind ");
        s.extend(quote(copy));
        s.push(b' ');
        s.extend(quote(program));
        s.extend_from_slice(b" || exit 126\n");
    }
    // Without the share the directory is made, empty, so that relative paths still work.
    s.extend_from_slice(b"mkdir -p ");
    s.extend(quote(cwd));
    s.extend_from_slice(b" 2>/dev/null; cd ");
    s.extend(quote(cwd));
    s.extend_from_slice(b" || exit 126\nexec env -i");
    for (k, v) in env {
        if passed_on(k) {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            s.push(b' ');
            s.extend(quote(&kv));
        }
    }
    s.extend_from_slice(b" 'PATH=/bin' ");
    for w in wrapper {
        s.extend(quote(w));
        s.push(b' ');
    }
    s.extend(quote(program));
    for a in args {
        s.push(b' ');
        s.extend(quote(a.as_bytes()));
    }
    s.push(b'\n');
    s
}

/// What the status port carried: `sh`'s `$?` (0-255), then the bytes the program
/// wrote to stdout and stderr when the guest could count them.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Status {
    /// The exit status.
    pub code: u8,
    /// Bytes written to (stdout, stderr).
    pub sent: Option<(u64, u64)>,
}

/// The status line, once it is complete (ends with a newline).
pub fn parse_status(text: &[u8]) -> Option<Status> {
    let line = std::str::from_utf8(text).ok()?.strip_suffix('\n')?;
    let mut words = line.split_whitespace();
    let code = words.next()?.parse().ok()?;
    let sent = match (words.next(), words.next()) {
        (Some(o), Some(e)) => Some((o.parse().ok()?, e.parse().ok()?)),
        _ => None,
    };
    Some(Status { code, sent })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::process::Command;

    #[test]
    fn quoting_survives_every_byte_but_nul() {
        assert_eq!(quote(b"it's"), b"'it'\\''s'");
        assert_eq!(quote(b""), b"''");
        assert_eq!(quote(b"$HOME `x` \"y\" \\n"), b"'$HOME `x` \"y\" \\n'");
    }

    /// The script the guest's busybox sh runs, run here by the host's sh (POSIX quoting
    /// is the same): `printf '%s\n' "$@"`-style echo of each argument shows it arrives
    /// unchanged, one word each, and `env -i` leaves only what was passed.
    #[test]
    fn the_run_script_passes_arguments_and_environment_unchanged() {
        let dir = std::env::temp_dir().join(format!("pmu-qemu-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let args: Vec<OsString> = ["--bench", "two words", "it's", "$HOME", "", "a\nb", "*"]
            .iter()
            .map(OsString::from)
            .collect();
        let env = [
            (OsStr::new("CARGO_PKG_NAME"), OsStr::new("x y")),
            (OsStr::new("PATH"), OsStr::new("/host/bin")),
            (OsStr::new("LD_PRELOAD"), OsStr::new("/x.so")),
        ];
        // `sh -c 'printf "<%s>" "$@"; …; env' sh ARGS…` stands in for the program.
        let mut program_args: Vec<&OsStr> = vec![
            OsStr::new("-c"),
            OsStr::new("printf '<%s>' \"$@\"; printf '\\n--\\n'; env"),
            OsStr::new("sh"),
        ];
        program_args.extend(args.iter().map(OsString::as_os_str));
        let script = run_script(
            dir.as_os_str().as_bytes(),
            env,
            &[],
            b"/bin/sh",
            program_args.iter().copied(),
            None,
        );
        let out = Command::new("sh")
            .arg("-c")
            .arg(OsStr::from_bytes(&script))
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let text = String::from_utf8(out.stdout).unwrap();
        let (printed, env) = text.split_once("\n--\n").unwrap();
        assert_eq!(printed, "<--bench><two words><it's><$HOME><><a\nb><*>");
        let env: Vec<&str> = env.lines().filter(|l| !l.starts_with("PWD=")).collect();
        // sh itself may add SHLVL/_ ; what matters is ours and nothing of the host's.
        assert!(env.contains(&"CARGO_PKG_NAME=x y"), "{env:?}");
        assert!(env.contains(&"PATH=/bin"), "{env:?}");
        assert!(!env.iter().any(|l| l.starts_with("LD_PRELOAD")), "{env:?}");
        assert!(!env.iter().any(|l| l.starts_with("HOME=")), "{env:?}");
    }

    #[test]
    fn a_program_in_the_share_runs_from_its_copy_in_memory() {
        let script = run_script(b"/w", [], &[], b"/w/t/prog", [], Some(b"/pmu-qemu/program"));
        let text = String::from_utf8(script).unwrap();
        assert!(
            text.starts_with("mount --bind '/pmu-qemu/program' '/w/t/prog' || exit 126\n"),
            "{text}"
        );
        assert!(text.ends_with(" 'PATH=/bin' '/w/t/prog'\n"), "{text}");
    }

    #[test]
    fn a_wrapper_starts_the_program() {
        let script = run_script(
            b"/w",
            [],
            &[b"/pmu-qemu/profile", b"1000", b"/w/.out"],
            b"/w/prog",
            [OsStr::new("a")],
            None,
        );
        let text = String::from_utf8(script).unwrap();
        assert!(
            text.ends_with(" 'PATH=/bin' '/pmu-qemu/profile' '1000' '/w/.out' '/w/prog' 'a'\n"),
            "{text}"
        );
    }

    #[test]
    fn the_status_port_carries_sh_s_exit_status_and_the_bytes_sent() {
        assert_eq!(
            parse_status(b"139 1000000 10\n"),
            Some(Status {
                code: 139,
                sent: Some((1_000_000, 10))
            })
        );
        // No debugfs: the status alone.
        assert_eq!(
            parse_status(b"0  \n"),
            Some(Status {
                code: 0,
                sent: None
            })
        );
        // Not complete yet, or not a status.
        assert_eq!(parse_status(b"0 12"), None);
        assert_eq!(parse_status(b""), None);
        assert_eq!(parse_status(b"256\n"), None);
    }
}
