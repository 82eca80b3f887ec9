"""``relaykit backends``: name, version, status with the install command, support."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from relaykit.backends import Backend, Requirement, backend_registry, register_backend
from relaykit.backends.status import describe
from relaykit.cli import main


def test_table_lists_the_builtins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    header, *rows = out.splitlines()
    assert header.split() == ["backend", "version", "status", "ops", "patterns", "source"]
    names = [r.split()[0] for r in rows if not r.startswith(" ")]
    assert names[:3] == ["ccompiler", "dnnl", "jsonref"]
    ccompiler = next(r for r in rows if r.startswith("ccompiler "))
    assert ccompiler.split()[2:5] == ["available", "7", "4"]


def test_json_and_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["jsonref"]["patterns"] == len(rows["jsonref"]["pattern_names"]) == 4
    assert "nn.conv2d" in rows["dnnl"]["supported_ops"]
    assert rows["dnnl"]["source"] == "built-in"
    assert main(["backends", "-v"]) == 0
    assert "ccompiler: ops: add, multiply" in capsys.readouterr().out


def test_missing_extra_shows_the_install_command(capsys: pytest.CaptureFixture[str]) -> None:
    with backend_registry.scoped():
        register_backend(
            Backend(
                "needsfoo",
                codegen=lambda f: f,
                requires=Requirement(extra="foo", check=lambda: "foo is not installed"),
            )
        )
        row = describe("needsfoo")
        assert (row.status, row.detail) == ("missing extra", "foo is not installed")
        assert row.install == "pip install 'relaykit[foo]'"
        assert main(["backends"]) == 0
    out = capsys.readouterr().out
    assert "needsfoo: install with: pip install 'relaykit[foo]'" in out


def test_missing_c_compiler_is_reported() -> None:
    env = dict(os.environ, CC="/nonexistent/cc", RELAYKIT_CC="")
    proc = subprocess.run(
        [sys.executable, "-m", "relaykit.cli", "backends", "--json"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["ccompiler"]["status"] == "missing requirement"
    assert "C compiler" in rows["ccompiler"]["detail"]
    assert rows["jsonref"]["status"] == "available"
