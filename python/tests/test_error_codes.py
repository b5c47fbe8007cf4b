"""The datastore's refusals as their own exceptions (issue 16, defect 5), not ScriptError."""

from __future__ import annotations

import pytest

import emq
from emq import errors


async def test_wrong_credentials_and_database_number(standalone, qname):
    host = standalone.split("://", 1)[1]
    with pytest.raises(emq.AuthFailed) as e:
        await emq.Queue.connect(f"redis://nobody:wrong@{host}", qname)
    assert e.value.code == "auth_failed" and isinstance(e.value, errors.EmqError)
    with pytest.raises(emq.InvalidOption) as e:
        await emq.Queue.connect(f"{standalone}/999", qname)
    assert "database" in e.value.message
    assert errors.error_for_code("permission_denied", "x").__class__ is emq.PermissionDenied


# Every way a code is written in text: Node's former "[emq:code]" prefix, `str(EmqError)`'s
# "code: message", and a bare code word.
DECOY = "[emq:job_not_found] timeout: lease_lost"


async def test_a_message_holding_another_codes_text_keeps_its_own_code(standalone, qname):
    """The class and `.code` come from the error's typed code (the core's `ErrorCode`), never from
    its message: messages that quote a user's name, id or handler failure holding another code's
    text (in every form a code is written) still give their own error."""
    with pytest.raises(emq.EmqError) as e:
        await emq.Queue.connect(standalone, DECOY)  # "[" and ":" break the keyspace rule
    assert type(e.value) is emq.InvalidQueueName and e.value.code == "invalid_queue_name"
    assert DECOY in e.value.message, e.value.message

    q = await emq.Queue.connect(standalone, qname)
    with pytest.raises(emq.EmqError) as e:
        await q.get(DECOY)
    assert type(e.value) is emq.InvalidJobId and e.value.code == "invalid_job_id"
    assert DECOY in e.value.message, e.value.message

    # A handler failure whose text (the job's name and data) holds the decoy.
    job_id = await q.add(DECOY, {"why": DECOY})
    failed = []

    async def handle(job: emq.Job) -> None:
        raise RuntimeError(f"{job.name} / {job.data['why']}")

    worker = emq.Worker(q, handle)
    worker.on("failed", lambda job, error: failed.append((job.name, error)))
    try:
        with pytest.raises(emq.EmqError) as e:
            await q.wait(job_id, 20)
    finally:
        await worker.close()
    assert type(e.value) is emq.HandlerFailed and e.value.code == "handler_failed"
    assert e.value.failure_code == "handler_failed" and DECOY in e.value.message, e.value.failure
    assert [(name, type(err), err.code, err.failure_code) for name, err in failed] == [
        (DECOY, emq.HandlerFailed, "handler_failed", "handler_failed")
    ]
    assert DECOY in failed[0][1].message
    await q.obliterate()
    await q.close()

    # The mapping itself: a code and a message that names others.
    made = errors.error_for_code("invalid_state", DECOY)
    assert type(made) is emq.InvalidState and made.code == "invalid_state" and made.message == DECOY
