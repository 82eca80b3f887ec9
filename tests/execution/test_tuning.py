"""Kernel tuning: workloads extracted as the build sees them, each choice measured, the
best applied by the build (recorded on the plan, carried by artifacts), results unchanged;
TVM's autotvm / auto_scheduler flow over it."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import auto_scheduler, autotvm, relay
from relaykit.backends.host.convolution import ALGORITHM_ATTR
from relaykit.errors import ArgumentError, UnsupportedFeatureError
from relaykit.execution.kernel_choices import use_choices
from relaykit.execution.tuning import extract_workloads, load_records, measure


def _conv_net():
    x = relay.var("x", shape=(1, 16, 12, 12))
    w1 = relay.var("w1", shape=(16, 16, 3, 3))
    w2 = relay.var("w2", shape=(8, 16, 1, 1))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1)))
    y = relay.nn.relu(relay.nn.conv2d(y, w1, padding=(1, 1)))  # same workload again
    y = relay.nn.conv2d(y, w2)
    mod = tvm.IRModule.from_expr(relay.Function([x, w1, w2], y))
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((16, 16, 3, 3)).astype("float32") * 0.1,
        "w2": rng.standard_normal((8, 16, 1, 1)).astype("float32") * 0.1,
    }
    return mod, params


def _numpy_conv(x, w, pad):
    x = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    o, _, kh, kw = w.shape
    h, wd = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    out = np.zeros((x.shape[0], o, h, wd))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", x[:, :, i : i + h, j : j + wd], w[:, :, i, j])
    return out


def _expected(x, params):
    y = np.maximum(_numpy_conv(x, params["w1"], 1), 0)
    y = np.maximum(_numpy_conv(y, params["w1"], 1), 0)
    return _numpy_conv(y, params["w2"], 0)


def test_extraction_dedups_counts_and_lists_choices():
    mod, params = _conv_net()
    wls = extract_workloads(mod, params)
    assert [(w.op, w.candidates, w.uses) for w in wls] == [
        ("nn.conv2d", ("im2col", "winograd"), 2),
        ("nn.conv2d", ("im2col",), 1),
    ]
    assert wls[0].flop == 2 * 16 * 12 * 12 * 16 * 9
    assert extract_workloads(mod, params, ops=["nn.dense"]) == []


@pytest.mark.parametrize("choice", ["im2col", "winograd"])
def test_choice_is_recorded_on_the_plan_and_results_match_numpy(choice, tmp_path, monkeypatch):
    from relaykit.backends.host import convolution

    calls = []
    real = convolution.host_conv.winograd

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(convolution.host_conv, "winograd", spy)
    mod, params = _conv_net()
    key = extract_workloads(mod, params)[0].key
    with use_choices({key: choice}):
        lib = relay.build(mod, target="llvm", params=params)
    chosen = [n.attrs.get(ALGORITHM_ATTR) for n in lib.plan.nodes if n.name == "nn.conv2d"]
    assert chosen == [choice, choice, None]
    x = np.random.default_rng(1).standard_normal((1, 16, 12, 12)).astype("float32")
    path = str(tmp_path / "m.rkmod")
    lib.export_library(path)
    for factory in (lib, tvm.runtime.load_module(path)):
        m = tvm.contrib.graph_executor.GraphModule(factory["default"](tvm.cpu()))
        m.set_input("x", x)
        m.run()
        np.testing.assert_allclose(
            m.get_output(0).numpy(), _expected(x, params), rtol=1e-4, atol=1e-4
        )
    loaded = tvm.runtime.load_module(path)
    first = next(n for n in loaded.plan.nodes if n.name == "nn.conv2d")
    assert first.attrs.get(ALGORITHM_ATTR) == choice


def test_measure_times_each_choice_and_refuses_unknown_ones():
    wl = extract_workloads(*_conv_net())[0]
    rec = measure(wl, "winograd", number=2, repeat=3)
    assert rec.error == "" and len(rec.costs) == 3 and all(c > 0 for c in rec.costs)
    with pytest.raises(ArgumentError, match="its choices are"):
        measure(wl, "fft")


def test_autotvm_flow_logs_and_applies_the_best(tmp_path):
    mod, params = _conv_net()
    log = str(tmp_path / "tune.json")
    tasks = autotvm.task.extract_from_program(
        mod["main"], target="llvm", params=params, ops=(relay.op.get("nn.conv2d"),)
    )
    assert [len(t.config_space) for t in tasks] == [2, 1]
    option = autotvm.measure_option(
        builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(number=1, repeat=2)
    )
    for t in tasks:
        tuner = autotvm.tuner.XGBTuner(t, loss_type="reg")
        tuner.tune(
            n_trial=len(t.config_space),
            measure_option=option,
            callbacks=[autotvm.callback.log_to_file(log)],
        )
        assert tuner.best_config.algorithm in t.config_space.choices
    records = load_records(log)
    assert sorted(r.choice for r in records) == ["im2col", "im2col", "winograd"]
    best = {r.key: r for r in records if r.key == tasks[0].workload.key}
    fastest = min((r for r in records if r.key == tasks[0].workload.key), key=lambda r: r.mean)
    assert best and fastest.choice in ("im2col", "winograd")
    with autotvm.apply_history_best(log):
        lib = relay.build(mod, target="llvm", params=params)
    assert (
        lib.plan.nodes[[n.name for n in lib.plan.nodes].index("nn.conv2d")].attrs[ALGORITHM_ATTR]
        == fastest.choice
    )
    out = str(tmp_path / "best.json")
    autotvm.record.pick_best(log, out)
    assert len(load_records(out)) == 2


def test_autotvm_refusals_are_typed():
    with pytest.raises(UnsupportedFeatureError):
        autotvm.graph_tuner.DPTuner(None, {}, "log", [], "llvm")
    with pytest.raises(ArgumentError, match="no tuning log"):
        autotvm.apply_history_best("/nonexistent/log.json")
    with pytest.raises(ArgumentError, match="loss_type"):
        autotvm.tuner.XGBTuner(autotvm.task.extract_from_program(*_conv_net())[0], loss_type="x")
    assert not hasattr(autotvm, "register_topi_compute")
    with pytest.raises(UnsupportedFeatureError, match="remote device over RPC.*LocalRunner"):
        autotvm.RPCRunner("rk3399", host="127.0.0.1", port=9190)


def test_auto_scheduler_flow(tmp_path):
    mod, params = _conv_net()
    log = str(tmp_path / "as.json")
    tasks, weights = auto_scheduler.extract_tasks(mod["main"], params, "llvm")
    assert weights == [2, 1]
    assert "nn.conv2d(" in str(tasks[0].compute_dag)
    opts = auto_scheduler.TuningOptions(
        num_measure_trials=3,
        runner=auto_scheduler.LocalRunner(repeat=1, number=1, min_repeat_ms=0),
        measure_callbacks=[auto_scheduler.RecordToFile(log)],
        verbose=0,
    )
    auto_scheduler.TaskScheduler(tasks, weights).tune(opts)
    assert len(load_records(log)) == 3
    with auto_scheduler.ApplyHistoryBest(log):
        lib = relay.build(mod, target="llvm", params=params)
    assert ALGORITHM_ATTR in next(n for n in lib.plan.nodes if n.name == "nn.conv2d").attrs
    with pytest.warns(UserWarning, match="no tuning log"):
        auto_scheduler.ApplyHistoryBest(str(tmp_path / "missing.json"))


def test_tvm_schedule_records_are_ignored_with_a_warning(tmp_path):
    log = tmp_path / "tvm.log"
    log.write_text(
        '{"i": ["llvm", "conv2d_nchw.x86", [], {}], '
        '"r": [[0.0003], 0, 3.2, 1570811630.6], "v": 0.1}\n'
    )
    with pytest.warns(UserWarning, match="1 TVM schedule record"):
        assert load_records(str(log)) == []
    (tmp_path / "bad.log").write_text("not json\n")
    with pytest.raises(ArgumentError, match="bad.log:1"):
        load_records(str(tmp_path / "bad.log"))


def test_extraction_leaves_out_regions_a_backend_runs():
    from relaykit.backends.status import best_available
    from relaykit.byoc.pipeline import partition_for

    if best_available(("dnnl",))[0] is None:
        pytest.skip("partitioning for dnnl needs oneDNN (relaykit[dnnl])")
    mod, params = _conv_net()
    host = extract_workloads(mod, params, ops=["nn.conv2d"])
    assert len(host) == 2
    mod["main"] = relay.build_module.bind_params_by_name(mod["main"], params)
    with tvm.transform.PassContext(opt_level=3):
        partitioned = partition_for(mod, ["dnnl"])
    assert any(f.attrs and f.attrs.get("Compiler") for f in partitioned.functions.values())
    # every conv2d now runs in dnnl's regions: none is left for the host kernels to tune
    assert extract_workloads(partitioned, {}, ops=["nn.conv2d"]) == []
