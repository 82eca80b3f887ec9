"""Tiny models, bounded costs: the importer decides from shapes before it allocates or
loops, and a few bytes of model never make it build gigabytes (issue 15).

The bombs run in a subprocess with an address-space limit (so a regression fails
instead of taking the machine) and report tracemalloc's peak (NumPy's buffers are
traced); the assertions are on memory and on the typed error, never on time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relaykit import relay  # noqa: E402
from relaykit.errors import FrontendError  # noqa: E402
from relaykit.frontend import from_onnx  # noqa: E402
from relaykit.frontend.onnx.limits import MAX_ELEMENTS, MAX_UNROLL_STEPS  # noqa: E402
from relaykit.ir.expr import Call, Constant  # noqa: E402
from relaykit.transform import PassContext  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MiB = 2**20


def build_model(nodes, inputs, outputs, initializers=(), opset=17):
    """A ModelProto from nodes and (name, elem_type, shape) inputs/outputs."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


RUNNER = textwrap.dedent(
    """
    import json, resource, sys, tracemalloc
    def vm():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    from relaykit.errors import RelayKitError
    from relaykit.frontend import from_onnx
    lim = vm() + int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    tracemalloc.start()
    results = {}
    for path in sys.argv[2:]:
        data = open(path, "rb").read()
        tracemalloc.reset_peak()
        try:
            mod, _ = from_onnx(data)
            result = {"ok": str(mod["main"].body.checked_type)}
        except RelayKitError as err:
            result = {"error": type(err).__name__, "message": str(err)}
        except BaseException as err:
            result = {"untyped": type(err).__name__, "message": str(err)[:300]}
        result["peak"] = tracemalloc.get_traced_memory()[1]
        results[path] = result
    print(json.dumps(results))
    """
)


def import_in_subprocess(tmp_path, models: dict[str, bytes], limit: int = 1024 * MiB):
    """Import each model in one fresh interpreter whose address space may grow by
    ``limit``; name -> result, with ``peak`` the traced peak of that import in bytes."""
    paths = {}
    for name, data in models.items():
        paths[name] = tmp_path / f"{name}.onnx"
        paths[name].write_bytes(data)
    out = subprocess.run(
        [sys.executable, "-c", RUNNER, str(limit), *map(str, paths.values())],
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard, not a timing assertion
    )
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    return {name: results[str(path)] for name, path in paths.items()}


def expand_bomb() -> bytes:
    """The issue's 75-byte model: ``Expand`` of one constant to 16384 x 16384."""
    g = helper.make_graph(
        [helper.make_node("Expand", ["a", "s"], ["y"])],
        "",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            helper.make_tensor("a", TensorProto.FLOAT, [], [1.0]),
            helper.make_tensor("s", TensorProto.INT64, [2], [16384, 16384]),
        ],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="")
    m.ir_version = 8
    return m.SerializeToString()


def lstm_model(seq: int) -> bytes:
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, 1, 1])
    w = helper.make_tensor("W", TensorProto.FLOAT, [1, 4, 1], [0.1] * 4)
    r = helper.make_tensor("R", TensorProto.FLOAT, [1, 4, 1], [0.1] * 4)
    n = helper.make_node("LSTM", ["X", "W", "R"], ["Y"], hidden_size=1)
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    g = helper.make_graph([n], "", [x], [y], [w, r])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="")
    m.ir_version = 8
    return m.SerializeToString()


# -- the bombs ----------------------------------------------------------------------------

#: light_bvlc_alexnet.onnx with one bit flipped: conv2_w_0's shape (256, 48, 5, 5)
#: becomes (1048832, 48, 5, 5), 4.9 GB of weights folded before the type error
FLIP_OFFSET, FLIP_BIT = 2813, 4


