"""``DnnlModule``: the runtime module of the dnnl backend, and how it is saved.

One module holds the compiled regions of a build (the codegen receives all
``Compiler="dnnl"`` functions at once), each callable under its
``global_symbol`` in destination-passing style, ``f(*inputs, *outputs)``. It
exports as its region programs (JSON), their constants (arrays), and the
native runtime library plus its source, so ``load_module`` in a fresh process
needs only the oneDNN wheel (and a compiler only if the carried library
cannot be loaded there).

>>> m = DnnlModule({})
>>> m.function_names()
[]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from relaykit.errors import ArtifactCorruptError
from relaykit.runtime.module import Module, ModuleBlob

from .native import load_runtime_blob, runtime_blob
from .region import DnnlRegion

__all__ = ["DnnlModule"]

_PROVIDER = "relaykit.backends.dnnl"


class DnnlModule(Module):
    """Compiled dnnl regions by symbol (see the module docstring)."""

    type_key: ClassVar[str] = "dnnl"

    def __init__(self, regions: Mapping[str, DnnlRegion], num_threads: int | None = None) -> None:
        super().__init__()
        self.regions = dict(regions)
        #: The thread count given explicitly at build time (saved with the module), or None.
        self.num_threads = num_threads

    def _own_function(self, name: str) -> Callable[..., Any] | None:
        region = self.regions.get(name)
        if region is None:
            return None
        n_in = len(region.input_shapes)

        def call(*args: Any) -> None:
            outs = list(args[n_in:])
            if all(
                np.asarray(o).dtype == d for o, d in zip(outs, region.output_dtypes, strict=True)
            ):
                region.run(args[:n_in], out=outs)
                return
            # bfloat16 boundaries: the region computes in float32 and rounds its results
            for o, r in zip(outs, region.run(args[:n_in]), strict=True):
                o[...] = r.astype(o.dtype)

        return call

    def function_names(self) -> list[str]:
        return sorted(self.regions)

    def bind_function(
        self, name: str, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]
    ) -> Callable[[], Any]:
        region = self.regions.get(name)
        if region is None or any(
            a.dtype != d
            for a, d in zip(
                (*inputs, *outputs), (*region.input_dtypes, *region.output_dtypes), strict=True
            )
        ):
            return super().bind_function(name, inputs, outputs)
        return region.bind(inputs, outputs)

    def save_blob(self) -> ModuleBlob:
        native = runtime_blob()
        files = {"runtime.so": native["library"], "runtime.cc": native["source"]}
        arrays: dict[str, np.ndarray] = {}
        regions = []
        for i, (symbol, region) in enumerate(sorted(self.regions.items())):
            files[f"region{i}.json"] = region.program_json.encode()
            for k, c in enumerate(region.constants):
                arrays[f"region{i}/c{k}"] = c
            regions.append(
                {"symbol": symbol, "constants": len(region.constants), "ops": region.ops}
            )
        meta = {
            "native": True,
            "abi": native["abi"].decode(),
            "regions": regions,
            "num_threads": self.num_threads,
        }
        return ModuleBlob(self.type_key, meta, files, arrays, provider=_PROVIDER)

    @staticmethod
    def load_blob(blob: ModuleBlob) -> DnnlModule:
        meta = blob.meta
        records = meta.get("regions")
        if not isinstance(records, list):
            raise ArtifactCorruptError("dnnl module: the region list is missing")
        runtime = load_runtime_blob(
            {
                "library": blob.files.get("runtime.so", b""),
                "source": blob.files.get("runtime.cc", b""),
                "abi": str(meta.get("abi", "")).encode(),
            },
            allow_native=blob.allow_native,
        )
        threads = meta.get("num_threads")
        threads = threads if isinstance(threads, int) and threads > 0 else None
        regions: dict[str, DnnlRegion] = {}
        for i, rec in enumerate(records):
            program = blob.files.get(f"region{i}.json")
            if not isinstance(rec, dict) or program is None:
                raise ArtifactCorruptError(f"dnnl module: region {i} is malformed")
            n = int(rec.get("constants", 0))
            consts = [blob.arrays[f"region{i}/c{k}"] for k in range(n)]
            symbol = str(rec["symbol"])
            regions[symbol] = DnnlRegion(
                program.decode(),
                consts,
                name=symbol,
                num_threads=threads,
                runtime=runtime,
                ops=[str(o) for o in rec.get("ops", [])],
            )
        return DnnlModule(regions, threads)

    def __repr__(self) -> str:
        return f"DnnlModule({', '.join(self.function_names())})"
