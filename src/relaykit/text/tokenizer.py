"""Tokens of the Relay text format, and source positions for error messages.

A token is a tuple ``(kind, text, offset, line, column)``; kinds are ``GRAPH`` (``%0``),
``LOCAL`` (``%x``), ``GLOBAL`` (``@main``), ``NUMBER`` (``1f``, ``-3i8``),
``STRING``, ``IDENT`` (``nn.conv2d``, ``fn``, ``float32``), ``PUNCT``
(``( ) [ ] { } , ; = : ? . ->`` and the infix operators
``* / + - < > <= >= == !=``), ``VERSION`` (``#[version = "0.0.5"]``)
and ``EOF``. Whitespace and ``//`` / ``/* */`` comments (which nest) are skipped; the text
after ``#[metadata]`` is returned separately.

>>> toks, meta = tokenize(Source("%0 = add(%x, 1f); // done"))
>>> [(k, t) for k, t, *_ in toks]  # doctest: +NORMALIZE_WHITESPACE
[('GRAPH', '%0'), ('PUNCT', '='), ('IDENT', 'add'), ('PUNCT', '('), ('LOCAL', '%x'),
 ('PUNCT', ','), ('NUMBER', '1f'), ('PUNCT', ')'), ('PUNCT', ';'), ('EOF', '')]
"""

from __future__ import annotations

import bisect
import re

from relaykit.errors import ParseError
from relaykit.ir.expr import Span

__all__ = ["Token", "Source", "TextSpan", "tokenize"]

Token = tuple[str, str, int, int, int]  # kind, text, offset, line, column


def _block_comment(depth: int) -> str:
    """A ``/* ... */`` comment in which comments nest up to ``depth`` levels, as in TVM."""
    inner = r"[^*/]|\*(?!/)|/(?!\*)"
    if depth > 1:
        inner += "|" + _block_comment(depth - 1)
    return r"/\*(?:" + inner + r")*\*/"


_MAX_COMMENT_NESTING = 8
_SKIP = r"((?:[ \t\r\n]+|//[^\n]*|" + _block_comment(_MAX_COMMENT_NESTING) + r")*)"
_TOKEN = (
    r"(\#\[[ \t]*version[ \t]*=[ \t]*\"[^\"\n]*\"[ \t]*\]|\#\[[ \t]*metadata[ \t]*\]"
    r"|%[0-9]+(?![A-Za-z_])|%[A-Za-z_](?:[A-Za-z0-9_.]|/(?=[A-Za-z_]))*|@[A-Za-z0-9_.]+"
    r"|-?(?:inf|nan)(?:f16|f32|f64|f)(?![A-Za-z0-9_])"
    r"|-?[0-9][A-Za-z0-9_.]*(?:(?<=[eE])[+-][0-9][A-Za-z0-9_.]*)?"
    r"|\"(?:[^\"\\\n]|\\.)*\"|[A-Za-z_][A-Za-z0-9_.]*|->|==|!=|<=|>=|[()\[\]{},;=:?.*+<>]"
    r"|/\*|.|\Z)"
)
_SCAN = re.compile(_SKIP + _TOKEN, re.DOTALL)
_NUMBER = re.compile(
    r"-?(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+)"
    r"(?:f16|f32|f64|f|i8|i16|i32|i64|i|u8|u16|u32|u64)?|-?(?:inf|nan)(?:f16|f32|f64|f)"
)
# Kinds decided by the first character alone (the others go through _classify).
_FIRST_KIND: dict[str, str] = {
    **{c: "PUNCT" for c in "()[]{},;=:?.*+<>"},
    **{c: "IDENT" for c in "abcdefghjklmopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"},
}


class TextSpan(Span):
    """A span into Relay text, as the parser gives every node it builds.

    The printer leaves these out of the text it writes (they describe a position in
    text, which printing again would only restate), while other spans -- set by a
    user or a frontend -- are printed as ``span=name:line:column``.
    """

    __slots__ = ()


