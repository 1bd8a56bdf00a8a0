"""The Redis class store: several Streamlit processes (deploy/serve.sh behind HAProxy) share each class.

One Redis hash per class, `bx:class:<CODE>`, with the fields of classroom/store.py. Every write is a
Lua script, so it runs atomically inside Redis (two processes' votes never lose an increment, a
vote never lands after the reveal); every write renews the key's expiry (idle classes vanish on
their own). Redis's own memory is bounded by the deploy script (`--maxmemory`), a class by its caps.
"""

from __future__ import annotations

import contextlib
import threading
import time

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from classroom import codes, limits
from classroom.limits import EMPTY_IDLE_MINUTES, JOIN_ADDRESS, JOIN_CLASS, SEAT_VOTES, STARTS, Rate
from classroom.store import (
    IDLE_HOURS,
    JOIN_ADDRESS_SLOW,
    JOIN_CLASS_SLOW,
    META,
    PRESENT_SECONDS,
    SEAT_CAP,
    START_SLOW,
    VOTE_SLOW,
    ClassError,
    ClassFull,
    ClassLocked,
    ClassStore,
    NicknameTaken,
    NoSuchClass,
    NotInClass,
    NotTeacher,
    Question,
    RateLimited,
    SeatRemoved,
    StoreFull,
    StoreUnavailable,
    View,
    VoteCap,
    VotingClosed,
    check_publish,
    view_from,
)

PREFIX = "bx:class:"
SOCKET_TIMEOUT = 1.0  # seconds: one try of one command (a class's commands take well under a millisecond)
# One retry: redis-py retries a command and, inside each try, its reconnection, so each retry multiplies how long
# one read of a frozen Redis can wait; one keeps that to a few seconds.
RETRIES = 1
# After a call the store did not answer, every call fails at once until a thread of the store's own, pinging it
# every FAIL_FAST s, hears it again, so that a frozen Redis cannot hold every page's reads and each page can say
# "reconnecting" at once.
FAIL_FAST = 0.25  # seconds
CHANNEL = "bx:class-changed"  # a class's code, published whenever its seq moves (ClassStore.watch)
EMPTY = "bx:class-empty"  # a sorted set: the codes of classes no student has joined, by when last seen so
STARTS_PREFIX = "bx:class-starts:"  # a string per address or browser: its bucket of class starts

# Every script starts with these. ARGV[1] is "<idle ms>,<empty idle ms>": a class with students lives the idle
# hours after its last write, one without the empty minutes. take() is limits.Rate.take, the same arithmetic.
PRELUDE = """
local function ttl(k)
  local full, empty = string.match(ARGV[1], '(%d+),(%d+)')
  if tonumber(redis.call('HGET', k, 'n_students') or '0') > 0 then return full end
  return empty
end
local function take(state, now, burst, rate)
  local tokens, since = burst, now
  if state then
    local t, ms = string.match(state, '([^|]+)|(%d+)')
    tokens, since = tonumber(t), tonumber(ms)
  end
  local d = now - since
  if d < 0 then d = 0 end
  tokens = math.min(burst, tokens + d / 1000 * rate)
  if tokens < 1 then return false, nil, (1 - tokens) / rate end
  return true, string.format('%.4f|%d', tokens - 1, now), 0
end
"""

# Each script returns {"err", message} to refuse, with the same messages as the in-process store.
# KEYS[1] = the class; ARGV[1] = the ttl (PRELUDE).
_TEACHER = """
local h = redis.call('HGET', KEYS[1], 'secret')
if not h then return {'err', 'nosuch'} end
if h ~= ARGV[2] then return {'err', 'teacher'} end
redis.call('PEXPIRE', KEYS[1], ttl(KEYS[1]))
"""

