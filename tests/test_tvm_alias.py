"""``import tvm`` as a TVM user writes it: opt-in alias, `python -m relaykit.tvm`, module tree."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tvm
    from tvm import relay
    from tvm.contrib import graph_executor
    from tvm.relay.dataflow_pattern import is_op, wildcard
    from tvm.relay.build_module import bind_params_by_name
    from tvm.relay.backend import Executor, Runtime
    import tvm.relay.testing

    x = relay.var("x", shape=(2, 3))
    w = relay.var("w", shape=(4, 3))
    f = relay.Function([x, w], relay.nn.relu(relay.nn.dense(x, w)))
    assert is_op("nn.relu")(wildcard()).match(f.body)
    mod = tvm.IRModule.from_expr(f)
    target = tvm.target.Target("llvm -mcpu=core-avx2")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=target, executor=Executor("graph"), runtime=Runtime("cpp"))
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    xv = np.arange(6, dtype="float32").reshape(2, 3) - 2
    wv = np.ones((4, 3), "float32")
    m.set_input("x", xv)
    m.set_input("w", wv)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), np.maximum(xv @ wv.T, 0))
    print("ran", sys.argv[1:])
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.dirname(__file__)), "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env


def test_python_m_relaykit_tvm_runs_a_tvm_script(tmp_path):
    script = tmp_path / "tvm_script.py"
    script.write_text(SCRIPT)
    out = subprocess.run(
        [sys.executable, "-m", "relaykit.tvm", str(script), "a", "b"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "ran ['a', 'b']" in out.stdout


def test_relaykit_tvm_subcommand_runs_a_tvm_script(tmp_path):
    script = tmp_path / "tvm_script.py"
    script.write_text(SCRIPT)
    out = subprocess.run(
        [sys.executable, "-m", "relaykit.cli", "tvm", str(script), "--flag"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "ran ['--flag']" in out.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "relaykit.cli", "tvm", str(tmp_path / "nope.py")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_import_relaykit_installs_no_alias():
    code = (
        "import relaykit\ntry:\n    import tvm\nexcept ModuleNotFoundError:\n    print('no tvm')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert "no tvm" in out.stdout, out.stdout + out.stderr


def test_alias_gives_relaykit_modules_and_clear_misses():
    from relaykit.tvm import remove_tvm_alias, use_as_tvm

    use_as_tvm()
    try:
        import tvm  # type: ignore[import-not-found]
        import tvm.relay.transform  # type: ignore[import-not-found]

        import relaykit

        assert tvm is relaykit
        assert tvm.relay.transform is relaykit.relay.transform
        with pytest.raises(ModuleNotFoundError):
            import tvm.no_such_module  # type: ignore[import-not-found]
        with pytest.raises(relaykit.errors.UnsupportedFeatureError, match="relaykit has no tvm.te"):
            tvm.te.placeholder((3,))
    finally:
        remove_tvm_alias()
    assert "tvm" not in sys.modules
