package dev.emq

// The core's own types, exported by the core crate (its `uniffi` feature) into the Kotlin package
// `dev.emq.core` (core/uniffi.toml: each uniffi component needs a package of its own), under the
// names `dev.emq` has always had. Hand-written, next to the generated bindings.

/** Where a job is in its lifecycle (the core's `JobState`). */
typealias JobState = dev.emq.core.JobState

/** Why the last run of a job failed (the core's `Failure`). */
typealias JobFailure = dev.emq.core.JobFailure

/** Number of jobs per state (the core's `Counts`). */
typealias Counts = dev.emq.core.Counts

/** In a flow: what a child's final failure does to its parent (the core's `ParentPolicy`). */
typealias ParentPolicy = dev.emq.core.ParentPolicy

/** The ids a flow was given, in the flow's shape (the core's `FlowIds`). */
typealias FlowIds = dev.emq.core.FlowIds

/** One event of a queue's events stream (the core's `events::Event`). */
typealias Event = dev.emq.core.Event

/** A job scheduler as stored (the core's `SchedulerInfo`). */
typealias SchedulerInfo = dev.emq.core.SchedulerInfo

/** One group of a queue, as `Queue.groups` reads it (the core's `GroupInfo`). */
typealias GroupInfo = dev.emq.core.GroupInfo

/** A batch's counts and one page of its failed jobs (the core's `BatchStatus`): `Batch.status`. */
typealias BatchStatus = dev.emq.core.BatchStatus

/** One job of a batch: its queue and id (the core's `BatchJob`). */
typealias BatchJob = dev.emq.core.BatchJob

/** The batch a job belongs to (the core's `BatchRef`): `JobRecord.batch`. */
typealias BatchRef = dev.emq.core.BatchRef

/** A batch's callback job's view of its batch when it fell due (the core's `BatchDone`). */
typealias BatchDone = dev.emq.core.BatchDone

/** A job id as its text (the core's `JobId`, checked by its parser when it comes back in). */
typealias JobId = dev.emq.core.JobId

/** The stable code of an error (the core's `ErrorCode`): `EmqException`'s `code` field. */
typealias ErrorCode = dev.emq.core.ErrorCode

/** This error's stable code, whichever case it is (each case carries it as its `code` field). */
val EmqException.code: ErrorCode
    get() = when (this) {
        is EmqException.Failed -> code
        is EmqException.JobFailed -> code
    }