PUBLISH = _TEACHER + """
local k = KEYS[1]
local step, text, pair, has_pair, qid, q, nc = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local function screen()  -- what a student's page is drawn from ('' for a field a class made earlier lacks)
  local f = redis.call('HMGET', k, 'step', 'text', 'pair', 'has_pair', 'qid', 'model')
  for i = 1, 6 do f[i] = f[i] or '' end
  return table.concat(f, '\\0')
end
local before = screen()
local new_q = qid ~= redis.call('HGET', k, 'qid')
if new_q and qid ~= '' and redis.call('HEXISTS', k, 'p:' .. qid) == 0 then
  if tonumber(redis.call('HGET', k, 'n_questions')) >= tonumber(ARGV[10]) then return {'err', 'questions'} end
  redis.call('HSET', k, 'p:' .. qid, '1')
  redis.call('HINCRBY', k, 'n_questions', 1)
end
redis.call('HSET', k, 'step', step, 'text', text, 'pair', pair, 'has_pair', has_pair, 'model', ARGV[11])
if new_q then
  local done = false
  if qid ~= '' then done = redis.call('HGET', k, 'r:' .. qid) end
  redis.call('HSET', k, 'qid', qid, 'q', q, 'nc', nc)
  if done then
    redis.call('HSET', k, 'split', '1', 'revealed', '1', 'answer', tostring(cjson.decode(done)['answer']))
  else
    redis.call('HSET', k, 'split', '0', 'revealed', '0', 'answer', '')
  end
end
local after = screen()
if after ~= before then
  redis.call('HINCRBY', k, 'seq', 1)
  redis.call('PUBLISH', '@CHANNEL@', string.sub(k, @CUT@))
end
return {'ok'}
"""

SPLIT = _TEACHER + """
redis.call('HSET', KEYS[1], 'split', ARGV[3])
return {'ok'}
"""

REVEAL = _TEACHER + """
local k, qid, answer = KEYS[1], ARGV[3], tonumber(ARGV[4])
if qid == '' or qid ~= redis.call('HGET', k, 'qid') then return {'err', 'gone'} end
if answer >= tonumber(redis.call('HGET', k, 'nc')) then return {'err', 'choice'} end
if redis.call('HGET', k, 'revealed') == '1' then return {'ok'} end
redis.call('HSET', k, 'revealed', '1', 'split', '1', 'answer', ARGV[4])
local d = cjson.decode(redis.call('HGET', k, 'q'))
local n = redis.call('HINCRBY', k, 'n_revealed', 1)
local text = redis.call('HGET', k, 'text')
if redis.call('HGET', k, 'has_pair') == '1' then text = text .. ' · B: ' .. redis.call('HGET', k, 'pair') end
redis.call('HSET', k, 'r:' .. qid, cjson.encode({n = n, step = tonumber(redis.call('HGET', k, 'step')),
  text = text, prompt = d['prompt'], choices = d['choices'], answer = answer,
  model = redis.call('HGET', k, 'model') or ''}))
redis.call('HINCRBY', k, 'seq', 1)
redis.call('PUBLISH', '@CHANNEL@', string.sub(k, @CUT@))
return {'ok'}
"""

# ARGV: ttl, new sid, nickname, max students, now ms, seat hash ('' = none), folded nickname, the class's bucket
# (burst, per second), the address's hash ('' = none) and bucket (burst, per second). KEYS[2] the empty classes.
# Returns {'ok', sid}: the seat of this seat token if it has one, else a new seat.
JOIN = """
local k = KEYS[1]
if redis.call('EXISTS', k) == 0 then return {'err', 'nosuch'} end
local now, seat = tonumber(ARGV[5]), ARGV[6]
if seat ~= '' then
  local sid = redis.call('HGET', k, 'seat:' .. seat)
  if sid and redis.call('HEXISTS', k, 's:' .. sid) == 1 then
    redis.call('HSET', k, 'h:' .. sid, ARGV[5])
    redis.call('PEXPIRE', k, ttl(k))
    return {'ok', sid}
  end
end
if redis.call('HGET', k, 'locked') == '1' then return {'err', 'locked'} end
local students = tonumber(redis.call('HGET', k, 'n_students'))
if students >= tonumber(ARGV[4]) then return {'err', 'full'} end
local nick, fold = ARGV[3], ARGV[7]
if nick ~= '' and redis.call('HEXISTS', k, 'n:' .. fold) == 1 then return {'err', 'taken'} end
local a_state, addr = nil, ARGV[10]
if addr ~= '' then
  local ok, st, wait = take(redis.call('HGET', k, 'ja:' .. addr), now, tonumber(ARGV[11]), tonumber(ARGV[12]))
  if not ok then return {'err', 'rate_address', tostring(wait)} end
  a_state = st
end
local c_ok, c_state, c_wait = take(redis.call('HGET', k, 'jb'), now, tonumber(ARGV[8]), tonumber(ARGV[9]))
if not c_ok then return {'err', 'rate_class', tostring(c_wait)} end
local n = tonumber(redis.call('HGET', k, 'n_seq') or '0') + 1
while nick == '' or redis.call('HEXISTS', k, 'n:' .. fold) == 1 do
  nick, fold, n = 'Student ' .. n, '@STUDENT@' .. string.gsub(tostring(n), '%d', @DIGITS@), n + 1
end
local sid = ARGV[2]
redis.call('HSET', k, 's:' .. sid, nick, 'n:' .. fold, sid, 'h:' .. sid, ARGV[5], 'h0:' .. sid, ARGV[5], 'jb', c_state)
if a_state then redis.call('HSET', k, 'ja:' .. addr, a_state) end
if seat ~= '' then redis.call('HSET', k, 'seat:' .. seat, sid, 'z:' .. sid, seat) end
redis.call('HINCRBY', k, 'n_students', 1)
redis.call('HINCRBY', k, 'n_seq', 1)
if students == 0 then redis.call('ZREM', KEYS[2], string.sub(k, @CUT@)) end
redis.call('PEXPIRE', k, ttl(k))
return {'ok', sid}
"""

