"""``tvm.relay.backend``: the executor and runtime a build is for.

relaykit builds for TVM's default pair: the ``graph`` executor and the ``cpp``
runtime. :class:`Executor` and :class:`Runtime` take TVM's names and options so
``relay.build(mod, target, executor=Executor("graph"), runtime=Runtime("cpp"))``
reads as in TVM; other kinds parse, and building with them raises a
:class:`~relaykit.errors.BuildError` that says what relaykit offers.

>>> Executor("graph", {"link-params": True})
Executor('graph', {'link-params': True})
"""

from __future__ import annotations

from . import executor_factory, interpreter, name_transforms, runtime, te_compiler, utils, vm
from .executor import Executor
from .runtime import Runtime

__all__ = [
    "Executor",
    "Runtime",
    "runtime",
    "te_compiler",
    "executor",
    "executor_factory",
    "interpreter",
    "name_transforms",
    "utils",
    "vm",
]
