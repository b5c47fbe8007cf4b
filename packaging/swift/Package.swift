// swift-tools-version:5.9
// The Swift package of emq: the uniffi-generated Swift (Sources/EmqUniffi) over the Rust library
// (libemq_uniffi), reached through the generated C header (Sources/EmqUniffiFFI).
//
// GENERATED HERE, NOT COMPILED: the machines this project is built on have no Swift toolchain, so
// `swift build` has never run on this package. `bash packaging/swift/generate.sh` writes the
// sources from the built library; `bash packaging/swift/generate.sh --check` (run by
// bindings/uniffi/ci.sh) fails when the committed ones are stale. See README.md.
//
// Apple platforms: the library comes as a binary target, EmqUniffiFFI.xcframework (static
// libemq_uniffi.a per platform with the header and module map), built on macOS by
// build-xcframework.sh. Linux: a system library target; build the library with
// `cargo build -p emq-uniffi --release` and pass its folder to the linker:
//   swift build -Xlinker -L$REPO/target/release
import PackageDescription

#if os(Linux)
let ffi: Target = .systemLibrary(name: "EmqUniffiFFI", path: "Sources/EmqUniffiFFI")
#else
let ffi: Target = .binaryTarget(name: "EmqUniffiFFI", path: "EmqUniffiFFI.xcframework")
#endif

let package = Package(
    name: "Emq",
    platforms: [.macOS(.v12), .iOS(.v15)],
    products: [
        .library(name: "Emq", targets: ["EmqUniffi"]),
    ],
    targets: [
        ffi,
        .target(
            name: "EmqUniffi",
            dependencies: ["EmqUniffiFFI"],
            path: "Sources/EmqUniffi"
        ),
    ]
)
