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

# Source-level replacements of the calls that fetch pretrained weights, per
# tutorial: the same architecture, random weights. Nothing else is changed.
SUBSTITUTIONS: dict[str, list[tuple[str, str]]] = {
    "from_pytorch.py": [("(pretrained=True)", "(weights=None)")],
    "deploy_object_detection_pytorch.py": [
        ("model_func(pretrained=True)", "model_func(weights=None, weights_backbone=None)")
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
    ("data", "imagenet_synsets.txt"): lambda p: _lines(p, lambda i: f"n{i:08d} class {i}"),
    ("data", "imagenet_classes.txt"): lambda p: _lines(p, lambda i: f"n{i:08d}"),
    ("data", "synset.txt"): lambda p: _lines(p, lambda i: f"n{i:08d} class {i}"),
}


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
