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

from relaykit.errors import ArgumentError, UnsupportedFeatureError
from relaykit.execution.interpreter import create_executor
from relaykit.ir.expr import Call, Expr, Function, Tuple, TupleWrapper
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import NDArray, array
from relaykit.transform.gradient import gradient
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
    synthetic,
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
    "synthetic",
    "lstm",
    "layers",
    "init",
    "create_workload",
    "run_opt_pass",
    "run_infer_type",
    "count_ops",
    "rand",
    "check_grad",
    "assert_allclose",
]


def assert_allclose(
    actual: Any, desired: Any, rtol: float = 1e-7, atol: float = 0.0, verbose: bool = True
) -> None:
    """TVM's ``tvm.testing.assert_allclose``: NumPy's, on arrays or NDArrays, shapes
    compared first (NumPy's broadcasts a scalar against an array; this refuses it).

    >>> import numpy as np
    >>> assert_allclose(array(np.ones(3, "float32")), np.ones(3), atol=1e-6)
    """
    got = np.asarray(actual.numpy() if isinstance(actual, NDArray) else actual)
    want = np.asarray(desired.numpy() if isinstance(desired, NDArray) else desired)
    np.testing.assert_equal(got.shape, want.shape, err_msg="assert_allclose: shapes differ")
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, verbose=verbose)


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
    if isinstance(expr, TupleWrapper):  # a multi-output op's result: a tuple of its fields
        expr = Tuple(list(expr))
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


def _random_input(ty: Any, scale: float, mean: float) -> np.ndarray:
    if not isinstance(ty, TensorType):
        raise ArgumentError(f"check_grad: parameters must be tensors, got one of type {ty}")
    return np.random.normal(mean, scale, size=ty.shape).astype(ty.dtype)


def _numeric_grad(run: Any, inputs: list[np.ndarray], x: np.ndarray, eps: float) -> np.ndarray:
    """Central differences of ``sum(run(*inputs))`` with respect to ``x`` (one of ``inputs``)."""
    approx = np.zeros(x.shape)
    for i in np.ndindex(*x.shape):
        keep = x[i]
        x[i] = keep + eps
        plus = run(*inputs).numpy().astype("float64")
        x[i] = keep - eps
        minus = run(*inputs).numpy().astype("float64")
        x[i] = keep
        approx[i] = np.sum((plus - minus) / (2 * eps))
    return approx


def check_grad(
    func: Function,
    inputs: list[np.ndarray] | None = None,
    test_inputs: list[np.ndarray] | None = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    scale: float | None = None,
    mean: float = 0,
    mode: str = "higher_order",
    target_devices: Any = None,
    executor_kind: str = "debug",
) -> None:
    """Check ``relay.transform.gradient(func)`` against numerical differentiation.

    The gradient of the sum of ``func``'s outputs with respect to each input in
    ``test_inputs`` (all ``inputs`` by default) must match central differences
    with step ``eps`` within ``atol``/``rtol`` (TVM's ``relay.testing.check_grad``).
    Missing ``inputs`` are drawn from a normal distribution (``mean``, ``scale``,
    by default ``10 * eps``). ``target_devices`` is accepted for TVM's signature;
    relaykit runs on the host.
    """
    fwd = run_infer_type(func)
    if not isinstance(fwd, Function):
        raise ArgumentError(f"check_grad needs a relay Function, got {type(func).__name__}")
    bwd = run_infer_type(gradient(fwd, mode=mode))
    if scale is None:
        scale = 10 * eps
    if inputs is None:
        inputs = [_random_input(p.checked_type, scale, mean) for p in fwd.params]
    if test_inputs is None:
        test_inputs = inputs
    fwd_run = create_executor(executor_kind, mod=IRModule.from_expr(fwd)).evaluate()
    bwd_run = create_executor(executor_kind, mod=IRModule.from_expr(bwd)).evaluate()
    _, grads = bwd_run(*inputs)
    by_id = {id(x): g for x, g in zip(inputs, grads, strict=True)}
    for x in test_inputs:
        if id(x) not in by_id:
            raise ArgumentError("check_grad: every test input must be one of the inputs")
        got = by_id[id(x)].numpy().astype("float64")
        expected = _numeric_grad(fwd_run, inputs, x, eps)
        np.testing.assert_allclose(got, expected, atol=atol, rtol=rtol)
