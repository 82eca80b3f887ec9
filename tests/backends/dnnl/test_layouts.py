"""Every activation layout computes the same results; blocked concatenations run in place;
"auto" keeps one of the layouts it tried, and the choice survives export."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from relaykit import relay
from relaykit.backends.dnnl import DnnlModule, compile_region, partition_for_dnnl

RNG = np.random.default_rng(3)
LAYOUTS = ["nhwc", "blocked", "any", "auto"]


def _w(*shape):
    return relay.const((RNG.standard_normal(shape) * 0.2).astype("float32"))


def _conv(x, ci, co, k=1, groups=1):
    return relay.nn.relu(relay.nn.conv2d(x, _w(co, ci // groups, k, k), padding=(k // 2, k // 2),
                                         groups=groups))  # fmt: skip


def inception(x):
    """Concatenations of 16-multiple channel counts, nested, read by other ops too."""
    x = _conv(x, 32, 32)
    a = _conv(x, 32, 16)
    b = _conv(_conv(x, 32, 16), 16, 32, k=3)
    c = relay.nn.max_pool2d(x, (3, 3), (1, 1), padding=(1, 1))
    cat = relay.concatenate([a, b, c], axis=1)  # 16 + 32 + 32 channels
    d = _conv(cat, 80, 16, k=3)
    cat2 = relay.concatenate([cat, d], axis=1)  # nested: cat lives inside cat2
    y = relay.nn.relu(cat2 * _w(1, 96, 1, 1) + _w(1, 96, 1, 1))
    return relay.concatenate([relay.nn.global_avg_pool2d(y), relay.nn.global_max_pool2d(a)], 1)


def shuffle_unit(x):
    """ShuffleNet: grouped 1x1 conv, channel shuffle, depthwise conv, residual."""
    y = _conv(x, 48, 48, groups=3)
    y = relay.reshape(relay.transpose(relay.reshape(y, (1, 3, 16, 8, 8)), (0, 2, 1, 3, 4)),
                      (1, 48, 8, 8))  # fmt: skip
    y = relay.nn.conv2d(y, _w(48, 1, 3, 3), padding=(1, 1), groups=48)
    return relay.nn.relu(relay.nn.conv2d(y, _w(48, 16, 1, 1), groups=3) + x)


MODELS = {"inception": (inception, (1, 32, 8, 8)), "shuffle": (shuffle_unit, (1, 48, 8, 8))}


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts_match_interpreter(dnnl, model, layout):
    fn, shape = MODELS[model]
    mod = dnnl.module_of(fn, shape)
    inputs = dnnl.random_inputs(mod)
    pmod = partition_for_dnnl(mod)
    assert dnnl.host_ops(pmod) == []
    (got,) = dnnl.run_lib(dnnl.build(pmod, layout=layout), inputs)
    (want,) = dnnl.reference(mod, None, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_blocked_concatenations_run_in_place(dnnl):
    fn, shape = MODELS["inception"]
    (func,) = dnnl.dnnl_functions(partition_for_dnnl(dnnl.module_of(fn, shape)))
    blocked = compile_region(func, layout="blocked").steps()
    assert not any(s.startswith("reorder into concat") for s in blocked), blocked
    # Only the last concatenation, the region's output, is a copy.
    assert [s.split()[0] for s in blocked if s.startswith("concat")] == ["concat"], blocked
    nhwc = compile_region(func, layout="nhwc").steps()
    assert sum(s.startswith("concat") for s in nhwc) == 3


def test_auto_layout_is_a_tried_one_and_is_exported(dnnl, tmp_path):
    import relaykit as tvm

    fn, shape = MODELS["inception"]
    mod = partition_for_dnnl(dnnl.module_of(fn, shape))
    lib = dnnl.build(mod)
    (dm,) = [m for m in lib.lib.imported_modules if isinstance(m, DnnlModule)]
    (region,) = dm.regions.values()
    assert region.layout in ("nhwc", "blocked")
    path = tmp_path / "m.rkmod"
    lib.export_library(str(path))
    loaded = tvm.runtime.load_module(str(path))
    (dm2,) = [m for m in loaded.imported_modules[0].imported_modules if isinstance(m, DnnlModule)]
    assert [r.layout for r in dm2.regions.values()] == [region.layout]


def test_unknown_layout_is_an_error(dnnl):
    from relaykit.errors import CodegenError

    mod = partition_for_dnnl(dnnl.module_of(relay.nn.relu, (1, 4)))
    with pytest.raises(CodegenError, match="layout must be one of"):
        dnnl.build(mod, layout="nchw16")


def test_concurrent_calls_take_turns(dnnl):
    fn, shape = MODELS["shuffle"]
    (func,) = dnnl.dnnl_functions(partition_for_dnnl(dnnl.module_of(fn, shape)))
    region = compile_region(func, layout="blocked", num_threads=1)
    xs = [RNG.standard_normal(shape).astype("float32") for _ in range(4)]
    want = [region(x) for x in xs]
    got: dict[int, list[np.ndarray]] = {}

    def work(i: int) -> None:
        got[i] = [region(xs[(i + k) % 4]) for k in range(20)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        for k, out in enumerate(got[i]):
            np.testing.assert_array_equal(out, want[(i + k) % 4])
