#!/usr/bin/env bash
# Checks the generated Swift bindings without a Swift toolchain: the three files exist and the
# expected declarations are in them. (Swift is generated here, not compiled.)
# The core's own types (its `uniffi` feature) come in EmqCore.swift and EmqCoreFFI.h, compiled into
# the same Swift module: the declarations are looked for in both Swift files.
# Usage: bindings/uniffi/swift/check.sh [generated-dir]
set -euo pipefail
dir="${1:-$(dirname "$0")/generated}"
swift="$dir/EmqUniffi.swift"
core="$dir/EmqCore.swift"
fail=0
for f in "$swift" "$core" "$dir/EmqUniffiFFI.h" "$dir/EmqCoreFFI.h" "$dir/EmqUniffiFFI.modulemap"; do
    if [[ ! -s "$f" ]]; then echo "swift check: missing or empty $f"; fail=1; fi
done
[[ $fail == 0 ]] || exit 1

expect() { # pattern (extended regex), what
    if ! grep -Eqh -- "$1" "$swift" "$core"; then
        echo "swift check: not found in EmqUniffi.swift or EmqCore.swift: $2   (/$1/)"
        fail=1
    fi
}
expect '^open class Queue\b' 'class Queue'
expect '^open class WorkerHandle\b' 'class WorkerHandle'
expect '^public protocol JobHandler\b' 'protocol JobHandler'
expect 'func handle\(job: JobRecord\) async throws +-> String' 'JobHandler.handle(job:) async throws -> String'
expect '^enum EmqException: Swift.Error' 'enum EmqException'
expect '^enum HandlerFailure: Swift.Error' 'enum HandlerFailure'
expect 'case Failed\(reason: String, unrecoverable: Bool' 'HandlerFailure.Failed(reason:unrecoverable:)'
expect '^public struct JobRecord\b' 'struct JobRecord'
expect '^public struct JobOptions\b' 'struct JobOptions'
expect '^public struct Counts\b' 'struct Counts'
expect '^public struct JobFailure\b' 'struct JobFailure'
expect '^public struct WorkerStats\b' 'struct WorkerStats'
expect '^public enum JobState\b' 'enum JobState'
expect 'public static func connect\(url: String, name: String, tls: TlsFiles\? = nil, partitions: Int64\? = nil\) ?async throws +-> Queue' 'Queue.connect(url:name:tls:partitions:) async throws'
expect 'public static func connectSeeds\(urls: \[String\], name: String, tls: TlsFiles\? = nil, partitions: Int64\? = nil\) ?async throws +-> Queue' 'Queue.connectSeeds(urls:name:tls:partitions:) async throws'
expect 'open func partitions\(\) ?-> UInt16' 'Queue.partitions()'
expect '^public struct TlsFiles\b' 'struct TlsFiles'
expect 'func events\(\) ?async throws +-> WorkerEvents' 'WorkerHandle.events() async throws'
expect '^open class WorkerEvents\b' 'class WorkerEvents'
expect 'func next\(waitMs: Double = Double\(1000.0\), count: UInt32 = UInt32\(100\)\) ?async throws +-> \[WorkerEvent\]' 'WorkerEvents.next(waitMs:count:)'
expect '^public struct WorkerEvent\b' 'struct WorkerEvent'
expect '^public enum WorkerEventKind\b' 'enum WorkerEventKind'
expect 'func add\(name: String, dataJson: String, options: JobOptions\? = nil\) ?async throws +-> String' 'Queue.add(name:dataJson:options:)'
expect 'func get\(id: String\) ?async throws +-> JobRecord\?' 'Queue.get(id:)'
expect 'func counts\(\) ?async throws +-> Counts' 'Queue.counts()'
expect 'func pause\(\) ?async throws' 'Queue.pause()'
expect 'func resume\(\) ?async throws' 'Queue.resume()'
expect 'func startWorker\(handler: JobHandler, concurrency: Int32 = 1, leaseMs: Double = Double\(30000.0\), shutdownTimeoutMs: Double = Double\(10000.0\), stalledIntervalMs: Double = Double\(15000.0\), maxStalls: UInt32 = UInt32\(1\), blockTimeoutMs: Double = Double\(5000.0\), completed: Retention\? = nil, failed: Retention\? = nil\) ?throws +-> WorkerHandle' 'Queue.startWorker(handler:concurrency:leaseMs:shutdownTimeoutMs:stalledIntervalMs:maxStalls:blockTimeoutMs:completed:failed:)'
expect 'func cancel\(id: String, reason: String = ""\) ?async throws +-> String' 'Queue.cancel(id:reason:)'
expect 'func wait\(id: String, timeoutMs: Double\) ?async throws +-> String' 'Queue.wait(id:timeoutMs:)'
expect 'func mintId\(\) ?throws +-> String' 'Queue.mintId()'
expect 'func workers\(\) ?async throws +-> \[WorkerInfo\]' 'Queue.workers()'
expect '^public struct WorkerInfo\b' 'struct WorkerInfo'
expect 'open func abort\(\) *\{' 'WorkerHandle.abort()'
expect 'open func close\(\) ?async throws +-> UInt64' 'WorkerHandle.close() async throws -> UInt64'
expect 'public func errorCodeName\(code: ErrorCode\) +-> String' 'errorCodeName(code:)'
expect 'case Failed\(code: ErrorCode, reason: String' 'EmqException.Failed(code:reason:)'
expect 'case JobFailed\(code: ErrorCode, failureCode: String, reason: String, stack: String\?' 'EmqException.JobFailed(code:failureCode:reason:stack:)'
expect '^public enum ErrorCode\b' 'enum ErrorCode (the core'"'"'s, from EmqCore.swift)'
expect 'func addBulk\(jobs: \[NewJob\]\) ?async throws +-> \[String\]' 'Queue.addBulk(jobs:)'
expect 'func addFlow\(flow: FlowJob\) ?async throws +-> FlowIds' 'Queue.addFlow(flow:)'
expect 'func childrenResults\(parent: String\) ?async throws +-> \[String: String\]' 'Queue.childrenResults(parent:)'
expect 'func updateProgress\(id: String, progressJson: String\) ?async throws' 'Queue.updateProgress(id:progressJson:)'
expect 'func log\(id: String, line: String\) ?async throws +-> UInt64' 'Queue.log(id:line:)'
expect 'func metrics\(\) ?async throws +-> QueueMetrics' 'Queue.metrics()'
expect 'func isPaused\(\) ?async throws +-> Bool' 'Queue.isPaused()'
expect 'func events\(after: String\? = nil\) ?async throws +-> EventStream' 'Queue.events(after:)'
expect 'open func close\(\) ?async throws +\{' 'Queue.close() async throws'
expect '^open class EventStream\b' 'class EventStream'
expect 'func next\(waitMs: Double = Double\(1000.0\), count: UInt32 = UInt32\(100\)\) ?async throws +-> \[Event\]' 'EventStream.next(waitMs:count:)'
expect '^public struct Event\b' 'struct Event'
expect '^public struct NewJob\b' 'struct NewJob'
expect '^public struct FlowJob\b' 'struct FlowJob'
expect '^public struct FlowIds\b' 'struct FlowIds'
expect '^public struct QueueMetrics\b' 'struct QueueMetrics'
expect '^public enum Backoff\b' 'enum Backoff'
expect 'case exponential\(delayMs: Double, maxMs: Double' 'Backoff.exponential(delayMs:maxMs:)'
expect '^public enum ParentPolicy\b' 'enum ParentPolicy'
# Every field of the core's JobOptions.
for f in delayMs priority attempts backoff jitter leaseMs lifo removeOnComplete removeOnFail \
    timeoutMs dedup debounce dedupTtlMs parentPolicy group id; do
    expect "public var $f: " "JobOptions.$f"
done
# One ErrorCode case per core error code (the core's own enum, which EmqException carries as its
# `code`): the names of the list generated from the core's table (python/src/emq/_codes.py;
# cargo run -q -p emq --example error_codes), in lowerCamelCase.
codes_py="$(dirname "$0")/../../../python/src/emq/_codes.py"
codes="$(sed -nE 's/^    \("[a-z_]+", "([A-Za-z]+)"\),$/\1/p' "$codes_py")"
[[ -n "$codes" ]] || { echo "swift check: no error codes read from $codes_py"; exit 1; }
for code in $codes; do
    expect '^    case `?'"${code,}"'`?$' "ErrorCode.${code,}"
done
if [[ $fail != 0 ]]; then exit 1; fi
echo "swift check: ok ($(grep -c '' "$swift") lines in EmqUniffi.swift, $(grep -c '' "$core") in EmqCore.swift; generated, not compiled: no Swift toolchain here)"
