"""Tensors and devices, under TVM's names (``tvm.nd.array``, ``tvm.cpu``).

>>> a = array([1.0, 2.0], dtype="float32")
>>> a.shape, a.dtype
((2,), 'float32')
>>> a.numpy().tolist()
[1.0, 2.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from relaykit.errors import IRError

__all__ = [
    "Device", "NDArray", "array", "empty", "cpu", "device", "DEVICE_TYPES",
    "cuda", "gpu", "opencl", "cl", "vulkan", "metal", "mtl", "rocm", "ext_dev", "hexagon",
    "webgpu", "vpi",
]  # fmt: skip

#: TVM's device names (and their aliases), as ``tvm.device`` accepts them; relaykit runs
#: on ``cpu`` only: a device of any other type can be named but does not ``exist``.
DEVICE_TYPES = {
    "cpu": "cpu", "llvm": "cpu", "c": "cpu", "stackvm": "cpu", "ext_dev": "ext_dev",
    "cuda": "cuda", "gpu": "cuda", "nvptx": "cuda", "opencl": "opencl", "cl": "opencl",
    "vulkan": "vulkan", "metal": "metal", "mtl": "metal", "rocm": "rocm", "vpi": "vpi",
    "hexagon": "hexagon", "webgpu": "webgpu",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Device:
    """A device; relaykit runs on the host CPU."""

    device_type: str = "cpu"
    device_id: int = 0

    def __str__(self) -> str:
        return f"{self.device_type}({self.device_id})"

    @property
    def exist(self) -> bool:
        return self.device_type == "cpu"


def cpu(dev_id: int = 0) -> Device:
    """The host CPU device (``tvm.cpu(0)``)."""
    return Device("cpu", dev_id)


def device(dev_type: str = "cpu", dev_id: int = 0) -> Device:
    """The device of a name or target string (``"llvm -mcpu=x"`` names the cpu, as in TVM).

    Every TVM device name makes a device, but only a cpu device exists:
    ``tvm.device("cuda").exist`` is False, as on a machine without a GPU.
    """
    name = (str(dev_type).split() or [""])[0]
    if name not in DEVICE_TYPES:
        known = ", ".join(sorted(DEVICE_TYPES))
        raise IRError(f"unknown device type {dev_type!r}; TVM's device names are: {known}")
    return Device(DEVICE_TYPES[name], dev_id)


def _check_exists(dev: Device | None) -> Device | None:
    if dev is not None and not dev.exist:
        raise IRError(f"device {dev} does not exist: relaykit runs on the host cpu (tvm.cpu())")
    return dev


def cuda(dev_id: int = 0) -> Device:
    """A CUDA device (``exist`` is False: relaykit runs on the host cpu)."""
    return Device("cuda", dev_id)


gpu = cuda


def opencl(dev_id: int = 0) -> Device:
    """An OpenCL device (``exist`` is False)."""
    return Device("opencl", dev_id)


cl = opencl


def vulkan(dev_id: int = 0) -> Device:
    """A Vulkan device (``exist`` is False)."""
    return Device("vulkan", dev_id)


def metal(dev_id: int = 0) -> Device:
    """A Metal device (``exist`` is False)."""
    return Device("metal", dev_id)


mtl = metal


def rocm(dev_id: int = 0) -> Device:
    """A ROCm device (``exist`` is False)."""
    return Device("rocm", dev_id)


def ext_dev(dev_id: int = 0) -> Device:
    """An external accelerator device (``exist`` is False)."""
    return Device("ext_dev", dev_id)


def hexagon(dev_id: int = 0) -> Device:
    """A Hexagon DSP device (``exist`` is False)."""
    return Device("hexagon", dev_id)


def webgpu(dev_id: int = 0) -> Device:
    """A WebGPU device (``exist`` is False)."""
    return Device("webgpu", dev_id)


def vpi(dev_id: int = 0) -> Device:
    """A Verilog simulator device (``exist`` is False)."""
    return Device("vpi", dev_id)


class NDArray:
    """A host tensor. The wrapped NumPy array is never copied behind your back."""

    __slots__ = ("_data", "device")

    def __init__(self, data: np.ndarray, dev: Device | None = None) -> None:
        if not isinstance(data, np.ndarray):
            raise IRError(f"NDArray wraps a numpy.ndarray, got {type(data).__name__}")
        self._data = data
        self.device = dev or cpu()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    @property
    def dtype(self) -> str:
        return self._data.dtype.name

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numpy(self) -> np.ndarray:
        """The data as a NumPy array (shared, not copied)."""
        return self._data

    asnumpy = numpy

    def copyfrom(self, source: Any) -> NDArray:
        src = source.numpy() if isinstance(source, NDArray) else np.asarray(source)
        if src.shape != self._data.shape:
            raise IRError(f"copyfrom: shape {src.shape} does not match {self._data.shape}")
        self._data[...] = src
        return self

    def copyto(self, target: Any) -> Any:
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        return NDArray(self._data.copy(), target)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self) -> str:
        return f"<tvm.nd.NDArray shape={self.shape}, {self.device}>\n{self._data!r}"

    def __str__(self) -> str:
        return str(self._data)


def array(data: Any, device: Device | None = None, dtype: Any = None) -> NDArray:
    """An NDArray from array-like ``data`` (copied, as in TVM)."""
    if isinstance(data, NDArray):
        data = data.numpy()
    arr = np.array(data, dtype=dtype, copy=True)
    if arr.dtype == np.dtype("O"):
        raise IRError("tvm.nd.array needs numeric data, got Python objects")
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    return NDArray(arr, _check_exists(device))


def empty(shape: Any, dtype: Any = "float32", device: Device | None = None) -> NDArray:
    return NDArray(np.empty(tuple(shape), dtype=dtype), _check_exists(device))
