"""``tvm.rpc``: TVM's local session; remote-device sessions are out of scope.

``LocalSession()`` is TVM's session "on this machine": files are uploaded into a
private workspace, ``load_module`` loads an exported model from there and
``cpu(0)`` is the host. Scripts written for a remote board run unchanged with it
(TVM's tutorials use it when ``local_demo`` is set). ``connect``, trackers and
servers raise :class:`~relaykit.errors.UnsupportedFeatureError`: relaykit runs in
the calling process; to run on another machine, copy the single-file artifact
(``lib.export_library(path)``) there and ``load_module`` it.

>>> from relaykit import rpc
>>> remote = rpc.LocalSession()
>>> remote.upload(b"hello", target="greeting.txt")
>>> remote.download("greeting.txt")
b'hello'
>>> remote.cpu(0).exist
True
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, NoReturn

from relaykit.errors import UnsupportedFeatureError
from relaykit.runtime import Device, Module, get_global_func, load_module
from relaykit.runtime import device as _device

__all__ = ["LocalSession"]

INSTEAD = (
    "relaykit runs in the calling process; export the model with lib.export_library(path), "
    "copy the file to the other machine and load it there with relaykit.runtime.load_module "
    "(rpc.LocalSession() runs a remote-style script on this machine)"
)


class LocalSession:
    """A session on this machine with a private workspace (TVM's ``rpc.LocalSession``).

    ``upload`` copies a file (or writes bytes) into the workspace, ``load_module``
    loads an exported model from it, ``cpu``/``device`` are this machine's devices.
    """

    def __init__(self) -> None:
        self._workspace = tempfile.TemporaryDirectory(prefix="relaykit-rpc-")
        self.workspace = self._workspace.name

    def _path(self, name: str) -> str:
        full = os.path.normpath(os.path.join(self.workspace, name))
        if os.path.commonpath([full, self.workspace]) != self.workspace:
            raise UnsupportedFeatureError(
                f"rpc.LocalSession: {name!r} is outside the session's workspace "
                f"({self.workspace}); use a path relative to it"
            )
        return full

    def upload(self, data: str | os.PathLike[str] | bytes, target: str | None = None) -> None:
        """Copy the file ``data`` (or write the bytes ``data``) into the workspace."""
        if isinstance(data, bytes | bytearray):
            if target is None:
                raise UnsupportedFeatureError(
                    "rpc.LocalSession.upload: bytes need a target file name (target=...)"
                )
            dest = self._path(target)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(data)
            return
        source = os.fspath(data)
        dest = self._path(target or os.path.basename(source))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(source, dest)

    def download(self, path: str) -> bytes:
        """The bytes of a workspace file."""
        with open(self._path(path), "rb") as f:
            return f.read()

    def remove(self, path: str) -> None:
        """Delete a workspace file or folder."""
        full = self._path(path)
        if os.path.isdir(full):
            shutil.rmtree(full)
        else:
            os.remove(full)

    def listdir(self, path: str = ".") -> list[str]:
        """The names in a workspace folder."""
        return sorted(os.listdir(self._path(path)))

    def load_module(self, path: str) -> Module:
        """Load a module exported with ``export_library`` and uploaded to the workspace."""
        return load_module(self._path(path))

    def get_function(self, name: str) -> Any:
        """A registered global function (``tvm.get_global_func``)."""
        return get_global_func(name)

    def device(self, dev_type: str | int, dev_id: int = 0) -> Device:
        """A device of this machine (``cpu`` is the one that exists)."""
        return _device(str(dev_type), dev_id)

    def cpu(self, dev_id: int = 0) -> Device:
        """The host CPU."""
        return _device("cpu", dev_id)

    def cuda(self, dev_id: int = 0) -> Device:
        """A CUDA device (``exist`` is False)."""
        return _device("cuda", dev_id)

    def cl(self, dev_id: int = 0) -> Device:
        """An OpenCL device (``exist`` is False)."""
        return _device("opencl", dev_id)

    def vulkan(self, dev_id: int = 0) -> Device:
        """A Vulkan device (``exist`` is False)."""
        return _device("vulkan", dev_id)

    def metal(self, dev_id: int = 0) -> Device:
        """A Metal device (``exist`` is False)."""
        return _device("metal", dev_id)


def __getattr__(name: str) -> NoReturn:
    raise UnsupportedFeatureError.for_name("tvm.rpc", name, INSTEAD)
