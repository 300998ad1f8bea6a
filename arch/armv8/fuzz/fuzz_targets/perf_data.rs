//! Fuzz target: the perf.data reader never panics on any bytes, its iterators end, every AUX
//! chunk lies inside the input, and the chunks decode as SPE records without a panic. The
//! input is tried as it is and behind a valid file and pipe header, so the fuzzer reaches
//! the sections and events quickly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmu_armv8::spe::decode::records;
use pmu_armv8::spe::perf_data::{PerfData, PerfDataEvent};

fn check(bytes: &[u8]) {
    let Ok(file) = PerfData::parse(bytes) else {
        return;
    };
    assert!(file.attrs().count() <= bytes.len());
    let mut events = 0;
    for event in file.events() {
        events += 1;
        assert!(events <= bytes.len());
        if let Ok(PerfDataEvent::Auxtrace(chunk)) = event {
            let start = chunk.data.as_ptr() as usize - bytes.as_ptr() as usize;
            assert!(start + chunk.data.len() <= bytes.len());
            for r in records(chunk.data).flatten() {
                assert!(r.offset + r.len <= chunk.data.len());
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut pipe = b"PERFILE2".to_vec();
    pipe.extend_from_slice(&16u64.to_le_bytes());
    pipe.extend_from_slice(data);
    check(&pipe);
});
