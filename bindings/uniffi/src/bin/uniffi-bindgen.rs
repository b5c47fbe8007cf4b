//! The uniffi generator, pinned to the library's uniffi version:
//! `cargo run -p emq-uniffi --bin uniffi-bindgen -- generate --library target/debug/libemq_uniffi.so --language kotlin --out-dir bindings/uniffi/kotlin/generated`
fn main() {
    uniffi::uniffi_bindgen_main()
}
