//! The guest's initramfs for a Debian kernel: busybox, the test script, pmu-demo, the
//! modules and what else a run puts in it.

use std::fs;
use std::path::{Path, PathBuf};

/// The `/init` of a Debian run: tests/guest/common.sh, then tests/guest/`<script>`.sh.
fn init_script(script: &str) -> Result<Vec<u8>, String> {
    let guest = crate::engine::paths::workspace_root().join("tests/guest");
    let mut text = crate::build::initramfs::read(&guest.join("common.sh"))?;
    text.extend(crate::build::initramfs::read(
        &guest.join(format!("{script}.sh")),
    )?);
    text.extend_from_slice(b"\nmain\n");
    Ok(text)
}

/// Writes the initramfs `name`.cpio (under target/initramfs) with busybox, `/init`
/// (common.sh + `script`.sh) and `files` (path in the guest, file here; executables
/// under `bin/` and `usr/bin/`, and the dynamic loader, get mode 0755).
pub fn initramfs(
    name: &str,
    script: &str,
    busybox: &Path,
    dirs: &[&'static str],
    files: &[(String, PathBuf)],
) -> Result<PathBuf, String> {
    use crate::build::initramfs::{cpio, read, skeleton, Entry};
    let mut entries = skeleton();
    entries.extend([Entry::Dir("usr"), Entry::Dir("usr/bin")]);
    entries.extend(dirs.iter().map(|d| Entry::Dir(d)));
    entries.push(Entry::File {
        path: "init".into(),
        mode: 0o755,
        data: init_script(script)?,
    });
    entries.push(Entry::File {
        path: "lib/kmemleak.awk".into(),
        mode: 0o644,
        data: read(&crate::engine::paths::workspace_root().join("tests/guest/kmemleak.awk"))?,
    });
    entries.push(Entry::File {
        path: "bin/busybox".into(),
        mode: 0o755,
        data: read(busybox)?,
    });
    for (path, from) in files {
        let executable =
            path.starts_with("bin/") || path.starts_with("usr/bin/") || path.contains("/ld-");
        entries.push(Entry::File {
            path: path.clone(),
            mode: if executable { 0o755 } else { 0o644 },
            data: read(from)?,
        });
    }
    let archive = cpio(&entries)?;
    let out = crate::engine::paths::work_dir()
        .join("initramfs")
        .join(format!("{name}.cpio"));
    if let Some(dir) = out.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    fs::write(&out, &archive).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "    initramfs: {} ({} KiB, {} files)",
        out.display(),
        archive.len() / 1024,
        files.len() + 3
    );
    Ok(out)
}
