"""Pass infrastructure: passes as objects, ``Sequential``, ``PassContext``, instruments.

A pass maps an :class:`IRModule` to a new one. Called directly, it always
runs; inside a :class:`Sequential` it runs when its ``opt_level`` is at most
the context's, or when the context requires it by name, and never when the
context disables it (TVM's rules).

The entered contexts are a context variable (:mod:`contextvars`): each thread
(and each asyncio task) has its own, so threads building at once with different
options each see theirs, and a new thread starts from the default context.

>>> from relaykit.ir import IRModule
>>> @module_pass(opt_level=1, name="Noop")
... def noop(mod, ctx):
...     return mod
>>> mod = IRModule()
>>> noop(mod) is mod
True
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.expr import Function
from relaykit.ir.instrument import PassInstrument, pass_instrument
from relaykit.ir.module import IRModule

__all__ = [
    "PassInfo",
    "PassContext",
    "Pass",
    "ModulePass",
    "FunctionPass",
    "Sequential",
    "module_pass",
    "function_pass",
    "PassInstrument",
    "pass_instrument",
    "register_pass_config",
    "PrintIR",
]


@dataclass(frozen=True)
class PassInfo:
    """A pass's name, optimisation level and the passes it requires."""

    opt_level: int
    name: str
    required: tuple[str, ...] = ()


#: config key -> the TVM type key of its value, for ``PassContext.list_configs``
_PASS_CONFIGS: dict[str, str] = {}

#: Python value type -> TVM's type key for it (TVM stores bools as IntImm)
_TYPE_KEYS: dict[type, str] = {
    bool: "IntImm",
    int: "IntImm",
    float: "FloatImm",
    str: "runtime.String",
    dict: "Map",
    list: "Array",
}


def register_pass_config(key: str, value_type: type) -> None:
    """Declare a ``PassContext(config={key: ...})`` option and the type of its value
    (``bool``, ``int``, ``float``, ``str``, ``dict`` or ``list``), so that
    :meth:`PassContext.list_configs` shows it (TVM's ``TVM_REGISTER_PASS_CONFIG_OPTION``)."""
    type_key = _TYPE_KEYS.get(value_type)
    if type_key is None:
        raise IRError(
            f"pass config {key!r}: value type {value_type.__name__} is not one of "
            f"{', '.join(t.__name__ for t in _TYPE_KEYS)}"
        )
    known = _PASS_CONFIGS.get(key)
    if known is not None and known != type_key:
        raise IRError(f"pass config {key!r} is already registered with type {known}")
    _PASS_CONFIGS[key] = type_key


# The options relaykit reads, and TVM's Relay options that TVM scripts set and
# relaykit accepts without effect (it has no auto-scheduler, meta-schedule or
# operator fusion depth limit).
for _key, _type in (
    ("relay.FoldConstant.max_bytes", int),
    ("relay.FoldConstant.max_macs", int),
    ("relay.num_threads", int),
    ("relay.ext.dnnl.options", dict),
    ("relay.backend.use_auto_scheduler", bool),
    ("relay.backend.use_meta_schedule", bool),
    ("relay.FuseOps.max_depth", int),
    ("relay.FuseOps.link_params", bool),
    ("relay.fallback_device_type", int),
    ("relay.ToMixedPrecision.keep_orig_output_dtype", bool),
):
    register_pass_config(_key, _type)


@dataclass(eq=False)
class PassContext:
    """Carries the optimisation level, required/disabled passes, instruments and config.

    Contexts compare by identity, like TVM's objects.

    >>> with PassContext(opt_level=3, disabled_pass=["FoldConstant"]) as ctx:
    ...     PassContext.current().opt_level
    3
    >>> PassContext.list_configs()["relay.FoldConstant.max_bytes"]
    {'type': 'IntImm'}
    """

    opt_level: int = 2
    required_pass: Sequence[str] = ()
    disabled_pass: Sequence[str] = ()
    instruments: Sequence[PassInstrument] = ()
    config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.required_pass = tuple(self.required_pass or ())
        self.disabled_pass = tuple(self.disabled_pass or ())
        self.instruments = tuple(self.instruments or ())
        self.config = dict(self.config or {})

    def _enter_instruments(self) -> None:
        """Enter every instrument in order; if one fails, leave those already entered,
        drop the instruments and re-raise (TVM's rule)."""
        entered: list[PassInstrument] = []
        try:
            for inst in self.instruments:
                inst.enter_pass_ctx()
                entered.append(inst)
        except BaseException:
            self.instruments = ()
            for inst in entered:
                inst.exit_pass_ctx()
            raise

    def _exit_instruments(self) -> None:
        """Leave every instrument in order; the first failure stops and propagates, and
        the instruments are dropped either way."""
        try:
            for inst in self.instruments:
                inst.exit_pass_ctx()
        except BaseException:
            self.instruments = ()
            raise

    def __enter__(self) -> PassContext:
        self._enter_instruments()
        _ENTERED.set((*_ENTERED.get(), self))
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._exit_instruments()
        finally:
            _ENTERED.set(_ENTERED.get()[:-1])

    def override_instruments(self, instruments: Sequence[PassInstrument] | None) -> None:
        """Replace this context's instruments: the old ones are left, the new entered
        (TVM's ``PassContext.override_instruments``)."""
        self._exit_instruments()
        self.instruments = tuple(instruments or ())
        self._enter_instruments()

    @staticmethod
    def current() -> PassContext:
        """The innermost context entered in this thread (or asyncio task), else the
        default one."""
        entered = _ENTERED.get()
        return entered[-1] if entered else _DEFAULT_CONTEXT

    @staticmethod
    def is_entered() -> bool:
        """True inside a ``with PassContext(...):`` block of this thread (or task)."""
        return bool(_ENTERED.get())

    @staticmethod
    def list_configs() -> dict[str, dict[str, str]]:
        """The registered config options: ``{key: {"type": type_key}}`` (TVM's
        ``PassContext.list_configs``); see :func:`register_pass_config`."""
        return {key: {"type": type_key} for key, type_key in sorted(_PASS_CONFIGS.items())}

    def pass_enabled(self, info: PassInfo) -> bool:
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return info.opt_level <= self.opt_level


