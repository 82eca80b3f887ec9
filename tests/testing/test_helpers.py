"""The relay.testing helpers: count_ops, run_infer_type, run_opt_pass, rand."""

from __future__ import annotations

import numpy as np

from relaykit.ir import Call, Function, TensorType, Var
from relaykit.op import nn
from relaykit.runtime import NDArray
from relaykit.testing import count_ops, rand, run_infer_type, run_opt_pass
from relaykit.transform.infer_type import InferType


def test_count_ops_counts_each_call_once_including_nested_functions() -> None:
    x = Var("x", TensorType((2, 2)))
    shared = nn.relu(x)
    y = shared + shared
    inner_x = Var("a", TensorType((2, 2)))
    inner = Function([inner_x], nn.relu(inner_x) * inner_x)
    counts = count_ops(Function([x], Call(inner, [y])))
    assert counts["nn.relu"] == 2 and counts["add"] == 1 and counts["multiply"] == 1


def test_run_infer_type_returns_typed_body_or_function() -> None:
    x = Var("x", TensorType((1, 3)))
    body = nn.softmax(nn.relu(x))
    typed = run_infer_type(body)
    assert typed.checked_type == TensorType((1, 3))
    fn = run_opt_pass(Function([x], body), InferType())
    assert isinstance(fn, Function)
    assert fn.checked_type.ret_type == TensorType((1, 3))


def test_rand_makes_an_ndarray_of_the_requested_shape_and_dtype() -> None:
    a = rand("float32", 2, 3)
    assert isinstance(a, NDArray) and a.shape == (2, 3) and a.dtype == "float32"
    assert float(np.min(a.numpy())) >= 0.0 and float(np.max(a.numpy())) < 1.0
