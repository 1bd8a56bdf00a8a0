"""Both class stores for the same tests: the in-process one and Redis (a real Debian redis-server, no mock)."""

from __future__ import annotations

import shutil

import pytest
from appserver import redis_server
from apptest_util import ROOT

OUT = ROOT / "tests" / "output"


@pytest.fixture(scope="session")
def redis_url():
    """A redis-server for this test session on a free loopback port; its files under tests/output (then removed)."""
    d = OUT / "redis-classroom"
    try:
        with redis_server(d) as (url, _):
            yield url
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(params=["memory", "redis"])
def make_store(request):
    """A factory of fresh stores of one backend: make_store(idle_seconds=...)."""
    from classroom.memory import MemoryStore

    made = []

    def make(**kw):
        if request.param == "memory":
            return MemoryStore(**kw)
        from classroom.redis_store import RedisStore

        s = RedisStore(request.getfixturevalue("redis_url"), **kw)
        made.append(s)
        return s

    make.backend = request.param
    yield make
    for s in made:
        s.r.close()
