// Hand-written next to the generated EmqUniffi.swift (packaging/swift/generate.sh leaves it be).
// Not compiled here: there is no Swift toolchain on this project's machines.

extension WorkerHandle {
    /// This worker's events as an `AsyncStream` (the Swift counterpart of Kotlin's
    /// `eventsFlow()`): completed, failed and progress of the jobs it runs, the queue's stalled
    /// jobs, and `.error` when the events cannot be read (the stream keeps trying). Subscribed
    /// when this returns; iterate it once. Ending the iteration (or cancelling its task) closes
    /// the subscription.
    ///
    ///     for await event in try await worker.eventStream() {
    ///         if event.kind == .completed { print(event.jobId ?? "", event.resultJson ?? "") }
    ///     }
    public func eventStream(waitMs: Double = 1000) async throws -> AsyncStream<WorkerEvent> {
        let subscription = try await events()
        return AsyncStream { continuation in
            let task = Task {
                while !Task.isCancelled {
                    guard let batch = try? await subscription.next(waitMs: waitMs, count: 100) else {
                        break
                    }
                    for event in batch {
                        continuation.yield(event)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in
                task.cancel()
                subscription.close()
            }
        }
    }
}
