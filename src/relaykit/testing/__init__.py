"""Built-in workloads and test helpers, as TVM's ``relay.testing``.

``mlp``, ``vgg``, ``resnet`` and ``mobilenet`` each have
``get_workload(batch_size, ...) -> (mod, params)``, with TVM's operator
sequences, attributes and parameter names; ``layers`` holds the layer
wrappers they are built from and ``init`` the parameter initialisers.

>>> from relaykit.testing import mlp
>>> mod, params = mlp.get_workload(batch_size=1)
>>> count_ops(mod["main"])["nn.dense"]
3
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from relaykit.errors import UnsupportedFeatureError
from relaykit.ir.expr import Call, Expr, Function
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.runtime.ndarray import NDArray, array
from relaykit.transform.infer_type import InferType

from . import (
    dcgan,
    densenet,
    dqn,
    inception_v3,
    init,
    layers,
    lstm,
    mlp,
    mobilenet,
    resnet,
    squeezenet,
    vgg,
)
from .init import create_workload

__all__ = [
    "mlp",
    "vgg",
    "resnet",
    "mobilenet",
    "inception_v3",
    "dqn",
    "dcgan",
    "squeezenet",
    "densenet",
    "lstm",
    "layers",
    "init",
    "create_workload",
    "run_opt_pass",
    "run_infer_type",
    "count_ops",
    "rand",
]


def run_opt_pass(expr: Expr, opt_pass: Any, import_prelude: bool = False) -> Expr:
    """Run ``opt_pass`` on ``expr`` (after type inference) and return the result.

    A function comes back as a function; any other expression as the body of
    the ``main`` function it was wrapped in. ``import_prelude=True`` (TVM's
    option to add the Prelude's list/option types) is refused: relaykit has no
    algebraic data types yet.
    """
    if import_prelude:
        raise UnsupportedFeatureError.for_name(
            "relay.prelude", "Prelude", "relaykit has no algebraic data types yet"
        )
    mod = IRModule.from_expr(expr)
    mod = InferType()(mod)
    mod = opt_pass(mod)
    entry = mod["main"]
    return entry if isinstance(expr, Function) else entry.body


def run_infer_type(expr: Expr) -> Expr:
    """``expr`` with its types inferred (``checked_type`` is set everywhere)."""
    return run_opt_pass(expr, InferType())


def count_ops(expr: Expr) -> Counter[str]:
    """How many times each operator is called in ``expr`` (inside nested functions too).

    >>> from relaykit.ir import Var, TensorType
    >>> x = Var("x", TensorType((2,)))
    >>> dict(count_ops(x + x * x))
    {'multiply': 1, 'add': 1}
    """
    counter: Counter[str] = Counter()
    for node in post_order(expr):
        if type(node) is Call and isinstance(node.op, Op):
            counter[node.op.name] += 1
    return counter


def rand(dtype: str, *shape: int) -> NDArray:
    """An NDArray of uniform random numbers in ``[0, 1)`` (NumPy's global generator)."""
    return array(np.random.rand(*shape).astype(dtype))
