"""Exit codes, help and refused files, checked on the real command in a subprocess:
0 ok, 2 usage, 1 failure, one line on stderr and never a traceback for a user error."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relaykit import __version__
from relaykit.cli import SUBCOMMANDS, main
from relaykit.cli._common import run_command

COMMANDS = [m.__name__.rsplit(".", 1)[1] for m in SUBCOMMANDS]


def relaykit(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relaykit.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def assert_clean_error(proc: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("relaykit: error:")]
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``main(args)`` as if it were a process: its status and its output."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """Paths that must be refused before anything is read, with the words the message
    must hold."""
    root = tmp_path_factory.mktemp("bad")
    (root / "dir.onnx").mkdir()
    fifo = root / "pipe.onnx"
    os.mkfifo(fifo)
    big = root / "big.onnx"
    big.write_bytes(b"\0" * 4096)
    return {
        "directory": (str(root / "dir.onnx"), "is a directory"),
        "fifo": (str(fifo), "is a FIFO"),
        "device": ("/dev/zero", "is a device"),
        "too large": (str(big), "above the limit of 1.0 KiB"),
        "missing": (str(root / "nothing.onnx"), "does not exist"),
    }


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("artifact") / "m.rkmod"
    assert main(["compile", "mlp", "--target", "jsonref", "-o", str(path)]) == 0
    return str(path)


def test_the_real_command_exits_2_1_0_without_traceback(bad_files, artifact, tmp_path):
    """A few cases on the real command (python -m relaykit.cli, what the console script
    runs); the full matrix runs in-process below."""
    assert_clean_error(relaykit("compile", bad_files["directory"][0], "--target", "jsonref"),
                       2, "is a directory")  # fmt: skip
    assert_clean_error(relaykit("run", bad_files["fifo"][0]), 2, "is a FIFO")
    assert_clean_error(relaykit("run", artifact, "--inputs", "/dev/zero"), 2, "is a device")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(np.random.default_rng(0).integers(0, 256, 3000, np.uint8).tobytes())
    assert_clean_error(relaykit("compile", str(junk), "--target", "jsonref"), 1, "ONNX model")
    proc = relaykit("--version")
    assert (proc.returncode, proc.stdout.split()) == (0, ["relaykit", __version__])


@pytest.mark.parametrize("kind", ["directory", "fifo", "device", "too large", "missing"])
def test_models_that_are_not_regular_files_are_refused(bad_files, kind, capsys):
    path, words = bad_files[kind]
    for command in ("compile", "partition", "bench"):
        proc = in_process(capsys, command, path, "--target", "jsonref", "--max-file-size", "1K")
        assert_clean_error(proc, 2, words, repr(path))


@pytest.mark.parametrize("kind", ["directory", "fifo", "device", "too large"])
def test_artifacts_and_inputs_that_are_not_regular_files_are_refused(
    bad_files, kind, artifact, capsys
):
    path, words = bad_files[kind]
    assert_clean_error(in_process(capsys, "run", path, "--max-file-size", "1K"), 2, words)
    proc = in_process(capsys, "run", artifact, "--inputs", path, "--max-file-size", "1M")
    if kind == "too large":  # 4 KiB is under 1 MiB: it is read, and is no .npz
        assert_clean_error(proc, 2, "is not a valid .npz file")
    else:
        assert_clean_error(proc, 2, words, "inputs file")


def test_binary_garbage_is_a_clean_failure(tmp_path, artifact, capsys):
    junk = np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8).tobytes()
    for name in ("junk.onnx", "junk.relay", "junk.rkmod", "junk.npz"):
        (tmp_path / name).write_bytes(junk)
    proc = in_process(capsys, "compile", str(tmp_path / "junk.onnx"), "--target", "jsonref")
    assert_clean_error(proc, 1, "as an ONNX model")
    proc = in_process(capsys, "partition", str(tmp_path / "junk.relay"), "--target", "x")
    assert_clean_error(proc, 2, "is a binary file")
    assert_clean_error(in_process(capsys, "run", str(tmp_path / "junk.rkmod")), 1, "junk.rkmod")
    proc = in_process(capsys, "run", artifact, "--inputs", str(tmp_path / "junk.npz"))
    assert_clean_error(proc, 2, "is not a valid .npz file")


def test_an_npz_cannot_claim_more_than_the_limit(tmp_path, artifact, capsys):
    """A small compressed file declaring a big array is refused from its header."""
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, data=np.zeros((1024, 1024), "float32"))  # 4 MiB of zeros
    assert path.stat().st_size < 64 * 1024
    proc = in_process(capsys, "run", artifact, "--inputs", str(path), "--max-file-size", "1M")
    assert_clean_error(proc, 2, "array 'data'", "float32[1024, 1024] (4.0 MiB)", "above the limit")
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, data=np.array([{"a": 1}], dtype=object))
    proc = in_process(capsys, "run", artifact, "--inputs", str(pickled))
    assert_clean_error(proc, 2, "dtype object", "no pickles")


def test_every_subcommand_has_help_with_an_example(capsys):
    assert {"demo", "partition", "compile", "run", "bench", "backends"} <= set(COMMANDS)
    for command in COMMANDS:
        proc = in_process(capsys, command, "--help")
        assert proc.returncode == 0, proc.stderr
        assert "examples:" in proc.stdout
        assert f"relaykit {command}" in proc.stdout.split("examples:", 1)[1]
    top = in_process(capsys, "--help")
    assert top.returncode == 0
    for command in COMMANDS:
        assert command in top.stdout


def test_usage_errors_exit_2(capsys):
    cases = [
        ["compile"],
        ["run", "x", "--repeat", "0"],
        ["nosuchcommand"],
        ["compile", "mlp", "--target", "jsonref", "--input-shapes", "data=1x2"],
        ["compile", "mlp", "--target", ","],
        ["run", "x", "--max-file-size", "lots"],
        ["compile", "mlp", "--target", "jsonref", "--batch", "100000"],
        ["partition", "vgg11", "--target", "x", "--image-size", "100000"],
        ["compile", "x.onnx", "--target", "jsonref", "--input-shapes", "a:100000x100000x1000"],
    ]
    for args in cases:
        proc = in_process(capsys, *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "error:" in proc.stderr and "Traceback" not in proc.stderr


def test_failures_exit_1_and_name_what_failed(tmp_path, capsys):
    out = str(tmp_path / "x")
    proc = in_process(capsys, "compile", "mlp", "--target", "no-such-backend", "-o", out)
    assert_clean_error(proc, 1, "no-such-backend")
    assert not (tmp_path / "x").exists()


def test_an_unexpected_exception_is_an_internal_error_without_traceback(capsys):
    def boom(args):
        raise ZeroDivisionError("planted")

    assert run_command(boom, argparse.Namespace()) == 1
    err = capsys.readouterr().err
    assert "internal error ZeroDivisionError: planted at test_errors.py:" in err
    assert "Traceback" not in err
    assert run_command(boom, argparse.Namespace(traceback=True)) == 1
    assert "Traceback" in capsys.readouterr().err


def test_output_paths_that_are_not_files_are_usage_errors(tmp_path, artifact, capsys):
    proc = in_process(capsys, "compile", "mlp", "--target", "jsonref", "-o", str(tmp_path))
    assert_clean_error(proc, 2, "output file", "is a directory")
    assert Path(tmp_path).is_dir()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # writing would block until a reader comes
    proc = in_process(capsys, "compile", "mlp", "--target", "jsonref", "-o", str(fifo))
    assert_clean_error(proc, 2, "is a FIFO")
    proc = in_process(capsys, "run", artifact, "--outputs", str(fifo))
    assert_clean_error(proc, 2, "outputs file", "is a FIFO")
    proc = in_process(capsys, "run", artifact, "--outputs", str(tmp_path / "no" / "o.npz"))
    assert_clean_error(proc, 2, "does not exist")
