"""Runtime values and modules: NDArray and devices, runtime modules, export and load.

``load_module(path)`` reads a file written by ``export_library`` (TVM's
``tvm.runtime.load_module``).
"""

from . import vm
from .artifact import load_module
from .convert import convert
from .export import export_module
from .module import Module, ModuleBlob, PythonModule, enabled, register_module_loader
from .ndarray import (
    Device,
    NDArray,
    array,
    cl,
    cpu,
    cuda,
    device,
    empty,
    ext_dev,
    gpu,
    hexagon,
    metal,
    mtl,
    opencl,
    rocm,
    vpi,
    vulkan,
    webgpu,
)
from .object import Object
from .params import load_param_dict, save_param_dict
from .registry import get_global_func, list_global_func_names, register_func
from .threads import config_threadpool

register_func("runtime.config_threadpool", config_threadpool, override=True)

__all__ = [
    "save_param_dict",
    "load_param_dict",
    "NDArray",
    "Device",
    "array",
    "cpu",
    "device",
    "empty",
    "enabled",
    "cuda",
    "gpu",
    "opencl",
    "cl",
    "vulkan",
    "metal",
    "mtl",
    "rocm",
    "ext_dev",
    "hexagon",
    "webgpu",
    "vpi",
    "Module",
    "ModuleBlob",
    "PythonModule",
    "register_module_loader",
    "load_module",
    "export_module",
    "register_func",
    "get_global_func",
    "list_global_func_names",
    "convert",
    "vm",
    "Object",
]
