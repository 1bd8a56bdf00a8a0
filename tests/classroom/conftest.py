"""The class stores' fixtures: a redis-server for the session, and a factory of fresh stores of each backend."""

from __future__ import annotations

import shutil

import pytest
from support.paths import OUT, worker_suffix


@pytest.fixture(scope="session")
def redis_url():
    """A redis-server for this test session on a free loopback port; its files under tests/output (then removed)."""
    from support.appserver import redis_server

    d = OUT / f"redis-classroom{worker_suffix()}"
    try:
        with redis_server(d) as (url, _):
            yield url
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.server)])
def make_store(request):
    """A factory of fresh stores of one backend: make_store(idle_seconds=...). The redis one is the server tier."""
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
