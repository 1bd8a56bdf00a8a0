"""Fair limits: token buckets that cost one source (an address, a browser, a seat), not the class it shares.

A bucket holds up to `burst` tokens and refills at `per_second`; an action takes one token or is refused with
the seconds until the next one. Its state is one string, "tokens|ms", so the in-process store keeps it in a dict
and the Redis store in a hash field, read and written by the same arithmetic in Lua (redis_store.BUCKET).

    JOIN_ADDRESS.take(None, now_ms)  -> (True, "19.0000|<now>", 0.0)   # a first join from this address
    client_address(None, "203.0.113.9, 10.0.0.2")  -> "10.0.0.2"  # behind our HAProxy: the hop it saw
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Rate:
    """A token bucket's shape: `burst` actions at once, then `per_second`."""

    burst: float
    per_second: float

    @classmethod
    def parse(cls, spec: str, name: str = "") -> Rate:
        """ "20/20" -> 20 at once, refilled over 20 s (1 a second)."""
        try:
            n, _, s = spec.partition("/")
            burst, seconds = float(n), float(s)
            if burst >= 1 and seconds > 0:
                return cls(burst, burst / seconds)
        except ValueError:
            pass
        raise ValueError(f"{name or 'a rate'} is N/S (N actions, refilled over S seconds), not {spec[:40]!r}")

    @classmethod
    def env(cls, name: str, default: str) -> Rate:
        return cls.parse(os.environ.get(name, "").strip() or default, name)

    @property
    def full_ms(self) -> int:
        """How long an empty bucket takes to fill (its state can be forgotten after that: a full bucket)."""
        return int(self.burst / self.per_second * 1000) + 1

    def take(self, state: str | None, now_ms: int) -> tuple[bool, str | None, float]:
        """(allowed, the new state or None when refused, seconds until a token when refused)."""
        tokens, since = self.burst, now_ms
        if state:
            t, _, ms = state.partition("|")
            tokens, since = float(t), int(ms)
        tokens = min(self.burst, tokens + max(0, now_ms - since) / 1000 * self.per_second)
        if tokens < 1:
            return False, None, (1 - tokens) / self.per_second
        return True, f"{tokens - 1:.4f}|{now_ms}", 0.0


# New seats from one client address in one class: a lecture hall behind one NAT shares an address, so a bucket
# that refills, not a cap (a hall of 120 pressing Join in the same second is in within about 100 s); a script from
# one address takes 20 seats, then one a second, and never empties the class's own bucket (JOIN_CLASS is larger
# and six times as fast).
JOIN_ADDRESS = Rate.env("BERT_EXPLORER_CLASS_JOINS_PER_ADDRESS", "20/20")
# New seats in one class from everyone (the backstop against many addresses at once).
JOIN_CLASS = Rate.parse((os.environ.get("BERT_EXPLORER_CLASS_JOINS_PER_10S", "").strip() or "60") + "/10",
                        "BERT_EXPLORER_CLASS_JOINS_PER_10S")
# Votes cast or changed by one seat: a student changes a vote a few times, not 20 times a second.
SEAT_VOTES = Rate.env("BERT_EXPLORER_CLASS_SEAT_VOTES", "10/20")
# Votes one seat may change in a class (its first vote on each question always counts): 200 seats x 240 is the
# class's 48,000, so no seat's changes can use up what the others' votes need.
SEAT_CHANGES = int(os.environ.get("BERT_EXPLORER_CLASS_SEAT_CHANGES", "240"))
# "Start a class" from one client address, and from one browser: a teacher starts a class or two a lesson.
STARTS = Rate.env("BERT_EXPLORER_CLASS_STARTS", "5/300")
# A class no student has joined is forgotten after this many minutes without its teacher's page reading it.
EMPTY_IDLE_MINUTES = float(os.environ.get("BERT_EXPLORER_CLASS_EMPTY_IDLE_MINUTES", "10"))
# Classes no student has joined, at most, per store (their own share: a flood of them never evicts or blocks a
# class with students); in the in-process store also at most this share of its bytes.
MAX_EMPTY = int(os.environ.get("BERT_EXPLORER_CLASS_MAX_EMPTY", "500"))
EMPTY_SHARE = 0.125

TRUSTED_PROXIES = tuple(p.strip() for p in
                        os.environ.get("BERT_EXPLORER_TRUSTED_PROXIES", "127.0.0.1,::1").split(",") if p.strip())


def client_address(peer: str | None, forwarded_for: str | None = None,
                   trusted: tuple[str, ...] = TRUSTED_PROXIES) -> str | None:
    """The client's address for the limits, from `st.context.ip_address` (the TCP peer; None for a loopback peer)
    and the X-Forwarded-For header: the peer, or, when the peer is a proxy we run (a loopback HAProxy), the address
    that proxy saw (the header's last entry; earlier ones are the client's own word). IPv6 is cut to its /64 (one
    host holds a whole /64). None when there is no address to limit: none given, or a loopback one (this machine,
    or a local tunnel that sends no header: one bucket for everyone would be worse than none).
    Example: client_address(None, "6.6.6.6, 203.0.113.9") -> "203.0.113.9"; client_address("2001:db8::1")
    -> "2001:db8::/64"; client_address(None) -> None."""
    addr = _ip(peer)
    if (addr is None and peer is None or addr is not None and str(addr) in trusted) and forwarded_for:
        hop = _ip(str(forwarded_for).split(",")[-1])
        addr = hop if hop is not None else addr
    if addr is None or addr.is_loopback:
        return None
    if addr.version == 6:
        if addr.ipv4_mapped is not None:
            return None if addr.ipv4_mapped.is_loopback else str(addr.ipv4_mapped)
        return str(ipaddress.ip_network(f"{addr}/64", strict=False))
    return str(addr)


def _ip(s) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(str(s).strip().strip("[]")) if s else None
    except ValueError:
        return None


def source_key(kind: str, value: str | None) -> str | None:
    """What a store keeps of an address or a browser token: a short hash (never the address itself)."""
    if not value:
        return None
    return hashlib.sha256(f"{kind}:{value}".encode()).hexdigest()[:24]
