// Hand-written next to the generated EmqUniffi.swift (packaging/swift/generate.sh leaves it be).
// Not compiled here: there is no Swift toolchain on this project's machines.

extension EmqException {
    /// This error's stable code (the core's `ErrorCode`), whichever case it is: each case carries
    /// it as its `code` field (the Swift counterpart of Kotlin's `EmqException.code`).
    ///
    ///     do { _ = try await queue.get(id: "not an id") }
    ///     catch let e as EmqException where e.code == .invalidJobId { print(e) }
    public var code: ErrorCode {
        switch self {
        case let .Failed(code, _):
            return code
        case let .JobFailed(code, _, _, _):
            return code
        }
    }
}
