package dev.emq

import kotlin.time.Duration.Companion.seconds
import kotlin.time.Duration.Companion.milliseconds
import java.util.Collections
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.Timeout

/**
 * Fair groups from Kotlin on a real server: every setting read back through `groups`, GROUP_FULL
 * (nothing written) past a group's cap on waiting jobs, a paused group's jobs waiting while another
 * group's run, bad settings refused as INVALID_OPTION.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(90)
class GroupsTest {

    private fun grouped(group: String, n: Int) =
        (0 until n).map { NewJob(group, """{"n":$it}""", JobOptions(group = group)) }

    private fun info(
        name: String,
        waiting: ULong = 0uL,
        weight: UInt = 1u,
        concurrency: UInt? = null,
        maxWaiting: ULong? = null,
        paused: Boolean = false,
    ) = GroupInfo(name, waiting, 0uL, weight, concurrency, maxWaiting, paused)

    @Test
    fun `every group setting reads back through groups`() = withQueue("kt-groups-view") { q ->
        assertEquals(emptyList<GroupInfo>(), q.groups())
        q.addBulk(grouped("b", 2))
        q.add("a", "{}", JobOptions(group = "a"))
        q.setGroupWeight("a", 7u)
        q.setGroupConcurrency(4u, "a")
        q.setGroupMaxWaiting(9uL, "a")
        q.setGroupConcurrency(2u) // the default of every group
        q.pauseGroup("b")
        val groups = q.groups()
        assertEquals(
            listOf(
                info("a", waiting = 1uL, weight = 7u, concurrency = 4u, maxWaiting = 9uL),
                info("b", waiting = 2uL, concurrency = 2u, paused = true),
            ),
            groups,
        )
        assertEquals(groups.drop(1), q.groups(offset = 1uL))
        assertEquals(groups.take(1), q.groups(0uL, 1uL))
        // Each setting lifted or undone reads back so.
        q.resumeGroup("b")
        q.setGroupConcurrency(null)
        q.setGroupConcurrency(null, "a")
        q.setGroupMaxWaiting(null, "a")
        q.setGroupWeight("a", 1u)
        assertEquals(listOf(info("a", waiting = 1uL), info("b", waiting = 2uL)), q.groups(0uL, 100uL))
        // The default cap on waiting jobs shows on every group without its own.
        q.setGroupMaxWaiting(50uL, null)
        q.setGroupMaxWaiting(5uL, "b")
        assertEquals(listOf<ULong?>(50uL, 5uL), q.groups().map { it.maxWaiting })
    }

    @Test
    fun `an add past a group's cap fails with GROUP_FULL and writes nothing`() = withQueue("kt-groups-full") { q ->
        q.setGroupMaxWaiting(2uL, "g")
        q.addBulk(grouped("g", 2))
        val e = assertCode(ErrorCode.GROUP_FULL) { runBlocking { q.add("g", "{}", JobOptions(group = "g")) } }
        assertEquals(true, e is EmqException.Failed, "$e")
        assertEquals("group_full", errorCodeName(e.code))
        // A batch that would pass the cap is refused whole, its other group's job too.
        assertCode(ErrorCode.GROUP_FULL) { runBlocking { q.addBulk(grouped("other", 1) + grouped("g", 1)) } }
        assertEquals(2uL, q.counts().waiting)
        assertEquals(listOf("g" to 2uL), q.groups().map { it.name to it.waiting })
        // Another group and ungrouped jobs are not held by g's cap; lifted, g takes adds again.
        q.add("o", "{}", JobOptions(group = "other"))
        q.add("u", "{}")
        q.setGroupMaxWaiting(null, "g")
        q.add("g", "{}", JobOptions(group = "g"))
        assertEquals(5uL, q.counts().waiting)
    }

    @Test
    fun `a paused group's jobs wait while another group's run`() = withQueue("kt-groups-pause") { q ->
        q.pauseGroup("held")
        q.addBulk(grouped("held", 3))
        q.addBulk(grouped("free", 3))
        val ran = Collections.synchronizedList(mutableListOf<String>())
        val worker = WorkerOptions(concurrency = 1, lease = 5.seconds, blockTimeout = 200.milliseconds).start(listOf(q), object : JobHandler {
            override suspend fun handle(job: JobRecord): String {
                ran.add(job.name)
                return "null"
            }
        })
        try {
            eventually(15_000, "the free group to complete") { q.counts().takeIf { it.completed == 3uL } }
            delay(300)
            assertEquals(listOf("free", "free", "free"), synchronized(ran) { ran.toList() })
            assertEquals(info("held", waiting = 3uL, paused = true), q.groups().single { it.name == "held" })
            assertEquals(3uL, q.counts().waiting)
            q.resumeGroup("held")
            eventually(15_000, "the held group to complete once resumed") { q.counts().takeIf { it.completed == 6uL } }
        } finally {
            worker.shutdown()
            worker.close()
        }
        assertEquals(listOf("free", "free", "free", "held", "held", "held"), synchronized(ran) { ran.sorted() })
    }

    @Test
    fun `bad group settings fail with INVALID_OPTION and change nothing`() = withQueue("kt-groups-bad") { q ->
        q.add("a", "{}", JobOptions(group = "a"))
        q.setGroupWeight("a", 3u)
        val before = q.groups()
        val calls: List<suspend () -> Unit> = listOf(
            { q.setGroupWeight("a", 0u) },
            { q.setGroupWeight("a", 1_001u) },
            { q.setGroupConcurrency(0u) },
            { q.setGroupConcurrency(0u, "a") },
            { q.setGroupMaxWaiting(0uL, "a") },
            { q.pauseGroup("") },
            { q.pauseGroup("a\u0000b") },
            { q.resumeGroup("") },
        )
        for (call in calls) assertCode(ErrorCode.INVALID_OPTION) { runBlocking { call() } }
        assertEquals(before, q.groups())
    }
}
