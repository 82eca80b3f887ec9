"""Local stand-ins for the files TVM's tutorials download.

``populate(cache)`` writes, under TVM's test-data layout ``<cache>/<module>/<name>``
(what ``tvm.contrib.download.download_testdata`` returns offline), models of the
same architecture with random weights and inputs of the same shape and format:
ONNX models exported from plain PyTorch (or torchvision, weights=None), images
as random PNGs, label lists as numbered lines. Nothing is fetched.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable

import numpy as np

__all__ = ["populate", "SUBSTITUTIONS"]

# Source-level replacements, per tutorial, of what fetches: pretrained weights become
# random ones (same architecture), a fetch into the working folder a copy from the
# cache; deploy_quantized's MXNet fetches are served by mxnet_standin.py.
_RANDOM_WEIGHTS = [("(pretrained=True)", "(weights=None)")]
SUBSTITUTIONS: dict[str, list[tuple[str, str]]] = {
    "from_pytorch.py": _RANDOM_WEIGHTS,
    "deploy_model_on_rasp.py": _RANDOM_WEIGHTS,
    "deploy_model_on_nano.py": _RANDOM_WEIGHTS,
    "deploy_model_on_adreno.py": [
        *_RANDOM_WEIGHTS,
        # its label file is fetched into the working folder: copy the stand-in there
        (
            "download.download(join(categ_url, categ_fn), categ_fn)",
            "__import__('shutil').copy(download_testdata(join(categ_url, categ_fn), "
            "'imagenet1000_clsid_to_human.txt', module='data'), categ_fn)",
        ),
    ],
    "deploy_model_on_adreno_tvmc.py": _RANDOM_WEIGHTS,
    "deploy_prequantized.py": _RANDOM_WEIGHTS,
    "deploy_object_detection_pytorch.py": [
        ("model_func(pretrained=True)", "model_func(weights=None, weights_backbone=None)")
    ],
    # MXNet (not installable here) only fetched the model and the calibration
    # records: a local stand-in serves both (mxnet_standin.py), the same ResNet-18
    # v1 architecture through the PyTorch frontend; the tutorial targets CUDA, this
    # machine has no GPU, so it runs on the host.
    "deploy_quantized.py": [
        ("import mxnet as mx\n", "import mxnet_standin as mx\n"),
        ("from mxnet import gluon\n", "from mxnet_standin import gluon\n"),
        (
            'relay.frontend.from_mxnet(gluon_model, {"data": data_shape})',
            "relay.frontend.from_pytorch("
            'mx.trace(gluon_model, data_shape), [("data", data_shape)])',
        ),
        ('target = "cuda"', 'target = "llvm"'),
    ],
}


def _png(path: str, height: int, width: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    raw = b"".join(b"\x00" + row.tobytes() for row in pixels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header))
        f.write(chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _lines(path: str, make: Callable[[int], str], count: int = 1000) -> None:
    with open(path, "w") as f:
        f.writelines(make(i) + "\n" for i in range(count))


def _label_dict(path: str, count: int = 1000) -> None:
    """A Python dict literal ``{id: 'name', ...}``, one entry a line like the original
    (the tutorials ``eval`` it, or index its lines)."""
    with open(path, "w") as f:
        f.write("{" + ",\n ".join(f"{i}: {f'class {i}'!r}" for i in range(count)) + "}")


def _image_records(path: str, count: int = 16, size: int = 256) -> None:
    """Random uint8 HWC images with labels, read back by ``mxnet_standin.io``."""
    rng = np.random.default_rng(4)
    images = rng.integers(0, 256, size=(count, size, size, 3), dtype=np.uint8)
    labels = rng.integers(0, 1000, size=count).astype(np.float32)
    with open(path, "wb") as f:
        np.savez(f, images=images, labels=labels)


def _super_resolution(path: str) -> None:
    import torch
    from torch import nn

    class SuperResolution(nn.Module):  # the ONNX tutorial's sub-pixel CNN, factor 3
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 64, 5, padding=2)
            self.conv2 = nn.Conv2d(64, 64, 3, padding=1)
            self.conv3 = nn.Conv2d(64, 32, 3, padding=1)
            self.conv4 = nn.Conv2d(32, 9, 3, padding=1)
            self.shuffle = nn.PixelShuffle(3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.relu(self.conv1(x))
            x = torch.relu(self.conv2(x))
            x = torch.relu(self.conv3(x))
            return self.shuffle(self.conv4(x))

    torch.manual_seed(0)
    torch.onnx.export(
        SuperResolution().eval(),
        torch.randn(1, 1, 224, 224),
        path,
        input_names=["input"],
        output_names=["out"],
        opset_version=13,
        dynamo=False,
    )
    _rename_input(path, "input", "1")  # the original's input name, which torch refuses


def _rename_input(path: str, old: str, new: str) -> None:
    import onnx

    model = onnx.load(path)
    for value in model.graph.input:
        if value.name == old:
            value.name = new
    for node in model.graph.node:
        node.input[:] = [new if name == old else name for name in node.input]
    onnx.save(model, path)


def _resnet50_v2(path: str) -> None:
    import torch
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).eval()
    torch.onnx.export(
        model,
        torch.randn(1, 3, 224, 224),
        path,
        input_names=["data"],
        output_names=["resnetv24_dense0_fwd"],
        opset_version=13,
        dynamo=False,
    )


_FILES: dict[tuple[str, str], Callable[[str], None]] = {
    ("onnx", "super_resolution.onnx"): _super_resolution,
    ("onnx", "resnet50-v2-7.onnx"): _resnet50_v2,
    ("data", "cat.png"): lambda p: _png(p, 256, 256, 1),
    ("data", "imagenet_cat.png"): lambda p: _png(p, 256, 256, 2),
    ("data", "test_street_small.jpg"): lambda p: _png(p, 300, 400, 3),
    ("data", "elephant-299.jpg"): lambda p: _png(p, 299, 299, 5),
    ("data", "imagenet_synsets.txt"): lambda p: _lines(p, lambda i: f"n{i:08d} class {i}"),
    ("data", "imagenet_classes.txt"): lambda p: _lines(p, lambda i: f"n{i:08d}"),
    ("data", "synset.txt"): lambda p: _lines(p, lambda i: f"n{i:08d} class {i}"),
    ("data", "imagenet1000_clsid_to_human.txt"): _label_dict,
    ("", "val_256_q90.rec"): _image_records,
}
# each framework's tutorials have their own stand-in module beside this one
for _name in (
    "standins_coreml",
    "standins_tensorflow",
    "standins_keras",
    "standins_paddle",
    "standins_tflite",
):
    _FILES.update(__import__(_name).FILES)


def populate(cache: str) -> list[str]:
    """Write every stand-in missing under ``cache``; the paths that could not be made."""
    failed = []
    for (module, name), make in _FILES.items():
        path = os.path.join(cache, module, name)
        if os.path.exists(path):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            make(path)
        except Exception as exc:  # a missing optional package: that tutorial will say so
            failed.append(f"{path}: {type(exc).__name__}: {exc}")
    return failed
