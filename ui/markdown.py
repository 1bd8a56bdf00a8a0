"""User text inside Streamlit markdown, shown literally: no formatting, no directive, no HTML of its own."""

from __future__ import annotations

import re


def md_literal(s: str) -> str:
    """Backslash-escape every ASCII punctuation character so markdown shows `s` literally.

    Example: "*a* [b]" -> "\\*a\\* \\[b\\]". (A token like "*" or ":red[x]" must not format a label.)
    """
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", s)


def escape_markdown(s: str) -> str:
    """User-derived text for st.markdown, shown literally: markdown escaped, < and > as entities."""
    return md_literal(s).replace("\\<", "&lt;").replace("\\>", "&gt;")