_DEFAULT_CONTEXT = PassContext()

#: The contexts entered with ``with`` in the current thread or task, innermost last.
_ENTERED: ContextVar[tuple[PassContext, ...]] = ContextVar("relaykit.PassContext", default=())


class Pass:
    """Base class: ``pass_(mod)`` returns the transformed module."""

    info: PassInfo

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError

    def __call__(self, mod: IRModule) -> IRModule:
        """Run this pass on ``mod``. Called directly, a pass always runs (as in TVM);
        inside a ``Sequential`` it runs only when the context enables it."""
        if not isinstance(mod, IRModule):
            raise IRError(
                f"pass {self.info.name} takes an IRModule, got {type(mod).__name__}; "
                "wrap an expression with IRModule.from_expr(...)"
            )
        ctx = PassContext.current()
        return self._run(mod, ctx)

    def _run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for inst in ctx.instruments:
            if not inst.should_run(mod, self.info):
                return mod
        for inst in ctx.instruments:
            inst.run_before_pass(mod, self.info)
        out = self.transform_module(mod, ctx)
        if not isinstance(out, IRModule):
            raise IRError(f"pass {self.info.name} returned {type(out).__name__}, not an IRModule")
        for inst in ctx.instruments:
            inst.run_after_pass(out, self.info)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.info.name}, opt_level={self.info.opt_level})"


class ModulePass(Pass):
    """A pass from a function ``(mod, ctx) -> mod``."""

    def __init__(
        self,
        fn: Callable[[IRModule, PassContext], IRModule],
        opt_level: int,
        name: str,
        required: Iterable[str] = (),
    ) -> None:
        self._fn = fn
        self.info = PassInfo(opt_level, name, tuple(required))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return self._fn(mod, ctx)


class FunctionPass(Pass):
    """A pass from ``(func, mod, ctx) -> func``, applied to every Relay function of the
    module except those handed to an external compiler (``Compiler`` attribute)."""

    def __init__(
        self,
        fn: Callable[[Function, IRModule, PassContext], Function],
        opt_level: int,
        name: str,
        required: Iterable[str] = (),
    ) -> None:
        self._fn = fn
        self.info = PassInfo(opt_level, name, tuple(required))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod.copy()
        for gv, fn in mod.items():
            if "Compiler" in fn.attrs:
                continue
            new = self._fn(fn, mod, ctx)
            if new is not fn:
                out[gv] = new
        return out


class Sequential(Pass):
    """Run passes in order (TVM's ``tvm.transform.Sequential``)."""

    def __init__(
        self,
        passes: Sequence[Pass] = (),
        opt_level: int = 0,
        name: str = "sequential",
        required: Iterable[str] = (),
    ) -> None:
        for p in passes:
            if not isinstance(p, Pass):
                raise IRError(f"Sequential takes passes, got {p!r}")
        self.passes = list(passes)
        self.info = PassInfo(opt_level, name, tuple(required))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for p in self.passes:
            if ctx.pass_enabled(p.info):
                mod = p._run(mod, ctx)
        return mod


def _pass_decorator(
    kind: type, pass_func: Any, opt_level: int | None, name: str | None, required: Iterable[str]
) -> Any:
    if opt_level is None:
        raise IRError("give the pass an opt_level")

    def create(fn_or_cls: Any) -> Any:
        pname = name or fn_or_cls.__name__
        if inspect.isclass(fn_or_cls):
            method = "transform_module" if kind is ModulePass else "transform_function"

            @functools.wraps(fn_or_cls)
            def make(*args: Any, **kwargs: Any) -> Pass:
                inst = fn_or_cls(*args, **kwargs)
                return kind(getattr(inst, method), opt_level, pname, required)

            return make
        return kind(fn_or_cls, opt_level, pname, required)

    return create(pass_func) if pass_func is not None else create


def module_pass(
    pass_func: Any = None,
    opt_level: int | None = None,
    name: str | None = None,
    required: Iterable[str] = (),
) -> Any:
    """Decorate ``fn(mod, ctx) -> mod`` (or a class with ``transform_module``) as a pass."""
    return _pass_decorator(ModulePass, pass_func, opt_level, name, required)


def function_pass(
    pass_func: Any = None,
    opt_level: int | None = None,
    name: str | None = None,
    required: Iterable[str] = (),
) -> Any:
    """Decorate ``fn(func, mod, ctx) -> func`` (or a class with ``transform_function``)."""
    return _pass_decorator(FunctionPass, pass_func, opt_level, name, required)


def PrintIR(header: str = "", show_meta_data: bool = False) -> Pass:
    """A pass that prints the module to stderr and returns it unchanged (TVM's
    ``tvm.transform.PrintIR``): ``PrintIR(<header>):`` and the module's text.
    Its opt_level is 0, so a ``Sequential`` always runs it."""

    def print_ir(mod: IRModule, ctx: PassContext) -> IRModule:
        sys.stderr.write(f"PrintIR({header}):\n{mod.astext(show_meta_data=show_meta_data)}\n")
        return mod

    return ModulePass(print_ir, opt_level=0, name="PrintIR")
