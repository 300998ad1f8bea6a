//! Just enough of ELF (the System V gABI, "ELF header" and "Program header"; the
//! AArch64 ELF ABI for EM_AARCH64 = 183) to say whether a file is a program the guest
//! can run, and to read a kernel module's `.modinfo` section.

const EM_AARCH64: u16 = 183;
const EM_X86_64: u16 = 62;
const EM_ARM: u16 = 40;
const PT_INTERP: u32 = 3;

/// Why a file is not a program the guest runs.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotRunnable {
    /// No ELF magic.
    NotElf,
    /// An ELF file for another machine (its `e_machine`, named when known).
    OtherMachine(String),
    /// 32-bit or big-endian.
    NotElf64Le,
    /// It asks for a dynamic loader (`PT_INTERP`), which the guest does not have.
    Dynamic(String),
    /// Truncated or inconsistent headers.
    Malformed,
}

impl std::fmt::Display for NotRunnable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotRunnable::NotElf => write!(f, "it is not an ELF program"),
            NotRunnable::OtherMachine(m) => write!(
                f,
                "it is an ELF program for {m}, not aarch64: build it with `--target aarch64-unknown-linux-musl`"
            ),
            NotRunnable::NotElf64Le => write!(
                f,
                "it is a 32-bit or big-endian ELF file, not a 64-bit little-endian aarch64 program"
            ),
            NotRunnable::Dynamic(interp) => write!(
                f,
                "it is dynamically linked (it asks for {interp}), and the guest has no shared libraries: build it static, with `--target aarch64-unknown-linux-musl`"
            ),
            NotRunnable::Malformed => write!(f, "its ELF headers are truncated or inconsistent"),
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<usize> {
    usize::try_from(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?)).ok()
}

/// Checks the ELF64 little-endian header (`e_ident`: magic, EI_CLASS 2, EI_DATA 1)
/// and `e_machine`, before anything else is read.
fn elf64_le(b: &[u8]) -> Result<(), NotRunnable> {
    if b.get(..4) != Some(b"\x7fELF") {
        return Err(NotRunnable::NotElf);
    }
    let machine = u16_at(b, 18).ok_or(NotRunnable::Malformed)?;
    let le = b.get(5) == Some(&1);
    let machine = if le { machine } else { machine.swap_bytes() };
    if machine != EM_AARCH64 {
        let name = match machine {
            EM_X86_64 => "x86_64".to_string(),
            EM_ARM => "32-bit ARM".to_string(),
            m => format!("machine {m}"),
        };
        return Err(NotRunnable::OtherMachine(name));
    }
    if b.get(4) != Some(&2) || !le {
        return Err(NotRunnable::NotElf64Le);
    }
    Ok(())
}

/// `Ok` when `b` is a 64-bit little-endian aarch64 ELF executable with no program
/// interpreter (a static program, like Rust's `aarch64-unknown-linux-musl` builds).
pub fn check_program(b: &[u8]) -> Result<(), NotRunnable> {
    elf64_le(b)?;
    let phoff = u64_at(b, 0x20).ok_or(NotRunnable::Malformed)?;
    let phentsize = usize::from(u16_at(b, 0x36).ok_or(NotRunnable::Malformed)?);
    let phnum = usize::from(u16_at(b, 0x38).ok_or(NotRunnable::Malformed)?);
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        b.get(ph..ph + phentsize.max(56))
            .ok_or(NotRunnable::Malformed)?;
        if u32_at(b, ph).ok_or(NotRunnable::Malformed)? == PT_INTERP {
            let offset = u64_at(b, ph + 0x08).ok_or(NotRunnable::Malformed)?;
            let size = u64_at(b, ph + 0x20).ok_or(NotRunnable::Malformed)?;
            let interp = b
                .get(offset..offset.saturating_add(size))
                .ok_or(NotRunnable::Malformed)?;
            let interp = String::from_utf8_lossy(interp);
            return Err(NotRunnable::Dynamic(
                interp.trim_end_matches('\0').to_string(),
            ));
        }
    }
    Ok(())
}

/// The contents of the section called `name` in an aarch64 ELF64 object (`.ko`).
pub fn section<'a>(b: &'a [u8], name: &str) -> Option<&'a [u8]> {
    elf64_le(b).ok()?;
    let shoff = u64_at(b, 0x28)?;
    let shentsize = usize::from(u16_at(b, 0x3a)?);
    let shnum = usize::from(u16_at(b, 0x3c)?);
    let shstrndx = usize::from(u16_at(b, 0x3e)?);
    let header = |i: usize| -> Option<(usize, usize, usize)> {
        let at = shoff.checked_add(i.checked_mul(shentsize)?)?;
        Some((
            u32_at(b, at)? as usize,
            u64_at(b, at + 0x18)?,
            u64_at(b, at + 0x20)?,
        ))
    };
    let (_, str_off, str_size) = header(shstrndx)?;
    let names = b.get(str_off..str_off.checked_add(str_size)?)?;
    (0..shnum).find_map(|i| {
        let (n, off, size) = header(i)?;
        let rest = names.get(n..)?;
        let end = rest.iter().position(|&c| c == 0)?;
        (&rest[..end] == name.as_bytes())
            .then(|| b.get(off..off.checked_add(size)?))
            .flatten()
    })
}