# KEYS: the class (a free code), the address's and the browser's start buckets, the empty classes. ARGV: ttl, now,
# the start bucket (burst, per second), use the address's ('1'/'0'), use the browser's, most empty classes, empty
# idle ms, the code, a bucket's full ms, then the class's fields and values.
CREATE = """
local k, z = KEYS[1], KEYS[4]
if redis.call('EXISTS', k) == 1 then return {'err', 'code'} end
local now, burst, rate = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local states, wait = {}, 0
for i = 2, 3 do
  if ARGV[3 + i] == '1' then
    local ok, st, w = take(redis.call('GET', KEYS[i]), now, burst, rate)
    if not ok and w > wait then wait = w end
    states[i] = st
  end
end
if wait > 0 then return {'err', 'rate_start', tostring(wait)} end
-- The oldest entries (a bounded sweep): a class that has students, or is gone, leaves; one still empty stays.
for _, code in ipairs(redis.call('ZRANGEBYSCORE', z, '-inf', now - tonumber(ARGV[8]), 'LIMIT', 0, 50)) do
  local n = redis.call('HGET', '@PREFIX@' .. code, 'n_students')
  if not n or tonumber(n) > 0 then redis.call('ZREM', z, code) else redis.call('ZADD', z, now, code) end
end
if redis.call('ZCARD', z) >= tonumber(ARGV[7]) then return {'err', 'empty_full'} end
for i = 2, 3 do
  if states[i] then redis.call('SET', KEYS[i], states[i], 'PX', ARGV[10]) end
end
redis.call('HSET', k, unpack(ARGV, 11))
redis.call('PEXPIRE', k, ttl(k))
redis.call('ZADD', z, now, ARGV[9])
return {'ok'}
"""

# ARGV[3] the seat's sid, ARGV[4] its folded nickname.
REMOVE = _TEACHER + """
local k, sid = KEYS[1], ARGV[3]
if redis.call('HEXISTS', k, 's:' .. sid) == 0 then return {'ok'} end
if redis.call('HGET', k, 'n:' .. ARGV[4]) == sid then redis.call('HDEL', k, 'n:' .. ARGV[4]) end
local seat = redis.call('HGET', k, 'z:' .. sid)
if seat and redis.call('HGET', k, 'seat:' .. seat) == sid then redis.call('HDEL', k, 'seat:' .. seat) end
redis.call('HDEL', k, 's:' .. sid, 'h:' .. sid, 'h0:' .. sid, 'z:' .. sid, 'vb:' .. sid)
redis.call('HSET', k, 'x:' .. sid, '1')
local qid = redis.call('HGET', k, 'qid')
if qid ~= '' and redis.call('HGET', k, 'revealed') ~= '1' then
  local old = redis.call('HGET', k, 'v:' .. qid .. ':' .. sid)
  if old then
    redis.call('HDEL', k, 'v:' .. qid .. ':' .. sid)
    redis.call('HINCRBY', k, 't:' .. qid .. ':' .. old, -1)
    redis.call('HINCRBY', k, 'a:' .. qid, -1)
  end
end
redis.call('HINCRBY', k, 'n_students', -1)
redis.call('PUBLISH', '@CHANNEL@', string.sub(k, @CUT@) .. ':' .. sid)
return {'ok'}
"""

