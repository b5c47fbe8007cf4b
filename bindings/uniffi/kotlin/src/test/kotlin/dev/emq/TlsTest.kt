package dev.emq

import java.io.File
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/**
 * TLS with a private CA and mutual TLS (issue 16, defect 7) on the harness's TLS servers
 * (`emq-harness up --tls --mtls`: ACL user emq/emq-secret, certificates from a throwaway CA).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class TlsTest {
    private val servers by lazy { Harness.tls() }

    @AfterAll
    fun stop() = Harness.stopTls()

    private fun bounded(body: suspend kotlinx.coroutines.CoroutineScope.() -> Unit) = runBlocking { withTimeout(60_000) { body() } }

    @Test
    fun `a private CA as a path or PEM text, and without it the server is not trusted`() = bounded {
        val tls = servers.first
        for (ca in listOf(tls.ca, File(tls.ca).readText())) {
            val q = Queue.connect(tls.url, Harness.uniqueQueue("kt-tls"), TlsFiles(caCert = ca))
            try {
                val id = q.add("t", """{"secure":true}""")
                assertEquals("""{"secure":true}""", q.get(id)!!.dataJson)
            } finally {
                q.close()
            }
        }
        val e = assertCode(ErrorCode.SERVER_UNAVAILABLE) {
            runBlocking { Queue.connect(tls.url, Harness.uniqueQueue("kt-tls")) }
        }
        assertTrue(e.message!!.contains("ca_cert"), e.message)
        // Seeds take the same options.
        val q = Queue.connectSeeds(listOf(tls.url), Harness.uniqueQueue("kt-tls"), TlsFiles(caCert = tls.ca))
        try {
            assertEquals(0uL, q.counts().waiting)
        } finally {
            q.close()
        }
    }

    @Test
    fun `TLS options are checked`() = bounded {
        val tls = servers.first
        val bad = listOf(
            tls.url to TlsFiles(caCert = tls.ca, clientCert = tls.cert),
            tls.url to TlsFiles(caCert = "/nonexistent/ca.pem"),
            tls.url to TlsFiles(caCert = tls.key),
            "redis://127.0.0.1:1" to TlsFiles(caCert = tls.ca),
        )
        for ((url, files) in bad) {
            val e = assertCode(ErrorCode.INVALID_OPTION, "$files") {
                runBlocking { Queue.connect(url, Harness.uniqueQueue("kt-tls"), files) }
            }
            assertTrue(e is EmqException.Failed && e.reason.isNotEmpty(), "$e")
        }
        assertCode(ErrorCode.INVALID_OPTION) {
            runBlocking { Queue.connectSeeds(listOf(), Harness.uniqueQueue("kt-tls")) }
        }
    }

    @Test
    fun `mutual TLS is refused without a client certificate and served with one`() = bounded {
        val m = servers.second
        val e = assertCode(ErrorCode.SERVER_UNAVAILABLE) {
            runBlocking { Queue.connect(m.url, Harness.uniqueQueue("kt-mtls"), TlsFiles(caCert = m.ca)) }
        }
        assertTrue(e.message!!.contains("client_cert"), e.message)
        val q = Queue.connect(
            m.url, Harness.uniqueQueue("kt-mtls"),
            TlsFiles(caCert = m.ca, clientCert = m.cert, clientKey = File(m.key).readText()),
        )
        try {
            val id = q.add("t", """{"mutual":true}""")
            val worker = q.startWorker(object : JobHandler {
                override suspend fun handle(job: JobRecord): String = job.dataJson
            }, 1)
            try {
                val done = eventually(15_000, "the mTLS job") { q.get(id)?.takeIf { it.state == JobState.COMPLETED } }
                assertEquals("""{"mutual":true}""", done.resultJson)
            } finally {
                worker.shutdown()
                worker.close()
            }
        } finally {
            q.close()
        }
    }
}
