"""``tvm.target.target``: what a model is compiled for, parsed from TVM's target strings.

A :class:`Target` is a kind (``llvm``, ``c``, ``cuda``...) with its keys and
attributes, written as TVM writes them: ``"llvm -mcpu=skylake-avx512
-mattr=+avx512f"``. relaykit compiles for the host CPU (kinds ``llvm`` and
``c``); every other kind parses, so scripts that name a GPU target still read,
but building for it raises :class:`~relaykit.errors.BuildError` saying so.

>>> t = Target("llvm -mcpu=skylake -mattr=+avx2,+fma", host="llvm")
>>> t.kind.name, t.keys, t.attrs["mcpu"], t.attrs["mattr"]
('llvm', ('cpu',), 'skylake', ('+avx2', '+fma'))
>>> str(t)
'llvm -keys=cpu -mattr=+avx2,+fma -mcpu=skylake'
>>> Target("cuda").keys
('cuda', 'gpu')
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from relaykit.errors import ArgumentError, TargetError

__all__ = [
    "Target", "TargetKind", "list_kinds", "HOST_KINDS",
    "arm_cpu", "cuda", "rocm", "mali",
]  # fmt: skip

#: The kinds relaykit builds for: code runs on the host CPU.
HOST_KINDS = ("llvm", "c")

_LIST = "list"
_INT = "int"
_BOOL = "bool"
_STR = "str"

# attributes every kind accepts, then each kind's own (TVM's TVM_REGISTER_TARGET_KIND tables)
_COMMON: dict[str, str] = {
    "keys": _LIST,
    "libs": _LIST,
    "device": _STR,
    "model": _STR,
    "tag": _STR,
    "host": _STR,
}
_CPU: dict[str, str] = {
    "mcpu": _STR,
    "mattr": _LIST,
    "mtriple": _STR,
    "mfloat-abi": _STR,
    "mabi": _STR,
    "num-cores": _INT,
    "opt-level": _INT,
    "fast-math": _BOOL,
    "march": _STR,
    "constants-byte-alignment": _INT,
    "workspace-byte-alignment": _INT,
    "cl-opt": _LIST,
    "jit": _STR,
    "vector-width": _INT,
}
_GPU: dict[str, str] = {
    "max_num_threads": _INT,
    "thread_warp_size": _INT,
    "max_threads_per_block": _INT,
    "max_shared_memory_per_block": _INT,
    "registers_per_block": _INT,
    "arch": _STR,
    "mcpu": _STR,
    "mtriple": _STR,
    "mattr": _LIST,
    "max_block_size_x": _INT,
    "max_block_size_y": _INT,
    "supports_float16": _BOOL,
    "supports_int8": _BOOL,
    "texture_spatial_limit": _INT,
    "max_function_args": _INT,
}


@dataclass(frozen=True)
class TargetKind:
    """A target kind: its name, default keys and the attributes it accepts."""

    name: str
    default_keys: tuple[str, ...]
    schema: Mapping[str, str]
    #: values of attributes the target does not set (TVM's attribute defaults)
    defaults: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


def _kind(
    name: str,
    keys: tuple[str, ...],
    own: Mapping[str, str],
    defaults: Mapping[str, Any] | None = None,
) -> TargetKind:
    return TargetKind(name, keys, {**_COMMON, **own}, dict(defaults or {}))


_KINDS: dict[str, TargetKind] = {
    k.name: k
    for k in (
        _kind("llvm", ("cpu",), _CPU),
        _kind("c", ("cpu",), _CPU),
        _kind("cuda", ("cuda", "gpu"), _GPU),
        _kind("nvptx", ("cuda", "gpu"), _GPU),
        _kind("rocm", ("rocm", "gpu"), _GPU),
        # kernels on OpenCL and Metal take a limited number of arguments
        _kind("opencl", ("opencl", "gpu"), _GPU, {"max_function_args": 128}),
        _kind("vulkan", ("vulkan", "gpu"), _GPU),
        _kind("metal", ("metal", "gpu"), _GPU, {"max_function_args": 31}),
        _kind("webgpu", ("webgpu", "gpu"), _GPU),
        _kind("hexagon", ("hexagon",), _CPU),
        _kind("ext_dev", ("ext_dev",), {}),
        _kind("hybrid", ("cpu",), {}),
        _kind("composite", (), {"devices": _LIST}),
        # BYOC compilers TVM registers as target kinds, so that a Target can carry the
        # options of an external codegen: Target({"kind": "ccompiler", "header": ...})
        _kind("ccompiler", (), {"header": _STR}),
        # TVM's example of a codegen reached through target hooks (tests of Collage
        # and of external codegen name it)
        _kind("example_target_hook", (), {"example_attribute": _INT}),
        _kind(
            "cutlass",
            (),
            {
                "sm": _INT,
                "use_3xtf32": _BOOL,
                "split_k_slices": _LIST,
                "profile_all_alignments": _BOOL,
                "find_first_valid": _BOOL,
                "use_multiprocessing": _BOOL,
                "threads": _INT,
                "use_fast_math": _BOOL,
                "tmp_dir": _STR,
            },
        ),
    )
}

#: The CUDA architecture a cuda target gets when none is given: TVM asks the first GPU
#: and falls back to sm_50 without one, and relaykit never has one.
_DEFAULT_CUDA_ARCH = "sm_50"

# TVM's historical aliases
_ALIASES = {"cpu": "llvm", "x86": "llvm", "gpu": "cuda"}

#: The targets entered with ``with`` in the current thread or task, innermost last.
_ENTERED: ContextVar[tuple[Target, ...]] = ContextVar("relaykit.Target", default=())


def list_kinds() -> list[str]:
    """The target kinds that parse (``tvm.target.Target.list_kinds()``)."""
    return sorted(_KINDS)


#: Target options TVM moved to ``Executor``/``Runtime`` (and rejects in targets).
_MOVED = {
    "runtime": "runtime=Runtime(...)",
    "system-lib": 'runtime=Runtime("cpp", {"system-lib": True})',
    "executor": 'executor=Executor("aot")',
    "interface-api": 'executor=Executor("aot", {"interface-api": "c"})',
    "unpacked-api": 'executor=Executor("aot", {"unpacked-api": True})',
    "link-params": 'executor=Executor("graph", {"link-params": True})',
}


def _convert(kind: TargetKind, key: str, value: Any) -> Any:
    typ = kind.schema.get(key)
    if typ is None and key in _MOVED:
        raise TargetError(
            f"Cannot recognize '-{key}' in a target: it is not a target option since TVM "
            f"0.9; pass {_MOVED[key]} to relay.build instead"
        )
    if typ is None:
        hint = difflib.get_close_matches(key, list(kind.schema), n=1)
        more = f"; did you mean -{hint[0]}?" if hint else ""
        raise TargetError(f"target kind {kind.name!r} has no attribute -{key}{more}")
    if typ == _LIST:
        if isinstance(value, str):
            return tuple(v for v in value.split(",") if v)
        return tuple(str(v) for v in value)
    if typ == _INT:
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ArgumentError(
                f"target attribute -{key} takes an integer, got {value!r}"
            ) from None
    if typ == _BOOL:
        if isinstance(value, str):
            if value.lower() in ("1", "true", "yes"):
                return True
            if value.lower() in ("0", "false", "no"):
                return False
            raise ArgumentError(f"target attribute -{key} takes true or false, got {value!r}")
        return bool(value)
    return str(value)


def _format(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return shlex.quote(text) if any(c.isspace() for c in text) else text


def _parse_text(text: str) -> tuple[str, dict[str, Any]]:
    try:  # a quoted value may hold spaces: -header='// Good'
        words = shlex.split(text)
    except ValueError as err:
        raise ArgumentError(f"cannot read target {text!r}: {err}") from None
    if not words:
        raise ArgumentError("a target string must start with a kind, e.g. 'llvm'")
    name, rest = words[0], words[1:]
    attrs: dict[str, Any] = {}
    i = 0
    while i < len(rest):
        word = rest[i]
        if not word.startswith("-"):
            raise ArgumentError(
                f"cannot read {word!r} in target {text!r}: attributes are written -name=value"
            )
        key, eq, value = word.lstrip("-").partition("=")
        if not eq:  # "-mcpu skylake" or a flag "-system-lib"
            if i + 1 < len(rest) and not rest[i + 1].startswith("-"):
                value, i = rest[i + 1], i + 1
            else:
                value = "true"
        attrs[key] = value
        i += 1
    return name, attrs


class Target:
    """A compilation target (TVM's ``tvm.target.Target``).

    Built from a string (``"llvm -mcpu=skylake"``), a dict
    (``{"kind": "llvm", "mcpu": "skylake"}``) or another Target, with an
    optional ``host`` target. Used as a context manager it becomes
    :meth:`Target.current` for the current thread (or asyncio task): the entered
    targets are a context variable, so a new thread starts with none.

    >>> with Target("llvm"):
    ...     Target.current().kind.name
    'llvm'
    """

    kind: TargetKind
    keys: tuple[str, ...]
    attrs: dict[str, Any]
    host: Target | None

    def __init__(self, target: str | Mapping[str, Any] | Target, host: Any = None) -> None:
        if isinstance(target, Target):
            name, attrs = target.kind.name, dict(target.attrs)
            host = host if host is not None else target.host
        elif isinstance(target, Mapping):
            attrs = dict(target)
            name = str(attrs.pop("kind", ""))
            host = host if host is not None else attrs.pop("host", None)
        elif isinstance(target, str):
            name, attrs = _parse_text(target)
        else:
            raise ArgumentError(
                f"a Target is made from a string, a dict or a Target, not {type(target).__name__}"
            )
        name = _ALIASES.get(name, name)
        kind = _KINDS.get(name)
        if kind is None:
            hint = difflib.get_close_matches(name, list(_KINDS), n=1)
            more = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ArgumentError(
                f"unknown target kind {name!r}{more} (known: {', '.join(list_kinds())})"
            )
        converted = {k: _convert(kind, k, v) for k, v in attrs.items() if k != "host"}
        if kind.name == "cuda":
            arch = converted.setdefault("arch", _DEFAULT_CUDA_ARCH)
            if not str(arch).startswith("sm_"):
                raise ArgumentError(f"a cuda target's -arch is sm_XY (e.g. sm_80), got {arch!r}")
        keys = converted.pop("keys", ())
        self.kind = kind
        self.keys = tuple(dict.fromkeys((*keys, *kind.default_keys)))
        self.attrs = converted
        self.host = None if host is None else Target(host)

    # -- TVM's accessors ---------------------------------------------------
    @property
    def mcpu(self) -> str:
        return str(self.attrs.get("mcpu", ""))

    @property
    def mattr(self) -> tuple[str, ...]:
        return tuple(self.attrs.get("mattr", ()))

    @property
    def arch(self) -> str:
        """The CUDA architecture (``sm_80``), or ``""`` for other kinds."""
        return str(self.attrs.get("arch", ""))

    @property
    def model(self) -> str:
        return str(self.attrs.get("model", "unknown"))

    @property
    def libs(self) -> tuple[str, ...]:
        return tuple(self.attrs.get("libs", ()))

    @property
    def max_function_args(self) -> int:
        """The most arguments a kernel may take on this target (0: no limit), as
        ``relay.transform.SplitArgs`` takes it."""
        default = self.kind.defaults.get("max_function_args", 0)
        return int(self.attrs.get("max_function_args", default))

    @property
    def is_host(self) -> bool:
        """True when relaykit can build for this target (it runs on the host CPU)."""
        return self.kind.name in HOST_KINDS

    def export(self) -> dict[str, Any]:
        """The target as a dict (TVM's ``Target.export``)."""
        out: dict[str, Any] = {"kind": self.kind.name, "keys": list(self.keys)}
        out.update({k: list(v) if isinstance(v, tuple) else v for k, v in self.attrs.items()})
        if self.host is not None:
            out["host"] = self.host.export()
        return out

    def with_host(self, host: Any) -> Target:
        return Target(self, host=host)

    @staticmethod
    def list_kinds() -> list[str]:
        return list_kinds()

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The innermost target entered with ``with target:`` in this thread (or task)."""
        entered = _ENTERED.get()
        if entered:
            return entered[-1]
        if not allow_none:
            raise ArgumentError("no target is in scope; enter one with `with Target(...):`")
        return None

    @staticmethod
    def canon_target_and_host(target: Any, target_host: Any = None) -> tuple[Target, Any]:
        t = target if isinstance(target, Target) else Target(target)
        if target_host is not None:
            t = t.with_host(target_host)
        return t, t.host

    def __enter__(self) -> Target:
        _ENTERED.set((*_ENTERED.get(), self))
        return self

    def __exit__(self, *exc: Any) -> None:
        _ENTERED.set(_ENTERED.get()[:-1])

    def __str__(self) -> str:
        parts = [self.kind.name]
        if self.keys:
            parts.append(f"-keys={','.join(self.keys)}")
        parts += [f"-{k}={_format(v)}" for k, v in sorted(self.attrs.items())]
        return " ".join(parts)

    def __repr__(self) -> str:
        host = f", host={str(self.host)!r}" if self.host is not None else ""
        return f"Target({str(self)!r}{host})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Target(other)
            except ArgumentError:
                return False
        if not isinstance(other, Target):
            return NotImplemented
        return str(self) == str(other) and str(self.host) == str(other.host)

    def __hash__(self) -> int:
        return hash((str(self), str(self.host)))


def arm_cpu(model: str = "unknown", options: str = "") -> Target:
    """TVM's ``tvm.target.arm_cpu``: an LLVM target for an Arm CPU."""
    return Target(f"llvm -device=arm_cpu -model={model} {options}".strip())


def cuda(model: str = "unknown", arch: str | None = None, options: str = "") -> Target:
    """TVM's ``tvm.target.cuda`` (parses; relaykit does not build for GPUs)."""
    extra = f" -arch={arch}" if arch else ""
    return Target(f"cuda -model={model}{extra} {options}".strip())


def rocm(model: str = "unknown", options: str = "") -> Target:
    """TVM's ``tvm.target.rocm`` (parses; relaykit does not build for GPUs)."""
    return Target(f"rocm -model={model} {options}".strip())


def mali(model: str = "unknown", options: str = "") -> Target:
    """TVM's ``tvm.target.mali`` (parses; relaykit does not build for GPUs)."""
    return Target(f"opencl -device=mali -model={model} {options}".strip())
