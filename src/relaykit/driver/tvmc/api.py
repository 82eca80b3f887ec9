"""``tvmc.load`` / ``compile`` / ``tune`` / ``run``: TVM's four-step Python API.

>>> import os, tempfile
>>> from relaykit import relay
>>> mod, params = relay.testing.mlp.get_workload(batch_size=1)
>>> package = compile(TVMCModel(mod, params), target="llvm",
...                   package_path=os.path.join(tempfile.mkdtemp(), "mlp.rkmod"))
>>> result = run(package, device="cpu", fill_mode="zeros")
>>> result.get_output("output_0").shape
(1, 10)
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from relaykit.autotvm import apply_history_best, callback, measure_option, task
from relaykit.autotvm import tuner as tuner_mod
from relaykit.autotvm.measure import LocalRunner
from relaykit.execution.build_module import build
from relaykit.frontend import from_onnx
from relaykit.frontend.pytorch import from_pytorch
from relaykit.runtime.ndarray import cpu
from relaykit.transform.pass_infra import PassContext

from .model import TVMCException, TVMCModel, TVMCPackage, TVMCResult

__all__ = ["load", "compile", "tune", "run"]

_FORMATS = {
    ".onnx": "onnx",
    ".pt": "pytorch",
    ".pth": "pytorch",
    ".relay": "relay",
    ".txt": "relay",
}


def load(
    path: str,
    model_format: str | None = None,
    shape_dict: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> TVMCModel:
    """Load an ONNX file, a TorchScript file (``shape_dict`` required) or Relay text."""
    if not os.path.isfile(path):
        raise TVMCException(f"no model file at {path!r}")
    fmt = model_format or _FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt == "onnx":
        import onnx

        mod, params = from_onnx(
            onnx.load(path), dict(shape_dict) if shape_dict else None, freeze_params=True
        )
        return TVMCModel(mod, params)
    if fmt in ("pytorch", "torch"):
        if not shape_dict:
            raise TVMCException("a PyTorch model needs shape_dict={input name: shape}")
        import torch

        mod, params = from_pytorch(torch.jit.load(path), list(shape_dict.items()))
        return TVMCModel(mod, params)
    if fmt == "relay":
        return TVMCModel(model_path=path)
    raise TVMCException(
        f"cannot tell the format of {path!r}; pass model_format= one of 'onnx', 'pytorch', 'relay'"
    )


def compile(
    tvmc_model: TVMCModel,
    target: Any = "llvm",
    opt_level: int = 3,
    tuning_records: str | None = None,
    package_path: str | None = None,
    disabled_pass: Sequence[str] | None = None,
    pass_context_configs: Sequence[str] | Mapping[str, Any] | None = None,
    mod_name: str = "default",
    **kwargs: Any,
) -> TVMCPackage:
    """Build the model (with the best choices of ``tuning_records``) into a package file."""
    configs = dict(pass_context_configs or {}) if isinstance(pass_context_configs, Mapping) else {}
    path = package_path or tvmc_model.default_package_path()
    records = apply_history_best(tuning_records) if tuning_records else contextlib.nullcontext()
    with (
        records,
        PassContext(opt_level=opt_level, disabled_pass=list(disabled_pass or []), config=configs),
    ):
        lib = build(tvmc_model.mod, target=target, params=tvmc_model.params, mod_name=mod_name)
    lib.export_library(path)
    return TVMCPackage(path)


def tune(
    tvmc_model: TVMCModel,
    target: Any = "llvm",
    tuning_records: str | None = None,
    prior_records: str | None = None,
    enable_autoscheduler: bool = False,
    trials: int = 10000,
    early_stopping: int | None = None,
    number: int = 10,
    repeat: int = 1,
    min_repeat_ms: float | None = None,
    tuner: str = "xgb",
    **kwargs: Any,
) -> str:
    """Measure the choices of every task of the model; returns the records' path."""
    path = tuning_records or os.path.join(
        os.path.dirname(tvmc_model.default_package_path()), "records.json"
    )
    if prior_records and os.path.abspath(prior_records) != os.path.abspath(path):
        with open(prior_records) as src, open(path, "a") as dst:
            dst.write(src.read())
    option = measure_option(
        runner=LocalRunner(number=number, repeat=repeat, min_repeat_ms=min_repeat_ms or 0)
    )
    tasks = task.extract_from_program(tvmc_model.mod, tvmc_model.params, target)
    make = {
        "random": tuner_mod.RandomTuner,
        "gridsearch": tuner_mod.GridSearchTuner,
        "ga": tuner_mod.GATuner,
    }.get(tuner, tuner_mod.XGBTuner)
    budget = trials
    for i, t in enumerate(tasks):
        n = min(budget, len(t.config_space))
        if n <= 0:
            break
        budget -= n
        prefix = f"[Task {i + 1:2d}/{len(tasks):2d}] "
        make(t).tune(
            n_trial=n,
            measure_option=option,
            early_stopping=early_stopping,
            callbacks=[callback.progress_bar(n, prefix=prefix), callback.log_to_file(path)],
        )
    if not os.path.exists(path):
        open(path, "w").close()
    return path


def _fill(shape: tuple[int, ...], dtype: str, mode: str, rng: np.random.Generator) -> np.ndarray:
    if mode == "zeros":
        return np.zeros(shape, dtype)
    if mode == "ones":
        return np.ones(shape, dtype)
    if mode == "random":
        if np.issubdtype(np.dtype(dtype), np.integer):
            return rng.integers(0, 10, shape).astype(dtype)
        return rng.uniform(0, 1, shape).astype(dtype)
    raise TVMCException(f"fill_mode {mode!r}: use 'zeros', 'ones' or 'random'")


def run(
    tvmc_package: TVMCPackage | str,
    device: str = "cpu",
    inputs: Mapping[str, Any] | None = None,
    fill_mode: str = "random",
    benchmark: bool = False,
    repeat: int = 10,
    number: int = 10,
    **kwargs: Any,
) -> TVMCResult:
    """Run a package once (inputs given, or filled by ``fill_mode``), timed when ``benchmark``."""
    if isinstance(tvmc_package, str):
        tvmc_package = TVMCPackage(tvmc_package)
    if device.lower() not in ("cpu", "llvm"):
        raise TVMCException(f"device {device!r}: relaykit runs on the host CPU; use device='cpu'")
    module = tvmc_package.factory["default"](cpu(0))
    rng = np.random.default_rng(0)
    given = dict(inputs or {})
    unknown = set(given) - set(tvmc_package.inputs)
    if unknown:
        raise TVMCException(
            f"inputs {sorted(unknown)} are not the model's; "
            f"its inputs are {list(tvmc_package.inputs)}"
        )
    for name, spec in tvmc_package.inputs.items():
        value = (
            given[name] if name in given else _fill(tuple(spec.shape), spec.dtype, fill_mode, rng)
        )
        module.set_input(name, value)
    module.run()
    times: list[float] | None = None
    if benchmark:
        times = []
        for _ in range(max(1, repeat)):
            start = time.perf_counter()
            for _ in range(max(1, number)):
                module.run()
            times.append((time.perf_counter() - start) / max(1, number))
    outputs = {f"output_{i}": module.get_output(i).numpy() for i in range(module.get_num_outputs())}
    return TVMCResult(outputs, times)
