"""``tvm.autotvm.task``: the tunable workloads of a program.

A task is one operator workload (input shapes, dtypes, attributes); its config
space is the algorithms relaykit's host kernel has for it (one knob,
``algorithm``).

>>> from relaykit import relay
>>> import relaykit as tvm
>>> mod, params = relay.testing.mlp.get_workload(batch_size=1)
>>> tasks = extract_from_program(mod["main"], target="llvm", params=params)
>>> [(t.name, len(t.config_space)) for t in tasks]
[('dense', 1), ('dense', 1), ('dense', 1)]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from relaykit.execution.tuning import Workload, extract_workloads
from relaykit.ir.op import Op

__all__ = [
    "Task",
    "ConfigSpace",
    "ConfigEntity",
    "extract_from_program",
    "extract_from_multiple_program",
]


class ConfigEntity:
    """One point of a config space: ``{"algorithm": name}``."""

    def __init__(self, index: int, algorithm: str) -> None:
        self.index = index
        self.algorithm = algorithm

    def to_json_dict(self) -> dict[str, Any]:
        return {"index": self.index, "algorithm": self.algorithm}

    def __repr__(self) -> str:
        return f"[('algorithm', '{self.algorithm}')],None,{self.index}"


class ConfigSpace:
    """The choices of one task (one knob, ``algorithm``)."""

    def __init__(self, choices: Iterable[str]) -> None:
        self.choices = tuple(choices)

    def __len__(self) -> int:
        return len(self.choices)

    def get(self, index: int) -> ConfigEntity:
        return ConfigEntity(index, self.choices[index])

    def __iter__(self) -> Iterator[ConfigEntity]:
        return (self.get(i) for i in range(len(self)))

    def __repr__(self) -> str:
        return f"ConfigSpace (len={len(self)}, algorithm={list(self.choices)})"


class Task:
    """A tunable workload: ``name`` (the operator), ``args`` (its inputs), ``config_space``,
    ``flop`` and ``target``."""

    def __init__(self, workload: Workload, target: Any = "llvm") -> None:
        self.workload = workload
        self.name = workload.op.split(".")[-1]
        self.args = tuple(("TENSOR", shape, dtype) for shape, dtype in workload.inputs)
        self.config_space = ConfigSpace(workload.candidates)
        self.flop = workload.flop
        self.target = target

    def __repr__(self) -> str:
        return f"Task(func_name={self.name}, args={self.args}, workload_key={self.workload.key})"


def _op_names(ops: Iterable[Any] | None) -> list[str] | None:
    if ops is None:
        return None
    return [op.name if isinstance(op, Op) else str(op) for op in ops]


def extract_from_program(
    mod: Any,
    params: Mapping[str, Any] | None,
    target: Any = "llvm",
    target_host: Any = None,
    ops: Iterable[Any] | None = None,
    **kwargs: Any,
) -> list[Task]:
    """The tasks of ``mod`` (an IRModule or its ``main`` function) with ``params`` bound;
    ``ops`` (``relay.op.get("nn.conv2d")``, ...) narrows them."""
    return [Task(w, target) for w in extract_workloads(mod, params, _op_names(ops))]


def extract_from_multiple_program(
    mods: Iterable[Any],
    params: Iterable[Mapping[str, Any] | None],
    target: Any = "llvm",
    target_host: Any = None,
    ops: Iterable[Any] | None = None,
    **kwargs: Any,
) -> list[Task]:
    """The distinct tasks of several programs."""
    tasks: dict[str, Task] = {}
    for mod, param in zip(mods, params, strict=True):
        for task in extract_from_program(mod, param, target, ops=ops):
            tasks.setdefault(task.workload.key, task)
    return list(tasks.values())
