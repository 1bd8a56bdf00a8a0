"""The one place the app reads Streamlit's internals, because no public way exists: dropping closed tabs' sessions.

Streamlit keeps a closed tab's session for `server.disconnectedSessionTTL` (120 s) so that a reconnect finds it, in a
`cachetools.TTLCache` that drops expired entries only when another session is stored: after the last student of a
class leaves nothing is stored again, and every session, with its `st.session_state`, stays in memory
(streamlit/streamlit#12506, open; the fix proposed in #12521 was closed unmerged). Streamlit 1.67 has no public
call that expires them. tests/app/test_housekeeping.py's canary fails when a release moves what this reads.
"""

from __future__ import annotations


def reap_closed_sessions() -> int | None:
    """Drop the sessions whose tabs closed more than `server.disconnectedSessionTTL` ago; how many remain stored.

    None when this Streamlit has no such store, or no server runs (then there is nothing to do here)."""
    try:
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return None
        cache = Runtime.instance()._session_mgr._session_storage._cache  # a TTLCache of stored sessions
        cache.expire()
        return len(cache)
    except (AttributeError, ImportError):  # another Streamlit: its storage is laid out differently
        return None
