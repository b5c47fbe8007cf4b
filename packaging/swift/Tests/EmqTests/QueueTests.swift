// The Swift package's test target: one job through a real server, from Swift. Run by the release
// workflow's macOS job (`swift test`, against the redis-server it installs with Homebrew, EMQ_URL).
// Not compiled here: there is no Swift toolchain on this project's machines.
import Foundation
import XCTest
import EmqUniffi

/// Returns each job's data as its result, or fails it when the data says so.
final class Echo: JobHandler {
    func handle(job: JobRecord) async throws -> String {
        if job.dataJson.contains("\"fail\"") {
            throw HandlerFailure.Failed(reason: "asked to fail", unrecoverable: true)
        }
        return job.dataJson
    }
}

final class QueueTests: XCTestCase {
    private var url: String { ProcessInfo.processInfo.environment["EMQ_URL"] ?? "redis://127.0.0.1:6379" }

    private func queueName() -> String { "swift-\(UUID().uuidString.prefix(8))" }

    func testAddWorkWait() async throws {
        let queue = try await Queue.connect(url: url, name: queueName())
        let id = try await queue.add(name: "echo", dataJson: #"{"to":"ada@example.com"}"#)
        let worker = try queue.startWorker(handler: Echo(), concurrency: 2)
        let result = try await queue.wait(id: id, timeoutMs: 10_000)
        XCTAssertEqual(result, #"{"to":"ada@example.com"}"#)
        _ = try await worker.close()
        try await queue.close()
    }

    func testFailedJobThrowsWithItsReason() async throws {
        let queue = try await Queue.connect(url: url, name: queueName())
        let id = try await queue.add(name: "echo", dataJson: #"{"fail":true}"#)
        let worker = try queue.startWorker(handler: Echo())
        do {
            _ = try await queue.wait(id: id, timeoutMs: 10_000)
            XCTFail("wait returned for a failed job")
        } catch let EmqException.JobFailed(_, _, reason, _) {
            XCTAssertTrue(reason.contains("asked to fail"), reason)
        }
        _ = try await worker.close()
        try await queue.close()
    }

    func testBadQueueNameHasItsCode() async throws {
        do {
            _ = try await Queue.connect(url: url, name: "bad:name")
            XCTFail("connected with a bad queue name")
        } catch let e as EmqException {
            XCTAssertEqual(e.code, .invalidQueueName)
        }
    }
}
