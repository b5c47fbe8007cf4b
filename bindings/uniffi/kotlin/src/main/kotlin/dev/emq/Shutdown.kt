package dev.emq

import kotlinx.coroutines.runBlocking

/**
 * Closes this worker gracefully when the JVM shuts down (SIGTERM from a container platform,
 * Ctrl-C, `System.exit`): no new jobs are taken, running handlers get the worker's
 * `shutdownTimeoutMs` to finish, then their coroutines are cancelled and their jobs go back to
 * waiting without consuming an attempt. Hand-written, next to the generated bindings.
 *
 * Returns the hook thread; `Runtime.getRuntime().removeShutdownHook(it)` undoes it. A JVM ignores
 * a second signal while its hooks run, so "stop at once" is `kill -9` (the jobs then come back
 * through their leases, as after a crash), or [WorkerHandle.abort] from code.
 */
fun WorkerHandle.closeOnShutdown(): Thread {
    val worker = this
    val hook = Thread({
        // A worker already shut down returns 0; one already destroyed (close()) throws: nothing to do.
        runCatching { runBlocking { worker.shutdown() } }
    }, "emq-worker-shutdown")
    Runtime.getRuntime().addShutdownHook(hook)
    return hook
}
