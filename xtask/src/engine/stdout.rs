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

/// What a reporting command (`bench`, `hazards`) prints on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The tables, after the progress of the steps.
    Table,
    /// One JSON object, alone on stdout.
    Json,
    /// The command's docs/*.md page: the method and the tables, alone on stdout.
    Markdown,
}

/// Where `command`'s result goes: stdout for the tables; for JSON and Markdown the
/// original stdout, everything else diverted to stderr ([`divert_to_stderr`]).
/// `Err` (after saying why on stderr) when stdout cannot be kept.
pub fn result_sink(command: &str, output: Output) -> Result<Box<dyn Write>, ()> {
    match output {
        Output::Table => Ok(Box::new(io::stdout())),
        Output::Json | Output::Markdown => match divert_to_stderr() {
            Ok(file) => Ok(Box::new(file)),
            Err(e) => {
                eprintln!("xtask {command}: cannot keep stdout for the result: {e}");
                Err(())
            }
        },
    }
}

/// Writes `text` to `out`, then `command`'s `failures` to stderr: success only when the
/// text was written and nothing failed.
pub fn finish(
    command: &str,
    out: &mut dyn Write,
    text: &str,
    failures: &[String],
) -> std::process::ExitCode {
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        eprintln!("xtask {command}: cannot write the result: {e}");
        return std::process::ExitCode::FAILURE;
    }
    for f in failures {
        eprintln!("xtask {command}: {f}");
    }
    if failures.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