LOCK = _TEACHER + """
redis.call('HSET', KEYS[1], 'locked', ARGV[3])
return {'ok'}
"""

# ARGV: ttl, sid, qid, choice, the class's cap of changes, now, the seat's bucket (burst, per second), a seat's cap
# of changes.
VOTE = """
local k, sid, qid, choice = KEYS[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('EXISTS', k) == 0 then return {'err', 'nosuch'} end
if redis.call('HEXISTS', k, 's:' .. sid) == 0 then
  if redis.call('HEXISTS', k, 'x:' .. sid) == 1 then return {'err', 'removed'} end
  return {'err', 'member'}
end
if qid == '' or qid ~= redis.call('HGET', k, 'qid') then return {'err', 'gone'} end
if redis.call('HGET', k, 'revealed') == '1' then return {'err', 'closed'} end
if tonumber(choice) >= tonumber(redis.call('HGET', k, 'nc')) then return {'err', 'choice'} end
local vk = 'v:' .. qid .. ':' .. sid
local old = redis.call('HGET', k, vk)
redis.call('PEXPIRE', k, ttl(k))
if old == choice then return {'ok'} end
local ok, bucket, wait = take(redis.call('HGET', k, 'vb:' .. sid), tonumber(ARGV[6]), tonumber(ARGV[7]),
                              tonumber(ARGV[8]))
if not ok then return {'err', 'rate_vote', tostring(wait)} end
if old then
  if tonumber(redis.call('HGET', k, 'vc:' .. sid) or '0') >= tonumber(ARGV[9]) then return {'err', 'seat_cap'} end
  if tonumber(redis.call('HGET', k, 'n_actions')) >= tonumber(ARGV[5]) then return {'err', 'votes'} end
end
redis.call('HSET', k, vk, choice, 'vb:' .. sid, bucket)
redis.call('HINCRBY', k, 't:' .. qid .. ':' .. choice, 1)
if old then
  redis.call('HINCRBY', k, 't:' .. qid .. ':' .. old, -1)
  redis.call('HINCRBY', k, 'vc:' .. sid, 1)
else redis.call('HINCRBY', k, 'a:' .. qid, 1) end
redis.call('HINCRBY', k, 'n_actions', 1)
return {'ok'}
"""

# Returns {meta..., tally, answered, my vote, joined}; ARGV[2] = the student id ('' for none).
VIEW = """
local k = KEYS[1]
local meta = redis.call('HMGET', k, @META@)
if not meta[1] then return false end
local qid = meta[5]
local nc = tonumber(redis.call('HGET', k, 'nc') or '0')
local tally = {}
for i = 0, nc - 1 do tally[#tally + 1] = redis.call('HGET', k, 't:' .. qid .. ':' .. i) or '0' end
local joined, mine, removed = 0, '', 0
if ARGV[2] ~= '' then
  joined = redis.call('HEXISTS', k, 's:' .. ARGV[2])
  if joined == 0 then removed = redis.call('HEXISTS', k, 'x:' .. ARGV[2]) end
  if joined == 1 then redis.call('HSET', k, 'h:' .. ARGV[2], ARGV[4]) end
  if joined == 1 and qid ~= '' then mine = redis.call('HGET', k, 'v:' .. qid .. ':' .. ARGV[2]) or '' end
end
if ARGV[3] == '1' then
  redis.call('PEXPIRE', k, ttl(k))
  local all, since, n = redis.call('HGETALL', k), tonumber(ARGV[4]) - tonumber(ARGV[5]), 0
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'h:' and tonumber(all[i + 1]) >= since then n = n + 1 end
  end
  redis.call('HSET', k, 'n_present', n)
  meta[13] = tostring(n)
end
local out = {}
for i = 1, #meta do out[i] = meta[i] or '' end
out[#out + 1] = tally
out[#out + 1] = redis.call('HGET', k, 'a:' .. qid) or '0'
out[#out + 1] = mine
out[#out + 1] = joined
out[#out + 1] = removed
out[#out + 1] = redis.call('HGET', k, 'secret')
return out
""".replace("@META@", ", ".join(f"'{f}'" for f in META))

