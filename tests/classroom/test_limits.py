"""Fair limits: floods from one client cost that client, not the class; the same tests on both stores, each on a
clock the test moves (no sleeps). A real redis-server for the Redis store (tests/conftest.py)."""

from __future__ import annotations

import pytest

import classroom
from classroom import ClassError, NoSuchClass, Question, RateLimited, StoreFull
from classroom.codes import clean_nickname, fold_nickname, new_id
from classroom.limits import JOIN_ADDRESS, JOIN_CLASS, SEAT_VOTES, STARTS, Rate, client_address

Q1 = Question("q1", "What does the model put in the gap?", ("wrote", "sent", "read"))
ATTACKER, HALL, HOME = "203.0.113.66", "198.51.100.7", "192.0.2.44"


class Clock:
    """A clock the test moves: the buckets' time (both stores) and the in-process store's idle time."""

    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def tick(self, seconds: float) -> None:
        self.t += seconds


def test_the_defaults_leave_room_for_others():
    """One address's bucket is smaller and slower than its class's (it can never empty it), a seat's votes are a
    human's pace, and the per-seat share of changes times the seats is the class's cap."""
    assert JOIN_ADDRESS.burst < JOIN_CLASS.burst and JOIN_ADDRESS.per_second < JOIN_CLASS.per_second
    assert (JOIN_ADDRESS.burst, JOIN_ADDRESS.per_second) == (20, 1.0) and (JOIN_CLASS.burst, JOIN_CLASS.per_second) \
        == (60, 6.0)
    assert SEAT_VOTES.per_second <= 1 and STARTS.burst == 5
    s = classroom.MemoryStore()
    assert s.seat_changes * s.max_students <= s.max_actions
    assert Rate.parse("20/20") == Rate(20, 1.0)
    for bad in ("", "20", "0/10", "x/y", "5/0"):
        with pytest.raises(ValueError, match="N/S"):
            Rate.parse(bad, "X")


def test_a_bucket_refills_and_says_how_long_to_wait():
    r = Rate(3, 0.5)
    state, took = None, 0
    for _ in range(5):
        ok, new, wait = r.take(state, 0)
        if ok:
            state, took = new, took + 1
    assert took == 3 and not ok and wait == pytest.approx(2.0)
    assert r.take(state, 1999)[0] is False and r.take(state, 2000)[0] is True  # one token after 2 s
    assert r.take(state, 10**9)[1].startswith("2.0000|")  # full again, never more than the burst


def test_client_address_trusts_only_our_proxy():
    """st.context.ip_address is None for a loopback peer (our HAProxy): then the header's last hop counts."""
    assert client_address(None, "6.6.6.6, 203.0.113.9") == "203.0.113.9"  # HAProxy's hop, not the client's word
    assert client_address("127.0.0.1", "6.6.6.6, 203.0.113.9") == "203.0.113.9"
    assert client_address("8.8.8.8", "1.1.1.1") == "8.8.8.8"  # a client's own header is not believed
    assert client_address("2001:db8::1") == client_address("2001:db8::ffff") == "2001:db8::/64"
    assert client_address("::ffff:1.2.3.4") == "1.2.3.4"
    assert client_address("203.0.113.9", None) == "203.0.113.9"
    # No address to limit: none, this machine (a developer, a local tunnel without the header), or junk.
    for peer, xff in ((None, None), ("127.0.0.1", None), (None, "127.0.0.1"), ("::1", "not an address"),
                      ("::ffff:127.0.0.1", None), ("junk", None), ("", None)):
        assert client_address(peer, xff) is None, (peer, xff)


