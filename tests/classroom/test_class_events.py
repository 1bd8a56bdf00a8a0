"""A class's event streams (server/events.py): each stream starts with the process's current number, hears every
event of its topic (a listener behind by one hears the newest), stays open with comments well inside HAProxy's 60 s,
coalesces a class's votes, refuses topics of another shape and streams past its bound, and hears a class's change
from the store after the followers' read."""

from __future__ import annotations

import asyncio
import threading

import pytest
from starlette.requests import Request
from support.wait import until

from classroom.memory import MemoryStore
from server import events

CODE = "ABCDEF"


def _request(query: str) -> Request:
    return Request({"type": "http", "method": "GET", "path": events.PATH, "query_string": query.encode(),
                    "headers": []})


async def _next(gen, timeout: float = 10) -> str:
    return await asyncio.wait_for(gen.__anext__(), timeout)


def test_a_stream_hears_the_current_number_then_each_event_and_keeps_alive():
    hub = events.Hub()

    async def listen():
        hub.bind(asyncio.get_running_loop())
        hub.publish(f"step:{CODE}")  # before the stream opened: its hello says 1
        q = hub._open(f"step:{CODE}")
        gen = hub.events(f"step:{CODE}", q, keep_alive=0.05)
        hello = await _next(gen)
        threading.Thread(target=hub.publish, args=(f"step:{CODE}",)).start()  # a script run's thread, or Redis's
        event = await _next(gen)
        quiet = await _next(gen)
        await gen.aclose()
        return hello, event, quiet, hub.listeners(f"step:{CODE}")

    hello, event, quiet, left = asyncio.run(listen())
    assert hello == f"retry: {events.RETRY_MS}\nevent: hello\nid: 1\ndata: {events.EPOCH} 1\n\n"
    assert event == "id: 2\ndata: 2\n\n"
    assert quiet == ": keep-alive\n\n"
    assert left == 0  # a closed stream is let go
    assert events.KEEP_ALIVE_S <= 20  # HAProxy's `timeout server 60s` (deploy/haproxy.cfg) never closes a stream


def test_a_listener_behind_hears_only_the_newest_event():
    hub = events.Hub()

    async def listen():
        hub.bind(asyncio.get_running_loop())
        q = hub._open(f"step:{CODE}")
        for _ in range(3):
            hub.publish(f"step:{CODE}")
        await asyncio.sleep(0)  # the deliveries, on the loop
        return [q.get_nowait(), q.empty()]

    assert asyncio.run(listen()) == [3, True]


def test_votes_are_coalesced_to_one_event_per_gap(monkeypatch):
    monkeypatch.setattr(events, "POKE_GAP", 0.2)
    hub = events.Hub()

    async def listen():
        hub.bind(asyncio.get_running_loop())
        assert not hub.poke(f"votes:{CODE}")  # nobody listens: nothing scheduled
        q = hub._open(f"votes:{CODE}")
        for _ in range(5):
            assert hub.poke(f"votes:{CODE}")
        first = await asyncio.wait_for(q.get(), 5)
        hub.poke(f"votes:{CODE}")
        second = await asyncio.wait_for(q.get(), 5)
        return first, second

    assert asyncio.run(listen()) == (1, 2)  # five votes at once: one event; the next one, one gap later


@pytest.mark.parametrize("topic", ["", "step:abc", "step:ABCDEF:x", "seat:ABCDEF:short", "other:ABCDEF",
                                   "step:ABCDEF\nid: 9"])
def test_a_topic_of_another_shape_is_refused(topic):
    import urllib.parse

    response = asyncio.run(events.Hub().endpoint(_request(urllib.parse.urlencode({"topic": topic}))))
    assert response.status_code == 400


def test_streams_past_the_bound_are_refused(monkeypatch):
    monkeypatch.setattr(events, "MAX_STREAMS", 1)
    hub = events.Hub()

    async def open_two():
        first = await hub.endpoint(_request(f"topic=step:{CODE}"))
        second = await hub.endpoint(_request(f"topic=votes:{CODE}"))
        return first, second

    first, second = asyncio.run(open_two())
    assert first.status_code == 200 and first.media_type == "text/event-stream"
    assert second.status_code == 503


def test_a_class_change_in_the_store_is_published_after_the_followers_read():
    store, hub, order = MemoryStore(), events.Hub(), []
    code, secret = store.create()
    hub.watch(store, before=lambda c: order.append(("read", c, hub.seq(f"step:{c}"))))
    hub.watch(store, before=lambda c: order.append(("twice", c)))  # one watch per store
    store.publish(code, secret, 2, "A sentence.", None, None)
    assert order == [("read", code, 0)] and hub.seq(f"step:{code}") == 1


def test_a_removed_seat_is_published_to_its_own_topic_and_no_other(make_store):
    """The teacher's Remove reaches the removed student's count listener (`seat:CODE:SID`) from either store (Redis:
    over pub/sub, as another process hears it), not every student's step: the page is told at once, not at its
    count's timer (8-12 s at 120 students)."""
    store, hub, reads = make_store(), events.Hub(), []
    code, secret = store.create()
    ada, bo = store.join(code, "Ada", client="198.51.100.1"), store.join(code, "Bo", client="198.51.100.2")
    hub.watch(store, before=reads.append)
    store.remove(code, secret, ada)
    until(lambda: hub.seq(f"seat:{code}:{ada}"), 10, "the removed seat's event (Redis's pub/sub thread)", every=0.02)
    assert hub.seq(f"seat:{code}:{ada}") == 1 and events.TOPIC.fullmatch(f"seat:{code}:{ada}")
    assert hub.seq(f"seat:{code}:{bo}") == 0 and hub.seq(f"step:{code}") == 0 and reads == []
    store.remove(code, secret, ada)  # a seat not in the class: nothing to tell
    store.publish(code, secret, 2, "A sentence.", None, None)  # a class change: its step, read first
    until(lambda: hub.seq(f"step:{code}"), 10, "the class's step event", every=0.02)
    assert hub.seq(f"seat:{code}:{ada}") == 1 and reads == [code]