# A nameless seat's folded nickname, as codes.fold_nickname makes it: "Student 10" -> "student lO" (UTS #39 skeleton).
_DIGITS = "{" + ", ".join(f"['{d}'] = '{codes.fold_nickname(str(d))}'" for d in range(10)) + "}"
_STUDENT = codes.fold_nickname("Student 1")[:-len(codes.fold_nickname("1"))]
assert all(codes.fold_nickname(f"Student {n}") == _STUDENT + "".join(codes.fold_nickname(d) for d in str(n))
           for n in (1, 10, 123, 4567)), "the Lua nameless fold no longer matches codes.fold_nickname"
PUBLISH, REVEAL, SPLIT, LOCK, REMOVE, VIEW, JOIN, VOTE, CREATE = (
    PRELUDE + src.replace("@CHANNEL@", CHANNEL).replace("@CUT@", str(len(PREFIX) + 1)).replace("@PREFIX@", PREFIX)
    .replace("@DIGITS@", _DIGITS).replace("@STUDENT@", _STUDENT)
    for src in (PUBLISH, REVEAL, SPLIT, LOCK, REMOVE, VIEW, JOIN, VOTE, CREATE))

ERRORS = {
    "teacher": NotTeacher, "nosuch": NoSuchClass, "locked": ClassLocked, "removed": SeatRemoved, "member": NotInClass,
    "gone": lambda s: VotingClosed("This question is no longer on the teacher's screen."),
    "closed": lambda s: VotingClosed("The answer has been revealed: votes on this question are closed."),
    "choice": lambda s: ClassError("No such choice."),
    "votes": lambda s: VoteCap("This class has reached its cap of changed votes: your votes so far count."),
    "seat_cap": lambda s: VoteCap(SEAT_CAP.format(n=s.seat_changes)),
    "full": lambda s: ClassFull(s.max_students),
    "empty_full": lambda s: StoreFull("classes waiting for their first student"),
    "questions": lambda s: ClassError(f"This class has shown its {s.max_questions} questions; start a new class."),
}
WAITS = {"rate_address": JOIN_ADDRESS_SLOW, "rate_class": JOIN_CLASS_SLOW, "rate_vote": VOTE_SLOW,
         "rate_start": START_SLOW}


