"""Text students really type into a page (and some they should not): each must give a message, never a traceback."""

HOSTILE = {
    "empty": "",
    "whitespace": "   \n\t  ",
    "long": "the cat sat on the mat. " * 400,
    "only specials": "[CLS] [SEP]",
    "lone mask": "[MASK]",
    "glued mask": "the[MASK]sat on the mat[MASK].",
    "control chars": "a\x00b\x07c\x1bd [MASK]",
    "emoji": "I love 🍕 and 🐈 [MASK]",
    "cjk": "我爱北京天安门 [MASK]",
    "rtl": "שלום עולם مرحبا [MASK]",
    "mixed-case specials": "the [mask] sat on the [Mask] [sep]",
    "html": "<script>alert(1)</script><img src=x onerror=alert(1)> [MASK]",
}