def flipped_alexnet() -> bytes:
    with open(os.path.join(LIGHT, "light_bvlc_alexnet.onnx"), "rb") as f:
        raw = bytearray(f.read())
    raw[FLIP_OFFSET] ^= 1 << FLIP_BIT
    return bytes(raw)


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    """The bombs imported in one subprocess (within 1 GiB of address space)."""
    models = {
        "expand": expand_bomb(),
        "lstm_2_62": lstm_model(2**62),
        "lstm_2_20": lstm_model(2**20),
        "flipped": flipped_alexnet(),
        "einsum": build_model(
            [helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")],
            [("a", TensorProto.FLOAT, [2**16, 1]), ("b", TensorProto.FLOAT, [1, 2**16])],
            [("y", TensorProto.FLOAT, None)],
        ).SerializeToString(),
    }
    return import_in_subprocess(tmp_path_factory.mktemp("bombs"), models)


def test_expand_bomb_imports_within_memory(bombs):
    assert len(expand_bomb()) < 100
    res = bombs["expand"]
    # the 1 GiB constant is not built: the Expand stays a runtime operator
    assert res.get("ok") == "Tensor[(16384, 16384), float32]", res
    assert res["peak"] < 64 * MiB, res["peak"]


def test_expand_bomb_stays_a_runtime_op():
    mod, _ = from_onnx(expand_bomb())
    body = mod["main"].body
    assert isinstance(body, Call) and body.op.name == "broadcast_to"
    assert isinstance(body.args[0], Constant) and body.args[0].data.numpy().size == 1


def test_lstm_with_sequence_length_2_62_is_rejected(bombs):
    res = bombs["lstm_2_62"]
    assert res.get("error") == "FrontendError", res
    assert "'X'" in res["message"] and str(2**62) in res["message"]
    assert res["peak"] < 16 * MiB, res["peak"]


def test_lstm_too_long_to_unroll_is_rejected_before_unrolling(bombs):
    seq = 2**20  # a valid shape, but far more steps than are unrolled at import
    assert seq <= MAX_ELEMENTS and seq > MAX_UNROLL_STEPS
    res = bombs["lstm_2_20"]
    assert res.get("error") == "FrontendError", res
    assert "LSTM" in res["message"] and "sequence length" in res["message"]
    assert str(seq) in res["message"]
    assert res["peak"] < 16 * MiB, res["peak"]


def test_flipped_bit_in_alexnet_fails_typed_within_memory(bombs):
    with open(os.path.join(LIGHT, "light_bvlc_alexnet.onnx"), "rb") as f:
        original = onnx.load_from_string(f.read())
    flipped = onnx.load_from_string(flipped_alexnet())
    shapes = {
        t.name: numpy_helper.to_array(t).tolist()
        for t in flipped.graph.initializer
        if t.name == "conv2_w_0__SHAPE"
    }
    assert shapes == {"conv2_w_0__SHAPE": [1048832, 48, 5, 5]}  # the flip is the one meant
    assert len(original.graph.node) == len(flipped.graph.node)
    res = bombs["flipped"]
    assert res.get("error") == "FrontendError", res
    assert "1048832" in res["message"]
    # the unflipped model's own weights (below the folding limit) are about 100 MiB
    assert res["peak"] < 400 * MiB, res["peak"]


def test_einsum_with_a_huge_output_is_typed_without_computing_it(bombs):
    res = bombs["einsum"]
    assert res.get("ok") == "Tensor[(65536, 65536), float32]", res
    assert res["peak"] < 16 * MiB, res["peak"]


# -- folding at import is bounded, and the result is still right --------------------------------


def test_large_expand_is_computed_at_run_time_and_matches_numpy():
    a = np.arange(4, dtype="float32").reshape(4, 1)
    m = build_model(
        [helper.make_node("Expand", ["a", "s"], ["y"])],
        [],
        [("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a, "a"), numpy_helper.from_array(np.array([4, 64]), "s")],
    )
    with PassContext(config={"relay.FoldConstant.max_bytes": 512}):
        mod, _ = from_onnx(m)
    assert isinstance(mod["main"].body, Call)  # 1 KiB > 512 bytes: not folded
    got = relay.create_executor("graph", mod=mod).evaluate()().numpy()
    np.testing.assert_array_equal(got, np.broadcast_to(a, (4, 64)))
    mod_folded, _ = from_onnx(m)  # under the default limit: a constant, same values
    assert isinstance(mod_folded["main"].body, Constant)
    np.testing.assert_array_equal(mod_folded["main"].body.data.numpy(), got)


def test_large_constant_of_shape_is_filled_at_run_time():
    value = numpy_helper.from_array(np.array([2.5], "float32"), "value")
    m = build_model(
        [helper.make_node("ConstantOfShape", ["s"], ["y"], value=value)],
        [],
        [("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([8, 32]), "s")],
    )
    with PassContext(config={"relay.FoldConstant.max_bytes": 256}):
        mod, _ = from_onnx(m)
    assert not isinstance(mod["main"].body, Constant)
    got = relay.create_executor("graph", mod=mod).evaluate()().numpy()
    np.testing.assert_array_equal(got, np.full((8, 32), 2.5, "float32"))


def test_value_needed_at_import_but_too_large_to_fold_names_the_limit():
    m = build_model(
        [
            helper.make_node("Expand", ["a", "s"], ["big"]),
            helper.make_node("MaxUnpool", ["x", "i", "big"], ["y"], kernel_shape=[2, 2]),
        ],
        [("x", TensorProto.FLOAT, [1, 1, 2, 2]), ("i", TensorProto.INT64, [1, 1, 2, 2])],
        [("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.array([1], "int64"), "a"),
            numpy_helper.from_array(np.array([300]), "s"),
        ],
    )
    config = {"relay.FoldConstant.max_bytes": 1024}
    want = r"\(MaxUnpool\): its output_shape input .* above the import-time folding limit"
    with PassContext(config=config), pytest.raises(FrontendError, match=want):
        from_onnx(m)


def test_a_shape_too_large_to_fold_is_a_run_time_reshape():
    m = build_model(
        [
            helper.make_node("Expand", ["a", "s"], ["big"]),
            helper.make_node("Reshape", ["x", "big"], ["y"]),
        ],
        [("x", TensorProto.FLOAT, [4])],
        [("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.array([1], "int64"), "a"),
            numpy_helper.from_array(np.array([300]), "s"),
        ],
    )
    with PassContext(config={"relay.FoldConstant.max_bytes": 1024}):
        mod, _ = from_onnx(m)
    body = mod["main"].body
    assert body.op.name == "dyn.reshape" and not isinstance(body.args[1], Constant)
    assert len(body.checked_type.shape) == 300


def test_a_product_of_expanded_constants_is_left_to_run_time():
    m = build_model(
        [
            helper.make_node("Expand", ["a", "s"], ["e"]),
            helper.make_node("MatMul", ["e", "e"], ["y"]),
        ],
        [],
        [("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.array(1.0, "float32"), "a"),
            numpy_helper.from_array(np.array([4096, 4096]), "s"),
        ],
    )
    mod, _ = from_onnx(m)  # folding it would take 2**36 multiply-adds
    body = mod["main"].body
    assert isinstance(body, Call) and not isinstance(body, Constant)
    assert str(body.checked_type) == "Tensor[(4096, 4096), float32]"


# -- absurd numbers are rejected before anything is allocated ------------------------------------


@pytest.mark.parametrize(
    ("dims", "match"),
    [
        ([2**40, 2**40], r"graph input 'x'.*more than relaykit's limit"),
        ([3, 2**62], r"graph input 'x'.*more than relaykit's limit"),
    ],
)
def test_absurd_input_shapes(dims, match):
    m = build_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [("x", TensorProto.FLOAT, dims)],
        [("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(FrontendError, match=match):
        from_onnx(m)


def test_shape_override_is_checked():
    m = build_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [("x", TensorProto.FLOAT, ["N"])],
        [("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(FrontendError, match=r"'x' \(from shape=\).*negative"):
        from_onnx(m, shape={"x": (-3,)})


@pytest.mark.parametrize(
    ("dims", "raw", "match"),
    [
        ([2**40], b"\0" * 4, r"more than relaykit's limit"),
        ([3], b"\0" * 8, r"declare 3 values \(12 bytes\) but its raw_data holds 8 bytes"),
        ([4, -1], b"\0" * 16, r"negative"),
    ],
)
def test_initializer_dims_must_match_its_data(dims, raw, match):
    t = helper.make_tensor("w", TensorProto.FLOAT, [1], [0.0])
    del t.dims[:]
    t.dims.extend(dims)
    t.ClearField("float_data")
    t.raw_data = raw
    m = build_model(
        [helper.make_node("Identity", ["w"], ["y"])], [], [("y", TensorProto.FLOAT, None)], [t]
    )
    with pytest.raises(FrontendError, match=r"initializer 'w'.*" + match):
        from_onnx(m)


def test_initializer_declaring_more_values_than_it_holds():
    t = helper.make_tensor("w", TensorProto.INT64, [2], [1, 2])
    t.dims[0] = 2**31
    m = build_model(
        [helper.make_node("Identity", ["w"], ["y"])], [], [("y", TensorProto.INT64, None)], [t]
    )
    with pytest.raises(FrontendError, match=r"declare 2147483648 values but it holds 2"):
        from_onnx(m)


def _const_model(node, inits, out_type=TensorProto.FLOAT):
    return build_model([node], [], [("y", out_type, None)], inits)


def test_huge_range_is_rejected_naming_the_node():
    inits = [
        numpy_helper.from_array(np.array(0, "int64"), "start"),
        numpy_helper.from_array(np.array(2**40, "int64"), "limit"),
        numpy_helper.from_array(np.array(1, "int64"), "delta"),
    ]
    node = helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="r")
    with pytest.raises(FrontendError, match=r"node 'r' \(Range\).*\(1099511627776,\)"):
        from_onnx(_const_model(node, inits, TensorProto.INT64))


def test_range_with_zero_delta_is_rejected():
    inits = [
        numpy_helper.from_array(np.array(0.0, "float32"), "start"),
        numpy_helper.from_array(np.array(5.0, "float32"), "limit"),
        numpy_helper.from_array(np.array(0.0, "float32"), "delta"),
    ]
    node = helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="r")
    with pytest.raises(FrontendError, match=r"node 'r' \(Range\).*delta nonzero"):
        from_onnx(_const_model(node, inits))


def test_huge_constant_of_shape_is_rejected():
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], name="c")
    inits = [numpy_helper.from_array(np.array([2**30, 2**30]), "s")]
    with pytest.raises(FrontendError, match=r"node 'c' \(ConstantOfShape\).*limit"):
        from_onnx(_const_model(node, inits))


def test_huge_tile_is_rejected():
    inits = [
        numpy_helper.from_array(np.ones((2, 2), "float32"), "x"),
        numpy_helper.from_array(np.array([2**20, 2**20]), "reps"),
    ]
    node = helper.make_node("Tile", ["x", "reps"], ["y"], name="t")
    with pytest.raises(FrontendError, match=r"node 't' \(Tile\).*more than relaykit's limit"):
        from_onnx(_const_model(node, inits))


def test_huge_resize_is_rejected():
    m = build_model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="rs")],
        [("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 1, 2.0**20, 2.0**20], "float32"), "scales")],
    )
    with pytest.raises(FrontendError, match=r"node 'rs' \(Resize\).*more than relaykit's limit"):
        from_onnx(m)


def test_split_into_absurdly_many_outputs_is_rejected():
    m = build_model(
        [helper.make_node("Split", ["x"], ["y"], name="sp", axis=0, num_outputs=2**40)],
        [("x", TensorProto.FLOAT, [4])],
        [("y", TensorProto.FLOAT, None)],
        opset=18,
    )
    with pytest.raises(FrontendError, match=r"node 'sp' \(Split\).*1099511627776"):
        from_onnx(m)


def test_rnn_hidden_size_must_match_its_weights():
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 1, 1])
    w = helper.make_tensor("W", TensorProto.FLOAT, [1, 1, 1], [0.1])
    r = helper.make_tensor("R", TensorProto.FLOAT, [1, 1, 1], [0.1])
    node = helper.make_node("RNN", ["X", "W", "R"], ["Y"], name="rnn", hidden_size=2**34)
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    m = helper.make_model(helper.make_graph([node], "g", [x], [y], [w, r]))
    with pytest.raises(FrontendError, match=r"node 'rnn' \(RNN\): hidden_size=17179869184"):
        from_onnx(m)


# -- malformed nodes -----------------------------------------------------------------------------


def test_missing_required_input_is_named():
    m = build_model(
        [helper.make_node("Add", ["x", ""], ["y"], name="add")],
        [("x", TensorProto.FLOAT, [2])],
        [("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(FrontendError, match=r"node 'add' \(Add\): its required input 1 \('B'\)"):
        from_onnx(m)


def test_missing_required_attribute_is_named():
    m = build_model(
        [helper.make_node("If", ["c"], ["y"], name="if")],
        [("c", TensorProto.BOOL, [])],
        [("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(FrontendError, match=r"node 'if' \(If\): its required attribute"):
        from_onnx(m)


def test_names_that_are_not_utf8_are_rejected():
    m = build_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [("x", TensorProto.FLOAT, [2])],
        [("y", TensorProto.FLOAT, None)],
    )
    raw = m.SerializeToString()
    at = raw.index(b"relu")
    bad = raw[:at] + b"r\xf4lu" + raw[at + 4 :]
    with pytest.raises(FrontendError, match=r"not valid UTF-8"):
        from_onnx(bad)
