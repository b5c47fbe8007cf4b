package dev.emq

import java.io.BufferedReader
import java.io.File
import java.io.InputStreamReader
import java.util.UUID
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.assertThrows

/**
 * Real redis servers for the tests: `emq-harness up --standalone` prints one JSON line with the
 * url, and stops its servers when its stdin closes. One harness serves every test class of the
 * JVM; a shutdown hook closes its stdin (and the pipe closes anyway when the JVM dies).
 */
object Harness {
    private var process: Process? = null
    private var url: String? = null

    private fun harnessPath(): String {
        System.getProperty("emq.harness")?.let { if (File(it).canExecute()) return it }
        System.getenv("EMQ_HARNESS")?.let { if (File(it).canExecute()) return it }
        error("emq-harness not found: build it with `cargo build -p emq-harness` (system property emq.harness)")
    }

    @Synchronized
    fun standaloneUrl(): String {
        url?.let { return it }
        val p = ProcessBuilder(harnessPath(), "up", "--standalone")
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start()
        process = p
        Runtime.getRuntime().addShutdownHook(Thread { stop() })
        // Read the one JSON line, within a bound.
        val reader = BufferedReader(InputStreamReader(p.inputStream))
        val lineHolder = arrayOfNulls<String>(1)
        val t = Thread { lineHolder[0] = reader.readLine() }
        t.isDaemon = true
        t.start()
        t.join(60_000)
        val line = lineHolder[0] ?: run {
            stop()
            error("emq-harness printed no line within 60 s")
        }
        val m = Regex("\"standalone\"\\s*:\\s*\"([^\"]+)\"").find(line)
            ?: error("no standalone url in the harness line: $line")
        url = m.groupValues[1]
        return url!!
    }

    @Synchronized
    fun stop() {
        val p = process ?: return
        process = null
        url = null
        runCatching { p.outputStream.close() }
        if (!p.waitFor(15, TimeUnit.SECONDS)) {
            p.destroy()
            p.waitFor(5, TimeUnit.SECONDS)
        }
    }

    fun uniqueQueue(prefix: String) = "$prefix-${UUID.randomUUID().toString().take(8)}"

    /** A TLS server of the harness: its URL, its CA, and a client certificate + key signed by it. */
    data class Tls(val url: String, val ca: String, val cert: String, val key: String)

    private var tlsProcess: Process? = null
    private var tlsServers: Pair<Tls, Tls>? = null

    /**
     * `emq-harness up --tls --mtls` (a second harness, started on first use): the server that
     * asks for no client certificate, and the one that requires it (mutual TLS).
     */
    @Synchronized
    fun tls(): Pair<Tls, Tls> {
        tlsServers?.let { return it }
        val p = ProcessBuilder(harnessPath(), "up", "--tls", "--mtls")
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start()
        tlsProcess = p
        Runtime.getRuntime().addShutdownHook(Thread { stopTls() })
        val reader = BufferedReader(InputStreamReader(p.inputStream))
        val lineHolder = arrayOfNulls<String>(1)
        val t = Thread { lineHolder[0] = reader.readLine() }
        t.isDaemon = true
        t.start()
        t.join(60_000)
        val line = lineHolder[0] ?: run {
            stopTls()
            error("emq-harness printed no line within 60 s")
        }
        fun server(name: String): Tls {
            val obj = Regex("\"$name\"\\s*:\\s*\\{([^}]*)\\}").find(line)?.groupValues?.get(1)
                ?: error("no $name server in the harness line: $line")
            fun field(f: String) = Regex("\"$f\"\\s*:\\s*\"([^\"]+)\"").find(obj)?.groupValues?.get(1)
                ?: error("no $name.$f in the harness line: $line")
            return Tls(field("url"), field("ca"), field("cert"), field("key"))
        }
        val servers = server("tls") to server("mtls")
        tlsServers = servers
        return servers
    }

    @Synchronized
    fun stopTls() {
        val p = tlsProcess ?: return
        tlsProcess = null
        tlsServers = null
        runCatching { p.outputStream.close() }
        if (!p.waitFor(15, TimeUnit.SECONDS)) {
            p.destroy()
            p.waitFor(5, TimeUnit.SECONDS)
        }
    }
}

/** Polls [check] until it returns non-null, for at most [timeoutMs]. */
suspend fun <T : Any> eventually(timeoutMs: Long = 15_000, what: String, check: suspend () -> T?): T =
    try {
        withTimeout(timeoutMs) {
            var v: T? = check()
            while (v == null) {
                delay(25)
                v = check()
            }
            v
        }
    } catch (e: kotlinx.coroutines.TimeoutCancellationException) {
        throw AssertionError("timed out after $timeoutMs ms waiting for $what")
    }

/**
 * The test set-up of every class that needs one queue: connects to the harness's standalone
 * server with a fresh queue name from [prefix], runs [body] within [timeoutMs], closes the queue.
 */
fun withQueue(prefix: String, timeoutMs: Long = 60_000, body: suspend (Queue) -> Unit): Unit = runBlocking {
    withTimeout(timeoutMs) {
        val q = Queue.connect(Harness.standaloneUrl(), Harness.uniqueQueue(prefix))
        try {
            body(q)
        } finally {
            q.close()
        }
    }
}

/** Polls the job [id] until it is in [state], for at most [timeoutMs]; returns its record. */
suspend fun Queue.waitFor(id: String, state: JobState, timeoutMs: Long = 15_000): JobRecord =
    eventually(timeoutMs, "job $id to be $state") { get(id)?.takeIf { it.state == state } }

/** Runs [block], which must throw an [EmqException] whose `code` field is [code]; returns it. */
fun assertCode(code: ErrorCode, what: String? = null, block: () -> Unit): EmqException {
    val e = assertThrows<EmqException>(what ?: "expected an EmqException with code $code") { block() }
    assertEquals(code, e.code, "${what ?: ""} $e: ${e.message}")
    return e
}

/** Runs [block], which must throw the [EmqException.JobFailed] of a job that failed; returns it. */
fun assertJobFailed(block: () -> Unit): EmqException.JobFailed {
    val e = assertCode(ErrorCode.HANDLER_FAILED, "a job failure", block)
    return e as? EmqException.JobFailed ?: throw AssertionError("a HANDLER_FAILED that is not JobFailed: $e")
}
