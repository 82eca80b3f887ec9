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
