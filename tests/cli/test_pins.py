"""``--pin``: an operator that does not exist, or a target not among ``--target``, exits 2
naming it (with close matches); operators and the targets' patterns are accepted."""

from __future__ import annotations

import pytest

from relaykit.cli import main
from relaykit.cli._common import parse_pins
from relaykit.errors import UsageError


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("relaykit: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("command", ["compile", "bench", "partition", "explain"])
def test_an_unknown_operator_is_refused(command, tmp_path, capsys):
    extra = ["-o", str(tmp_path / "x.rkmod")] if command == "compile" else []
    line = _error(capsys, command, "mlp", "--target", "jsonref", "--pin", "bogus.op", *extra)
    assert line.endswith("--pin 'bogus.op': no operator named 'bogus.op'")
    assert not (tmp_path / "x.rkmod").exists()


def test_close_matches_are_suggested(capsys):
    line = _error(capsys, "partition", "mlp", "--target", "jsonref", "--pin", "nn.softmx")
    assert "no operator named 'nn.softmx'; did you mean nn.softmax" in line
    line = _error(capsys, "compile", "mlp", "--target", "jsonref", "--pin", "nn.dense=jsonrf")
    assert "--pin 'nn.dense=jsonrf': 'jsonrf' is not one of the targets (jsonref)" in line


def test_operators_and_patterns_of_the_targets_are_accepted():
    pins = parse_pins(["nn.softmax", "nn.dense=host", "nn.relu=jsonref"], ["jsonref"])
    assert [(p.names, p.to) for p in pins] == [
        (("nn.softmax",), "host"),
        (("nn.dense",), "host"),
        (("nn.relu",), "jsonref"),
    ]
    with pytest.raises(UsageError, match="no operator named 'dnnl.conv2d_bias_relu'"):
        parse_pins(["dnnl.conv2d_bias_relu"], ["jsonref"])
    (pattern,) = parse_pins(["dnnl.conv2d_bias_relu"], ["dnnl"])
    assert pattern.names == ("dnnl.conv2d_bias_relu",)
