"""TVM's ``from_pytorch`` tutorial runs as TVM ships it (tutorial_from_pytorch.py: only
the torchvision model, the cat picture and the synset downloads are substituted),
under ``python -m relaykit.tvm`` so that its ``import tvm`` lines are relaykit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "src"


def run_tutorial(*argv: str) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "relaykit.tvm", str(HERE / "tutorial_from_pytorch.py"), *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _check(out: str) -> None:
    relay_top1 = re.search(r"Relay top-1 id: (\d+)", out)
    torch_top1 = re.search(r"Torch top-1 id: (\d+)", out)
    err = re.search(r"relative error: (\S+)", out)
    assert relay_top1 and torch_top1 and err, out
    assert relay_top1.group(1) == torch_top1.group(1)
    assert float(err.group(1)) <= 1e-4


def test_tutorial_small_resnet18():
    _check(run_tutorial("8", "64"))


@pytest.mark.slow
def test_tutorial_resnet18_224():
    _check(run_tutorial())
