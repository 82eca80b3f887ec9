"""What ``relay.build(..., executor=Executor("aot"))`` returns, and its Model Library Format.

:class:`AOTExecutorFactoryModule` holds the generated C program, the parameters and the
optimised Relay text; :func:`export_model_library_format` writes TVM's MLF tar:
``metadata.json``, ``codegen/host/src/*.c``, ``codegen/host/include/tvmgen_<name>.h``,
``parameters/<name>.params``, ``src/<name>.relay``. The tar is written to a temporary
file and renamed into place, so a failure leaves nothing half-written.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from relaykit.errors import ArtifactError
from relaykit.runtime.module import Module
from relaykit.runtime.params import save_param_dict

from .codesize import CodeSizes, measure_code_sizes
from .program import AOTProgram

__all__ = ["AOTExecutorFactoryModule", "export_model_library_format", "mlf_metadata"]

MLF_VERSION = 7


class AOTExecutorFactoryModule(Module):
    """The result of an ahead-of-time build: C sources, header, parameters, metadata.

    ``lib.sources`` maps file names to C text; ``lib.header`` is ``tvmgen_<name>.h``.
    """

    type_key: ClassVar[str] = "aot_executor_factory"

    def __init__(
        self,
        program: AOTProgram,
        params: Mapping[str, np.ndarray],
        relay_text: str,
        target: str = "c",
        executor_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.program = program
        self.params = {k: np.asarray(v) for k, v in params.items()}
        self.relay_text = relay_text
        self.target = target
        self.executor_options = dict(executor_options or {})
        self._code_sizes: CodeSizes | None = None

    @property
    def code_sizes(self) -> CodeSizes:
        """Code bytes measured by compiling the C (:mod:`.codesize`; once, then kept)."""
        if self._code_sizes is None:
            p = self.program
            self._code_sizes = measure_code_sizes(p.sources, f"tvmgen_{p.mod_name}.h", p.header)
        return self._code_sizes

    @property
    def mod_name(self) -> str:
        return self.program.mod_name

    @property
    def sources(self) -> dict[str, str]:
        return dict(self.program.sources)

    @property
    def header(self) -> str:
        return self.program.header

    def get_source(self, fmt: str = "c") -> str:
        """All generated C, concatenated (TVM's ``lib.get_source()``)."""
        return "\n".join(self.program.sources.values())

    def get_params(self) -> dict[str, np.ndarray]:
        return dict(self.params)

    def function_names(self) -> list[str]:
        return [f.name for f in self.program.functions]

    def export_library(self, file_name: str, **_: Any) -> None:
        raise ArtifactError(
            "an ahead-of-time build is C source; write it with "
            "tvm.micro.export_model_library_format(module, 'model.tar')"
        )

    def __repr__(self) -> str:
        p = self.program
        return (
            f"AOTExecutorFactoryModule({len(p.functions)} functions, workspace "
            f"{p.workspace_bytes} bytes, constants {p.constants_bytes} bytes)"
        )


def mlf_metadata(module: AOTExecutorFactoryModule) -> dict[str, Any]:
    """The ``metadata.json`` of ``module`` (TVM's MLF layout, version 7)."""
    p = module.program
    name = p.mod_name
    code = module.code_sizes
    listed = {f.name for f in p.functions}
    main = {
        "code_size_bytes": code.total,
        "constants_size_bytes": p.constants_bytes,
        "device": 1,
        "inputs": {
            n: {"dtype": d, "size": int(np.prod(s, dtype=np.int64)) * np.dtype(d).itemsize}
            for n, _, s, d in p.inputs
        },
        "io_size_bytes": p.io_bytes,
        "outputs": {
            n: {"dtype": d, "size": int(np.prod(s, dtype=np.int64)) * np.dtype(d).itemsize}
            for n, s, d in p.outputs
        },
        "workspace_size_bytes": p.workspace_bytes,
    }
    ops = [
        {
            "function_name": f.name,
            "code_size_bytes": code.functions.get(f.name),
            "workspace": [
                {
                    "device": 1,
                    "workspace_size_bytes": f.workspace_bytes,
                    "constants_size_bytes": f.constants_bytes,
                }
            ],
        }
        for f in p.functions[1:]
    ]
    return {
        "modules": {
            name: {
                "executors": ["aot"],
                "export_datetime": datetime.datetime.now(datetime.timezone.utc).strftime(
                    "%Y-%m-%d %H:%M:%SZ"
                ),
                "external_dependencies": [],
                "memory": {"functions": {"main": [main], "operator_functions": ops}},
                "model_name": name,
                "style": "full-model",
                "target": [str(module.target)],
                "executor_options": module.executor_options,
                "inputs": {
                    n: {"shape": list(s), "dtype": d, "c_name": c} for n, c, s, d in p.inputs
                },
                "outputs": {n: {"shape": list(s), "dtype": d} for n, s, d in p.outputs},
                "workspace_size_bytes": p.workspace_bytes,
                "constants_size_bytes": p.constants_bytes,
                "code_size_bytes": code.total,
                "code_size_method": code.method,
                # helpers several functions call (the GEMM panel, backend regions' kernels)
                "code_size_shared_functions": {
                    k: v for k, v in sorted(code.functions.items()) if k not in listed
                },
            }
        },
        "version": MLF_VERSION,
    }


def export_model_library_format(module: Any, file_name: str | os.PathLike[str]) -> Path:
    """Write ``module`` (an ahead-of-time build) as a Model Library Format tar.

    >>> export_model_library_format(lib, "model.tar")  # doctest: +SKIP
    """
    if not isinstance(module, AOTExecutorFactoryModule):
        raise ArtifactError(
            f"export_model_library_format takes an ahead-of-time build, got "
            f"{type(module).__name__}; build with executor=Executor('aot') and target='c'"
        )
    p = module.program
    name = p.mod_name
    files: dict[str, bytes] = {
        "metadata.json": json.dumps(mlf_metadata(module), indent=2, sort_keys=True).encode(),
        f"codegen/host/include/tvmgen_{name}.h": p.header.encode(),
        f"parameters/{name}.params": save_param_dict(module.params),
        f"src/{name}.relay": module.relay_text.encode(),
    }
    for fname, text in p.sources.items():
        files[f"codegen/host/src/{fname}"] = text.encode()
    target = Path(file_name)
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise ArtifactError(f"cannot write {target}: directory {parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".mlf-", suffix=".tar", dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh, tarfile.open(fileobj=fh, mode="w") as tar:
            for path, data in files.items():
                info = tarfile.TarInfo(f"./{path}")
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
