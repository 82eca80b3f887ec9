"""``optimize_torch``: a torch module compiled by relaykit, handed back as a torch module.

TVM's ``tvm.contrib.torch.optimize_torch(model, example_inputs)`` traces the model
(``torch.jit.trace``), converts it with ``from_pytorch``, tunes it with MetaSchedule and
returns an ``nn.Module`` that runs the build. relaykit does the same with its own
choices: the trace is converted by :func:`~relaykit.frontend.pytorch.from_pytorch`,
partitioned for ``targets`` (default: the fastest backend installed, as
``torch.compile(backend="relaykit")`` does), and the host kernels' algorithms are timed
and the fastest kept (relaykit's tuning: it generates no schedules, so
MetaSchedule's options are accepted and have nothing to drive). The returned
:class:`GraphExecutorFactoryWrapper` runs the build on CPU tensors; it pickles
(``torch.save``) by carrying the built artifact, which is loaded again on unpickling.

>>> import torch
>>> model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
>>> x = torch.randn(2, 4)
>>> fast = optimize_torch(model, x, max_trials_global=0)
>>> torch.allclose(fast(x), model(x), atol=1e-5)
True
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from relaykit.backends.status import best_available
from relaykit.byoc.pipeline import partition_for
from relaykit.errors import ArgumentError, ExecutorUsageError
from relaykit.execution.build_module import build
from relaykit.execution.kernel_choices import use_choices
from relaykit.execution.tuning import best_choices, extract_workloads, measure
from relaykit.ir.module import IRModule
from relaykit.runtime.artifact import load_module
from relaykit.runtime.ndarray import cpu
from relaykit.transform.bind import bind_params_by_name
from relaykit.transform.pass_infra import PassContext

from .registry import dtype_name, require_torch
from .tensors import as_numpy, as_tensor, torch_threads_kept
from .torchscript import from_pytorch

torch = require_torch()
from torch.utils._pytree import (  # noqa: E402 - torch is checked for first
    tree_flatten,
    tree_unflatten,
    treespec_dumps,
    treespec_loads,
)

__all__ = ["GraphExecutorFactoryWrapper", "optimize_torch", "tune_host_kernels"]

#: the tuning log written in ``work_dir``
LOG_NAME = "relaykit_tuning.jsonl"
#: TVM's other ``optimize_torch`` keywords (v0.19): accepted so that TVM scripts run,
#: unused; any other keyword is refused, so that a misspelt option is not ignored
_META_SCHEDULE_OPTIONS = frozenset(
    {
        "builder",
        "cost_model",
        "database",
        "max_trials_per_task",
        "measure_callbacks",
        "num_trials_per_iter",
        "runner",
        "seed",
        "space",
        "strategy",
        "task_scheduler",
    }
)


def _load(artifact: bytes) -> Any:
    """The graph executor of an exported build (the bytes ``export_library`` wrote)."""
    with tempfile.TemporaryDirectory(prefix="relaykit-torch-") as tmp:
        path = os.path.join(tmp, "model.rkmod")
        with open(path, "wb") as f:
            f.write(artifact)
        factory = load_module(path)
    return factory["default"](cpu(0))


def _export(factory: Any) -> bytes:
    with tempfile.TemporaryDirectory(prefix="relaykit-torch-") as tmp:
        path = os.path.join(tmp, "model.rkmod")
        factory.export_library(path)
        with open(path, "rb") as f:
            return f.read()


#: torch's module class (torch is imported at run time, so its type is not known here)
_TorchModule: Any = torch.nn.Module


class GraphExecutorFactoryWrapper(_TorchModule):
    """A torch module running a relaykit build: ``forward(*tensors)`` feeds the CPU
    tensors (in the order of the example inputs) and returns the outputs as the traced
    model did (one tensor, or the tuple/list structure it returned). Outputs carry no
    autograd history. It pickles with ``torch.save``; ``torch.load`` needs
    ``weights_only=False`` (it carries a compiled model, not just weights)."""

    def __init__(
        self,
        artifact: bytes,
        inputs: Sequence[tuple[str, tuple[int, ...], str]],
        output_spec: str | None,
    ) -> None:
        super().__init__()
        self.artifact = artifact
        self.inputs = [(name, tuple(shape), dtype) for name, shape, dtype in inputs]
        self.output_spec = output_spec
        self._executor = _load(artifact)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_executor", None)  # rebuilt from the artifact when unpickled
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._executor = _load(self.artifact)

    def _check(self, args: Sequence[Any]) -> None:
        if len(args) != len(self.inputs):
            raise ExecutorUsageError(
                f"the optimized module takes {len(self.inputs)} tensor(s) "
                f"({[n for n, _, _ in self.inputs]}), as its example inputs did; got {len(args)}"
            )
        for arg, (name, shape, dtype) in zip(args, self.inputs, strict=True):
            if not isinstance(arg, torch.Tensor):
                raise ExecutorUsageError(f"input {name}: expected a tensor, got {type(arg)}")
            if arg.device.type != "cpu":
                raise ExecutorUsageError(
                    f"input {name} is on {arg.device}; relaykit runs on the CPU: pass .cpu() "
                    "tensors"
                )
            if tuple(arg.shape) != shape or dtype_name(arg.dtype) != dtype:
                raise ExecutorUsageError(
                    f"input {name}: the module was compiled for {shape} {dtype}, got "
                    f"{tuple(arg.shape)} {dtype_name(arg.dtype)}; call optimize_torch again "
                    "with example inputs of this shape"
                )

    def forward(self, *args: Any) -> Any:
        self._check(args)
        ex = self._executor
        with torch_threads_kept():
            for arg, (name, _, _) in zip(args, self.inputs, strict=True):
                ex.set_input(name, as_numpy(arg))
            ex.run()
            outs = [as_tensor(ex.get_output(i).numpy()) for i in range(ex.get_num_outputs())]
        if self.output_spec is None:
            return outs[0] if len(outs) == 1 else tuple(outs)
        return tree_unflatten(outs, treespec_loads(self.output_spec))


def tune_host_kernels(
    mod: IRModule,
    params: Mapping[str, Any] | None,
    max_trials: int | None = None,
    log: str | None = None,
) -> dict[str, str]:
    """Time the algorithm choices of ``mod``'s host-kernel workloads (at most
    ``max_trials`` measurements in all; None: every choice) and return the fastest of
    each, for :func:`~relaykit.execution.kernel_choices.use_choices`. The records are
    appended to ``log`` (JSON lines, as ``autotvm.callback.log_to_file`` writes)."""
    records = []
    budget = max_trials
    for wl in extract_workloads(mod, params):
        if len(wl.candidates) < 2:
            continue
        for choice in wl.candidates:
            if budget is not None and budget <= 0:
                break
            records.append(measure(wl, choice, task="optimize_torch", repeat=3, min_repeat_ms=5))
            budget = None if budget is None else budget - 1
    if log is not None:
        with open(log, "a") as f:
            f.writelines(r.to_json() + "\n" for r in records)
    return best_choices(records)


def _example_list(example_inputs: Any) -> list[Any]:
    items = [example_inputs] if isinstance(example_inputs, torch.Tensor) else example_inputs
    if not isinstance(items, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in items):
        raise ArgumentError(
            "optimize_torch: example_inputs must be a tensor or a tuple/list of tensors (the "
            f"arguments of one call, as torch.jit.trace takes them), not {type(example_inputs)}"
        )
    for i, t in enumerate(items):
        if t.device.type != "cpu":
            raise ArgumentError(
                f"optimize_torch: example input {i} is on {t.device}; relaykit compiles for the "
                "host CPU: pass CPU tensors (and target='cpu' or 'llvm')"
            )
    return list(items)


def _output_spec(func: Any, inputs: Sequence[Any]) -> str | None:
    """The structure of the model's output (None: one tensor or a flat tuple)."""
    with torch.no_grad():
        out = func(*inputs)
    if isinstance(out, torch.Tensor):
        return None
    _, spec = tree_flatten(out)
    return treespec_dumps(spec)


