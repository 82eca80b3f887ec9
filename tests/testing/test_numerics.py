"""The workloads compute what their architectures say: the reference interpreter
against the independent NumPy forward passes of numpy_reference.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from relaykit.ir import Call, Function, IRModule
from relaykit.runtime import array
from relaykit.testing import mlp, mobilenet, resnet, vgg

TOL = {"rtol": 1e-5, "atol": 1e-5}


def _randomise_affine(params: dict[str, Any], seed: int) -> dict[str, Any]:
    """Non-trivial biases and batch-norm statistics, so that a wrong axis, a missing
    bias or a skipped normalisation changes the result."""
    rng = np.random.RandomState(seed)
    ranges = {
        "_bias": (-0.5, 0.5),
        "_gamma": (0.5, 1.5),
        "_beta": (-0.5, 0.5),
        "_moving_mean": (-0.5, 0.5),
        "_moving_var": (0.5, 1.5),
    }
    out = dict(params)
    for name, value in params.items():
        for suffix, (lo, hi) in ranges.items():
            if name.endswith(suffix):
                out[name] = array(rng.uniform(lo, hi, value.shape).astype(value.dtype))
    return out


def _logits_module(mod: IRModule) -> IRModule:
    main = mod["main"]
    assert isinstance(main.body, Call) and main.body.op.name == "nn.softmax"
    return IRModule.from_expr(Function(main.params, main.body.args[0]))


CASES: dict[str, tuple[Callable[[], Any], Callable[..., Any], tuple[int, ...]]] = {
    "mlp": (lambda: mlp.get_workload(batch_size=2), lambda r: r.mlp, (2, 1, 28, 28)),
    "vgg11": (
        lambda: vgg.get_workload(batch_size=2, num_classes=10, image_shape=(3, 32, 32)),
        lambda r: r.vgg,
        (2, 3, 32, 32),
    ),
    "vgg11_bn": (
        lambda: vgg.get_workload(1, num_classes=10, image_shape=(3, 32, 32), batch_norm=True),
        lambda r: lambda d, p: r.vgg(d, p, batch_norm_layers=True),
        (1, 3, 32, 32),
    ),
    "resnet18_32px": (
        lambda: resnet.get_workload(batch_size=1, num_classes=10, image_shape=(3, 32, 32)),
        lambda r: r.resnet,
        (1, 3, 32, 32),
    ),
    "resnet18_64px": (
        lambda: resnet.get_workload(batch_size=2, num_classes=10, image_shape=(3, 64, 64)),
        lambda r: r.resnet,
        (2, 3, 64, 64),
    ),
    "resnet50_64px": (
        lambda: resnet.get_workload(1, num_classes=10, num_layers=50, image_shape=(3, 64, 64)),
        lambda r: lambda d, p: r.resnet(d, p, num_layers=50),
        (1, 3, 64, 64),
    ),
    "mobilenet": (
        lambda: mobilenet.get_workload(batch_size=2, num_classes=10, image_shape=(3, 32, 32)),
        lambda r: r.mobilenet,
        (2, 3, 32, 32),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_interpreter_matches_numpy_reference(case: str, np_ref: Any, run_debug: Any) -> None:
    make, pick_reference, data_shape = CASES[case]
    mod, params = make()
    params = _randomise_affine(params, seed=7)
    data = np.random.RandomState(1).uniform(-1, 1, data_shape).astype("float32")

    ref_logits, ref_probs = pick_reference(np_ref)(data, {k: v.numpy() for k, v in params.items()})
    logits = run_debug(_logits_module(mod), data, params)
    probs = run_debug(mod, data, params)

    assert logits.shape == ref_logits.shape and logits.dtype == np.float32
    # the logits are spread out, so a structural mistake cannot hide in the tolerance
    assert np.ptp(ref_logits) > 0.5
    np.testing.assert_allclose(logits, ref_logits, **TOL)
    np.testing.assert_allclose(probs, ref_probs, **TOL)
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-5)


def test_default_parameters_run(np_ref: Any, run_debug: Any) -> None:
    """TVM's initial values (zero biases, identity batch norm) work as they are."""
    mod, params = resnet.get_workload(batch_size=1, num_classes=10, image_shape=(3, 32, 32))
    data = np.random.RandomState(2).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    _, ref_probs = np_ref.resnet(data, {k: v.numpy() for k, v in params.items()})
    np.testing.assert_allclose(run_debug(mod, data, params), ref_probs, **TOL)
