//! Keeping stdout for a command's result alone (`cargo xtask bench --json | jq`).
//!
//! xtask prints its progress (`==> [i/n] step`, the tools' own output, the commands it
//! runs) as it goes, and the programs it starts inherit its stdout. A command whose
//! stdout is a result for another program (JSON, Markdown) therefore moves file
//! descriptor 1 onto stderr for the whole run, children included, and writes the result
//! to a duplicate of the original stdout at the end.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;

/// From now on everything written to stdout, by this process and by the programs it
/// starts, goes to stderr. Returns the original stdout, for the result.
pub fn divert_to_stderr() -> io::Result<File> {
    io::stdout().lock().flush()?;
    let original = io::stdout().as_fd().try_clone_to_owned()?;
    // SAFETY: `dup2` only makes descriptor 1 refer to the file descriptor 2 refers to;
    // both are open for the life of the process, and Rust's `Stdout` (flushed above)
    // keeps writing to descriptor 1 without caring which file it is.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(File::from(original))
}
