"""A small class on one real server (benchmarks/load.py): own answers, no leakage, the cap, a freed slot.

The full class (30 sessions) is the benchmark script's job; this runs six sessions, three of them
training with one training slot, long enough for the one that closes its tab to lose its slot
to the next in line. Speed is printed by the script, never asserted here.
"""

from __future__ import annotations

import load  # benchmarks/load.py: benchmarks/ is on pytest's pythonpath (pyproject.toml)


def test_small_class_gets_its_own_answers_and_the_cap_holds():
    # A 12 s lease (the server's default is 30 s) keeps the test short. grace: a slow machine may need longer than
    # 30 s to show the handover (lease 12 s + queue tick 5 s after the leaver's last tick); trainers keep going until
    # it is seen or 120 s more have passed.
    r = load.run(n_sessions=6, n_trainers=3, seconds=30, max_steps=2000, cap=1, grace=120, lease=12, arrive=5)
    assert load.failures(r) == [], load.failures(r)
    assert r["checked_answers"] > 0 and r["load_edits"] >= 3  # the class was really answered and checked
    assert not r["leaks"] and not r["own_marker_missing"]  # own marker seen: the leak check can see markers
    assert r["monitor_seen"] and r["max_in_steps"] == 1 and r["max_holders"] == 1  # one slot, used, never two
    assert r["queued_seen"] and r["max_waiting"] >= 1  # the others were shown their place in line
    # The session that closed its tab mid-run lost its slot once the 12 s lease ran out, and only it did.
    assert r["lease_seconds"] == 12 and len(r["left"]) == 1 and r["asked_after_lease"]
    assert r["lease_seconds"] <= r["slot_freed_after"] <= r["lease_seconds"] + 15, r["slot_freed_after"]
    assert r["lapsed_total"] == 1
    # Waiting pages refresh every 5 s (cheap for the server, well inside the lease), training ones every second.
    assert set(r["tick_intervals"]) == {("waiting for a slot", 5.0), ("training", 1.0)}, r["tick_intervals"]
    # ...and the next in line trained on it.
    assert sum(steps > 0 for steps in r["trained_steps"].values()) >= 2, r["trained_steps"]
    assert r["peak_rss_mb"] > 0 and r["solo_p50"] > 0 and r["load_p50"] > 0


def _log(name: str, i: int, received: bytes, role: str = "analyse") -> load.SessionLog:
    log = load.SessionLog(name, load.marker(i), role, edits=[0.1])
    log.client = load.Client("http://127.0.0.1:1")
    log.client.received += received
    return log


def test_the_checks_catch_a_leak_a_blind_check_and_a_broken_cap():
    """The report's checks fail when they should: without a server, on logs made up to break them."""
    solo = _log("solo", 9, b"")
    mon = {"capacity": 1, "max_in_steps": 1, "max_holders": 1, "max_waiting": 0, "lease_seconds": 30.0, "lapsed": []}
    ok = [_log("s00", 0, b"..." + load.marker(0).encode()), _log("s01", 1, load.marker(1).encode())]
    assert load.failures(load.report(solo, ok, [], mon, 1.0, 1.0, cap=1)) == []
    leaky = [_log("s00", 0, (load.marker(0) + load.marker(1)).encode()), _log("s01", 1, load.marker(1).encode())]
    r = load.report(solo, leaky, [], mon, 1.0, 1.0, cap=1)
    assert r["leaks"] == ["s00 received " + load.marker(1)] and load.failures(r)
    blind = [_log("s00", 0, b"nothing of its own"), _log("s01", 1, load.marker(1).encode())]
    assert load.report(solo, blind, [], mon, 1.0, 1.0, cap=1)["own_marker_missing"] == ["s00"]
    over = load.report(solo, ok, [], {**mon, "max_in_steps": 2}, 1.0, 1.0, cap=1)
    assert any("training cap" in f for f in load.failures(over))
    unset = load.report(solo, ok, [], {**mon, "capacity": 2}, 1.0, 1.0, cap=1)  # the server ignored the cap asked for
    assert any("training cap" in f for f in load.failures(unset))