class RedisStore(ClassStore):
    """Classes in Redis, shared by every process that opens the same URL."""

    def __init__(self, url: str, idle_seconds: float = IDLE_HOURS * 3600, clock=time.time, join_rate: int | None = None,
                 empty_idle_seconds: float = EMPTY_IDLE_MINUTES * 60):
        self.url, self.idle_seconds, self.clock = url, idle_seconds, clock
        self.empty_idle_seconds = min(empty_idle_seconds, idle_seconds)
        self.join_class = JOIN_CLASS if join_rate is None else Rate(join_rate, join_rate / 10)
        self.join_address, self.seat_votes, self.starts = JOIN_ADDRESS, SEAT_VOTES, STARTS
        # A store that does not answer is retried once after 0.05 s, each try bounded by a 1 s timeout: a killed
        # Redis fails in milliseconds, a frozen one in about 3 s; then StoreUnavailable (FAIL_FAST), and
        # the page says it is reconnecting. A restarted Redis has lost the scripts: redis-py loads them again.
        self.r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=SOCKET_TIMEOUT,
                                      socket_connect_timeout=SOCKET_TIMEOUT, health_check_interval=30,
                                      retry=Retry(ExponentialBackoff(cap=0.2, base=0.05), RETRIES),
                                      retry_on_error=[redis.ConnectionError, redis.TimeoutError])
        self._scripts = {name: self.r.register_script(src) for name, src in
                         (("publish", PUBLISH), ("split", SPLIT), ("reveal", REVEAL), ("join", JOIN),
                          ("vote", VOTE), ("view", VIEW), ("remove", REMOVE), ("lock", LOCK), ("create", CREATE))}
        self._listener, self._listen_lock = None, threading.Lock()
        self._down, self._down_lock = None, threading.Lock()  # the error that made the store down (FAIL_FAST)

    @contextlib.contextmanager
    def _reach(self):
        """Around every call to Redis: its errors become StoreUnavailable; while the store is down (FAIL_FAST), every
        call says so at once."""
        if self._down is not None:
            raise StoreUnavailable(self._down)
        try:
            yield
        except (redis.ConnectionError, redis.TimeoutError) as e:
            self._went_down(type(e).__name__)
            raise StoreUnavailable(type(e).__name__) from None
        except redis.exceptions.OutOfMemoryError:
            raise StoreFull() from None  # at --maxmemory with nothing it may evict: said as full, not as away
        except redis.RedisError as e:
            raise StoreUnavailable(type(e).__name__) from None

    def _went_down(self, why: str) -> None:
        """Mark the store down, and start the thread that pings it until it answers (one at a time)."""
        with self._down_lock:
            if self._down is not None:
                return
            self._down = why

        def ping_until_it_answers() -> None:
            while True:
                time.sleep(FAIL_FAST)
                try:
                    self.r.ping()  # a restarted Redis still loading its file answers LOADING: still down
                except redis.RedisError:
                    continue
                self._down = None
                return

        threading.Thread(target=ping_until_it_answers, name="class-store-ping", daemon=True).start()

    def _start_watching(self) -> None:
        """One listener thread per store: Redis's pub/sub tells this process of every process's changes."""
        with self._listen_lock:
            if self._listener is not None:
                return
            ps = self.r.pubsub(ignore_subscribe_messages=True)
            ps.subscribe(**{CHANNEL: lambda m: self._changed(str(m["data"]))})
            # A lost connection is retried (redis-py subscribes again); a second between tries, not a busy loop.
            self._listener = ps.run_in_thread(sleep_time=1.0, daemon=True,
                                              exception_handler=lambda e, ps, t: time.sleep(1.0))

    @property
    def _ms(self) -> str:
        """The scripts' ARGV[1]: the idle ms of a class with students, and of one without (PRELUDE's ttl)."""
        return f"{max(1, int(self.idle_seconds * 1000))},{max(1, int(self.empty_idle_seconds * 1000))}"

    def _key(self, code: str) -> str:
        c = codes.clean_code(code)
        if c is None:
            raise NoSuchClass()
        return PREFIX + c

    def _call(self, name: str, code: str, *args, keys: tuple = ()):
        key = self._key(code)
        with self._reach():
            out = self._scripts[name](keys=[key, *keys], args=[self._ms, *args])
        if isinstance(out, list) and out and out[0] == "err":
            self._refuse(out, nick=args[1] if name == "join" else "")
        return out

    def _refuse(self, out: list, nick: str = ""):
        """A script's {'err', why[, seconds]} as the typed refusal the in-process store raises."""
        why = out[1]
        if why in WAITS:
            raise RateLimited(WAITS[why], float(out[2]))
        if why == "taken":
            raise NicknameTaken(nick)
        err = ERRORS[why]
        raise err() if isinstance(err, type) else err(self)

    def create(self, *, client=None, device=None) -> tuple[str, str]:
        secret = codes.new_id()
        fields = {"secret": codes.hash_secret(secret), "step": 1, "text": "", "pair": "", "has_pair": 0, "qid": "",
                  "q": "", "nc": 0, "split": 0, "revealed": 0, "answer": "", "n_students": 0, "n_actions": 0,
                  "n_questions": 0, "n_revealed": 0, "seq": 0, "n_seq": 0, "n_present": 0, "locked": 0, "model": ""}
        addr = limits.source_key("start-address", client)
        dev = limits.source_key("start-device", device if codes.clean_id(device) else None)
        flat = [x for kv in fields.items() for x in kv]
        for _ in range(20):
            code = codes.new_code()
            # The script claims the code only when no class has it: two processes never hand out the same one.
            with self._reach():
                out = self._scripts["create"](
                    keys=[PREFIX + code, STARTS_PREFIX + (addr or "-"), STARTS_PREFIX + (dev or "-"), EMPTY],
                    args=[self._ms, self._now_ms(), self.starts.burst, self.starts.per_second, int(bool(addr)),
                          int(bool(dev)), self.max_empty, int(self.empty_idle_seconds * 1000), code,
                          self.starts.full_ms, *flat])
            if out[0] == "ok":
                return code, secret
            if out[1] != "code":
                self._refuse(out)
        raise ClassError("No free class code found; try again.")

    def is_teacher(self, code, secret) -> bool:
        c = codes.clean_code(code)
        if c is None:
            return False
        with self._reach():  # StoreUnavailable, not "no": the caller keeps the teacher's key until the store answers
            return codes.secret_matches(secret, self.r.hget(PREFIX + c, "secret"))

    def _secret(self, secret) -> str:
        return codes.hash_secret(secret) if codes.clean_id(secret) else "-"

    def publish(self, code, secret, step, text, pair, question: Question | None, model: str = "") -> None:
        step, text, pair_s, model = check_publish(step, text, pair, model)
        q = question.payload() if question else ""
        self._call("publish", code, self._secret(secret), step, text, pair_s, int(pair is not None),
                   question.qid if question else "", q, len(question.choices) if question else 0, self.max_questions,
                   model)

    def show_split(self, code, secret, on=True) -> None:
        self._call("split", code, self._secret(secret), int(bool(on)))

    def reveal(self, code, secret, qid, answer) -> None:
        if not isinstance(answer, int) or answer < 0:
            raise ClassError("No such choice.")
        self._call("reveal", code, self._secret(secret), str(qid or ""), answer)

    def join(self, code, nickname="", seat=None, *, client=None, device=None) -> str:
        nick = codes.clean_nickname(nickname)
        seat = seat if codes.clean_id(seat) else device
        seat_h = codes.hash_seat(seat) if codes.clean_id(seat) else ""
        out = self._call("join", code, codes.new_id(), nick, self.max_students, self._now_ms(), seat_h,
                         codes.fold_nickname(nick), self.join_class.burst, self.join_class.per_second,
                         limits.source_key("address", client) or "", self.join_address.burst,
                         self.join_address.per_second, keys=(EMPTY,))
        return out[1]

    def remove(self, code, secret, sid) -> None:
        if codes.clean_id(sid) is None:
            return
        key = self._key(code)
        with self._reach():
            nick = self.r.hget(key, f"s:{sid}")
        self._call("remove", code, self._secret(secret), sid, codes.fold_nickname(nick or ""))

    def lock(self, code, secret, on=True) -> None:
        self._call("lock", code, self._secret(secret), int(bool(on)))

    def vote(self, code, sid, qid, choice) -> None:
        if codes.clean_id(sid) is None:
            self._key(code)  # a wrong code says so first
            raise NotInClass()
        if not isinstance(choice, int) or choice < 0:
            raise ClassError("No such choice.")
        self._call("vote", code, sid, str(qid or ""), str(choice), self.max_actions, self._now_ms(),
                   self.seat_votes.burst, self.seat_votes.per_second, self.seat_changes)

    def view(self, code, sid=None, secret=None) -> View:
        sid = sid if codes.clean_id(sid) else ""
        out = self._call("view", code, sid, int(secret is not None), self._now_ms(), PRESENT_SECONDS * 1000)
        return self._view_of(code, out, secret)

    def views(self, code, sids) -> dict[str, View]:
        """`view` for each student: one pipeline of the same script, one round trip (redis-py checks the script is
        loaded first)."""
        c = codes.clean_code(code)
        if c is None:
            return {}
        key, now = PREFIX + c, self._now_ms()
        with self._reach():
            with self.r.pipeline(transaction=False) as p:
                for sid in sids:
                    self._scripts["view"](keys=[key], args=[self._ms, sid if codes.clean_id(sid) else "", 0, now,
                                                            PRESENT_SECONDS * 1000], client=p)
                outs = p.execute()
        if not all(outs):
            return {}  # the class is gone
        return {sid: self._view_of(code, out, None) for sid, out in zip(sids, outs)}

    def _view_of(self, code: str, out: list, secret: str | None) -> View:
        """The view script's reply as a View."""
        if not out:
            raise NoSuchClass()
        meta = dict(zip(META, out[: len(META)]))
        tally, answered, mine, joined, removed, stored = out[len(META):]
        if secret is not None and not codes.secret_matches(secret, stored):
            raise NotTeacher()
        return view_from(codes.clean_code(code), meta, tally, int(answered), mine or None, joined == 1,
                         teacher=secret is not None, removed=removed == 1)

    def fields(self, code, secret) -> dict:
        key = self._key(code)
        with self._reach():
            f = self.r.hgetall(key)
        if not f:
            raise NoSuchClass()
        if not codes.secret_matches(secret, f.get("secret")):
            raise NotTeacher()
        return f

    def end(self, code, secret) -> None:
        self.fields(code, secret)
        key = self._key(code)
        with self._reach():
            with self.r.pipeline(transaction=False) as p:
                p.delete(key)
                p.zrem(EMPTY, codes.clean_code(code))
                p.execute()
            self.r.publish(CHANNEL, codes.clean_code(code))  # the students' screens say the class has ended