def test_a_flood_of_joins_from_one_client_takes_a_bounded_number_of_seats_and_real_students_still_join(make_store):
    """300 scripted joins from one address, a fresh browser token each, over 3 s: at most the address's burst and
    its refill get seats; a real student from another address joins at once in the middle of it; a student on
    the attacker's own network (a NAT) joins after the wait the refusal names; 300 joins repeating one token are
    one seat."""
    clock = Clock()
    s = make_store(clock=clock)
    code, secret = s.create()
    s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1)
    seats, waits, real = 0, [], None
    for i in range(300):
        try:
            s.join(code, f"bot {i}", seat=new_id(), client=ATTACKER)
            seats += 1
        except RateLimited as e:
            waits.append(e.retry_after)
            assert "from your network" in str(e) and e.kind == "rate"
        if i == 150:
            real = s.join(code, "Ada", seat=new_id(), client=HALL)  # a real student elsewhere: at once
        clock.tick(0.01)
    assert 20 <= seats <= 20 + 3 + 1, seats  # the burst, then one a second
    assert real is not None and s.view(code, sid=real).joined
    assert max(waits) <= 1.0  # nobody is told to wait more than a second
    # A real student behind the attacker's NAT, the flood's last second just spent: in now, or after the wait the
    # refusal names (under a second).
    token = new_id()
    try:
        bo = s.join(code, "Bo", seat=token, client=ATTACKER)
    except RateLimited as refused:
        assert refused.retry_after <= 1.0
        clock.tick(refused.retry_after)
        bo = s.join(code, "Bo", seat=token, client=ATTACKER)
    assert s.view(code, sid=bo).joined
    # One browser token repeated: one seat, and it takes nothing from its address's bucket.
    clock.tick(60)
    token = new_id()
    one = {s.join(code, f"again {i}", seat=token, client=HOME) for i in range(300)}
    assert len(one) == 1
    assert s.view(code, secret=secret).students == seats + 3
    assert len({s.join(code, f"home {i}", seat=new_id(), client=HOME) for i in range(19)}) == 19  # its burst intact


def test_a_paced_flood_is_bounded_by_its_refill_and_never_empties_the_class_bucket(make_store):
    """A script that paces itself at 10 joins a second for a minute: 20 + 60 seats, not the class; 30 students
    from 30 addresses arriving at the same time all join (the class's bucket is not the script's to empty)."""
    clock = Clock()
    s = make_store(clock=clock)
    code, secret = s.create()
    seats = 0
    for i in range(600):
        try:
            s.join(code, "", seat=new_id(), client=ATTACKER)
            seats += 1
        except RateLimited:
            pass
        if i % 10 == 9:
            assert all(s.join(code, "", seat=new_id(), client=f"10.0.{i}.{k}") for k in range(2))  # others, meanwhile
        clock.tick(0.1)
    assert 20 + 59 <= seats <= 20 + 61, seats
    students = s.view(code, secret=secret).students
    assert students == seats + 120 and students < s.max_students


def test_a_lecture_hall_behind_one_address_all_gets_in(make_store):
    """120 students behind one NAT pressing Join within a second, each pressing again when told: all in within
    about 100 s (20 at once, then one a second), none refused for good."""
    clock = Clock()
    s = make_store(clock=clock)
    code, _ = s.create()
    waiting = [(f"s{i}", new_id()) for i in range(120)]
    start = clock()
    while waiting:
        nick, token = waiting.pop(0)
        try:
            s.join(code, nick, seat=token, client=HALL)
        except RateLimited as e:
            waiting.append((nick, token))
            clock.tick(e.retry_after / 2)
    assert clock() - start <= 101


def test_the_strict_setting_for_own_addresses_makes_one_address_five_seats_then_one_a_minute(make_store):
    """docs/live-class.md's setting for students each on an address of their own
    (BERT_EXPLORER_CLASS_JOINS_PER_ADDRESS=5/300): a paced script from one address has 5 seats, then one a minute
    (200 seats would take over three hours), and a student on another address still joins."""
    clock = Clock()
    s = make_store(clock=clock)
    s.join_address = Rate.parse("5/300", "BERT_EXPLORER_CLASS_JOINS_PER_ADDRESS")
    code, _ = s.create()
    seats = 0
    for _ in range(10 * 60):  # one try a second for ten minutes
        try:
            s.join(code, "", seat=new_id(), client=ATTACKER)
            seats += 1
        except RateLimited as e:
            assert e.retry_after <= 60
        clock.tick(1.0)
    assert 5 + 9 <= seats <= 5 + 10, seats
    assert s.join(code, "Ada", seat=new_id(), client=HOME)


