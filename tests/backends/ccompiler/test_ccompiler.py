"""The ccompiler C-source backend: generated C, compiled by gcc, run through ctypes."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler
from relaykit.backends.ccompiler.codegen import broadcast_strides
from relaykit.byoc import partition_for
from relaykit.errors import BackendExecutionError, CompileError, CompilerNotFoundError
from relaykit.execution.codegen import CSourceCodegen, register_codegen
from relaykit.runtime.c_module import CSourceModule

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def check(f, *inputs, expect_regions=1):
    """Partition ``f`` for ccompiler, build, run and compare with the interpreter."""
    mod = tvm.IRModule.from_expr(f)
    part = ccompiler.partition_for_ccompiler(mod)
    regions = [gv for gv in part.get_global_vars() if gv.name_hint != "main"]
    assert len(regions) == expect_regions
    lib = relay.build(part, target="c")
    got = relay.create_executor("graph", mod=part).evaluate()(*inputs)
    from relaykit.contrib import graph_executor

    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for i, x in enumerate(inputs):
        m.set_input(i, x)
    m.run()
    ref = relay.create_executor("debug", mod=mod).evaluate()(*inputs)
    np.testing.assert_allclose(m.get_output(0).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    return lib


def test_broadcast_strides():
    assert broadcast_strides((3, 1), (2, 3, 4)) == [0, 1, 0]
    assert broadcast_strides((2, 3, 4), (2, 3, 4)) == [12, 4, 1]
    assert broadcast_strides((), (5,)) == [0]


def test_elementwise_chain_with_broadcasting_is_one_c_function():
    # The BYOC tutorial's example: add, subtract, multiply offloaded as one subgraph.
    a, b = relay.var("a", shape=(2, 3, 4)), relay.var("b", shape=(3, 1))
    c, d = relay.var("c", shape=(4,)), relay.var("d", shape=(1, 1, 1))
    f = relay.Function([a, b, c, d], relay.multiply(relay.subtract(relay.add(a, b), c), d))
    lib = check(f, rand(2, 3, 4), rand(3, 1), rand(4), rand(1, 1, 1))
    (cmod,) = lib.lib.imported_modules
    assert isinstance(cmod, CSourceModule)
    assert cmod.source.count("rk_binary_f32(RK_") == 3


@pytest.mark.parametrize(
    "attrs, shapes",
    [
        ({}, ((1, 3, 8, 8), (4, 3, 3, 3))),
        ({"padding": (1, 1), "strides": (2, 2)}, ((2, 4, 9, 7), (5, 4, 3, 3))),
        ({"padding": (0, 1, 2, 1), "dilation": (2, 1)}, ((1, 2, 9, 9), (3, 2, 3, 2))),
        ({"groups": 2, "padding": (1, 1)}, ((1, 4, 6, 6), (6, 2, 3, 3))),
        ({"strides": (2, 2)}, ((1, 8, 8, 8), (4, 8, 1, 1))),
    ],
)
def test_conv2d(attrs, shapes):
    x, w = relay.var("x", shape=shapes[0]), relay.var("w", shape=shapes[1])
    check(
        relay.Function([x, w], relay.nn.conv2d(x, w, **attrs)), rand(*shapes[0]), rand(*shapes[1])
    )


def test_dense_bias_relu_composite_uses_constants_as_arrays():
    x = relay.var("x", shape=(3, 64))
    w = relay.const(rand(256, 64))
    b = relay.const(rand(256))
    f = relay.Function([x], relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w), b, axis=-1)))
    lib = check(f, rand(3, 64))
    (cmod,) = lib.lib.imported_modules
    assert "rk_dense_f32(in0, c0, c1, 1, out0, 3, 64, 256);" in cmod.source
    # 16k weights travel as an array; the C text stays small and holds none of them.
    assert len(cmod.source) < 12_000
    assert repr(float(w.data.numpy()[0, 0]))[:8] not in cmod.source
    np.testing.assert_array_equal(
        cmod.constants[cmod.signatures["tvmgen_default_ccompiler_main_0"].constants[0]],
        w.data.numpy(),
    )


def test_conv2d_bias_relu_composite():
    x = relay.var("x", shape=(1, 3, 10, 10))
    conv = relay.nn.conv2d(x, relay.const(rand(8, 3, 3, 3)), padding=(1, 1))
    f = relay.Function([x], relay.nn.relu(relay.nn.bias_add(conv, relay.const(rand(8)))))
    lib = check(f, rand(1, 3, 10, 10))
    assert "ccompiler.conv2d_bias_relu" in lib.lib.imported_modules[0].source


def test_unsupported_ops_stay_on_the_host():
    x = relay.var("x", shape=(1, 4, 8, 8))
    y = relay.nn.max_pool2d(relay.add(x, x), pool_size=(2, 2))  # pool on the host
    f = relay.Function([x], relay.multiply(y, y))
    lib = check(f, rand(1, 4, 8, 8), expect_regions=2)
    ops = [n.name for n in lib.plan.nodes if n.kind == "op"]
    assert ops == ["nn.max_pool2d"]


@pytest.mark.parametrize("name", ["mlp", "vgg11", "resnet18"])
def test_workloads_match_the_interpreter(models, name):
    mod, params, data = models.workload(name)
    part = ccompiler.partition_for_ccompiler(mod, params)
    lib = relay.build(part, target="llvm")
    assert any(n.kind == "extern" for n in lib.plan.nodes)
    np.testing.assert_allclose(models.run(lib, data), models.reference(name), rtol=1e-5, atol=1e-6)


# -- safety and errors -----------------------------------------------------------------------


def _region(target, symbol, body_fn, shape=(4,)):
    """A hand-partitioned module: main calls one region function for ``target``."""
    p = relay.var("p", shape=shape)
    region = relay.Function([p], body_fn(p)).with_attrs(
        {"Compiler": target, "global_symbol": symbol, "Primitive": 1, "Inline": 1}
    )
    mod = tvm.IRModule()
    gv = relay.GlobalVar(symbol)
    mod[gv] = region
    x = relay.var("x", shape=shape)
    mod["main"] = relay.Function([x], relay.nn.relu(gv(x)))
    return mod


def test_hostile_symbol_and_target_names_cannot_inject_code():
    evil_symbol = 'f(void **a) { return 0; } int pwn"); system("touch /tmp/pwned"); //'
    evil_target = "my*/ evil\n#include </etc/passwd>"
    gen = CSourceCodegen(evil_target, preamble=ccompiler.codegen.preamble)
    gen.emitters.update(ccompiler.codegen.emitters)
    register_codegen(evil_target, gen, per_module=True)
    mod = _region(evil_target, evil_symbol, lambda p: relay.add(p, p))
    lib = relay.build(mod, target="llvm")
    (cmod,) = lib.lib.imported_modules
    assert "system(" not in cmod.source and "#include </etc" not in cmod.source
    assert "*/ evil" not in cmod.source
    (sig,) = cmod.signatures.values()
    assert sig.symbol == evil_symbol and sig.c_name.isidentifier()
    x = np.array([1, -2, 3, 4], "float32")
    out = relay.create_executor("graph", mod=mod).evaluate()(x)
    np.testing.assert_array_equal(out.numpy(), np.maximum(2 * x, 0))


def test_no_c_compiler_names_the_backend_and_what_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("RELAYKIT_CC", raising=False)
    mod = _region("ccompiler", "tvmgen_default_ccompiler_main_0", lambda p: relay.add(p, p))
    with pytest.raises(CompilerNotFoundError) as info:
        relay.build(mod, target="llvm")
    msg = str(info.value)
    assert "backend 'ccompiler'" in msg and "no C compiler was found" in msg
    assert "apt-get install gcc" in msg


def test_cc_pointing_nowhere_is_reported(monkeypatch):
    monkeypatch.setenv("CC", "/opt/no/such/cc")
    monkeypatch.delenv("RELAYKIT_CC", raising=False)
    mod = _region("ccompiler", "tvmgen_default_ccompiler_main_0", lambda p: relay.add(p, p))
    with pytest.raises(CompilerNotFoundError, match=r"\$CC='/opt/no/such/cc' was not found"):
        relay.build(mod, target="llvm")


def test_compile_failure_shows_the_compiler_message_and_keeps_the_source():
    gen = CSourceCodegen("broken")

    @gen.emitter("add")
    def _bad(ctx, call, ins, outs):
        ctx.line("this is not C;")

    register_codegen("broken", gen, per_module=True)
    mod = _region("broken", "tvmgen_default_broken_main_0", lambda p: relay.add(p, p))
    with pytest.raises(CompileError) as info:
        relay.build(mod, target="llvm")
    msg = str(info.value)
    assert "backend 'broken'" in msg and "tvmgen_default_broken_main_0" in msg
    assert "error" in msg.lower() and "this is not C" in msg
    path = msg.split("Generated source (kept for inspection): ")[1].splitlines()[0]
    with open(path) as fh:
        assert "this is not C;" in fh.read()


def test_error_inside_a_backend_function_names_function_backend_and_ops():
    gen = CSourceCodegen("failing", preamble=ccompiler.codegen.preamble)
    gen.emitters.update(ccompiler.codegen.emitters)

    @gen.emitter("subtract")
    def _guarded(ctx, call, ins, outs):
        ctx.fail_at_runtime(f"{ins[0].name}[0] < 0.0f", 'negative input: "rejected"')
        ctx.line(f"rk_relu_f32({ins[0].name}, {outs[0].name}, {outs[0].size});")

    register_codegen("failing", gen, per_module=True)
    mod = _region(
        "failing", "tvmgen_default_failing_main_0", lambda p: relay.subtract(relay.add(p, p), p)
    )
    run = relay.create_executor("graph", mod=mod).evaluate()
    np.testing.assert_array_equal(run(np.ones(4, "float32")).numpy(), np.full(4, 2, "float32"))
    with pytest.raises(BackendExecutionError) as info:
        run(-np.ones(4, "float32"))
    msg = str(info.value)
    assert "function tvmgen_default_failing_main_0 of backend 'failing'" in msg
    assert "region ops: add, subtract" in msg
    assert 'negative input: "rejected"' in msg


def test_codegen_rejects_ops_it_has_no_emitter_for():
    from relaykit.errors import CodegenError

    mod = _region("ccompiler", "tvmgen_default_ccompiler_main_0", lambda p: relay.exp(p))
    with pytest.raises(CodegenError, match=r"cannot generate C for 'exp'"):
        relay.build(mod, target="llvm")


def test_rules_decline_with_reasons():
    x = relay.var("x", shape=(1, 3, 8, 8), dtype="float64")
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="float64")
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.conv2d(x, w)))
    from relaykit.byoc import explain

    part = partition_for(mod, "ccompiler")
    assert [gv.name_hint for gv in part.get_global_vars()] == ["main"]
    report = str(explain(mod, "ccompiler"))
    assert "float32 only" in report


def test_region_with_tuple_outputs_pass_through_and_repeats():
    def body(p):
        s = relay.add(p, p)
        return relay.Tuple([s, p, s, relay.const(np.full(4, 7, "float32"))])

    p = relay.var("p", shape=(4,))
    symbol = "tvmgen_default_ccompiler_main_0"
    region = relay.Function([p], body(p)).with_attrs(
        {"Compiler": "ccompiler", "global_symbol": symbol, "Primitive": 1, "Inline": 1}
    )
    mod = tvm.IRModule()
    gv = relay.GlobalVar(symbol)
    mod[gv] = region
    x = relay.var("x", shape=(4,))
    t = gv(x)
    mod["main"] = relay.Function([x], relay.Tuple([relay.TupleGetItem(t, i) for i in range(4)]))
    lib = relay.build(mod, target="llvm")
    source = lib.lib.imported_modules[0].source
    assert source.count("memcpy(") == 3  # the input, the repeat and the constant are copied
    data = np.arange(4, dtype="float32")
    outs = relay.create_executor("graph", mod=mod).evaluate()(data)
    expected = [2 * data, data, 2 * data, np.full(4, 7, "float32")]
    for o, e in zip(outs, expected, strict=True):
        np.testing.assert_array_equal(o.numpy(), e)
