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

from classroom import codes
from classroom.store import (
    IDLE_HOURS,
    JOIN_RATE,
    JOIN_WINDOW,
    LOCKED,
    META,
    PRESENT_SECONDS,
    TAKEN,
    TOO_FAST,
    ClassError,
    ClassStore,
    NoSuchClass,
    NotTeacher,
    Question,
    StoreUnavailable,
    View,
    check_publish,
    view_from,
)

PREFIX = "bx:class:"
SOCKET_TIMEOUT = 1.0  # seconds: one try of one command (a class's commands take well under a millisecond)
# One retry: redis-py retries a command and, inside each try, its reconnection, so 3 retries let one read of a frozen
# Redis wait up to about 19 s (1 + 4 x 4.5 s, seen with py-spy under serve.sh); with 1, about 3 s.
RETRIES = 1
# After a call the store did not answer (killed: in milliseconds; frozen: after its tries), every call fails at once
# until a thread of the store's own, pinging it every FAIL_FAST s, hears it again: a frozen Redis no longer holds
# every page's reads (a student's vote box, read every 2 s, waited seconds per read, was rerun by its next tick
# before it could say "reconnecting", and the page sat silent for the whole freeze).
FAIL_FAST = 0.25  # seconds
CHANNEL = "bx:class-changed"  # a class's code, published whenever its seq moves (ClassStore.watch)

# Each script returns {"err", message} to refuse, with the same messages as the in-process store.
# KEYS[1] = the class; ARGV[1] = idle ms.
_TEACHER = """
local h = redis.call('HGET', KEYS[1], 'secret')
if not h then return {'err', 'nosuch'} end
if h ~= ARGV[2] then return {'err', 'teacher'} end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
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

# ARGV: idle ms, new sid, nickname, max students, now ms, seat hash ('' = none), folded nickname, join rate,
# join window ms. Returns {'ok', sid}: the seat of this seat token if it has one, else a new seat.
JOIN = """
local k = KEYS[1]
if redis.call('EXISTS', k) == 0 then return {'err', 'nosuch'} end
redis.call('PEXPIRE', k, ARGV[1])
local now, seat = tonumber(ARGV[5]), ARGV[6]
if seat ~= '' then
  local sid = redis.call('HGET', k, 'seat:' .. seat)
  if sid and redis.call('HEXISTS', k, 's:' .. sid) == 1 then
    redis.call('HSET', k, 'h:' .. sid, ARGV[5])
    return {'ok', sid}
  end
end
if redis.call('HGET', k, 'locked') == '1' then return {'err', 'locked'} end
if tonumber(redis.call('HGET', k, 'n_students')) >= tonumber(ARGV[4]) then return {'err', 'full'} end
if now - tonumber(redis.call('HGET', k, 'jw') or '0') >= tonumber(ARGV[9]) then
  redis.call('HSET', k, 'jw', ARGV[5], 'jn', '0')
end
if tonumber(redis.call('HGET', k, 'jn') or '0') >= tonumber(ARGV[8]) then return {'err', 'rate'} end
local nick, fold = ARGV[3], ARGV[7]
if nick ~= '' and redis.call('HEXISTS', k, 'n:' .. fold) == 1 then return {'err', 'taken'} end
local n = tonumber(redis.call('HGET', k, 'n_seq') or '0') + 1
while nick == '' or redis.call('HEXISTS', k, 'n:' .. fold) == 1 do
  nick, fold, n = 'Student ' .. n, 'student ' .. n, n + 1
