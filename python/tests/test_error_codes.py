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