def optimize_torch(
    func: Any,
    example_inputs: Any,
    tuning_config: Any = None,
    target: Any = "cpu",
    work_dir: str | None = None,
    *,
    max_trials_global: int | None = None,
    targets: Sequence[str] | None = None,
    opt_level: int = 3,
    **meta_schedule_options: Any,
) -> GraphExecutorFactoryWrapper:
    """Compile ``func`` (an ``nn.Module`` or a function ``torch.jit.trace`` can trace,
    or a traced/scripted module) for ``example_inputs`` and return a torch module that
    runs the build.

    ``max_trials_global``: how many kernel-algorithm measurements tuning may make
    (None: all of them, 0: no tuning), or the same in ``tuning_config`` (a
    ``tvm.meta_schedule.TuneConfig``, TVM's earlier form of this call); ``work_dir``:
    where the tuning log is kept (``relaykit_tuning.jsonl``); ``target``:
    ``"cpu"``/``"llvm"`` (other targets raise :class:`~relaykit.errors.BuildError`);
    ``targets``: the backends to partition for (default: dnnl when installed, else the
    host kernels alone). TVM's other
    MetaSchedule options (``builder``, ``runner``, ``cost_model``, ``strategy``...) are
    accepted and unused: relaykit generates no schedules to search; any other keyword
    is an :class:`~relaykit.errors.ArgumentError`.
    """
    unknown = sorted(set(meta_schedule_options) - _META_SCHEDULE_OPTIONS)
    if unknown:
        raise ArgumentError(
            f"optimize_torch got unexpected keyword argument(s) {', '.join(unknown)}; "
            f"TVM's MetaSchedule options it accepts (and ignores) are "
            f"{', '.join(sorted(_META_SCHEDULE_OPTIONS))}"
        )
    inputs = _example_list(example_inputs)
    if tuning_config is not None and max_trials_global is None:
        max_trials_global = getattr(tuning_config, "max_trials_global", None)
    if max_trials_global is not None and (
        not isinstance(max_trials_global, int) or max_trials_global < 0
    ):
        raise ArgumentError(
            f"optimize_torch: max_trials_global must be a count >= 0, not {max_trials_global!r}"
        )
    if isinstance(func, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        traced = func
    else:
        with torch.no_grad():
            traced = torch.jit.trace(func, tuple(inputs))
    spec = _output_spec(func, inputs)
    infos = [
        (f"inp_{i}", (tuple(int(d) for d in t.shape), str(dtype_name(t.dtype))))
        for i, t in enumerate(inputs)
    ]
    mod, params = from_pytorch(traced, infos)
    # the weights as constants, so that backends take the layers that use them
    mod = IRModule.from_expr(bind_params_by_name(mod["main"], dict(params)))
    if targets is None:
        name, _ = best_available(("dnnl",))
        targets = [name] if name else []
    if target is None or target == "cpu":
        target = "llvm"
    log = None
    if work_dir is not None:
        os.makedirs(work_dir, exist_ok=True)
        log = os.path.join(work_dir, LOG_NAME)
    with torch_threads_kept(), PassContext(opt_level=opt_level):
        if targets:
            mod = partition_for(mod, list(targets))
        choices = (
            {} if max_trials_global == 0 else tune_host_kernels(mod, {}, max_trials_global, log)
        )
        with use_choices(choices):
            factory = build(mod, target=target)
    if work_dir is not None:
        with open(os.path.join(work_dir, "relaykit_choices.json"), "w") as f:
            json.dump({"targets": list(targets), "kernel_choices": choices}, f, indent=1)
    return GraphExecutorFactoryWrapper(_export(factory), [(n, s, d) for n, (s, d) in infos], spec)