def test_four_seats_flipping_votes_cannot_stop_the_others_voting(make_store):
    """Four seats change their vote 20 times a second for two minutes: each gets its bucket's pace and then its
    share of changes; the class's cap is never reached, and every honest vote (and change) is counted."""
    clock = Clock()
    s = make_store(clock=clock)
    s.max_students, s.seat_changes = 30, 30
    s.max_actions = s.max_students * s.seat_changes
    code, secret = s.create()
    s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1)
    sids = [s.join(code, f"s{i}", seat=new_id(), client=f"10.0.0.{i}") for i in range(30)]
    flippers, honest = sids[:4], sids[4:]
    accepted, refused, cur = {f: 0 for f in flippers}, {"rate": 0, "cap": 0}, {f: 0 for f in flippers}
    for _ in range(20 * 120):
        for f in flippers:
            try:
                s.vote(code, f, "q1", (cur[f] + 1) % 3)  # always a change
                cur[f] = (cur[f] + 1) % 3
                accepted[f] += 1
            except ClassError as e:
                refused[e.kind] += 1
                assert e.kind in ("rate", "cap")
        clock.tick(0.05)
    # In the first 20 s: the bucket's 10, then one each 2 s; then the seat's 30 changes are used up.
    assert all(v == 1 + s.seat_changes for v in accepted.values()), accepted
    assert refused["cap"] > 0 and refused["rate"] > 0
    for i, sid in enumerate(honest):
        s.vote(code, sid, "q1", i % 3)
        s.vote(code, sid, "q1", (i + 1) % 3)  # changed once: counted too
    t = s.view(code, secret=secret)
    assert t.answered == 30
    mine = [0, 0, 0]
    for i in range(26):
        mine[(i + 1) % 3] += 1
    flips = [0, 0, 0]
    for f in flippers:
        flips[s.view(code, sid=f).my_vote] += 1
    assert t.tally == tuple(a + b for a, b in zip(mine, flips))
    with pytest.raises(classroom.VoteCap, match="changed your votes 30 times"):
        clock.tick(60)
        s.vote(code, flippers[0], "q1", (s.view(code, sid=flippers[0]).my_vote + 1) % 3)
    # A new question: a flipper's first vote still counts.
    s.publish(code, secret, 5, "He [MASK] it.", None, Question("q2", "?", ("a", "b")))
    s.vote(code, flippers[0], "q2", 1)
    assert s.view(code, secret=secret).tally == (0, 1)


