"""What ``deploy_quantized`` fetched through MXNet, served locally.

MXNet cannot be installed here; in that tutorial it only downloads the model
(``gluon.model_zoo.vision.get_model(name, pretrained=True)``) and reads the
calibration records (``mx.io.ImageRecordIter``). This stand-in gives the same
architecture with random weights (torchvision's ResNet v1, which is Gluon's
``resnet*_v1``) and iterates over the stand-in record file (random images,
``standins._image_records``) with the same resize, centre crop and
normalisation, as NCHW float32 batches.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np

__all__ = ["gluon", "io", "trace"]


class _NDArray:
    def __init__(self, value: np.ndarray) -> None:
        self._value = value

    def asnumpy(self) -> np.ndarray:
        return self._value


class ImageRecordIter:
    """Batches of the record file: resize the short side, centre-crop, normalise."""

    def __init__(
        self,
        path_imgrec: str,
        batch_size: int,
        data_shape: tuple[int, int, int],
        resize: int = -1,
        mean_r: float = 0.0,
        mean_g: float = 0.0,
        mean_b: float = 0.0,
        std_r: float = 1.0,
        std_g: float = 1.0,
        std_b: float = 1.0,
        **_: Any,
    ) -> None:
        with np.load(path_imgrec) as records:
            self._images, self._labels = records["images"], records["labels"]
        self._batch = batch_size
        self._shape = data_shape
        self._resize = resize
        self._mean = np.array([mean_r, mean_g, mean_b], np.float32)
        self._std = np.array([std_r, std_g, std_b], np.float32)

    def reset(self) -> None:
        """Start from the first record again (each iteration does)."""

    def _prepare(self, image: np.ndarray) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        x = torch.from_numpy(image).permute(2, 0, 1)[None].float()
        if self._resize > 0:
            h, w = x.shape[2:]
            scale = self._resize / min(h, w)
            x = F.interpolate(x, size=(round(h * scale), round(w * scale)), mode="bilinear")
        _, height, width = self._shape
        top, left = (x.shape[2] - height) // 2, (x.shape[3] - width) // 2
        x = x[0, :, top : top + height, left : left + width].permute(1, 2, 0).numpy()
        return ((x - self._mean) / self._std).transpose(2, 0, 1)

    def __iter__(self) -> Iterator[SimpleNamespace]:
        for start in range(0, len(self._images) - self._batch + 1, self._batch):
            images = self._images[start : start + self._batch]
            data = np.stack([self._prepare(im) for im in images]).astype(np.float32)
            label = self._labels[start : start + self._batch]
            yield SimpleNamespace(data=[_NDArray(data)], label=[_NDArray(label)])


def _get_model(name: str, pretrained: bool = False, **_: Any) -> Any:
    import torch
    import torchvision

    if not name.endswith("_v1"):
        raise ValueError(f"the stand-in has the ResNet v1 models only, not {name}")
    torch.manual_seed(0)
    return getattr(torchvision.models, name[: -len("_v1")])(weights=None).eval()


def trace(model: Any, shape: tuple[int, ...]) -> Any:
    """The TorchScript of the stand-in model, for the PyTorch frontend."""
    import torch

    with torch.no_grad():
        return torch.jit.trace(model, torch.zeros(shape)).eval()


io = SimpleNamespace(ImageRecordIter=ImageRecordIter)
gluon = SimpleNamespace(model_zoo=SimpleNamespace(vision=SimpleNamespace(get_model=_get_model)))
