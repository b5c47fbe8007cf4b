package dev.emq

import java.io.File
import java.math.BigDecimal
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.contentOrNull
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.longOrNull
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/**
 * Kotlin and the Rust CLI on one queue (the Kotlin side of `tests/cross/`), against the harness's
 * standalone server, both ways:
 *  - Kotlin adds → a Rust worker process (`emq work --echo`) processes → Kotlin reads back with `get`;
 *  - the Rust CLI adds (`emq add`) → a Kotlin worker processes → the Rust CLI reads back (`emq job --json`).
 * Payloads and results are compared as parsed JSON (numbers by value), failure messages as text.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class CrossLanguageTest {
    private val url by lazy { Harness.standaloneUrl() }

    private companion object {
        const val FAIL_NAME = "boom"
        const val FAIL_MESSAGE = "kaputt — ✗ 失敗 \"quoted\"\nsecond line"
        const val PROCESS_TIMEOUT_S = 90L
        val ID = Regex("^j[0-9abcdefghjkmnpqrstvwxyz]{15}$")

        /** (name, data as JSON text): unicode, nested objects, large ints within 2^53, floats, null. */
        val JOBS: List<Pair<String, String>> = listOf(
            "unicode" to """{"text":"héllo wörld ✓ 日本語 🎉 \u2028 tab\there","esc":"back\\slash \"q\""}""",
            "nested" to """{"a":[1,2,{"b":null,"c":[[],{}]}],"empty":{},"yes":true,"no":false}""",
            "big-int" to "9007199254740991",
            "big-ints" to """{"big":9007199254740991,"neg_big":-9007199254740991}""",
            "float" to """{"pi":3.141592653589793,"tiny":1e-7,"half":-2.5}""",
            "null-payload" to "null",
            "list" to """[1.5,"x",null,{"k":"v"}]""",
            FAIL_NAME to buildJsonObject {
                put("message", JsonPrimitive(FAIL_MESSAGE))
                put("extra", JsonArray(listOf(JsonPrimitive(1), JsonPrimitive(2))))
            }.toString(),
        )
    }

    // ---- the Rust CLI

    private fun emqPath(): String {
        System.getProperty("emq.cli")?.let { if (File(it).canExecute()) return it }
        System.getProperty("emq.repo")?.let { repo ->
            val profile = System.getProperty("emq.profile") ?: "debug"
            File(repo, "target/$profile/emq").takeIf { it.canExecute() }?.let { return it.path }
        }
        // Beside emq-harness (as Harness.kt finds it).
        System.getProperty("emq.harness")?.let { h ->
            File(File(h).parentFile, "emq").takeIf { it.canExecute() }?.let { return it.path }
        }
        error("the emq CLI was not found: build it with `cargo build -p emq-cli` (system property emq.cli)")
    }

    /** Runs `emq --url URL args…` to completion within [timeoutS]; asserts exit 0 and returns stdout. */
    private suspend fun emq(vararg args: String, timeoutS: Long = PROCESS_TIMEOUT_S): String =
        withContext(Dispatchers.IO) {
            val out = File.createTempFile("emq-cli-", ".out")
            val err = File.createTempFile("emq-cli-", ".err")
            try {
                val cmd = listOf(emqPath(), "--url", url, *args)
                val p = ProcessBuilder(cmd)
                    .redirectInput(ProcessBuilder.Redirect.from(File("/dev/null")))
                    .redirectOutput(out)
                    .redirectError(err)
                    .start()
                if (!p.waitFor(timeoutS, TimeUnit.SECONDS)) {
                    p.destroy()
                    if (!p.waitFor(5, TimeUnit.SECONDS)) p.destroyForcibly().waitFor(5, TimeUnit.SECONDS)
                    throw AssertionError(
                        "${cmd.drop(3)} did not exit within $timeoutS s\nstdout:\n${out.readText()}\nstderr:\n${err.readText()}",
                    )
                }
                val code = p.exitValue()
                val stdout = out.readText()
                assertEquals(0, code, "${cmd.drop(3)} exited $code\nstdout:\n$stdout\nstderr:\n${err.readText()}")
                stdout
            } finally {
                out.delete()
                err.delete()
            }
        }

    // ---- JSON, compared by value

    private fun parse(text: String): JsonElement = Json.parseToJsonElement(text)

    /** Structural equality; numbers by value (`1e-7` == `1.0E-7`), strings, booleans and null exactly. */
    private fun sameJson(a: JsonElement, b: JsonElement): Boolean = when {
        a is JsonNull || b is JsonNull -> a is JsonNull && b is JsonNull
        a is JsonObject && b is JsonObject -> a.keys == b.keys && a.keys.all { sameJson(a[it]!!, b[it]!!) }
        a is JsonArray && b is JsonArray -> a.size == b.size && a.indices.all { sameJson(a[it], b[it]) }
        a is JsonPrimitive && b is JsonPrimitive -> when {
            a.isString || b.isString -> a.isString && b.isString && a.content == b.content
            a.content == "true" || a.content == "false" || b.content == "true" || b.content == "false" ->
                a.content == b.content
            else -> BigDecimal(a.content).compareTo(BigDecimal(b.content)) == 0
        }
        else -> false
    }

    private fun assertSameJson(want: JsonElement, got: JsonElement, what: String) =
        assertTrue(sameJson(want, got), "$what: want $want, got $got")

    private fun echoResult(lang: String, id: String, name: String, dataJson: String): JsonElement = buildJsonObject {
        put("lang", JsonPrimitive(lang))
        put("id", JsonPrimitive(id))
        put("name", JsonPrimitive(name))
        put("data", parse(dataJson))
    }

    private fun checkIds(ids: List<String>) {
        assertEquals(JOBS.size, ids.size)
        assertEquals(ids.size, ids.toSet().size, "ids are distinct: $ids")
        ids.forEach { assertTrue(ID.matches(it), "id $it") }
    }

    // ---- the tests

    @Test
    fun `Kotlin adds, a Rust worker processes, Kotlin reads back`() = runBlocking {
        withTimeout(150_000) {
            val q = Queue.connect(url, Harness.uniqueQueue("kt-cross-to-rust"))
            try {
                val ids = JOBS.map { (name, data) -> q.add(name, data) }
                checkIds(ids)

                val stats = parse(emq("work", q.name(), "--echo", "--fail-name", FAIL_NAME, "--max-jobs", "${JOBS.size}").trim())
                assertEquals(JOBS.size - 1L, stats.jsonObject["completed"]!!.jsonPrimitive.longOrNull, "$stats")
                assertEquals(1L, stats.jsonObject["failed"]!!.jsonPrimitive.longOrNull, "$stats")

                for ((job, id) in JOBS.zip(ids)) {
                    val (name, data) = job
                    val got = q.get(id)
                    assertNotNull(got, id)
                    got!!
                    assertEquals(id, got.id)
                    assertEquals(name, got.name)
                    assertSameJson(parse(data), parse(got.dataJson), "$id ($name) data")
                    if (name == FAIL_NAME) {
                        assertEquals(JobState.FAILED, got.state, id)
                        assertNull(got.resultJson, id)
                        assertEquals(FAIL_MESSAGE, got.failure!!.message)
                        assertEquals("handler_failed", got.failure!!.code)
                        // The wait's error carries the same failure as fields, the text untouched.
                        val e = assertJobFailed { runBlocking { q.wait(id, 5_000.0) } }
                        assertEquals(got.failure!!.code, e.failureCode)
                        assertEquals(FAIL_MESSAGE, e.reason)
                        assertEquals(got.failure!!.stack, e.stack)
                    } else {
                        assertEquals(JobState.COMPLETED, got.state, id)
                        assertNull(got.failure, id)
                        assertSameJson(echoResult("rust", id, name, data), parse(got.resultJson!!), "$id ($name) result")
                    }
                }
            } finally {
                q.close()
            }
        }
    }

    @Test
    fun `the Rust CLI adds, a Kotlin worker processes, the Rust CLI reads back`() = runBlocking {
        withTimeout(150_000) {
            val queue = Harness.uniqueQueue("kt-cross-from-rust")
            // Added by the Rust CLI, one process per job; each prints the id.
            val ids = JOBS.map { (name, data) -> emq("add", queue, name, "--data", data).trim() }
            checkIds(ids)

            val q = Queue.connect(url, queue)
            try {
                val seen = ConcurrentHashMap<String, JobRecord>()
                val handler = object : JobHandler {
                    override suspend fun handle(job: JobRecord): String {
                        seen[job.id] = job
                        if (job.name == FAIL_NAME) {
                            val data = parse(job.dataJson)
                            val message = (data as? JsonObject)?.get("message")?.let { it as? JsonPrimitive }
                                ?.takeIf { it.isString }?.contentOrNull ?: "job ${job.id} failed on request"
                            throw HandlerFailure.Failed(message, true)
                        }
                        return """{"lang":"kotlin","id":${JsonPrimitive(job.id)},"name":${JsonPrimitive(job.name)},"data":${job.dataJson}}"""
                    }
                }
                val worker = q.startWorker(handler, 2, 30_000.0)
                try {
                    eventually(60_000, "the Kotlin worker to handle ${JOBS.size} jobs") {
                        val s = worker.stats()
                        (s.completed + s.failed).takeIf { it >= JOBS.size.toULong() }
                    }
                    val s = worker.stats()
                    assertEquals((JOBS.size - 1).toULong(), s.completed, "$s")
                    assertEquals(1uL, s.failed, "$s")
                } finally {
                    assertEquals(0uL, worker.shutdown())
                    worker.close()
                }

                // The ids the CLI printed are the ids Kotlin's handler saw, name for name.
                assertEquals(ids.toSet(), seen.keys, "ids printed by `emq add` vs ids seen by the handler")
                for ((job, id) in JOBS.zip(ids)) {
                    assertEquals(job.first, seen[id]!!.name, id)
                    assertSameJson(parse(job.second), parse(seen[id]!!.dataJson), "$id data seen by the handler")
                }
            } finally {
                q.close()
            }

            // Read back by the Rust CLI.
            for ((job, id) in JOBS.zip(ids)) {
                val (name, data) = job
                val r = parse(emq("job", queue, id, "--json")).jsonObject
                assertEquals(id, r["id"]!!.jsonPrimitive.content)
                assertEquals(name, r["name"]!!.jsonPrimitive.content)
                assertSameJson(parse(data), r["data"]!!, "$id ($name) data read by emq job")
                if (name == FAIL_NAME) {
                    assertEquals("failed", r["state"]!!.jsonPrimitive.content, "$r")
                    assertTrue(r["result"] == null || r["result"] is JsonNull, "$r")
                    val failure = r["failure"]!!.jsonObject
                    assertEquals(FAIL_MESSAGE, failure["message"]!!.jsonPrimitive.content)
                    assertEquals("handler_failed", failure["code"]!!.jsonPrimitive.content)
                } else {
                    assertEquals("completed", r["state"]!!.jsonPrimitive.content, "$r")
                    assertTrue(r["failure"] == null || r["failure"] is JsonNull, "$r")
                    assertSameJson(echoResult("kotlin", id, name, data), r["result"]!!, "$id ($name) result read by emq job")
                }
            }
        }
    }
}
