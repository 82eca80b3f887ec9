"""optimize_torch (TVM's tvm.contrib.torch.optimize_torch): a torch model traced, compiled
by relaykit and handed back as a torch module; outputs checked against torch itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from relaykit.errors import ArgumentError, BuildError, ExecutorUsageError  # noqa: E402
from relaykit.frontend.pytorch.optimize import (  # noqa: E402
    LOG_NAME,
    GraphExecutorFactoryWrapper,
    optimize_torch,
)


class TwoConvs(torch.nn.Module):
    """A 3x3 convolution (two host algorithms: im2col and Winograd) and a 1x1 one."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.c2(torch.relu(self.c1(x))))


class TwoHeads(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple:
        return a + b, (a * b, torch.tanh(a))


def _check(out, expected):
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_host_build_matches_torch_and_tunes_within_the_budget(tmp_path):
    torch.manual_seed(0)
    model = TwoConvs().eval()
    x = torch.randn(1, 3, 12, 12)
    fast = optimize_torch(model, x, max_trials_global=1, targets=[], work_dir=str(tmp_path))
    assert isinstance(fast, GraphExecutorFactoryWrapper)
    assert isinstance(fast, torch.nn.Module)
    _check(fast(x), model(x))
    x2 = torch.randn(1, 3, 12, 12)  # the build is not tied to the example's values
    _check(fast(x2), model(x2))
    records = [json.loads(line) for line in (tmp_path / LOG_NAME).read_text().splitlines()]
    assert len(records) == 1  # the budget: one measurement of the 3x3 conv's two choices
    assert records[0]["task"] == "optimize_torch"


def test_untuned_default_targets_and_tuning_config():
    from relaykit.meta_schedule import TuneConfig

    torch.manual_seed(1)
    model = TwoConvs().eval()
    x = torch.randn(2, 3, 8, 8)
    fast = optimize_torch(model, [x], TuneConfig(max_trials_global=0))
    _check(fast(x), model(x))


def test_structured_outputs_and_two_inputs():
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    fast = optimize_torch(TwoHeads(), (a, b), max_trials_global=0, targets=[])
    total, (product, tanh) = fast(a, b)  # the nesting the model returned
    _check(total, a + b)
    _check(product, a * b)
    _check(tanh, torch.tanh(a))


def test_saved_and_loaded_with_torch(tmp_path):
    torch.manual_seed(2)
    model = TwoConvs().eval()
    x = torch.randn(1, 3, 8, 8)
    fast = optimize_torch(model, x, max_trials_global=0, targets=[])
    path = tmp_path / "model.pt"
    torch.save(fast, path)
    loaded = torch.load(path, weights_only=False)
    assert loaded is not fast
    _check(loaded(x), model(x))


def test_bad_calls_name_what_was_wrong():
    model = TwoConvs().eval()
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(ArgumentError, match="example_inputs must be a tensor"):
        optimize_torch(model, np.zeros((1, 3, 8, 8)))
    with pytest.raises(ArgumentError, match="max_trials_global must be a count"):
        optimize_torch(model, x, max_trials_global=-1)
    with pytest.raises(ArgumentError, match="unexpected keyword argument.*max_trial_global"):
        optimize_torch(model, x, max_trial_global=0)  # misspelt: refused, not ignored
    with pytest.raises(BuildError, match="cuda"):
        optimize_torch(model, x, target="cuda", max_trials_global=0, targets=[])
    fast = optimize_torch(model, x, max_trials_global=0, targets=[])
    with pytest.raises(ExecutorUsageError, match=r"compiled for \(1, 3, 8, 8\) float32"):
        fast(torch.randn(1, 3, 9, 9))
    with pytest.raises(ExecutorUsageError, match="takes 1 tensor"):
        fast(x, x)
