"""A cursor over the tokens of Relay text, with the parts of the grammar that
do not involve expressions: types, literals, attribute values, metadata references.

:class:`relaykit.text.parser` builds the expression grammar on top of it.

>>> r = TokenReader(Source('Tensor[(1, 3), float32] [1, 2.5f, "a"]'))
>>> r.parse_type(), r.attr_value()
(TensorType((1, 3), float32), (1, 2.5, 'a'))
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from relaykit.errors import ParseError
from relaykit.ir.expr import Constant, Span
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.symbolic import SizeVar
from relaykit.ir.types import (
    DTYPES,
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
)
from relaykit.runtime.ndarray import NDArray
from relaykit.target import VirtualDevice

from .literals import SUFFIX_DTYPE, float_text, unquote
from .metadata import MetadataError, load_metadata
from .tokenizer import Source, TextSpan, Token, tokenize

__all__ = ["TokenReader", "describe"]

#: dtype names without a width, as TVM's parser reads them
BARE_DTYPES = {"int": "int32", "uint": "uint32", "float": "float32"}

_NUM_SPLIT = re.compile(r"(-?)(.*?)(f16|f32|f64|f|i8|i16|i32|i64|i|u8|u16|u32|u64)?\Z")
_DIM = re.compile(r"[0-9]+(?:i32|i64)?")
_MAX_INT_DIGITS = 100  # longer integer literals are refused (Python's int() has a limit too)
_MAX_DIM = 2**63 - 1  # dimensions are int64, as in TVM
# Types and attribute values nest at most this deep (the IR compares, hashes and
# prints them recursively); TVM's printer never writes more than a few levels.
MAX_NESTING = 100
_DESCRIBE = {
    "GRAPH": "a temporary",
    "LOCAL": "a variable",
    "GLOBAL": "a global",
    "NUMBER": "a number",
    "STRING": "a string",
    "EOF": "the end of the text",
}


def describe(tok: Token) -> str:
    """How an error message names a token: ``';'``, ``a variable %x``."""
    kind, text = tok[0], tok[1]
    if kind in ("PUNCT", "IDENT"):
        return repr(text)
    what = _DESCRIBE.get(kind, kind.lower())
    return f"{what} {text}" if text else what


@functools.cache
def _float_max(dtype: str) -> float:
    """The largest finite ``dtype`` value as its shortest text reads (``65504`` for float16,
    ``3.4028235e+38`` for float32), so that the printed maximum parses back."""
    largest = np.finfo(dtype).max
    return float(float_text(float(largest), dtype) or largest)


class TokenReader:
    """Tokens of one source, a position in them, and the non-expression grammar."""

    def __init__(self, source: Source) -> None:
        self.src = source
        self.name = source.name
        self.toks, meta = tokenize(source)
        self.toks.extend([self.toks[-1]] * 3)
        self.pos = 0
        self.nesting = 0
        self.meta_consts: dict[int, Constant] = {}
        self.dim_vars: dict[str, SizeVar] = {}
        self.meta_arrays: list[np.ndarray] | None = None
        self.meta_vds: list[VirtualDevice] | None = None
        if meta is not None:
            self.load_meta(*meta)

    # -- token helpers -------------------------------------------------------------
    # Token texts tell kinds apart (strings keep their quotes, variables their sigils),
    # so comparing the text alone is enough; the list ends with spare EOF tokens.
    def peek(self, ahead: int = 0) -> Token:
        return self.toks[self.pos + ahead]

    def next(self) -> Token:
        tok = self.toks[self.pos]
        if tok[0] != "EOF":
            self.pos += 1
        return tok

    def at(self, text: str, ahead: int = 0) -> bool:
        return self.toks[self.pos + ahead][1] == text

    def accept(self, text: str) -> bool:
        if self.toks[self.pos][1] == text:
            self.pos += 1
            return True
        return False

    def expect(self, text: str, what: str = "") -> Token:
        tok = self.peek()
        if tok[1] != text or tok[0] not in ("PUNCT", "IDENT"):
            raise self.error(tok, f"expected '{text}'{what} but found {describe(tok)}")
        self.pos += 1
        return tok

    def integer(self, tok: Token, digits: str) -> int:
        """The value of the decimal ``digits`` (part of ``tok``), refusing absurd lengths."""
        if len(digits.lstrip("-")) > _MAX_INT_DIGITS:
            raise self.error(
                tok,
                f"integer literal of {len(digits)} digits is too long (at most {_MAX_INT_DIGITS})",
            )
        return int(digits)

    def enter(self, tok: Token, what: str) -> None:
        """One level deeper into a tuple or function type or an attribute list or map
        (the caller steps out with ``self.nesting -= 1``; after an error the reader is
        not used again)."""
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise self.error(tok, f"{what} nested more than {MAX_NESTING} levels deep")

    def error(self, tok: Token, message: str) -> ParseError:
        return self.src.error(tok[2], max(1, len(tok[1])), message)

    def span_from(self, start: Token) -> Span:
        """The span from token ``start`` to the last token consumed."""
        prev = self.toks[self.pos - 1] if self.pos > 0 else start
        return TextSpan(self.name, start[3], prev[3], start[4], prev[4] + len(prev[1]))

    def token_span(self, tok: Token) -> Span:
        return TextSpan(self.name, tok[3], tok[3], tok[4], tok[4] + len(tok[1]))

    # -- metadata -------------------------------------------------------------------
    def load_meta(self, text: str, offset: int) -> None:
        try:
            sections = load_metadata(text)
        except RecursionError:
            raise self.src.error(offset, 1, "bad metadata section: nested too deeply") from None
        except MetadataError as err:
            at = offset + err.pos if err.pos is not None else offset
            raise self.src.error(at, 1, f"bad metadata section: {err}") from None
        self.meta_arrays = sections.get("relay.Constant", [])
        if "VirtualDevice" in sections:
            self.meta_vds = list(sections["VirtualDevice"])

    def use_meta_table(self, table: Any) -> None:
        """Take the constants of a metadata table given as Python objects
        (``{"relay.Constant": [Constant, ...]}``) for the text's ``meta[...]`` references."""
        if not isinstance(table, Mapping):
            raise ParseError(f"the metadata table must be a dict, got {type(table).__name__}")
        for key, values in table.items():
            if key == "VirtualDevice":
                for i, value in enumerate(values):
                    if not isinstance(value, VirtualDevice):
                        raise ParseError(
                            f"metadata VirtualDevice[{i}] must be a tvm.target.VirtualDevice, "
                            f"got {type(value).__name__}"
                        )
                self.meta_vds = list(values)
                continue
            if key != "relay.Constant":
                raise ParseError(
                    f"the metadata table can hold relay.Constant and VirtualDevice entries, "
                    f"got {key!r}"
                )
            for i, value in enumerate(values):
                if not isinstance(value, Constant):
                    raise ParseError(
                        f"metadata relay.Constant[{i}] must be a Constant, "
                        f"got {type(value).__name__}"
                    )
                self.meta_consts[i] = value

    def meta_ref(self) -> Constant:
        start = self.next()  # 'meta'
        kind_tok, idx_tok, index = self.meta_index(start)
        if kind_tok[1] != "relay.Constant":
            raise self.error(
                kind_tok,
                f"expected relay.Constant but found {describe(kind_tok)} "
                "(an expression can refer only to constants in the metadata)",
            )
        return self.meta_constant(start, idx_tok, index)

    def meta_index(self, start: Token) -> tuple[Token, Token, int]:
        """``[kind][index]`` after ``meta``: the kind and index tokens and the index."""
        self.expect("[", " after 'meta'")
        kind_tok = self.next()
        if kind_tok[1] not in ("relay.Constant", "VirtualDevice"):
            raise self.error(
                kind_tok,
                f"expected relay.Constant or VirtualDevice but found {describe(kind_tok)} "
                "(the metadata holds constants and virtual devices)",
            )
        self.expect("]")
        self.expect("[")
        idx_tok = self.next()
        if idx_tok[0] != "NUMBER" or not idx_tok[1].isdigit():
            raise self.error(idx_tok, f"expected a metadata index but found {describe(idx_tok)}")
        self.expect("]")
        return kind_tok, idx_tok, self.integer(idx_tok, idx_tok[1])

    def meta_attr(self, start: Token) -> Any:
        """``meta[VirtualDevice][i]`` or ``meta[relay.Constant][i]`` as an attribute value."""
        kind_tok, idx_tok, index = self.meta_index(start)
        if kind_tok[1] == "relay.Constant":
            return self.meta_constant(start, idx_tok, index)
        if self.meta_vds is None:
            raise self.error(
                idx_tok,
                f"meta[VirtualDevice][{index}] is used but no virtual devices were given: "
                "pass them in the metadata table ({'VirtualDevice': [...]})",
            )
        if index >= len(self.meta_vds):
            raise self.error(
                idx_tok,
                f"meta[VirtualDevice][{index}] does not exist: the metadata holds "
                f"{len(self.meta_vds)} virtual devices",
            )
        return self.meta_vds[index]

    def var_attrs(self) -> dict[str, Any]:
        """``{key=value, ...}`` after a variable (TVM writes ``{virtual_device=...}``)."""
        attrs: dict[str, Any] = {}
        if not self.at("{"):
            return attrs
        tok = self.next()
        self.enter(tok, "variable attributes")
        while not self.accept("}"):
            if attrs:
                self.expect(",", " or '}' in the variable's attributes")
            key = self.next()
            if key[0] != "IDENT" or key[1] != "virtual_device":
                raise self.error(
                    key,
                    f"expected virtual_device=... but found {describe(key)} (a variable's "
                    "only attribute is its virtual device)",
                )
            self.expect("=", " after virtual_device")
            attrs[key[1]] = self.attr_value()
        self.nesting -= 1
        return attrs

    def meta_constant(self, start: Token, idx_tok: Token, index: int) -> Constant:
        const = self.meta_consts.get(index)
        if const is not None:
            return const
        if self.meta_arrays is None:
            raise self.error(
                idx_tok,
                f"meta[relay.Constant][{index}] is used but the text has no "
                "#[metadata] section: print it with astext(show_meta_data=True)",
            )
        if index >= len(self.meta_arrays):
            raise self.error(
                idx_tok,
                f"meta[relay.Constant][{index}] does not exist: the "
                f"metadata section holds {len(self.meta_arrays)} constants",
            )
        const = Constant(NDArray(self.meta_arrays[index]), span=self.span_from(start))
        self.meta_consts[index] = const
        return const

    # -- types ----------------------------------------------------------------------
    def dtype(self) -> str:
        tok = self.next()
        if tok[0] != "IDENT" or tok[1] not in DTYPES:
            raise self.error(
                tok, f"expected a dtype ({', '.join(DTYPES)}) but found {describe(tok)}"
            )
        return tok[1]

    def annotation(self) -> Type | None:
        """The type after ``: `` in a binding, if any; ``_`` (as TVM writes "no
        annotation") gives None, as does a binding without ``:``."""
        if not self.accept(":"):
            return None
        tok = self.peek()
        if tok[0] == "IDENT" and tok[1] == "_":
            self.pos += 1
            return None
        return self.parse_type()

    def type_params(self) -> list[Any]:
        """``[A, B]`` type parameters, if present (a reader of the whole format binds them)."""
        if self.at("["):
            raise self.error(self.peek(), "type parameters need the module parser")
        return []

    def end_type_params(self) -> None:
        """Leave the scope :meth:`type_params` opened."""

    def named_type(self, tok: Token) -> Type | None:
        """The type a name stands for (a type variable or a defined type), or ``None``;
        a reader of the whole format knows the names in scope."""
        return None

    def parse_type(self) -> Type:
        tok = self.peek()
        kind, text = tok[0], tok[1]
        if kind == "IDENT":
            if text == "Tensor":
                return self.tensor_type()
            if text == "fn":
                self.pos += 1
                params = self.type_params()
                try:
                    self.expect("(", " after 'fn' in a function type")
                    args = self.type_list(")")
                    self.expect("->", " in a function type")
                    return FuncType(args, self.parse_type(), params)
                finally:
                    self.end_type_params()
            if text in DTYPES:
                self.pos += 1
                return TensorType((), text)
            if text in BARE_DTYPES:  # TVM reads ``int`` as int32, ``float`` as float32
                self.pos += 1
                return TensorType((), BARE_DTYPES[text])
            if text == "ref" and self.at("(", 1):
                self.pos += 2
                inner = self.parse_type()
                self.expect(")", " after the type of a reference")
                return RefType(inner)
            if text == "_":  # a type left for inference, as TVM writes it
                self.pos += 1
                return IncompleteType()
            named = self.named_type(tok)
            if named is not None:
                return named
        elif kind == "PUNCT":
            if text == "?":
                self.pos += 1
                return IncompleteType()
            if text == "(":
                self.pos += 1
                fields = self.type_list(")", allow_single=True)
                if isinstance(fields, Type):
                    return fields
                return TupleType(fields)
        raise self.error(
            tok,
            f"expected a type (Tensor[...], a dtype, a tuple type, fn (...) -> ..., "
            f"or ?) but found {describe(tok)}",
        )

    def type_list(self, closer: str, allow_single: bool = False) -> Any:
        """Types up to ``closer``; with ``allow_single``, ``(T)`` is T and ``(T,)`` a tuple."""
        self.enter(self.toks[self.pos - 1], "types")
        items: list[Type] = []
        trailing = False
        while not self.accept(closer):
            if items:
                self.expect(",", f" or '{closer}' in a type list")
                if self.accept(closer):
                    trailing = True
                    break
            items.append(self.parse_type())
        self.nesting -= 1
        if allow_single and len(items) == 1 and not trailing:
            return items[0]
        return items

    def tensor_type(self) -> TensorType:
        self.pos += 1
        self.expect("[", " after 'Tensor'")
        dims: list[Any] = []
        if self.accept("("):
            while not self.accept(")"):
                if dims:
                    self.expect(",", " or ')' in a shape")
                    if self.accept(")"):
                        break
                tok = self.next()
                if tok[0] == "NUMBER" and _DIM.fullmatch(tok[1]):
                    dims.append(self.dim(tok, tok[1].partition("i")[0]))
                elif tok[1] == "?":
                    dims.append(AnyDim())  # unknown until run time (relay.Any())
                elif tok[0] == "IDENT" and tok[1].isidentifier():
                    dims.append(self.size_var(tok[1]))
                else:
                    raise self.error(tok, f"expected a dimension but found {describe(tok)}")
        else:
            tok = self.next()
            if tok[0] != "NUMBER" or not tok[1].isdigit():
                raise self.error(tok, f"expected a shape like (1, 3) but found {describe(tok)}")
            dims.append(self.dim(tok, tok[1]))
        self.expect(",", " between the shape and the dtype")
        dtype = self.dtype()
        self.expect("]", " to close Tensor[...]")
        return TensorType(dims, dtype)

    def size_var(self, name: str) -> SizeVar:
        """The symbolic dimension ``name``: one variable per name within one text."""
        var = self.dim_vars.get(name)
        if var is None:
            var = self.dim_vars[name] = SizeVar(name)
        return var

    def dim(self, tok: Token, digits: str) -> int:
        if len(digits) < 19:  # fits in int64
            return int(digits)
        value = self.integer(tok, digits)
        if value > _MAX_DIM:
            raise self.error(tok, f"dimension {value} does not fit in int64")
        return value

    # -- literals -------------------------------------------------------------------
    def number(self, tok: Token) -> tuple[Any, str | None]:
        """The value of a NUMBER token and the dtype its suffix names (None if none)."""
        sign, body, suffix = _NUM_SPLIT.match(tok[1]).groups()  # type: ignore[union-attr]
        dtype = SUFFIX_DTYPE.get(suffix) if suffix else None
        is_float = (dtype is not None and dtype.startswith("float")) or (
            dtype is None and ("." in body or "e" in body or "E" in body)
        )
        if body in ("inf", "nan"):
            value: Any = float(sign + body)
        elif is_float:
            value = float(sign + body)
        else:
            if "." in body or "e" in body or "E" in body:
                raise self.error(tok, f"{tok[1]} has an integer suffix but is not an integer")
            value = self.integer(tok, sign + body)
        return value, dtype

    def attr_value(self) -> Any:
        tok = self.next()
        kind, text = tok[0], tok[1]
        if kind == "NUMBER":
            value, dtype = self.number(tok)
            if dtype is not None and dtype.startswith("float"):
                return float(value)
            return value
        if kind == "STRING":
            return self.string(tok)
        if kind == "IDENT" and text in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[text]
        if kind == "IDENT" and text == "meta" and self.at("["):
            return self.meta_attr(tok)
        if kind == "PUNCT" and text in "[(":
            closer = "]" if text == "[" else ")"
            self.enter(tok, "attribute values")
            items: list[Any] = []
            while not self.accept(closer):
                if items:
                    self.expect(",", f" or '{closer}' in a list")
                    if self.accept(closer):
                        break
                items.append(self.attr_value())
            self.nesting -= 1
            return tuple(items)
        if kind == "PUNCT" and text == "{":
            self.enter(tok, "attribute values")
            entries: dict[str, Any] = {}
            while not self.accept("}"):
                if entries:
                    self.expect(",", " or '}' in a map")
                key = self.next()
                if key[0] != "STRING":
                    raise self.error(key, f"expected a string key but found {describe(key)}")
                self.expect(":", " after a map key")
                entries[self.string(key)] = self.attr_value()
            self.nesting -= 1
            return entries
        raise self.error(
            tok,
            "expected an attribute value (number, string, True, False, None, "
            f"[list] or {{map}}) but found {describe(tok)}",
        )

    def string(self, tok: Token) -> str:
        try:
            return unquote(tok[1])
        except ParseError as err:
            raise self.error(tok, str(err)) from None

    def bool_constant(self, tok: Token) -> Constant:
        return Constant(NDArray(np.array(tok[1] == "True")), span=self.token_span(tok))

    def constant(self, tok: Token) -> Constant:
        value, dtype = self.number(tok)
        if dtype is None:
            # As TVM: an unsuffixed integer is int32, or int64 when int32 cannot hold it.
            if isinstance(value, float):
                dtype = "float32"
            else:
                dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
        if np.dtype(dtype).kind in "iu":
            info = np.iinfo(dtype)
            if not info.min <= value <= info.max:
                raise self.error(tok, f"{value} does not fit in {dtype}")
        with np.errstate(over="ignore"):
            array = np.array(value, dtype=dtype)
        if array.dtype.kind == "f" and abs(value) > _float_max(dtype) and math.isfinite(value):
            raise self.error(
                tok, f"{tok[1]} does not fit in {dtype}: its largest value is {_float_max(dtype)}"
            )
        return Constant(NDArray(array), span=self.token_span(tok))
