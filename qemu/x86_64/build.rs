//! Links the bare-metal image with `linker.ld` (load address 1 MiB, PVH note first).

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=linker.ld");
    println!("cargo:rerun-if-changed=build.rs");
    // Only the bare-metal build is an image; a host build of the workspace compiles a stub.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("none") {
        println!("cargo:rustc-link-arg-bins=-T{dir}/linker.ld");
        // x86_64-unknown-none links a static PIE by default; nothing here would apply its
        // relocations, so link at the fixed address of the script instead.
        println!("cargo:rustc-link-arg-bins=--no-pie");
    }
}
