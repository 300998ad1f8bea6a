//! Deliberate failures, so tests can check that the image reports them: the kernel
//! command line (`qemu-system-x86_64 -append selftest=…`) picks one.
//!
//! | `selftest=` | what happens | QEMU exit status |
//! |---|---|---|
//! | `panic` | a Rust panic: `PANIC at <file>:<line>:<column>: <message>` | 37 |
//! | `ud` | `ud2` outside any probe: `UNEXPECTED EXCEPTION: vector 6 (#UD …)` | 37 |
//! | `pagefault` | a read of unmapped memory (1 GiB): vector 14 and CR2 | 37 |
//! | `fail` | a `RESULT selftest status=fail reason=deliberate` line, then the scenarios | 35 |

use core::arch::asm;

use crate::println;
use crate::scenarios::{Tally, Verdict};

/// The first address past the identity map (see [`crate::boot`]).
const UNMAPPED: u64 = 1 << 30;

/// Runs the deliberate failure `command_line` asks for, if any.
pub fn run(command_line: &str, tally: &mut Tally) {
    let Some(which) = command_line
        .split_ascii_whitespace()
        .find_map(|arg| arg.strip_prefix("selftest="))
    else {
        return;
    };
    println!("selftest: {which}");
    match which {
        "panic" => panic!("selftest: deliberate panic"),
        // SAFETY: not safe in the usual sense, and not meant to be: the #UD ends the run
        // through the unexpected-exception path, which is what is being tested.
        "ud" => unsafe { asm!("ud2", options(nomem, nostack, noreturn)) },
        "pagefault" => {
            // SAFETY: as above: the #PF ends the run before the value could be used.
            let value = unsafe { core::ptr::read_volatile(UNMAPPED as *const u64) };
            println!("selftest: read {value:#x} from unmapped memory?");
        }
        "fail" => tally.result("selftest", Verdict::Fail, format_args!("reason=deliberate")),
        other => println!("selftest: unknown selftest {other:?}: ignored"),
    }
}
