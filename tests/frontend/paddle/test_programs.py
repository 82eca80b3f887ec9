"""``from_paddle`` on static programs (``paddle.static.load_inference_model``, with the
parameters in a scope) in both of Paddle's IRs, and on layers saved in the older
ProgramDesc format (``.pdmodel``), compared with paddle's own output."""

from __future__ import annotations

import os
import subprocess
import sys
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


#: the layer tests whose models Paddle 3 can still trace into a ProgramDesc (in that
#: mode its tracer refuses several ops, e.g. matmul and sum, before relaykit is involved)
_PROGRAMDESC_LAYER_TESTS = (
    "convnet or mobilenet or interpolate or transposed or weights or unknown or rules "
    "or assignments"
)


def test_layer_tests_on_programdesc_programs(tmp_path: Path) -> None:
    """test_layers.py's models saved and loaded as ProgramDescs (``.pdmodel``): the
    same converters through the ProgramDesc op names, slots and attributes."""
    env = dict(os.environ, FLAGS_enable_pir_api="0")
    here = Path(__file__).parent
    env["PYTHONPATH"] = os.pathsep.join([str(here.parents[2] / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k",
         _PROGRAMDESC_LAYER_TESTS, str(here / "test_layers.py")],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "8 passed" in proc.stdout, proc.stdout[-500:]
