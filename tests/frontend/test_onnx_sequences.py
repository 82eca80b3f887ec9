"""ONNX sequences as tuples of a length fixed at import, and optionals decided at import:
checked against onnx's reference evaluator on models of their own."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from relaykit.errors import DynamicShapeError, FrontendError
from relaykit.frontend import from_onnx
from relaykit.frontend.onnx.backend import RelayKitBackend, RelayKitReimportBackend

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def model_of(nodes, inputs, outputs, opset=18):
    """``inputs``/``outputs``: ValueInfoProtos (sequence types need make_value_info)."""
    graph = helper.make_graph(nodes, "seq", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def tensor(name, elem=F, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def sequence(name, elem=F, shape=None):
    return helper.make_value_info(
        name, helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, shape))
    )


def optional_tensor(name, elem=F, shape=None):
    return helper.make_value_info(
        name, helper.make_optional_type_proto(helper.make_tensor_type_proto(elem, shape))
    )


def assert_same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


def check(model, *inputs, backend=RelayKitBackend):
    names = [i.name for i in model.graph.input]
    want = ReferenceEvaluator(model).run(None, dict(zip(names, inputs, strict=True)))
    got = backend.run_model(model, list(inputs))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)
    return got


RNG = np.random.default_rng(0)
A, B, C = (RNG.standard_normal(s).astype("float32") for s in ((2, 3), (4, 3), (1, 3)))


def test_construct_insert_erase_at_length(make_model):
    nodes = [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s0"]),
        helper.make_node("SequenceInsert", ["s0", "c", "one"], ["s1"]),  # a c b
        helper.make_node("SequenceInsert", ["s1", "a"], ["s2"]),  # a c b a
        helper.make_node("SequenceErase", ["s2", "minus3"], ["s3"]),  # a b a
        helper.make_node("SequenceErase", ["s3"], ["s4"]),  # a b
        helper.make_node("SequenceAt", ["s2", "one"], ["second"]),
        helper.make_node("SequenceLength", ["s3"], ["n"]),
        helper.make_node("ConcatFromSequence", ["s4"], ["cat"], axis=0),
        helper.make_node("SequenceConstruct", ["a", "c"], ["s5"]),
        helper.make_node("ConcatFromSequence", ["s5"], ["stacked"], axis=-1, new_axis=1),
    ]
    consts = [
        helper.make_node("Constant", [], ["one"], value_int=1),
        helper.make_node("Constant", [], ["minus3"], value_int=-3),
    ]
    model = model_of(
        consts + nodes,
        [tensor("a", F, [2, 3]), tensor("b", F, [4, 3]), tensor("c", F, [2, 3])],
        [sequence("s3"), tensor("second"), tensor("n", I64), tensor("cat"), tensor("stacked")],
    )
    c = RNG.standard_normal((2, 3)).astype("float32")
    s3, second, n, cat, _ = check(model, A, B, c)
    assert [x.shape for x in s3] == [(2, 3), (4, 3), (2, 3)] and n == 3
    np.testing.assert_array_equal(second, c)
    np.testing.assert_array_equal(cat, np.concatenate([A, B]))


@pytest.mark.parametrize(
    "split, attrs",
    [(None, {}), (None, {"keepdims": 0}), (np.array(2), {}), (np.array([1, 4]), {"axis": 1})],
)
def test_split_to_sequence(split, attrs):
    x = RNG.standard_normal((3, 5)).astype("float32")
    ins = ["x"] if split is None else ["x", "split"]
    inputs = [tensor("x", F, [3, 5])]
    if split is not None:
        inputs.append(tensor("split", I64, list(split.shape)))
    node = helper.make_node("SplitToSequence", ins, ["s"], **attrs)
    model = model_of([node], inputs, [sequence("s")])
    args = [x] if split is None else [x, split.astype("int64")]
    # a run-time scalar split decides the sequence's length: only the re-import fallback
    # runs that; a 1-D split is a dyn.split imported once
    scalar = split is not None and split.ndim == 0
    (s,) = check(model, *args, backend=RelayKitReimportBackend if scalar else RelayKitBackend)
    assert len(s) == {None: 3, 0: 2}.get(None if split is None else split.ndim, 2)


def test_sequence_input_is_bound_and_mapped():
    body = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["y"])],
        "body",
        [tensor("x", F, None), tensor("w", F, None)],
        [tensor("y", F, None)],
    )
    node = helper.make_node("SequenceMap", ["xs", "w"], ["ys"], body=body)
    model = model_of([node], [sequence("xs"), tensor("w", F, [3])], [sequence("ys")])
    w = np.array([1, 2, 3], "float32")
    check(model, [A, B, C], w)
    mod, _ = from_onnx(model, const_inputs={"xs": [A, C]})
    assert "Tensor[(1, 3), float32]" in str(mod["main"].checked_type)


def test_an_unbound_sequence_input_names_itself():
    model = model_of(
        [helper.make_node("SequenceLength", ["xs"], ["n"])], [sequence("xs")], [tensor("n", I64)]
    )
    with pytest.raises(DynamicShapeError, match="graph input 'xs' is a sequence.*const_inputs"):
        from_onnx(model)
    with pytest.raises(FrontendError, match="bind it to a list"):
        from_onnx(model, const_inputs={"xs": A})


def test_a_symbolic_input_dimension_takes_the_run_shape():
    node = helper.make_node("SequenceConstruct", ["x", "x"], ["s"])
    model = model_of([node], [tensor("x", F, ["N", 3])], [sequence("s")])
    check(model, B)
    check(model, C)


def test_optionals_are_decided_at_import():
    nodes = [
        helper.make_node("Optional", ["x"], ["full"]),
        helper.make_node("Optional", [], ["empty"], type=helper.make_tensor_type_proto(F, [2, 3])),
        helper.make_node("OptionalHasElement", ["full"], ["has_full"]),
        helper.make_node("OptionalHasElement", ["empty"], ["has_empty"]),
        helper.make_node("OptionalHasElement", ["maybe"], ["has_maybe"]),
        helper.make_node("OptionalGetElement", ["full"], ["y"]),
    ]
    bool_t = TensorProto.BOOL
    model = model_of(
        nodes,
        [tensor("x", F, [2, 3]), optional_tensor("maybe", F, [2, 3])],
        [tensor("has_full", bool_t), tensor("has_empty", bool_t), tensor("has_maybe", bool_t),
         tensor("y", F)],
    )  # fmt: skip
    # (onnx's reference evaluator wraps the empty Optional() as [None], which it then
    # reports as holding an element; the spec says it is empty)
    for maybe, has_maybe in ((A, True), (None, False)):
        got = RelayKitBackend.run_model(model, [A, maybe])
        assert [bool(v) for v in got[:3]] == [True, False, has_maybe]
        np.testing.assert_array_equal(got[3], A)


def test_optional_get_element_of_an_empty_optional_is_an_error():
    node = helper.make_node("OptionalGetElement", ["maybe"], ["y"])
    model = model_of([node], [optional_tensor("maybe", F, [2])], [tensor("y", F)])
    with pytest.raises(FrontendError, match="OptionalGetElement.*empty"):
        from_onnx(model, const_inputs={"maybe": None})


def test_if_whose_branches_differ_in_type():
    def branch(value):
        const = helper.make_node("Constant", [], ["v"], value_floats=value)
        return helper.make_graph(
            [const, helper.make_node("SequenceConstruct", ["v"], ["s"])],
            "b",
            [],
            [sequence("s")],
        )

    node = helper.make_node(
        "If", ["c"], ["s"], then_branch=branch([1.0, 2.0]), else_branch=branch([3.0])
    )
    model = model_of([node], [tensor("c", TensorProto.BOOL, [])], [sequence("s")])
    # sequences of one length whose tensors differ in size: ? dimensions, imported once
    check(model, np.array(True))
    check(model, np.array(False))
    # of different lengths: not one type; only the named re-import fallback runs it
    empty = helper.make_graph(
        [helper.make_node("SequenceEmpty", [], ["s"])], "b", [], [sequence("s")]
    )
    node = helper.make_node("If", ["c"], ["s"], then_branch=branch([1.0, 2.0]), else_branch=empty)
    model = model_of([node], [tensor("c", TensorProto.BOOL, [])], [sequence("s")])
    with pytest.raises(DynamicShapeError, match="needs both branches to have one type"):
        from_onnx(model)
    with pytest.raises(DynamicShapeError, match="needs both branches to have one type"):
        RelayKitBackend.run_model(model, [np.array(True)])
    check(model, np.array(True), backend=RelayKitReimportBackend)
    check(model, np.array(False), backend=RelayKitReimportBackend)
