package dev.emq

import io.opentelemetry.api.common.AttributeKey
import java.io.File
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/**
 * One trace across three languages (issue 29): a Python producer inside a "checkout" span adds a
 * job (tests/cross/trace_producer.py); a Node worker runs it and adds a child job from its run
 * (tests/cross/trace_worker.js); this Kotlin worker runs the child. Every consumer is in the
 * `child` relation, so the trace id is the same throughout and each span's parent is the one
 * before it: checkout → send (Python) → process (Node) → process (Kotlin). Each language's spans
 * are read back from its own SDK's in-memory exporter.
 *
 * Needs the Python venv with emq and opentelemetry-sdk ($EMQ_PY_VENV, as python/ci.sh makes it),
 * the built Node package (node/build.sh) and npm (node/testlib/otel.js installs the OpenTelemetry
 * packages outside the package); fails, saying which, when one is missing.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(240)
class TraceAcrossLanguagesTest {
    private val repo = File(System.getProperty("emq.repo") ?: error("system property emq.repo is not set")).canonicalFile

    private fun python(): String {
        val venv = System.getenv("EMQ_PY_VENV") ?: error("EMQ_PY_VENV is not set: make the venv with bash python/ci.sh (or pip install ./python opentelemetry-sdk)")
        val py = File(venv, "bin/python")
        check(py.canExecute()) { "$py not found: make the venv with bash python/ci.sh" }
        return py.path
    }

    private fun run(cmd: List<String>, env: Map<String, String> = emptyMap(), timeoutS: Long = 120): String {
        val pb = ProcessBuilder(cmd).directory(repo).redirectErrorStream(false)
        pb.environment().putAll(env)
        val p = pb.start()
        val err = StringBuilder()
        val t = Thread { err.append(p.errorStream.bufferedReader().readText()) }.apply { start() }
        val out = p.inputStream.bufferedReader().readText()
        check(p.waitFor(timeoutS, TimeUnit.SECONDS)) { p.destroyForcibly(); "${cmd.joinToString(" ")} ran past $timeoutS s" }
        t.join()
        check(p.exitValue() == 0) { "${cmd.joinToString(" ")} exited ${p.exitValue()}:\n$err" }
        return out
    }

    private fun lastJson(out: String): JsonObject = Json.parseToJsonElement(out.trim().lines().last()).jsonObject
    private fun JsonObject.str(k: String) = this[k]!!.jsonPrimitive.content

    @Test
    fun `a Python producer, a Node worker and a Kotlin worker share one trace`() = runBlocking {
        val exporter = TestOtel.exporter
        exporter.reset()
        Tracing.relation = Tracing.Relation.CHILD
        val url = Harness.standaloneUrl()
        val nodeQueue = Harness.uniqueQueue("trace-node")
        val kotlinQueue = Harness.uniqueQueue("trace-kt")
        val kq = Queue.connect(url, kotlinQueue)
        val worker = kq.startWorker(Tracing.traced(kotlinQueue, object : JobHandler {
            override suspend fun handle(job: JobRecord): String = """{"invoice":"sent"}"""
        }), 1, 5_000.0)
        try {
            val nodePath = withContext(Dispatchers.IO) {
                run(listOf("node", "-e", "console.log(require('./node/testlib/otel.js').otelNodePath())"), timeoutS = 300).trim().lines().last()
            }
            val py = lastJson(withContext(Dispatchers.IO) {
                run(listOf(python(), "tests/cross/trace_producer.py", url, nodeQueue))
            })
            val node = lastJson(withContext(Dispatchers.IO) {
                run(
                    listOf("node", "tests/cross/trace_worker.js", url, nodeQueue, kotlinQueue),
                    mapOf("NODE_PATH" to nodePath, "EMQ_NODE_PACKAGE" to File(repo, "node").path),
                )
            })
            val traceId = py.str("trace_id")
            assertEquals(py.str("checkout_span_id"), py.str("send_parent_id"), "Python: send is checkout's child")

            val runs = node["runs"]!!.jsonArray.map { it.jsonObject }
            assertEquals(2, runs.size, "Node ran the job twice (before and after its child): $runs")
            for (r in runs) {
                assertEquals(traceId, r.str("trace_id"), "Node's runs are in the producer's trace")
                assertEquals(py.str("send_span_id"), r.str("parent_id"), "Node's runs are children of Python's send span")
                assertEquals(py.str("job_id"), r.str("job_id"))
            }
            val childId = node.str("child_id")
            val child = kq.waitFor(childId, JobState.COMPLETED)
            val spawner = runs.single { child.options.traceparent!!.contains(it.str("span_id")) }

            val kt = TestOtel.named("process $kotlinQueue").single()
            assertEquals(traceId, kt.traceId, "Kotlin's run is in the same trace")
            assertEquals(spawner.str("span_id"), TestOtel.parentOf(kt), "Kotlin's run is the child of the Node run that added it")
            assertEquals(childId, kt.attributes.get(AttributeKey.stringKey("messaging.message.id")))
            assertEquals("completed", kt.attributes.get(AttributeKey.stringKey("emq.job.outcome")))
        } finally {
            Tracing.relation = Tracing.Relation.LINK
            worker.shutdown(); worker.close()
            kq.close()
        }
    }
}