class Source:
    """Source text with its name; turns offsets into lines, columns and error messages."""

    def __init__(self, text: str, name: str = "<string>") -> None:
        self.text = text
        self.name = name
        self._line_starts: list[int] | None = None

    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        return self._line_starts

    def location(self, offset: int) -> tuple[int, int]:
        """1-based ``(line, column)`` of ``offset``."""
        starts = self.line_starts
        i = bisect.bisect_right(starts, offset) - 1
        return i + 1, offset - starts[i] + 1

    def line_text(self, line: int) -> str:
        starts = self.line_starts
        begin = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        return self.text[begin:end]

    def span(self, start: int, end: int) -> Span:
        line, col = self.location(start)
        end_line, end_col = self.location(max(start, end))
        return TextSpan(self.name, line, end_line, col, end_col)

    def error(self, offset: int, length: int, message: str) -> ParseError:
        """A ParseError at ``offset`` showing the line and a caret under ``length`` chars."""
        offset = min(max(offset, 0), len(self.text))
        line, col = self.location(offset)
        text = self.line_text(line).replace("\t", " ")
        width = max(1, min(length, len(text) - col + 1))
        shown = text if len(text) <= 200 else text[:200] + " ..."
        caret = " " * (col - 1) + "^" * width if col <= 201 else ""
        err = ParseError(f"{self.name}:{line}:{col}: error: {message}\n  {shown}\n  {caret}")
        err.source_name, err.line, err.column = self.name, line, col  # type: ignore[attr-defined]
        err.message = message  # type: ignore[attr-defined]
        return err


def tokenize(source: Source) -> tuple[list[Token], tuple[str, int] | None]:
    """All tokens of ``source`` up to ``#[metadata]``, ending with ``EOF``, and the
    metadata text with its offset (None when there is no metadata section)."""
    text = source.text
    out: list[Token] = []
    append = out.append
    offset, line, line_start = 0, 1, 0
    first_kind = _FIRST_KIND
    for skipped, tok in _SCAN.findall(text):
        if skipped:
            if "\n" in skipped:
                line += skipped.count("\n")
                line_start = offset + skipped.rfind("\n") + 1
            offset += len(skipped)
        kind = first_kind.get(tok[:1])
        if kind is None:
            if not tok:
                break
            kind = _classify(source, tok, offset)
            if kind == "METADATA":
                append(("EOF", "", offset, line, offset - line_start + 1))
                end = offset + len(tok)
                return out, (text[end:], end)
        append((kind, tok, offset, line, offset - line_start + 1))
        offset += len(tok)
    append(("EOF", "", len(text), line, len(text) - line_start + 1))
    return out, None


def _classify(source: Source, tok: str, offset: int) -> str:
    """The kind of a token whose first character does not decide it."""
    c = tok[0]
    if c == "%":
        if len(tok) > 1:
            return "GRAPH" if tok[1].isdigit() else "LOCAL"
    elif c == "-" and tok == "->":
        return "PUNCT"
    elif c.isdigit() or c == "-":
        if _NUMBER.fullmatch(tok):
            return "NUMBER"
        if tok == "-":
            return "PUNCT"  # binary or unary minus
        raise source.error(offset, len(tok), f"malformed number {tok!r}")
    elif c in "in":
        return "NUMBER" if _NUMBER.fullmatch(tok) else "IDENT"
    elif c == "@" or c == '"':
        if len(tok) > 1:
            return "GLOBAL" if c == "@" else "STRING"
    elif tok in ("/", "!="):
        return "PUNCT"
    elif c == "#" and len(tok) > 1:
        return "METADATA" if "metadata" in tok else "VERSION"
    raise _bad_char(source, offset, tok)


def _comment_closes(text: str, offset: int) -> bool:
    """Whether the (nesting) block comment opening at ``offset`` is closed."""
    depth = 0
    for m in re.finditer(r"/\*|\*/", text[offset:]):
        depth += 1 if m.group() == "/*" else -1
        if depth == 0:
            return True
    return False


def _bad_char(source: Source, offset: int, text: str) -> ParseError:
    if text == "/*":
        if _comment_closes(source.text, offset):
            return source.error(
                offset, 2, f"block comments nest at most {_MAX_COMMENT_NESTING} levels deep"
            )
        return source.error(offset, 2, "comment is not closed: missing '*/'")
    if text == '"':
        return source.error(offset, 1, "string literal is not closed on this line")
    if text == "%":
        return source.error(offset, 1, "expected a variable name after '%'")
    if text == "@":
        return source.error(offset, 1, "expected a global name after '@'")
    if text == "#":
        return source.error(
            offset, 1, "unexpected '#': expected #[version = \"0.0.5\"] or #[metadata]"
        )
    return source.error(offset, 1, f"unexpected character {text!r}")