/// The modules a kernel module needs loaded first: the `depends=` entry of its
/// `.modinfo` section (NUL-separated `key=value` strings; Linux's `scripts/mod/modpost.c`
/// writes `depends=`, comma-separated names).
pub fn module_depends(ko: &[u8]) -> Option<Vec<String>> {
    let info = section(ko, ".modinfo")?;
    let entry = info
        .split(|&c| c == 0)
        .find_map(|s| s.strip_prefix(b"depends="))?;
    Some(
        String::from_utf8_lossy(entry)
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A minimal ELF64 header (64 bytes) with `machine`, followed by `phdrs` program
    /// headers of 56 bytes each, as the gABI lays them out.
    pub fn elf(machine: u16, phdrs: &[(u32, &[u8])]) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2; // ELFCLASS64
        b[5] = 1; // ELFDATA2LSB
        b[6] = 1; // EV_CURRENT
        b[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        b[18..20].copy_from_slice(&machine.to_le_bytes());
        b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&(phdrs.len() as u16).to_le_bytes());
        let data_at = 64 + 56 * phdrs.len();
        let mut data = Vec::new();
        for (kind, payload) in phdrs {
            let mut ph = vec![0u8; 56];
            ph[..4].copy_from_slice(&kind.to_le_bytes());
            let off = (data_at + data.len()) as u64;
            ph[8..16].copy_from_slice(&off.to_le_bytes());
            ph[0x20..0x28].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            b.extend_from_slice(&ph);
            data.extend_from_slice(payload);
        }
        b.extend_from_slice(&data);
        b
    }

    #[test]
    fn a_static_aarch64_program_runs() {
        // PT_LOAD (1) only: what a static musl build has, and no PT_INTERP.
        assert_eq!(check_program(&elf(EM_AARCH64, &[(1, b"")])), Ok(()));
    }

    #[test]
    fn an_x86_64_program_is_named_as_such() {
        let e = check_program(&elf(EM_X86_64, &[])).unwrap_err();
        assert_eq!(e, NotRunnable::OtherMachine("x86_64".into()));
        assert!(e.to_string().contains("aarch64-unknown-linux-musl"));
    }

    #[test]
    fn a_dynamic_program_names_its_loader() {
        let e = check_program(&elf(
            EM_AARCH64,
            &[(1, b""), (PT_INTERP, b"/lib/ld-linux-aarch64.so.1\0")],
        ))
        .unwrap_err();
        assert_eq!(e, NotRunnable::Dynamic("/lib/ld-linux-aarch64.so.1".into()));
    }

    #[test]
    fn a_script_is_not_elf_and_a_cut_header_is_malformed() {
        assert_eq!(check_program(b"#!/bin/sh\n"), Err(NotRunnable::NotElf));
        let mut cut = elf(EM_AARCH64, &[(1, b"")]);
        cut.truncate(70);
        assert_eq!(check_program(&cut), Err(NotRunnable::Malformed));
    }

    /// An ELF64 object with section headers: a NULL section, `.shstrtab` and
    /// `.modinfo` holding `modinfo`.
    fn object(modinfo: &[u8]) -> Vec<u8> {
        let mut b = elf(EM_AARCH64, &[]);
        let names = b"\0.shstrtab\0.modinfo\0";
        let names_at = b.len();
        b.extend_from_slice(names);
        let info_at = b.len();
        b.extend_from_slice(modinfo);
        let shoff = b.len();
        let mut sh = |name: u32, off: usize, size: usize| {
            let mut h = vec![0u8; 64];
            h[..4].copy_from_slice(&name.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(off as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            b.extend_from_slice(&h);
        };
        sh(0, 0, 0);
        sh(1, names_at, names.len());
        sh(11, info_at, modinfo.len());
        b[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        b[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        b[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        b[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        b
    }

    /// `modinfo -F depends 9p.ko` of Debian's 6.1.0-57-arm64 says `9pnet,netfs,fscache`.
    #[test]
    fn module_depends_reads_the_modinfo_entry() {
        let ko = object(b"license=GPL\0depends=9pnet,netfs,fscache\0name=9p\0");
        assert_eq!(
            module_depends(&ko),
            Some(vec!["9pnet".into(), "netfs".into(), "fscache".into()])
        );
        let leaf = object(b"license=GPL\0depends=\0name=netfs\0");
        assert_eq!(module_depends(&leaf), Some(vec![]));
    }
}
