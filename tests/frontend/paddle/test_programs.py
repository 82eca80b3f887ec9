"""``from_paddle`` on static programs (``paddle.static.load_inference_model``, with the
parameters in a scope) in both of Paddle's IRs, and on a layer saved in the older
ProgramDesc format (``.pdmodel``), compared with paddle's own executor."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

paddle = pytest.importorskip("paddle", reason="the PaddlePaddle frontend tests need paddle")

F = paddle.nn.functional
X = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype("float32")


def _build_and_save(prefix: str, mode: str) -> None:
    """A static program (conv with bias, BN, ReLU, pool, flatten, linear, scale,
    element-wise ops, hardswish, layer norm, softmax, dropout in ``mode``, concat,
    reshape, transpose, slice, mean, unsqueeze) saved as an inference model, in the IR
    currently active."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [2, 3, 8, 8], "float32")
        y = paddle.nn.BatchNorm2D(4)(paddle.nn.Conv2D(3, 4, 3, padding=1)(x))
        y = paddle.nn.functional.max_pool2d(paddle.nn.functional.relu(y), 2)
        y = paddle.nn.Linear(64, 5)(paddle.flatten(y, 1))
        z = F.hardswish(paddle.scale(y, 2.0, bias=0.5)) * y - y / 3.0
        z = F.dropout(F.softmax(paddle.nn.LayerNorm(5)(z)), 0.25, training=False, mode=mode)
        w = paddle.transpose(paddle.reshape(paddle.concat([y, z], 1), [2, 2, 5]), [0, 2, 1])
        w = paddle.unsqueeze(paddle.mean(w[:, 1:4], axis=1), 0)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    paddle.static.save_inference_model(prefix, [x], [y, z, w], exe, program=main)


def _load_and_compare(prefix: str, relay_run: Any, close: Any) -> str:
    from relaykit import relay

    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        program, feeds, fetches = paddle.static.load_inference_model(prefix, exe)
        want = exe.run(program, feed={feeds[0]: X}, fetch_list=fetches)
    mod, params = relay.frontend.from_paddle(program, scope=scope)
    close(relay_run(mod, params, {"x": X}), want)
    return type(program).__module__


def test_pir_static_program(tmp_path: Path, relay_run: Any, close: Any) -> None:
    paddle.enable_static()
    try:
        _build_and_save(str(tmp_path / "model"), "upscale_in_train")
        assert (tmp_path / "model.json").exists()
        assert "pir" in _load_and_compare(str(tmp_path / "model"), relay_run, close)
    finally:
        paddle.disable_static()


def test_programdesc_static_program(tmp_path: Path, relay_run: Any, close: Any) -> None:
    from paddle.pir_utils import OldIrGuard

    with OldIrGuard():
        paddle.enable_static()
        try:
            _build_and_save(str(tmp_path / "model"), "downscale_in_infer")
            assert (tmp_path / "model.pdmodel").exists()
            module = _load_and_compare(str(tmp_path / "model"), relay_run, close)
            assert "pir" not in module.split(".")
        finally:
            paddle.disable_static()


_OLD_LAYER = """
import sys
import numpy as np
import paddle
import relaykit as tvm
from relaykit import relay

paddle.seed(0)
layer = paddle.vision.models.mobilenet_v2(scale=0.25, num_classes=7)
layer.eval()
spec = [paddle.static.InputSpec([None, 3, 32, 32], "float32", "inputs")]
paddle.jit.save(layer, sys.argv[1], input_spec=spec)
loaded = paddle.jit.load(sys.argv[1])
print(type(loaded).__name__)
x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype("float32")
want = loaded(paddle.to_tensor(x)).numpy()
mod, params = relay.frontend.from_paddle(loaded, {"inputs": [1, 3, 32, 32]})
ex = relay.create_executor("graph", mod, tvm.cpu(0), "llvm", params).evaluate()
got = ex(tvm.nd.array(x)).numpy()
print(float(np.abs(got - want).max() / np.abs(want).max()))
"""


def test_programdesc_layer_from_jit_load(tmp_path: Path) -> None:
    """With ``FLAGS_enable_pir_api=0`` (read when paddle is imported, hence a fresh
    process) ``paddle.jit.load`` of a ``.pdmodel`` gives a ``TranslatedLayer`` whose
    program is a ProgramDesc (MobileNetV2's depthwise convs, ReLU6, dropout, ...)."""
    env = dict(os.environ, FLAGS_enable_pir_api="0")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).parents[3] / "src"), env.get("PYTHONPATH", "")]
    )
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_OLD_LAYER), str(tmp_path / "model")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    kind, err = proc.stdout.split()[-2:]
    assert kind == "TranslatedLayer"
    assert (tmp_path / "model.pdmodel").exists()
    assert float(err) < 1e-5
