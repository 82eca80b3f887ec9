"""Data layouts as values: TVM's ``tvm.tir.Layout``.

A layout names each axis of a tensor: an upper-case letter is a whole ("primal")
axis, a number and a lower-case letter (``16c``) a block of that many elements split
off the primal axis of the same letter. ``Layout("NCHW16c")`` has five axes, four of
them primal. A layout may be *undefined* (``Layout(None)`` or ``Layout("")``, TVM's
``Layout::Undef()``) — "not known" — which differs from the scalar layout
``Layout.scalar()`` (defined, no axes).

Layout passes (``ConvertLayout``, ``AlterOpLayout``) and the operators' layout rules
(``FInferCorrectLayout``) compute with these values.

>>> lay = Layout("NCHW16c")
>>> lay.ndim, lay.ndim_primal, lay.index_of("C"), lay.factor_of("C"), str(lay.sub_layout(1, 2))
(5, 4, 1, 16, 'CH')
>>> str(Layout("C").expand_primal(Layout("NCHW")))
'NHWC'
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from relaykit.errors import ArgumentError

__all__ = ["Layout", "layout", "UNDEF"]

_AXIS = re.compile(r"(\d*)([A-Za-z])")


def _parse(name: str) -> tuple[tuple[str, int], ...]:
    axes: list[tuple[str, int]] = []
    pos = 0
    for m in _AXIS.finditer(name):
        if m.start() != pos:
            break
        pos = m.end()
        factor, letter = m.group(1), m.group(2)
        if letter.isupper() != (factor == ""):
            raise ArgumentError(
                f"layout {name!r}: {m.group(0)!r} must be an upper-case axis or a number "
                "followed by a lower-case (blocked) axis, as in NCHW16c"
            )
        axes.append((letter, int(factor) if factor else 0))
    if pos != len(name):
        raise ArgumentError(f"layout {name!r} is not a sequence of axes such as NCHW or NCHW16c")
    letters = [a for a, f in axes if not f]  # a block may repeat (OIHW16i2i)
    if len(set(letters)) != len(letters):
        raise ArgumentError(f"layout {name!r} names an axis twice")
    return tuple(axes)


class Layout:
    """A tensor layout (see the module docs); ``Layout(None)`` is the undefined one."""

    __slots__ = ("_axes", "_defined")

    def __init__(self, name: str | Layout | None = None) -> None:
        if isinstance(name, Layout):
            self._axes: tuple[tuple[str, int], ...] = name._axes
            self._defined: bool = name._defined
            return
        if name is None or name in ("", "__undef__"):
            self._axes, self._defined = (), False
            return
        self._axes, self._defined = _parse(str(name)), True

    @classmethod
    def _of(cls, axes: tuple[tuple[str, int], ...]) -> Layout:
        out = cls(None)
        out._axes, out._defined = axes, True
        return out

    @classmethod
    def scalar(cls) -> Layout:
        """The defined layout of no axes (a scalar's); ``Layout("")`` is undefined."""
        return cls._of(())

    # -- reading ------------------------------------------------------------------------------

    @property
    def defined(self) -> bool:
        """False for the undefined layout."""
        return self._defined

    @property
    def name(self) -> str:
        """The layout as text (``"__undef__"`` when undefined)."""
        if not self._defined:
            return "__undef__"
        return "".join(f"{f}{a}" if f else a for a, f in self._axes)

    @property
    def axes(self) -> tuple[tuple[str, int], ...]:
        """``(letter, factor)`` per axis; factor 0 for a primal axis."""
        return self._axes

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self._axes)

    @property
    def ndim_primal(self) -> int:
        """The number of primal (upper-case) axes."""
        return sum(1 for _, f in self._axes if not f)

    def index_of(self, axis: str) -> int:
        """The position of ``axis`` (``"C"`` the primal, ``"c"`` the block), or -1."""
        for i, (a, _) in enumerate(self._axes):
            if a == axis:
                return i
        return -1

    def factor_of(self, axis: str) -> int:
        """The block size of ``axis``'s letter, or -1 when it is not blocked."""
        low = axis.lower()
        for a, f in self._axes:
            if a == low:
                return f
        return -1

    def contains(self, axis: str) -> bool:
        """Whether ``axis`` (primal or block letter) is in the layout."""
        return self.index_of(axis) >= 0

    def primal(self) -> Layout:
        """The layout without its blocks (``NCHW16c`` -> ``NCHW``)."""
        return self._of(tuple((a, 0) for a, f in self._axes if not f))

    def sub_layout(self, pos: int, length: int) -> Layout:
        """``length`` axes from ``pos``."""
        return self._of(self._axes[pos : pos + length])

    def expand_primal(self, dst: Layout) -> Layout:
        """This layout with the primal axes of ``dst`` it lacks put in front."""
        missing = tuple((a, 0) for a, f in dst._axes if not f and not self.contains(a))
        return self._of(missing + self._axes)

    def equals(self, other: Layout) -> bool:
        """Same axes (two undefined layouts are equal)."""
        return self._defined == other._defined and self._axes == other._axes

    # -- Python protocol -------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._axes)

    def __iter__(self) -> Iterator[str]:
        return iter(f"{f}{a}" if f else a for a, f in self._axes)

    def __getitem__(self, index: int) -> str:
        return self._axes[index][0]

    def __contains__(self, axis: object) -> bool:
        return isinstance(axis, str) and self.contains(axis)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self._defined and self.name == other
        return isinstance(other, Layout) and self.equals(other)

    def __hash__(self) -> int:
        return hash((self._defined, self._axes))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Layout({self.name})"


UNDEF = Layout(None)


def layout(name: str) -> Layout:
    """TVM's ``tvm.tir.layout(name)``."""
    return Layout(name)
