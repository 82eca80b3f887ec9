"""Third-party backends through the ``relaykit.backends`` entry-point group.

A tiny backend package is written to a temp dir with its own pyproject,
installed with pip into a temp target dir, and used end to end in a fresh
interpreter: found by name, partitioned for, built, run, listed by the CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_PACKAGE = '''
"""tinyneg: a relaykit backend that runs ``negative`` with NumPy."""

import numpy as np

from relaykit.backends import Backend
from relaykit.runtime.module import PythonModule


def codegen(func):
    def run(x, out):
        np.negative(x, out=out)

    return PythonModule("tinyneg", {str(func.attrs["global_symbol"]): run})


BACKEND = Backend(
    "tinyneg",
    rules={"negative": True},
    codegen=codegen,
    description="negative with NumPy",
    version="1.2.3",
)


def make_broken():
    raise RuntimeError("tinyneg's factory is broken on purpose")
'''

_PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "tinyneg"
version = "1.2.3"

[project.entry-points."relaykit.backends"]
tinyneg = "tinyneg:BACKEND"
tinybroken = "tinyneg:make_broken"
tinymissing = "tinyneg_nowhere:BACKEND"

[tool.setuptools]
packages = ["tinyneg"]
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("tinyneg_src")
    (src / "tinyneg").mkdir()
    (src / "tinyneg" / "__init__.py").write_text(_PACKAGE)
    (src / "pyproject.toml").write_text(_PYPROJECT)
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--target", str(target), str(src)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    # a real install: pip builds the package (setuptools + wheel, both in the test extra)
    # and writes its .dist-info with the entry points, as for any backend package
    assert proc.returncode == 0, proc.stderr
    assert list(target.glob("tinyneg-*.dist-info/entry_points.txt")), list(target.iterdir())
    return target


def _run(site: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, *(["-c", textwrap.dedent(code)] if code else []), *args],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


def test_installed_backend_partitions_builds_and_runs(site: Path) -> None:
    proc = _run(
        site,
        """
        import sys
        import numpy as np
        import relaykit as tvm
        from relaykit import relay
        from relaykit.backends import get_backend
        from relaykit.byoc import partition_for

        assert "tinyneg" not in sys.modules
        x = relay.var("x", shape=(3,))
        mod = tvm.IRModule.from_expr(relay.Function([x], relay.exp(relay.negative(x))))
        part = partition_for(mod, "tinyneg")
        assert "tinyneg" in sys.modules
        names = sorted(gv.name_hint for gv in part.get_global_vars())
        assert names == ["main", "tvmgen_default_tinyneg_main_0"], names
        lib = relay.build(part, target="llvm")
        assert len(lib.lib.imported_modules) == 1
        data = np.array([0.0, 1.0, -2.0], "float32")
        got = relay.create_executor("graph", mod=part).evaluate()(data).numpy()
        np.testing.assert_allclose(got, np.exp(-data), rtol=1e-6)
        assert get_backend("tinyneg").version == "1.2.3"
        assert tvm.get_global_func("relay.ext.tinyneg") is get_backend("tinyneg").codegen
        print("ok")
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_broken_entry_points_are_typed_errors_naming_the_package(site: Path) -> None:
    proc = _run(
        site,
        """
        import relaykit
        from relaykit.backends import get_backend
        from relaykit.errors import BackendLoadError
        for name in ("tinybroken", "tinymissing"):
            try:
                get_backend(name)
            except BackendLoadError as err:
                print(name, "|", err)
            else:
                raise SystemExit(name + " loaded")
        """,
    )
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" | ", 1) for line in proc.stdout.strip().splitlines())
    assert "package 'tinyneg'" in lines["tinybroken"]
    assert "broken on purpose" in lines["tinybroken"]
    assert "package 'tinyneg'" in lines["tinymissing"]
    assert "ModuleNotFoundError" in lines["tinymissing"]


def test_cli_lists_installed_and_broken_backends(site: Path) -> None:
    proc = _run(site, "", "-m", "relaykit.cli", "backends", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["tinyneg"]["status"] == "available"
    assert rows["tinyneg"]["version"] == "1.2.3"
    assert rows["tinyneg"]["source"] == "package tinyneg"
    assert rows["tinyneg"]["supported_ops"] == ["negative"]
    assert rows["tinybroken"]["status"] == "broken"
    assert "broken on purpose" in rows["tinybroken"]["detail"]
    assert {"ccompiler", "jsonref", "dnnl"} <= set(rows)
