"""Join codes, teacher secrets, student ids and nicknames: what a class accepts from the outside world.

Everything a browser sends (a code typed or in a link, a nickname, a student id in a link) passes through
here before it names a key in a store, so a hostile string is refused or made plain text, never a key.
Example: clean_code(" k7q-m2x ") -> "K7QM2X"; clean_code("K7QM2X; DEL *") -> None.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import unicodedata

# No 0/O, 1/I/L: a code read off a projector at the back of a room is typed right the first time.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LEN = 6  # 31^6 ≈ 8.9e8 codes: a guessed code hits one of 100 live classes with p ≈ 1e-7
MAX_NICKNAME = 24  # characters, after cleaning
_CODE = re.compile(f"[{ALPHABET}]{{{CODE_LEN}}}")
_ID = re.compile(r"[A-Za-z0-9_-]{22}")  # secrets.token_urlsafe(16)
_SEPARATORS = re.compile(r"[\s\-_.]")


def new_code() -> str:
    """A random join code, e.g. 'K7QM2X'."""
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LEN))


def clean_code(s) -> str | None:
    """A typed or linked code in canonical form, or None when it cannot be one (spaces, dashes, case ignored)."""
    if not isinstance(s, str) or len(s) > 40:
        return None
    s = _SEPARATORS.sub("", s).upper()
    return s if _CODE.fullmatch(s) else None


def new_id() -> str:
    """An unguessable id (a student's, or the teacher's secret): 22 URL-safe characters, 128 bits."""
    return secrets.token_urlsafe(16)


def clean_id(s) -> str | None:
    """A student id or teacher secret from a link, or None when it has not the shape of one."""
    return s if isinstance(s, str) and _ID.fullmatch(s) else None


def hash_secret(secret: str) -> str:
    """What the store keeps of a teacher secret (a leaked store does not hand out the teacher's screen)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def secret_matches(secret: str | None, stored: str | None) -> bool:
    """Constant-time check of a teacher secret against the stored hash."""
    if not secret or not stored or clean_id(secret) is None:
        return False
    return hmac.compare_digest(hash_secret(secret), stored)


def clean_nickname(s) -> str:
    """A nickname as plain, bounded text: NFKC, no control or format characters, spaces collapsed, 24 chars.

    Escaping for display is the page's job (it shows the nickname as literal text); this only bounds it.
    Example: clean_nickname("  Ada\\u202e\\n  <b>L</b> ") -> "Ada <b>L</b>".
    """
    if not isinstance(s, str):
        return ""
    s = unicodedata.normalize("NFKC", s[:200])
    s = "".join(c if unicodedata.category(c)[0] != "C" else " " for c in s)  # Cc, Cf (bidi overrides), Cs, Co, Cn
    return " ".join(s.split())[:MAX_NICKNAME].strip()
