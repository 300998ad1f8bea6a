//! Guest reports: commands that boot a guest, read its console and print a report
//! (`bench`, `hazards`). Above the guests.

pub mod bench;
pub mod guest_report;
pub mod hazards;
