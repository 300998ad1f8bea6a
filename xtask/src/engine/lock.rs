//! Exclusive locks on what two xtask processes could otherwise write at the same time:
//! a module's build directory, a private apt state. `cargo xtask test` runs its guest
//! steps in lanes at once ([`crate::engine::step::Plan`]), and a user may run two commands
//! side by side; whoever comes second waits, and says what for.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

/// The lock file that guards `path` (a file or directory): `<path>.lock` next to it.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    path.with_file_name(name)
}

/// Takes the exclusive lock that guards `path` (what: a few words for the wait line),
/// waiting for it where another process holds it. The lock is released when the
/// returned file is dropped, or when the process ends.
pub fn exclusive(path: &Path, what: &str) -> Result<File, String> {
    let lock = lock_path(path);
    if let Some(dir) = lock.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let file = File::create(&lock).map_err(|e| format!("{}: {e}", lock.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => {
            eprintln!(
                "    waiting for {what}: another xtask process holds {}",
                lock.display()
            );
            file.lock()
                .map_err(|e| format!("cannot lock {}: {e}", lock.display()))?;
            Ok(file)
        }
        Err(TryLockError::Error(e)) => Err(format!("cannot lock {}: {e}", lock.display())),
    }
}

/// Writes `data` to `path` through a temporary file in the same directory and a rename,
/// so that a reader (a QEMU another step started) sees the old file or the new one,
/// never a half-written one.
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<(), String> {
    let tmp = temporary_beside(path);
    std::fs::write(&tmp, data).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{} -> {}: {e}", tmp.display(), path.display()))
}

/// A name next to `path` that no other process uses (`.<name>.tmp-<pid>`).
pub fn temporary_beside(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-lock-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A second holder waits until the first lets go (flock semantics: two opens of the
    /// lock file conflict even within one process). The order of the two writes is the
    /// proof, not the time: the waiter's write can only come after the holder's.
    #[test]
    fn a_second_holder_waits_for_the_first() {
        let dir = scratch("wait");
        let guarded = dir.join("build");
        let first = exclusive(&guarded, "the test directory").unwrap();
        let log = dir.join("log");
        let (guarded2, log2) = (guarded.clone(), log.clone());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            ready_tx.send(()).unwrap();
            let _second = exclusive(&guarded2, "the test directory").unwrap();
            let mut text = std::fs::read_to_string(&log2).unwrap_or_default();
            text.push_str("second\n");
            std::fs::write(&log2, text).unwrap();
        });
        ready_rx.recv().unwrap();
        // However long the waiter has been blocked, it cannot have written yet.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(std::fs::read_to_string(&log).unwrap_or_default(), "");
        std::fs::write(&log, "first\n").unwrap();
        drop(first);
        waiter.join().unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "first\nsecond\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn lock_and_temporary_names_sit_beside_the_path() {
        let p = Path::new("/x/target/kmod-enable-user/arm64");
        assert_eq!(
            lock_path(p),
            Path::new("/x/target/kmod-enable-user/arm64.lock")
        );
        let tmp = temporary_beside(Path::new("/x/initramfs/arm64.cpio"));
        assert_eq!(tmp.parent(), Some(Path::new("/x/initramfs")));
        assert!(tmp
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".arm64.cpio.tmp-"));
    }

    #[test]
    fn an_atomic_write_replaces_the_whole_file() {
        let dir = scratch("atomic");
        let path = dir.join("a.cpio");
        std::fs::write(&path, b"old contents, longer").unwrap();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