end
local sid = ARGV[2]
redis.call('HSET', k, 's:' .. sid, nick, 'n:' .. fold, sid, 'h:' .. sid, ARGV[5], 'h0:' .. sid, ARGV[5])
if seat ~= '' then redis.call('HSET', k, 'seat:' .. seat, sid, 'z:' .. sid, seat) end
redis.call('HINCRBY', k, 'n_students', 1)
redis.call('HINCRBY', k, 'n_seq', 1)
redis.call('HINCRBY', k, 'jn', 1)
return {'ok', sid}
"""

# ARGV[3] the seat's sid, ARGV[4] its folded nickname.
REMOVE = _TEACHER + """
local k, sid = KEYS[1], ARGV[3]
if redis.call('HEXISTS', k, 's:' .. sid) == 0 then return {'ok'} end
if redis.call('HGET', k, 'n:' .. ARGV[4]) == sid then redis.call('HDEL', k, 'n:' .. ARGV[4]) end
local seat = redis.call('HGET', k, 'z:' .. sid)
if seat and redis.call('HGET', k, 'seat:' .. seat) == sid then redis.call('HDEL', k, 'seat:' .. seat) end
redis.call('HDEL', k, 's:' .. sid, 'h:' .. sid, 'h0:' .. sid, 'z:' .. sid)
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
return {'ok'}
"""

LOCK = _TEACHER + """
redis.call('HSET', KEYS[1], 'locked', ARGV[3])
return {'ok'}
"""

VOTE = """
local k, sid, qid, choice = KEYS[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('EXISTS', k) == 0 then return {'err', 'nosuch'} end
if redis.call('HEXISTS', k, 's:' .. sid) == 0 then return {'err', 'member'} end
if qid == '' or qid ~= redis.call('HGET', k, 'qid') then return {'err', 'gone'} end
if redis.call('HGET', k, 'revealed') == '1' then return {'err', 'closed'} end
if tonumber(choice) >= tonumber(redis.call('HGET', k, 'nc')) then return {'err', 'choice'} end
local vk = 'v:' .. qid .. ':' .. sid
local old = redis.call('HGET', k, vk)
redis.call('PEXPIRE', k, ARGV[1])
if old == choice then return {'ok'} end
if tonumber(redis.call('HGET', k, 'n_actions')) >= tonumber(ARGV[5]) then return {'err', 'votes'} end
redis.call('HSET', k, vk, choice)
redis.call('HINCRBY', k, 't:' .. qid .. ':' .. choice, 1)
if old then redis.call('HINCRBY', k, 't:' .. qid .. ':' .. old, -1)
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
local joined, mine = 0, ''
if ARGV[2] ~= '' then
  joined = redis.call('HEXISTS', k, 's:' .. ARGV[2])
  if joined == 1 then redis.call('HSET', k, 'h:' .. ARGV[2], ARGV[4]) end
  if joined == 1 and qid ~= '' then mine = redis.call('HGET', k, 'v:' .. qid .. ':' .. ARGV[2]) or '' end
end
if ARGV[3] == '1' then
  redis.call('PEXPIRE', k, ARGV[1])
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
out[#out + 1] = redis.call('HGET', k, 'secret')
return out
""".replace("@META@", ", ".join(f"'{f}'" for f in META))

PUBLISH, REVEAL = (src.replace("@CHANNEL@", CHANNEL).replace("@CUT@", str(len(PREFIX) + 1))
                   for src in (PUBLISH, REVEAL))

ERRORS = {
    "teacher": NotTeacher, "nosuch": NoSuchClass,
    "gone": "This question is no longer on the teacher's screen.",
    "choice": "No such choice.",
    "member": "You are not in this class: join it first.",
    "closed": "The answer has been revealed: votes on this question are closed.",
    "votes": "This class has reached its cap of votes.",
    "full": "This class is full ({max_students} students).",
    "locked": LOCKED, "rate": TOO_FAST, "taken": TAKEN,
    "questions": "This class has shown its {max_questions} questions; start a new class.",
}


class RedisStore(ClassStore):
    """Classes in Redis, shared by every process that opens the same URL."""

    def __init__(self, url: str, idle_seconds: float = IDLE_HOURS * 3600, clock=time.time, join_rate: int = JOIN_RATE):
        self.url, self.idle_seconds, self.clock, self.join_rate = url, idle_seconds, clock, join_rate
        # A store that does not answer is retried once after 0.05 s, each try bounded by a 1 s timeout: a killed
        # Redis fails in milliseconds, a frozen one in about 3 s; then StoreUnavailable (FAIL_FAST), and
        # the page says it is reconnecting. A restarted Redis has lost the scripts: redis-py loads them again.
        self.r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=SOCKET_TIMEOUT,
                                      socket_connect_timeout=SOCKET_TIMEOUT, health_check_interval=30,
                                      retry=Retry(ExponentialBackoff(cap=0.2, base=0.05), RETRIES),
                                      retry_on_error=[redis.ConnectionError, redis.TimeoutError])
        self._scripts = {name: self.r.register_script(src) for name, src in
                         (("publish", PUBLISH), ("split", SPLIT), ("reveal", REVEAL), ("join", JOIN),
                          ("vote", VOTE), ("view", VIEW), ("remove", REMOVE), ("lock", LOCK))}
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
    def _ms(self) -> int:
        return max(1, int(self.idle_seconds * 1000))

    def _key(self, code: str) -> str:
        c = codes.clean_code(code)
        if c is None:
            raise NoSuchClass()
        return PREFIX + c

    def _call(self, name: str, code: str, *args):
        key = self._key(code)
        with self._reach():
            out = self._scripts[name](keys=[key], args=[self._ms, *args])
        if isinstance(out, list) and out and out[0] == "err":
            err = ERRORS[out[1]]
            raise err() if isinstance(err, type) else ClassError(err.format(max_students=self.max_students,
                                                                             max_questions=self.max_questions,
                                                                             nick=args[2] if name == "join" else ""))
        return out

    def create(self) -> tuple[str, str]:
        secret = codes.new_id()
        fields = {"secret": codes.hash_secret(secret), "step": 1, "text": "", "pair": "", "has_pair": 0, "qid": "",
                  "q": "", "nc": 0, "split": 0, "revealed": 0, "answer": "", "n_students": 0, "n_actions": 0,
                  "n_questions": 0, "n_revealed": 0, "seq": 0, "n_seq": 0, "n_present": 0, "locked": 0, "jw": 0,
                  "jn": 0, "model": ""}
        with self._reach():
            for _ in range(20):
                code = codes.new_code()
                key = PREFIX + code
                # HSETNX on 'secret' claims the code atomically: two processes never hand out the same one.
                if self.r.hsetnx(key, "secret", fields["secret"]):
                    with self.r.pipeline() as p:
                        p.hset(key, mapping=fields)
                        p.pexpire(key, self._ms)
                        p.execute()
                    return code, secret
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

    def join(self, code, nickname="", seat=None) -> str:
        nick = codes.clean_nickname(nickname)
        seat_h = codes.hash_seat(seat) if codes.clean_id(seat) else ""
        out = self._call("join", code, codes.new_id(), nick, self.max_students, self._now_ms(), seat_h,
                         codes.fold_nickname(nick), self.join_rate, int(JOIN_WINDOW * 1000))
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
            raise ClassError("You are not in this class: join it first.")
        if not isinstance(choice, int) or choice < 0:
            raise ClassError("No such choice.")
        self._call("vote", code, sid, str(qid or ""), str(choice), self.max_actions)

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
        tally, answered, mine, joined, stored = out[len(META):]
        if secret is not None and not codes.secret_matches(secret, stored):
            raise NotTeacher()
        return view_from(codes.clean_code(code), meta, tally, int(answered), mine or None, joined == 1,
                         teacher=secret is not None)

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
            self.r.delete(key)
            self.r.publish(CHANNEL, codes.clean_code(code))  # the students' screens say the class has ended
