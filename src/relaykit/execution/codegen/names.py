"""Safe names for generated code: no target or symbol name can inject code.

:func:`c_identifier` maps any string to a valid C identifier (letters, digits
and ``_`` only; a hash suffix keeps distinct names distinct once characters
were replaced); :func:`c_comment` makes text safe inside ``/* ... */``.

>>> c_identifier("tvmgen_default_ccompiler_main_0")
'tvmgen_default_ccompiler_main_0'
>>> name = c_identifier('f"); system("rm -rf /"); //')
>>> name.isidentifier() and '"' not in name
True
>>> c_comment("a */ b\\n c")
'a __ b_ c'
>>> c_string('say "hi"\\n')
'"say \\\\"hi\\\\"\\\\n"'
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["c_identifier", "c_comment", "c_string", "C_KEYWORDS"]

C_KEYWORDS = frozenset(
    [
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "_Bool",
        "_Complex",
        "_Imaginary",
    ]
)
_VALID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def c_identifier(name: str, max_len: int = 120) -> str:
    """A C identifier for ``name``: itself when already valid (and not a keyword or
    reserved ``__`` name), else a cleaned form with a short hash of the original."""
    text = str(name)
    if (
        _VALID.match(text)
        and text not in C_KEYWORDS
        and not text.startswith("__")
        and (len(text) <= max_len)
    ):
        return text
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", text)[: max_len - 10].strip("_") or "f"
    if cleaned[0].isdigit():
        cleaned = "f_" + cleaned
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned}_{digest}"


def c_comment(text: str, max_len: int = 200) -> str:
    """``text`` safe inside a C block comment: letters, digits and ``_.,:=+-`` kept, every
    other character (``*``, ``/``, quotes, newlines, parentheses...) shown as ``_``."""
    safe = "".join(
        ch if ch.isascii() and (ch.isalnum() or ch in "_.,:=+- ") else "_" for ch in str(text)
    )
    return safe[:max_len]


def c_string(text: str, max_len: int = 500) -> str:
    """``text`` as a C string literal (quotes included); every character outside
    printable ASCII, and ``"``, ``\\`` and ``?``, is escaped."""
    out = []
    for ch in str(text)[:max_len]:
        code = ord(ch)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 32 <= code < 127:
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        else:
            out.append(f"\\{code:03o}" if code < 256 else "?")
    return '"' + "".join(out) + '"'
