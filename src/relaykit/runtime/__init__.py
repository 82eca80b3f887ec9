"""Runtime values: NDArray and devices."""

from .ndarray import Device, NDArray, array, cpu, device, empty

__all__ = ["NDArray", "Device", "array", "cpu", "device", "empty"]
