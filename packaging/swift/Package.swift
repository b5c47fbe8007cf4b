// swift-tools-version:5.9
// The Swift package of emq: the uniffi-generated Swift (Sources/EmqUniffi) over the Rust library
// (libemq_uniffi), reached through the generated C header (Sources/EmqUniffiFFI).
//
// BUILT AND TESTED ONLY BY THE RELEASE WORKFLOW: the machines this project is built on have no
// Swift toolchain. The release workflow's macOS job runs `swift build` and `swift test` (Tests/)
// on this package; here `bash packaging/swift/generate.sh --check` (run by bindings/uniffi/ci.sh)
// fails when the committed generated sources are stale. See README.md.
//
// Apple platforms: the library comes as a binary target, EmqUniffiFFI.xcframework (static
// libemq_uniffi.a per platform with the header and module map), built on macOS by
// build-xcframework.sh.
//   - Local development (this file as committed): `releaseFFI` is nil and the binary target is
//     the folder EmqUniffiFFI.xcframework beside this file.
//   - A release's copy of this file (emq-swift-<version>.zip, written by release-package.py) sets
//     `releaseFFI` to the release's EmqUniffiFFI.xcframework.zip URL and its checksum
//     (`swift package compute-checksum`): SwiftPM downloads and verifies it.
// Linux: a system library target; build the library with `cargo build -p emq-uniffi --release`
// and pass its folder to the linker:
//   swift build -Xlinker -L$REPO/target/release
import PackageDescription

// release-package.py replaces this one line (and checks that it is here exactly once).
let releaseFFI: (url: String, checksum: String)? = nil

#if os(Linux)
let ffi: Target = .systemLibrary(name: "EmqUniffiFFI", path: "Sources/EmqUniffiFFI")
#else
let ffi: Target = { () -> Target in
    if let release = releaseFFI {
        return .binaryTarget(name: "EmqUniffiFFI", url: release.url, checksum: release.checksum)
    }
    return .binaryTarget(name: "EmqUniffiFFI", path: "EmqUniffiFFI.xcframework")
}()
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
            path: "Sources/EmqUniffi",
            linkerSettings: [
                // The static Rust library's system calls on Apple platforms: Security for the
                // random numbers (getrandom's SecRandomCopyBytes on iOS) and, on macOS, the
                // system trust store that rustls-native-certs reads (with CoreFoundation).
                .linkedFramework("Security", .when(platforms: [.macOS, .iOS])),
                .linkedFramework("CoreFoundation", .when(platforms: [.macOS, .iOS])),
            ]
        ),
        .testTarget(
            name: "EmqTests",
            dependencies: ["EmqUniffi"],
            path: "Tests/EmqTests"
        ),
    ]
)
