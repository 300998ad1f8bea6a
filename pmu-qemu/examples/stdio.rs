//! The runner's plumbing seen from inside: built for aarch64-unknown-linux-musl and run
//! through `pmu-qemu`, it reports what it was given and does what its arguments ask, so
//! a test compares both ends (xtask's pmu-qemu step does).
//!
//! Arguments, in any order: `args` prints each argument as `arg <…>`; `cwd` prints the
//! working directory; `env=NAME` prints `env NAME=<value>`; `stdin` reads stdin to its
//! end and prints `stdin <bytes> <sum of bytes>`; `read=PATH` prints `read <contents>`;
//! `write=PATH:TEXT` writes TEXT to PATH; `stdout=N` writes N bytes ('x', a newline
//! every 64) to stdout; `stderr` writes `to stderr` to stderr; `exit=N` exits with N.

use std::io::{Read, Write};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut out = std::io::stdout().lock();
    let mut code = 0;
    for a in &args[1..] {
        let (word, value) = a.split_once('=').unwrap_or((a, ""));
        match word {
            "args" => {
                for x in &args {
                    writeln!(out, "arg <{x}>").unwrap();
                }
            }
            "cwd" => writeln!(out, "cwd {}", std::env::current_dir().unwrap().display()).unwrap(),
            "env" => writeln!(
                out,
                "env {value}=<{}>",
                std::env::var(value).unwrap_or_default()
            )
            .unwrap(),
            "stdin" => {
                let mut data = Vec::new();
                std::io::stdin().read_to_end(&mut data).unwrap();
                let sum: u64 = data.iter().map(|&b| u64::from(b)).sum();
                writeln!(out, "stdin {} {sum}", data.len()).unwrap();
            }
            "read" => writeln!(out, "read {}", std::fs::read_to_string(value).unwrap()).unwrap(),
            "write" => {
                let (path, text) = value.split_once(':').unwrap();
                std::fs::write(path, text).unwrap();
            }
            "stdout" => {
                let n: usize = value.parse().unwrap();
                let line = [b"x".repeat(63), b"\n".to_vec()].concat();
                let mut left = n;
                while left > 0 {
                    let k = left.min(line.len());
                    out.write_all(&line[..k]).unwrap();
                    left -= k;
                }
            }
            "stderr" => eprintln!("to stderr"),
            "exit" => code = value.parse().unwrap(),
            _ => {}
        }
    }
    out.flush().unwrap();
    std::process::exit(code);
}
