"""BYOC compilers as target kinds (TVM registers ``ccompiler`` with a ``header`` option)."""

import pytest

import relaykit as tvm
from relaykit.errors import ArgumentError


def test_ccompiler_target_kind_carries_its_options():
    host = tvm.target.Target("llvm")
    t = tvm.target.Target({"kind": "ccompiler", "header": "// Good"}, host=host)
    assert t.kind.name == "ccompiler"
    assert t.attrs == {"header": "// Good"}
    assert t.host.kind.name == "llvm"
    again = tvm.target.Target(str(t))
    assert again.attrs == {"header": "// Good"}
    assert tvm.target.Target("ccompiler").kind.name == "ccompiler"


def test_ccompiler_target_rejects_unknown_options():
    with pytest.raises(ArgumentError):
        tvm.target.Target({"kind": "ccompiler", "mcpu": "skylake"})


def test_cutlass_target_kind_and_the_default_cuda_arch():
    # TVM falls back to sm_50 when no GPU reports its compute version (relaykit has none)
    cuda = tvm.target.Target("cuda")
    assert cuda.arch == "sm_50" and "-arch=sm_50" in str(cuda)
    assert tvm.target.Target("cuda -arch=sm_80").arch == "sm_80"
    assert tvm.target.Target("llvm").arch == ""
    with pytest.raises(ArgumentError, match="sm_XY"):
        tvm.target.Target("cuda -arch=compute_80")
    cutlass = tvm.target.Target(
        {
            "kind": "cutlass",
            "sm": int(cuda.arch.split("_")[1]),
            "use_3xtf32": True,
            "split_k_slices": [1],
            "tmp_dir": "./tmp",
        },
        host=tvm.target.Target("llvm"),
    )
    assert cutlass.attrs["sm"] == 50 and cutlass.attrs["use_3xtf32"] is True
    with pytest.raises(ArgumentError, match="use_3xtf32"):
        tvm.target.Target({"kind": "cutlass", "use_3xtf3": True})
