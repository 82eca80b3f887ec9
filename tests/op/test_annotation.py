"""The annotation operators are typed identities."""

from __future__ import annotations

import numpy as np

from relaykit import op
from relaykit.ir import TensorType, TupleType
from relaykit.op import annotation


def test_annotations_are_typed_identities(run, rel, tvar):
    v = tvar("x", (2,))
    begin = annotation.compiler_begin(v, "dnnl")
    end = annotation.compiler_end(begin, "dnnl")
    assert begin.op.name == "annotation.compiler_begin" and begin.attrs.compiler == "dnnl"
    assert begin.attrs.type_key == "relay.attrs.CompilerAttrs"
    assert end.op.get_attr("TOpPattern") == op.OpPattern.OPAQUE
    tup = TupleType([TensorType((2,)), TensorType((3,), "int32")])
    assert rel(annotation.compiler_end(v, "x"), tup) == tup
    x = np.array([1.0, 2.0], "float32")
    assert run(annotation.stop_fusion(v), x).tolist() == [1.0, 2.0]
    assert run(begin, x).tolist() == [1.0, 2.0]
