"""The attention and tokens the offline bertviz renderer is tested on (tests/inspect and tests/browser): one token
hostile markup, one a RoBERTa-style piece with a line separator and a comment opener."""

from __future__ import annotations

import numpy as np

HOSTILE = "</script><img src=x onerror=alert(1)>"
# The only URLs left in the page: XML namespace names in d3 / require.js. They are identifiers
# passed to createElementNS, never fetched.
XML_NAMESPACES = {
    "http://www.w3.org/1999/xhtml",
    "http://www.w3.org/1999/xlink",
    "http://www.w3.org/2000/svg",
    "http://www.w3.org/2000/xmlns/",
    "http://www.w3.org/XML/1998/namespace",
}

L, H, T, B_START = 2, 3, 6, 3
TOKENS = ["[CLS]", "the", HOSTILE, "[SEP]", "Ġdog\u2028<!--", "[SEP]"]


def random_attention(layers=L, heads=H, t=T, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random((layers, heads, t, t)) ** 4  # peaky, like real attention
    return a / a.sum(-1, keepdims=True)

