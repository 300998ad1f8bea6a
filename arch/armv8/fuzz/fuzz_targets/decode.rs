//! Fuzz target: the SPE packet and record decoder never panics, and its packets tile the
//! input (each starts where the previous ended, or one byte after an error).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmu_armv8::spe::decode::{packets, records};

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    for p in packets(data) {
        match p {
            Ok(p) => {
                assert_eq!(p.offset, at);
                assert!(p.len >= 1 && p.offset + p.len <= data.len());
                at += p.len;
            }
            Err(e) => {
                assert_eq!(e.offset(), at);
                at += 1;
            }
        }
    }
    assert!(at >= data.len());
    for r in records(data).flatten() {
        assert!(r.offset + r.len <= data.len());
        let _ = r.sampled_operation();
    }
});
