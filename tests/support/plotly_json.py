"""Reading a plotly figure's JSON as the page sent it."""

from __future__ import annotations

import base64

import numpy as np


def arr(v) -> np.ndarray:
    """A plotly JSON array: a list, or plotly's binary form {"dtype", "bdata", "shape"}."""
    if isinstance(v, dict):
        shape = [int(s) for s in str(v.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).reshape(shape)
    return np.asarray(v)
