//! Links every image at 0x8_0000 with `link.ld`.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=link.ld");
    if std::env::var("TARGET").is_ok_and(|t| t == "aarch64-unknown-none") {
        println!("cargo:rustc-link-arg-bins=-T{dir}/link.ld");
    }
}
