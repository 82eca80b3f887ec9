"""TVM's tvm.contrib.torch and tvm.meta_schedule paths: optimize_torch is there under
TVM's names (the same function), the rest raise typed errors saying what to use."""

from __future__ import annotations

import pytest

import relaykit
from relaykit.errors import UnsupportedFeatureError

torch = pytest.importorskip("torch")


def test_tvm_paths_reach_optimize_torch_and_tune_config():
    relaykit.use_as_tvm()
    try:
        from tvm.contrib.torch import optimize_torch
        from tvm.meta_schedule import TuneConfig

        from relaykit.frontend.pytorch.optimize import optimize_torch as impl
    finally:
        relaykit.tvm.remove_tvm_alias()
    assert optimize_torch is impl
    assert TuneConfig(max_trials_global=3).max_trials_global == 3


def test_out_of_scope_names_raise_typed_errors():
    import relaykit.contrib.torch as contrib_torch
    import relaykit.meta_schedule as ms

    with pytest.raises(UnsupportedFeatureError, match="optimize_torch"):
        contrib_torch.as_torch  # noqa: B018 - the attribute access is the test
    with pytest.raises(UnsupportedFeatureError, match="no TIR schedules"):
        ms.tune_tir  # noqa: B018
    with pytest.raises(ImportError):  # `from ... import` turns it into an ImportError
        from relaykit.meta_schedule import tune_tasks  # noqa: F401
