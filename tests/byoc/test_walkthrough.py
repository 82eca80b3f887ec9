# ruff: noqa: UP031, E128  - the notebook's code, as it was written
"""The BYOC walkthrough (seed 000) runs unchanged with ``import relaykit as tvm`` and
partitions VGG-11 into the 8 functions TVM made, with TVM's names."""

import numpy as np

import relaykit as tvm
import relaykit.relay.testing
from relaykit import relay
from relaykit.execution.interpreter import create_executor

TVM_FUNCTIONS = [
    "tvmgen_default_byoc_target_main_0",
    "tvmgen_default_byoc_target_main_3",
    "tvmgen_default_byoc_target_main_6",
    "tvmgen_default_byoc_target_main_11",
    "tvmgen_default_byoc_target_main_16",
    "tvmgen_default_byoc_target_main_21",
    "tvmgen_default_byoc_target_main_23",
    "tvmgen_default_byoc_target_main_25",
]


def profile_graph(func):
    class OpProfiler(tvm.relay.ExprVisitor):
        def __init__(self):
            super().__init__()
            self.ops = {}

        def visit_call(self, call):
            op = call.op
            if op not in self.ops:
                self.ops[op] = 0
            self.ops[op] += 1
            super().visit_call(call)

        def get_byoc_graph_num(self):
            cnt = 0
            for op in self.ops:
                if str(op).find("byoc-target") != -1:
                    cnt += 1
            return cnt

    profiler = OpProfiler()
    profiler.visit(func)
    print("Total number of operators: %d" % sum(profiler.ops.values()))
    print("Detail breakdown")
    for op, count in profiler.ops.items():
        print("\t%s: %d" % (op, count))
    print("byoc-target subgraph #: %d" % profiler.get_byoc_graph_num())
    return profiler


def run_walkthrough(image_shape=(3, 224, 224)):
    """The notebook's cells, verbatim but for the module name."""
    # Define the neural network
    # Get the symbol definition and random weight of a network
    mod, params = relay.testing.vgg.get_workload(
        batch_size=1, num_classes=1000, image_shape=image_shape, dtype="float32", num_layers=11
    )
    print(mod)
    profile_graph(mod["main"])

    # Operator-based annotation rules
    @tvm.ir.register_op_attr("nn.dense", "target.byoc-target")
    def dense(expr):
        return True

    # Pattern-based annotation rules
    def make_pattern(with_bias=True):
        from relaykit.relay.dataflow_pattern import is_op, wildcard

        data = wildcard()
        weight = wildcard()
        bias = wildcard()
        conv = is_op("nn.conv2d")(data, weight)
        conv_out = is_op("nn.bias_add")(conv, bias) if with_bias else conv
        return is_op("nn.relu")(conv_out)

    conv2d_bias_relu_pat = ("byoc-target.conv2d_relu_with_bias", make_pattern(with_bias=True))
    conv2d_relu_pat = ("byoc-target.conv2d_relu_wo_bias", make_pattern(with_bias=False))
    patterns = [conv2d_bias_relu_pat, conv2d_relu_pat]

    mod2 = relay.transform.MergeComposite(patterns)(mod)
    print(mod2)
    profile_graph(mod2["main"])

    mod3 = relay.transform.AnnotateTarget("byoc-target")(mod2)
    print(mod3)
    profile_graph(mod3["main"])

    mod4 = relay.transform.MergeCompilerRegions()(mod3)
    print(mod4)
    profile_graph(mod4["main"])

    mod5 = relay.transform.PartitionGraph()(mod4)
    print(mod5)
    return mod, params, (mod2, mod3, mod4, mod5)


def _compiler_functions(mod):
    return [gv.name_hint for gv, fn in mod.items() if "Compiler" in fn.attrs]


def test_walkthrough_gives_tvms_eight_functions(capsys):
    _, _, (mod2, mod3, mod4, mod5) = run_walkthrough()
    capsys.readouterr()
    assert _compiler_functions(mod5) == TVM_FUNCTIONS
    for name in TVM_FUNCTIONS:
        fn = mod5[name]
        assert fn.attrs["Compiler"] == "byoc-target"
        assert fn.attrs["global_symbol"] == name
        assert fn.attrs["Primitive"] == 1 and fn.attrs["Inline"] == 1
    # The composite functions carry the walkthrough's attributes.
    comps = [
        n.op
        for n in tvm.ir.post_order(mod2["main"])
        if isinstance(n, relay.Call) and isinstance(n.op, relay.Function)
    ]
    assert len(comps) == 8
    assert {c.attrs["Composite"] for c in comps} == {"byoc-target.conv2d_relu_with_bias"}
    assert {c.attrs["PartitionedFromPattern"] for c in comps} == {"nn.conv2d_nn.bias_add_nn.relu_"}
    # Annotation counts shrink when regions merge (conv3/4/5 pairs join).
    text3, text4 = mod3.astext(False), mod4.astext(False)
    assert text4.count("compiler_begin") < text3.count("compiler_begin")
    # The interior of a merged region has no annotations left.
    main5 = mod5["main"]
    assert "annotation.compiler" not in main5.astext(False)


def test_walkthrough_partitioned_model_computes_the_same():
    mod, params, (*_, mod5) = run_walkthrough(image_shape=(3, 32, 32))
    assert len(_compiler_functions(mod5)) == 8
    data = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype("float32")
    ref = create_executor("debug", mod=mod).evaluate()(data, **params).numpy()
    got = create_executor("debug", mod=mod5).evaluate()(data, **params).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-7)