def test_a_thousand_starts_from_one_client_leave_a_live_class_working(make_store):
    """1,000 "Start a class" from one address (a fresh browser token each) and 1,000 from one browser token (a
    fresh address each): five classes each, then a wait that is named; the live class's votes and joins go on
    between them, and another teacher still starts a class."""
    clock = Clock()
    s = make_store(clock=clock)
    code, secret = s.create(client=HOME)
    s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1)
    sids = [s.join(code, f"s{i}", seat=new_id(), client=HOME) for i in range(5)]
    token = new_id()
    started = {"address": 0, "device": 0}
    for i in range(1000):
        for kind, kw in (("address", {"client": ATTACKER, "device": new_id()}),
                         ("device", {"client": f"10.{i // 250}.{i % 250}.1", "device": token})):
            try:
                s.create(**kw)
                started[kind] += 1
            except RateLimited as e:
                assert "try again in" in str(e) and e.retry_after > 0
        if i % 100 == 0:
            s.vote(code, sids[i // 100 % 5], "q1", i // 100 % 3)
            sids.append(s.join(code, f"late {i}", seat=new_id(), client=HALL))
        clock.tick(0.01)
    assert started == {"address": 5, "device": 5}
    v = s.view(code, secret=secret)
    assert v.students == 15 and v.answered == 5
    assert s.create(client=HALL, device=new_id())  # another teacher


def test_a_flood_of_empty_classes_never_blocks_a_class_with_students(make_store):
    """Starts from many addresses: at most max_empty classes wait for a student (then StoreFull, said as such);
    the class with students keeps its joins and votes; once a waiting class gets its student it leaves the empty
    classes' count."""
    clock = Clock()
    s = make_store(clock=clock)
    s.max_empty = 8
    if make_store.backend == "redis":  # the session's redis-server holds other tests' waiting classes
        from classroom.redis_store import EMPTY

        s.r.delete(EMPTY)
    code, secret = s.create(client=HOME)
    s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1)
    a = s.join(code, "Ada", seat=new_id())
    made = []
    with pytest.raises(StoreFull, match="waiting for their first student"):
        for i in range(100):
            made.append(s.create(client=f"10.1.{i}.1"))
    assert len(made) == 8
    s.vote(code, a, "q1", 2)
    assert s.join(code, "Bo", seat=new_id()) and s.view(code, secret=secret).tally == (0, 0, 1)
    s.join(made[0][0], "Cy", seat=new_id())  # a waiting class gets its student: one more may start
    assert s.create(client=HALL)
    with pytest.raises(StoreFull) as e:
        s.create(client="10.250.0.1")
    assert e.value.kind == "store_full"


def test_empty_classes_have_their_own_share_of_memory():
    """In-process: classes no student has joined fill only their share of the bytes; a class with students still
    writes when they have."""
    clock = Clock()
    s = classroom.MemoryStore(max_bytes=400_000, clock=clock)
    code, secret = s.create()
    a = s.join(code, "Ada")
    with pytest.raises(StoreFull):
        for i in range(1000):
            c, sec = s.create(client=f"10.2.{i // 200}.{i % 200}")
            s.publish(c, sec, 1, "x" * 2000, None, None)
    assert sum(c.bytes for c in s._classes.values() if c.get("n_students") == "0") <= 400_000 * 0.125
    for i in range(20):
        s.publish(code, secret, 1 + i, "y" * 2000, None, Question(f"q{i}", "?", ("a", "b")))
        s.vote(code, a, f"q{i}", 1)
        clock.tick(30)
    assert s.view(code, sid=a).my_vote == 1


def test_an_idle_empty_class_goes_in_minutes_one_with_students_lasts_hours():
    """In-process, on the store's clock: an empty class lives while its teacher's page reads it, and goes ten
    minutes after; a class with a student lasts the idle hours."""
    clock = Clock()
    s = classroom.MemoryStore(clock=clock)
    empty, e_secret = s.create()
    full, f_secret = s.create()
    s.join(full, "Ada")
    for _ in range(6):  # the teacher's projector open for an hour: the class stays
        clock.tick(9 * 60)
        assert s.view(empty, secret=e_secret).students == 0
    clock.tick(10 * 60 + 1)
    with pytest.raises(NoSuchClass, match="ended or expired"):
        s.view(empty, secret=e_secret)
    clock.tick(2 * 3600)
    assert s.view(full, secret=f_secret).students == 1


def test_redis_gives_an_empty_class_minutes_and_one_with_students_hours(redis_url):
    """Redis expires keys on its own clock: the key's time to live says it (minutes while empty, the idle hours once
    a student joined, minutes again on the teacher's reads of an empty class)."""
    from classroom.redis_store import PREFIX, RedisStore

    s = RedisStore(redis_url)
    try:
        code, secret = s.create()
        assert 9 * 60_000 < s.r.pttl(PREFIX + code) <= 10 * 60_000
        s.view(code, secret=secret)
        assert 9 * 60_000 < s.r.pttl(PREFIX + code) <= 10 * 60_000
        s.join(code, "Ada")
        assert 3.9 * 3600_000 < s.r.pttl(PREFIX + code) <= 4 * 3600_000
    finally:
        s.r.close()


def test_confusable_nicknames_clash_and_long_pastes_are_cut(make_store):
    s = make_store()
    code, secret = s.create()
    s.join(code, "Ada")
    for twin in ("\u0410da", "\u0410d\u0430", "ADA", "Ad\u0430", "\uff21da"):  # Cyrillic А and а, case, width
        with pytest.raises(classroom.NicknameTaken, match="already has the nickname"):
            s.join(code, twin)
    s.join(code, "Bo1")
    with pytest.raises(classroom.NicknameTaken):
        s.join(code, "Bol")  # 1 and l
    s.join(code, "Student 1")
    s.join(code, "")  # nameless: not "Student 1" (taken), nor a confusable of it
    names = [r["nickname"] for r in s.seats(code, secret)]
    assert len({fold_nickname(n) for n in names}) == len(names)
    pasted = "Ada Lovelace, Countess of Lovelace " * 40  # 1,400 characters
    s.join(code, pasted)
    s.join(code, "\u200b" * 5000 + "Grace")  # invisible characters first
    names = [r["nickname"] for r in s.seats(code, secret)]
    assert clean_nickname(pasted) == "Ada Lovelace, Countess o" and clean_nickname(pasted) in names
    assert "Grace" in names  # before: the first 400 characters were read, all invisible: "Student 6"


def test_every_refusal_is_typed_with_a_message_a_student_can_act_on(make_store):
    clock = Clock()
    s = make_store(clock=clock)
    s.max_students = 2
    code, secret = s.create()
    s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1)
    a, b = s.join(code, "a"), s.join(code, "b")
    cases = []
    for call in (lambda: s.join(code, "c"), lambda: s.vote("ABCDEF" if code != "ABCDEF" else "ABCDEG", a, "q1", 0)):
        with pytest.raises(ClassError) as e:
            call()
        cases.append(e.value)
    s.remove(code, secret, b)
    with pytest.raises(classroom.SeatRemoved) as e:
        s.vote(code, b, "q1", 0)
    cases.append(e.value)
    for i in range(10):
        s.vote(code, a, "q1", i % 2)
    with pytest.raises(RateLimited) as e:
        s.vote(code, a, "q1", 2)
    cases.append(e.value)
    assert [c.kind for c in cases] == ["full", "gone", "removed", "rate"]
    assert "wait 2 seconds" in str(cases[-1]) and "your last vote counts" in str(cases[-1])
    assert all(str(c) and str(c)[0].isupper() for c in cases)


