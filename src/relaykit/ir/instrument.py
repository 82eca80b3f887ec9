"""Pass instruments (TVM's ``tvm.ir.instrument``): hooks around passes.

An instrument's methods run when a :class:`~relaykit.transform.PassContext`
holding it is entered and left, and around each pass run in it
(``should_run``, ``run_before_pass``, ``run_after_pass``). Write one by
subclassing :class:`PassInstrument` or by decorating any class with
:func:`pass_instrument`. :class:`PassTimingInstrument` times every pass.

>>> from relaykit import relay
>>> import relaykit as tvm
>>> timing = PassTimingInstrument()
>>> x = relay.var("x", shape=(2,))
>>> with tvm.transform.PassContext(instruments=[timing]):
...     _ = relay.transform.InferType()(tvm.IRModule.from_expr(x + x))
...     "InferType" in timing.render()
True
"""

from __future__ import annotations

import time
from typing import Any

__all__ = [
    "PassInstrument",
    "pass_instrument",
    "PassTimingInstrument",
    "PassPrintingInstrument",
    "PrintBeforeAll",
    "PrintAfterAll",
]


class PassInstrument:
    """Hooks around passes. Subclass and override what you need."""

    def enter_pass_ctx(self) -> None:
        """Called when a PassContext holding this instrument is entered."""

    def exit_pass_ctx(self) -> None:
        """Called when that PassContext is left (also after an error)."""

    def should_run(self, mod: Any, info: Any) -> bool:
        """Whether the pass ``info`` runs on ``mod``; every instrument must agree."""
        return True

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Called before each pass that runs."""

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Called after each pass that ran, with its result."""


def pass_instrument(cls: type) -> type:
    """TVM's ``@tvm.instrument.pass_instrument``: make a plain class an instrument."""
    return type(cls.__name__, (cls, PassInstrument), {"__doc__": cls.__doc__})


class PassTimingInstrument(PassInstrument):
    """Times every pass run while its context is active; :meth:`render` shows the
    tree of passes with their total and own times. Leaving the context clears it."""

    def __init__(self) -> None:
        self._open: list[tuple[int, float]] = []  # (row index, start time) of running passes
        self._rows: list[list[Any]] = []  # [depth, name, total, time in children], in start order

    def enter_pass_ctx(self) -> None:
        self._open.clear()
        self._rows.clear()

    def exit_pass_ctx(self) -> None:
        self._open.clear()
        self._rows.clear()

    def run_before_pass(self, mod: Any, info: Any) -> None:
        self._rows.append([len(self._open), info.name, 0.0, 0.0])
        self._open.append((len(self._rows) - 1, time.perf_counter()))

    def run_after_pass(self, mod: Any, info: Any) -> None:
        if not self._open:
            return
        index, start = self._open.pop()
        total = time.perf_counter() - start
        self._rows[index][2] = total
        if self._open:
            self._rows[self._open[-1][0]][3] += total

    def render(self) -> str:
        """The timings as text: one line per pass run (total time, own time, share of
        the top-level total), children indented under their parent."""
        done = [r for r in self._rows if r[2] > 0.0 or r[0] == 0]
        if not done:
            return ""
        grand = sum(r[2] for r in done if r[0] == 0) or 1e-12
        return "\n".join(
            f"{'  ' * depth}{name}: {total * 1e6:.0f}us [{(total - inner) * 1e6:.0f}us] "
            f"({100.0 * total / grand:.2f}%)"
            for depth, name, total, inner in done
        )


class PassPrintingInstrument(PassInstrument):
    """Print the module before and/or after the named passes."""

    def __init__(
        self,
        print_before_pass_names: list[str] | tuple[str, ...] = (),
        print_after_pass_names: list[str] | tuple[str, ...] = (),
    ) -> None:
        self.before = set(print_before_pass_names)
        self.after = set(print_after_pass_names)

    def run_before_pass(self, mod: Any, info: Any) -> None:
        if info.name in self.before:
            print(f"Before Running Pass: {info.name}\n{mod}")

    def run_after_pass(self, mod: Any, info: Any) -> None:
        if info.name in self.after:
            print(f"After Running Pass: {info.name}\n{mod}")


class PrintBeforeAll(PassInstrument):
    """Print the module before every pass."""

    def run_before_pass(self, mod: Any, info: Any) -> None:
        print(f"Before Running Pass: {info}\n{mod}")


class PrintAfterAll(PassInstrument):
    """Print the module after every pass."""

    def run_after_pass(self, mod: Any, info: Any) -> None:
        print(f"After Running Pass: {info}\n{mod}")
