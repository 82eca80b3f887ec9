"""The PaddlePaddle tutorial's download, served locally.

``from_paddle.py`` fetches ``paddle_resnet50.tar`` (x2paddle's ResNet-50 inference
model: ``paddle_resnet50/model.pdmodel`` + ``model.pdiparams``, the ProgramDesc format
of Paddle 2) and loads it with ``paddle.jit.load("./paddle_resnet50/model")``. The
stand-in is the same architecture, ``paddle.vision.models.resnet50`` with random
weights (seeded), saved by ``paddle.jit.save`` with the input named ``inputs``, in the
same archive layout and file names. Paddle 3 (installed here) reads a ``<prefix>``
through ``<prefix>.json`` (its new IR) unless ``FLAGS_enable_pir_api=0``, so the
archive also holds ``model.json``, the same program saved by Paddle 3 (the parameter
file of the two saves is byte-identical): the tutorial's ``paddle.jit.load`` then works
with either setting. Paddle is run in subprocesses (the flag is read when paddle is
imported). The image and the label file are the shared stand-ins (``standins.py``).
"""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable

__all__ = ["FILES"]

_SAVE = """
import sys
import paddle

paddle.seed(0)
model = paddle.vision.models.resnet50()
model.eval()
state, out = sys.argv[1], sys.argv[2]
if sys.argv[3] == "init":
    paddle.save(model.state_dict(), state)
model.set_state_dict(paddle.load(state))
spec = [paddle.static.InputSpec([None, 3, 224, 224], "float32", "inputs")]
paddle.jit.save(model, out, input_spec=spec)
"""


def _save(state: str, prefix: str, *, old_format: bool, init: bool) -> None:
    env = dict(os.environ, FLAGS_enable_pir_api="0" if old_format else "1")
    subprocess.run(
        [sys.executable, "-c", _SAVE, state, prefix, "init" if init else "load"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip


def _paddle_resnet50(path: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, "weights.pdparams")
        new, old = os.path.join(tmp, "new", "model"), os.path.join(tmp, "old", "model")
        _save(state, new, old_format=False, init=True)
        _save(state, old, old_format=True, init=False)
        if not filecmp.cmp(new + ".pdiparams", old + ".pdiparams", shallow=False):
            raise RuntimeError("the two saves of the stand-in ResNet-50 differ in parameters")
        with tarfile.open(path, "w") as tar:
            for source in (old + ".pdmodel", old + ".pdiparams", old + ".pdiparams.info",
                           new + ".json"):  # fmt: skip
                tar.add(source, arcname="paddle_resnet50/" + os.path.basename(source))


FILES: dict[tuple[str, str], Callable[[str], None]] = {
    ("model", "paddle_resnet50.tar"): _paddle_resnet50,
}
