"""Helpers for operator tests: call relations and kernels directly, without
type inference or the interpreter."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from relaykit.ir import Call, TensorType, TupleType, Var
from relaykit.ir.types import Type


def tvar(name: str, shape: Sequence[int], dtype: str = "float32") -> Var:
    return Var(name, TensorType(shape, dtype))


def rel(call: Call, *arg_types: Type) -> Type:
    """The relation of ``call``'s op applied to ``arg_types`` (default: the args' annotations)."""
    if not arg_types:
        arg_types = tuple(_arg_type(a) for a in call.args)
    return call.op.get_attr("FTypeRelation")(list(arg_types), call.attrs)


def _arg_type(arg) -> Type:
    if isinstance(arg, Var):
        return arg.type_annotation
    if hasattr(arg, "fields"):
        return TupleType([_arg_type(f) for f in arg.fields])
    return arg.checked_type


def _type_of(value) -> Type:
    if isinstance(value, (list, tuple)):
        return TupleType([_type_of(v) for v in value])
    return TensorType(value.shape, value.dtype.name)


def run(call: Call, *inputs):
    """Run the kernel of ``call`` and check its result against the relation's type."""
    expected = rel(call, *[_type_of(v) for v in inputs])
    out = call.op.get_attr("FCompute")(list(inputs), call.attrs)
    assert _type_of(out) == expected, f"kernel gave {_type_of(out)}, relation says {expected}"
    if isinstance(out, tuple):
        assert all(isinstance(o, np.ndarray) for o in out)
    else:
        assert isinstance(out, np.ndarray)
    return out


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture(name="run")
def _run_fixture():
    """``run(call, *arrays)``: the kernel's result, checked against the relation."""
    return run


@pytest.fixture(name="rel")
def _rel_fixture():
    """``rel(call, *types)``: the relation's output type (default: the args' annotations)."""
    return rel


@pytest.fixture(name="tvar")
def _tvar_fixture():
    """``tvar(name, shape, dtype="float32")``: a typed Var."""
    return tvar
