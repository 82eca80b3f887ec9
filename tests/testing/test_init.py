"""Parameter initialisation and create_workload."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit.errors import IRError
from relaykit.ir import Function, IRModule, TensorType, Tuple, Var
from relaykit.runtime import NDArray
from relaykit.testing.init import Constant, Initializer, Xavier, create_workload


def _net() -> Function:
    names_shapes = [
        ("data", (1, 3, 8, 8)),
        ("conv_weight", (4, 3, 3, 3)),
        ("conv_bias", (4,)),
        ("bn_gamma", (4,)),
        ("bn_beta", (4,)),
        ("bn_moving_mean", (4,)),
        ("bn_moving_var", (4,)),
        ("fc_weight", (10, 16)),
    ]
    params = [Var(n, TensorType(s)) for n, s in names_shapes]
    return Function(params, Tuple(params))


def test_conventions_by_name_suffix() -> None:
    init = Xavier()
    values = {}
    for name in ("x_bias", "x_gamma", "x_beta", "x_moving_mean", "x_moving_var"):
        arr = np.full((3,), 7.0, "float32")
        init(name, arr)
        values[name] = arr.tolist()
    assert values == {
        "x_bias": [0, 0, 0],
        "x_gamma": [1, 1, 1],
        "x_beta": [0, 0, 0],
        "x_moving_mean": [0, 0, 0],
        "x_moving_var": [1, 1, 1],
    }


def test_xavier_scale_and_fans() -> None:
    # conv weight (O=8, I=4, 3x3): fans 36 and 72, avg 54 -> bound sqrt(3/54)
    w = np.zeros((8, 4, 3, 3), "float32")
    Xavier()("c_weight", w)
    bound = np.sqrt(3 / 54.0)
    assert np.abs(w).max() <= bound
    assert np.abs(w).max() > 0.9 * bound  # uniform over the whole range
    w_in = np.zeros((8, 4), "float32")
    init = Xavier(factor_type="in", magnitude=2)
    init("d_weight", w_in)
    assert np.abs(w_in).max() <= np.sqrt(2 / 4.0)
    assert np.abs(w_in).max() > np.sqrt(2 / 6.0)  # wider than the "avg" bound would allow


def test_xavier_depthwise_hack_uses_kernel_area() -> None:
    w = np.zeros((64, 1, 3, 3), "float32")
    Xavier()("block_depthwise_weight", w)
    assert np.abs(w).max() > np.sqrt(3 / 288.0)  # avg fan would give this bound
    assert np.abs(w).max() <= np.sqrt(3 / 9.0)


def test_initializer_errors_are_typed() -> None:
    with pytest.raises(IRError, match="no initialisation rule for parameter 'scale'"):
        Xavier()("scale", np.zeros((2, 2), "float32"))
    with pytest.raises(IRError, match="at least 2-d"):
        Xavier()("fc_weight", np.zeros((4,), "float32"))
    with pytest.raises(IRError, match="factor type"):
        Xavier(factor_type="median")
    with pytest.raises(ValueError):  # TVM raised ValueError; IRError is one
        Xavier()("unknown", np.zeros((2, 2), "float32"))


def test_constant_initializer_sums_to_one() -> None:
    w = np.zeros((4, 5), "float32")
    Constant()("fc_weight", w)
    assert np.allclose(w, 0.05)


def test_create_workload_values_and_types() -> None:
    mod, params = create_workload(_net())
    assert isinstance(mod, IRModule)
    assert mod["main"].checked_type is not None
    assert "data" not in params
    assert sorted(params) == sorted(
        [
            "conv_weight",
            "conv_bias",
            "bn_gamma",
            "bn_beta",
            "bn_moving_mean",
            "bn_moving_var",
            "fc_weight",
        ]
    )
    assert all(isinstance(v, NDArray) and v.dtype == "float32" for v in params.values())
    assert params["conv_weight"].shape == (4, 3, 3, 3)
    assert params["bn_moving_var"].numpy().tolist() == [1, 1, 1, 1]
    assert np.count_nonzero(params["fc_weight"].numpy()) == 160


def test_create_workload_is_tvms_random_stream() -> None:
    """The values are those of TVM's ``np.random.seed(seed)`` + ``np.random.uniform``."""
    _, params = create_workload(_net(), seed=3)
    state = np.random.get_state()
    try:
        np.random.seed(3)
        conv_bound = np.sqrt(3 / ((4 * 9 + 3 * 9) / 2.0))
        fc_bound = np.sqrt(3 / ((16 + 10) / 2.0))
        conv = np.random.uniform(-conv_bound, conv_bound, size=(4, 3, 3, 3)).astype("float32")
        fc = np.random.uniform(-fc_bound, fc_bound, size=(10, 16)).astype("float32")
    finally:
        np.random.set_state(state)
    np.testing.assert_array_equal(params["conv_weight"].numpy(), conv)
    np.testing.assert_array_equal(params["fc_weight"].numpy(), fc)


def test_create_workload_is_deterministic_and_leaves_global_rng_alone() -> None:
    before = np.random.get_state()[1].copy()
    _, a = create_workload(_net())
    _, b = create_workload(_net(), seed=0)
    _, c = create_workload(_net(), seed=1)
    assert np.array_equal(np.random.get_state()[1], before)
    for name in a:
        np.testing.assert_array_equal(a[name].numpy(), b[name].numpy())
    assert not np.array_equal(a["fc_weight"].numpy(), c["fc_weight"].numpy())


def test_create_workload_custom_initializer_and_module_input() -> None:
    class Ones(Initializer):
        def _init_weight(self, name: str, arr: np.ndarray) -> None:
            arr[...] = 1.0

    mod = IRModule.from_expr(_net())
    _, params = create_workload(mod, initializer=Ones())
    assert params["fc_weight"].numpy().min() == 1.0
    assert params["conv_bias"].numpy().max() == 0.0


def test_create_workload_rejects_unnamed_rule() -> None:
    x = Var("data", TensorType((2,)))
    s = Var("scale", TensorType((2,)))
    with pytest.raises(IRError, match="'scale'"):
        create_workload(Function([x, s], Tuple([x, s])))


def test_large_weights_are_drawn_in_chunks_from_the_same_stream() -> None:
    """Big weights (VGG's fc6 has 102M values) are filled chunk by chunk, with the
    numbers a single draw would give."""
    w = np.zeros((2100, 1000), "float32")  # more than one chunk
    init = Xavier()
    init.seed(4)
    init("fc_weight", w)
    bound = np.sqrt(3 / 1550.0)
    expected = np.random.RandomState(4).uniform(-bound, bound, size=w.shape).astype("float32")
    np.testing.assert_array_equal(w, expected)
