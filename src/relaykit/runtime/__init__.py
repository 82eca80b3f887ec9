"""Runtime values: NDArray and devices."""

from .ndarray import NDArray, Device, array, cpu, device, empty

__all__ = ["NDArray", "Device", "array", "cpu", "device", "empty"]
