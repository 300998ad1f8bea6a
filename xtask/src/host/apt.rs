//! The host's apt: what dpkg has installed, and retries for Debian's mirrors.

use std::process::Command;

/// The installed version of a Debian package, if installed.
pub fn package_version(package: &str) -> Option<String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}\t${Version}", package])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (status, version) = text.split_once('\t')?;
    (out.status.success() && status.ends_with(" installed")).then(|| version.to_string())
}

/// Waits before the second and third try of a mirror download.
const RETRY_WAITS: [std::time::Duration; 2] = [
    std::time::Duration::from_secs(20),
    std::time::Duration::from_secs(60),
];

/// `attempt` up to three times, waiting [`RETRY_WAITS`] between tries, each retry one
/// line on stderr: Debian's mirrors are sometimes caught mid-sync (apt: "File has
/// unexpected size … Mirror sync in progress?"), which a later try does not meet.
pub fn with_retries(what: &str, attempt: impl FnMut() -> Result<(), String>) -> Result<(), String> {
    retry_after(&RETRY_WAITS, what, attempt)
}

/// [`with_retries`] with its waits given.
fn retry_after(
    waits: &[std::time::Duration],
    what: &str,
    mut attempt: impl FnMut() -> Result<(), String>,
) -> Result<(), String> {
    let mut result = attempt();
    for (n, wait) in waits.iter().enumerate() {
        let Err(why) = &result else { break };
        eprintln!(
            "    {what} failed ({why}); trying again in {} s (try {} of {})",
            wait.as_secs(),
            n + 2,
            waits.len() + 1
        );
        std::thread::sleep(*wait);
        result = attempt();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mirror caught mid-sync fails the first try (apt: "File has unexpected size …
    /// Mirror sync in progress?", seen on a fresh-machine check): the second try's
    /// success is the result; three failures give the last one's reason.
    #[test]
    fn apt_updates_are_tried_three_times() {
        let no_wait = [std::time::Duration::ZERO; 2];
        let mut tries = 0;
        let ok = retry_after(&no_wait, "update", || {
            tries += 1;
            if tries == 1 {
                Err("mirror sync".into())
            } else {
                Ok(())
            }
        });
        assert_eq!((ok, tries), (Ok(()), 2));
        let mut tries = 0;
        let failed = retry_after(&no_wait, "update", || {
            tries += 1;
            Err(format!("try {tries}"))
        });
        assert_eq!((failed, tries), (Err("try 3".to_string()), 3));
    }
}