def test_a_full_redis_is_said_as_full_not_as_away(redis_url):
    """Redis at its --maxmemory with nothing to evict refuses writes (OOM): StoreFull, not "Reconnecting"."""
    from classroom.redis_store import RedisStore

    s = RedisStore(redis_url)
    code, secret = s.create()
    before = s.r.config_get("maxmemory*")
    try:
        s.r.config_set("maxmemory-policy", "noeviction")
        s.r.config_set("maxmemory", 1)
        with pytest.raises(StoreFull, match="as its memory allows"):
            s.create()
        with pytest.raises(StoreFull):
            s.join(code, "Ada")  # (a script that has already written may go on: Redis lets it finish)
    finally:
        s.r.config_set("maxmemory", before["maxmemory"])
        s.r.config_set("maxmemory-policy", before["maxmemory-policy"])
        s.r.close()


def test_the_lua_bucket_is_the_python_bucket(redis_url):
    """redis_store's take() (Lua) against limits.Rate.take on the same states and times: the same verdicts, states
    and waits."""
    import random

    import redis

    from classroom.redis_store import PRELUDE

    r = redis.Redis.from_url(redis_url, decode_responses=True)
    lua = r.register_script(PRELUDE + """
local ok, st, wait = take(ARGV[2] ~= '' and ARGV[2] or nil, tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
return {ok and 1 or 0, st or '', tostring(wait)}
""")
    rng = random.Random(54)
    try:
        for _ in range(300):
            rate = Rate(rng.choice([1, 3, 5, 10, 20, 60]), rng.choice([0.0167, 0.5, 1.0, 6.0]))
            now = 1_700_000_000_000 + rng.randrange(10**6)
            state = rng.choice([None, f"{rng.uniform(0, rate.burst):.4f}|{now - rng.randrange(120_000)}"])
            ok, st, wait = rate.take(state, now)
            got = lua(keys=[], args=["1,1", state or "", now, rate.burst, rate.per_second])
            assert (got[0] == 1, got[1] or None) == (ok, st) and float(got[2]) == pytest.approx(wait, abs=1e-9)
    finally:
        r.close()


def test_the_docs_say_the_limits_and_the_proxy_header_as_they_are():
    """docs/live-class.md's Fair limits says the numbers classroom/limits.py has, and what deploy/haproxy.cfg does
    about the client's address (it sends X-Forwarded-For: the per-address limits see each student)."""
    import pathlib

    from classroom.limits import EMPTY_IDLE_MINUTES, MAX_EMPTY, SEAT_CHANGES

    root = pathlib.Path(__file__).resolve().parents[2]
    doc = " ".join((root / "docs" / "live-class.md").read_text().split())
    limits = doc[doc.index("### Fair limits"):]
    assert "option forwardfor" in (root / "deploy" / "haproxy.cfg").read_text()
    assert "does not yet" not in limits and "sends the header (`option forwardfor`)" in limits
    said = [f"{JOIN_ADDRESS.burst:.0f} at once, then one a second", f"({JOIN_CLASS.burst:.0f}, then "
            f"{JOIN_CLASS.per_second:.0f} a second)", f"{SEAT_VOTES.burst:.0f} votes at once, then one every "
            f"{1 / SEAT_VOTES.per_second:.0f} s", f"change its votes {SEAT_CHANGES} times",
            f"start {STARTS.burst:.0f} classes at once, then one a minute", f"forgotten {EMPTY_IDLE_MINUTES:.0f} "
            f"minutes after", f"at most {MAX_EMPTY} per store", f"class's {classroom.MemoryStore().max_actions:,}"]
    assert STARTS.per_second * 60 == 1
    assert [s for s in said if s not in limits] == []
