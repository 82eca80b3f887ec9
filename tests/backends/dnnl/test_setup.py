"""Finding oneDNN, the error without it, thread counts, and runtime errors."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import (
    DnnlModule,
    DnnlNotFoundError,
    compile_region,
    find_onednn,
    partition_for_dnnl,
    resolve_num_threads,
)
from relaykit.backends.dnnl.run import library
from relaykit.errors import BackendExecutionError, CodegenError, RelayKitError


def test_onednn_found_in_the_environment(dnnl):
    lib = find_onednn()
    assert lib.library.name.startswith("libdnnl.so")
    assert (lib.include_dir / "oneapi" / "dnnl" / "dnnl.hpp").exists()
    assert lib.version == library.ONEDNN_VERSION


def test_missing_onednn_names_the_extra(dnnl, monkeypatch, tmp_path):
    monkeypatch.setattr(library, "_wheel_file", lambda *a: (None, None))
    monkeypatch.setattr(library, "_prefix_candidates", lambda: [tmp_path])
    library.find_onednn.cache_clear()
    try:
        with pytest.raises(DnnlNotFoundError, match=r"pip install relaykit\[dnnl\]"):
            find_onednn()
        mod = dnnl.module_of(relay.nn.relu, (1, 4))
        with pytest.raises(DnnlNotFoundError, match=r"relaykit\[dnnl\]"):
            partition_for_dnnl(mod)
    finally:
        monkeypatch.undo()
        library.find_onednn.cache_clear()
    assert find_onednn().library.exists()


def test_missing_headers_name_the_extra(dnnl, monkeypatch):
    lib = library.OneDNN(find_onednn().library, None, "2023.2.0")
    with pytest.raises(DnnlNotFoundError, match=r"relaykit\[dnnl\]"):
        lib.require_headers()


def test_thread_count_precedence(dnnl, monkeypatch):
    monkeypatch.delenv("RELAYKIT_NUM_THREADS", raising=False)
    cores = resolve_num_threads()
    assert cores >= 1
    monkeypatch.setenv("RELAYKIT_NUM_THREADS", "3")
    assert resolve_num_threads() == 3
    assert resolve_num_threads(1) == 1
    monkeypatch.setenv("RELAYKIT_NUM_THREADS", "many")
    with pytest.raises(RelayKitError, match="RELAYKIT_NUM_THREADS"):
        resolve_num_threads()
    with pytest.raises(RelayKitError, match="positive"):
        resolve_num_threads(0)


def test_thread_count_reaches_the_regions(dnnl, monkeypatch):
    monkeypatch.setenv("RELAYKIT_NUM_THREADS", "2")
    # Big enough for more than one thread (see SMALL_REGION_WORK).
    big = partition_for_dnnl(dnnl.module_of(relay.nn.relu, (1000, 1100)))
    (dnnl_mod,) = [m for m in dnnl.build(big).lib.imported_modules if isinstance(m, DnnlModule)]
    assert [r.num_threads for r in dnnl_mod.regions.values()] == [2]
    lib = dnnl.build(big, num_threads=1)
    (dnnl_mod,) = [m for m in lib.lib.imported_modules if isinstance(m, DnnlModule)]
    assert [r.num_threads for r in dnnl_mod.regions.values()] == [1]
    x = np.random.default_rng(0).standard_normal((1000, 1100)).astype("float32")
    np.testing.assert_array_equal(dnnl.run_lib(lib, {"x0": x})[0], np.maximum(x, 0))


def test_small_regions_run_on_one_thread(dnnl, monkeypatch):
    monkeypatch.setenv("RELAYKIT_NUM_THREADS", "2")
    mod = partition_for_dnnl(dnnl.module_of(relay.nn.relu, (1, 4)))
    lib = dnnl.build(mod)
    (dnnl_mod,) = [m for m in lib.lib.imported_modules if isinstance(m, DnnlModule)]
    assert [r.num_threads for r in dnnl_mod.regions.values()] == [1]
    x = np.array([[-1, 1, -2, 2]], "float32")
    assert dnnl.run_lib(lib, {"x0": x})[0].tolist() == [[0, 1, 0, 2]]


def test_unknown_codegen_option_is_an_error(dnnl):
    mod = partition_for_dnnl(dnnl.module_of(relay.nn.relu, (1, 4)))
    with pytest.raises(CodegenError, match="threads_per_core"):
        dnnl.build(mod, threads_per_core=2)


def test_region_call_errors_name_the_region(dnnl):
    mod = partition_for_dnnl(dnnl.module_of(relay.nn.relu, (1, 4)))
    (fn,) = dnnl.dnnl_functions(mod)
    region = compile_region(fn)
    with pytest.raises(BackendExecutionError, match="tvmgen_default_dnnl_main_0.*shape"):
        region(np.zeros((2, 4), "float32"))
    with pytest.raises(BackendExecutionError, match="takes 1 inputs"):
        region.run([])
    assert region(np.array([[-1, 0, 1, 2]], "float32")).tolist() == [[0, 0, 1, 2]]


def test_malformed_program_is_a_codegen_error(dnnl):
    from relaykit.backends.dnnl import DnnlRegion

    with pytest.raises(CodegenError, match="malformed"):
        DnnlRegion("{not json", [])
    bad = ('{"format":"relaykit.dnnl","version":1,"tensors":[[1,4],[1,4]],"inputs":[0],'
           '"outputs":[1],"constants":[],"nodes":[{"op":"warp","in":[0],"out":1}]}')  # fmt: skip
    with pytest.raises(CodegenError, match="unknown node op 'warp'"):
        DnnlRegion(bad, [])


def test_profile_and_steps(dnnl):
    x = relay.var("x", shape=(1, 8, 6, 6))
    w = relay.const(np.ones((8, 8, 3, 3), "float32"))
    body = relay.nn.max_pool2d(relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1))), (2, 2), (2, 2))
    mod = partition_for_dnnl(tvm.IRModule.from_expr(relay.Function([x], body)))
    (fn,) = dnnl.dnnl_functions(mod)
    region = compile_region(fn)
    prof = region.profile([np.ones((1, 8, 6, 6), "float32")])
    assert [s.split()[0] for s, _ in prof if not s.startswith(("reorder", "output"))] == [
        "conv",
        "pool_max",
    ]
    assert "+relu" in prof[[s for s, _ in prof].index(next(s for s, _ in prof if "conv" in s))][0]
    assert all(t >= 0 for _, t in prof)
    assert region.arena_bytes > 0
