"""What is shown is what is built: ``explain --json``, ``partition --json`` and the
artifact ``compile`` writes list the same regions (names, targets, operators) for the
same flags, for an ONNX model with weights and for a Relay text module."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from relaykit.backends.status import AVAILABLE, describe
from relaykit.cli import main
from relaykit.runtime import load_module

#: A region as a comparable value: (function name, target, its operators, sorted).
Region = tuple[str, str, tuple[str, ...]]

TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8), float32], %w1: Tensor[(16, 8), float32],
          %b1: Tensor[(16), float32], %w2: Tensor[(4, 16), float32]) {
  %0 = nn.dense(%x, %w1, units=16);
  %1 = nn.bias_add(%0, %b1);
  %2 = nn.relu(%1);
  %3 = multiply(%2, %2);
  %4 = nn.dense(%3, %w2, units=4);
  nn.softmax(%4)
}
"""

DNNL = pytest.mark.skipif(
    describe("dnnl").status != AVAILABLE, reason="oneDNN is not installed (relaykit[dnnl])"
)


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def explained(capsys: pytest.CaptureFixture[str], model: str, flags: list[str]) -> set[Region]:
    data = _json(capsys, ["explain", model, *flags, "--json", "-"])
    regions = data["explain"]["regions"]
    ops = data["explain"]["ops"]
    out = {
        (
            r["function"],
            r["target"],
            tuple(sorted(o["op"] for o in ops if o["function"] == r["function"])),
        )
        for r in regions
        if r["function"]
    }
    # the summary in the same report agrees with the per-operator rows
    summary = {
        (f["name"], t, tuple(sorted(f["op_names"])))
        for t, v in data["summary"]["targets"].items()
        for f in v["functions"]
    }
    assert summary == out
    return out


def partitioned(capsys: pytest.CaptureFixture[str], model: str, flags: list[str]) -> set[Region]:
    data = _json(capsys, ["partition", model, *flags, "--json"])
    return {
        (f["name"], t, tuple(sorted(f["op_names"])))
        for t, v in data["targets"].items()
        for f in v["functions"]
    }


def _flat(region_ops: tuple[str, ...]) -> list[str]:
    """``dnnl.conv2d_bias_relu(nn.conv2d, nn.bias_add, nn.relu)`` -> its operators."""
    names: list[str] = []
    for entry in region_ops:
        m = re.fullmatch(r"[^()]+\((.*)\)", entry)
        names.extend(p.strip() for p in m.group(1).split(",")) if m else names.append(entry)
    return names


def built(
    capsys: pytest.CaptureFixture[str], model: str, flags: list[str], out: Path
) -> set[Region]:
    assert main(["compile", model, *flags, "-o", str(out)]) == 0
    capsys.readouterr()
    plan = load_module(str(out)).plan
    return {
        (n.name, n.compiler, tuple(sorted(_flat(n.region_ops))))
        for n in plan.nodes
        if n.kind == "extern"
    }


def check_same(capsys, model: str, flags: list[str], tmp_path: Path) -> set[Region]:
    shown = explained(capsys, model, flags)
    assert partitioned(capsys, model, flags) == shown
    assert built(capsys, model, flags, tmp_path / "m.rkmod") == shown
    return shown


ONNX_FLAGS = [
    pytest.param(["--target", "dnnl,ccompiler"], marks=DNNL, id="dnnl,ccompiler"),
    pytest.param(["--target", "ccompiler"], id="ccompiler"),
    pytest.param(["--target", "dnnl,ccompiler", "--pin", "nn.dense=ccompiler"], marks=DNNL,
                 id="pin-to-ccompiler"),
    pytest.param(["--target", "dnnl", "--pin", "add"], marks=DNNL, id="pin-to-host"),
    pytest.param(["--target", "ccompiler", "--min-ops", "3"], id="min-ops"),
]  # fmt: skip


@pytest.mark.parametrize("flags", ONNX_FLAGS)
def test_an_onnx_model_with_weights(conv_net, flags, tmp_path, capsys):
    shown = check_same(capsys, str(conv_net), flags, tmp_path)
    assert shown  # every case offloads something


@DNNL
def test_the_weights_are_bound_as_the_build_binds_them(conv_net, tmp_path, capsys):
    # the README's example: one dnnl region, as compile builds, not many mixed ones
    shown = check_same(capsys, str(conv_net), ["--target", "dnnl,ccompiler"], tmp_path)
    assert {target for _, target, _ in shown} == {"dnnl"}
    assert len(shown) == 1


TEXT_FLAGS = [
    pytest.param(["--target", "ccompiler"], id="ccompiler"),
    pytest.param(["--target", "dnnl,ccompiler"], marks=DNNL, id="dnnl,ccompiler"),
    pytest.param(["--target", "ccompiler", "--pin", "multiply"], id="pin"),
    pytest.param(["--target", "ccompiler", "--min-ops", "4"], id="min-ops"),
]


@pytest.mark.parametrize("flags", TEXT_FLAGS)
def test_a_relay_text_module(flags, tmp_path, capsys):
    model = tmp_path / "net.relay"
    model.write_text(TEXT)
    check_same(capsys, str(model), flags, tmp_path)


def test_partition_for_is_the_same_pipeline(conv_net):
    from relaykit.byoc import partition_for, partitioner, prepare
    from relaykit.cli._models import load_for_build

    mod, _ = load_for_build(str(conv_net))
    done = prepare(mod, ["ccompiler"])
    expected = done.partitioned.astext()
    assert partition_for(mod, ["ccompiler"]).astext() == expected
    assert partitioner("ccompiler")(mod).astext() == expected


@DNNL
@pytest.mark.parametrize("op", ["nn.dense", "nn.conv2d"])
def test_an_operator_pinned_to_another_target_leaves_the_first_target_s_patterns(
    op, conv_net, tmp_path, capsys
):
    # dnnl's dense_bias / conv2d_bias_relu would fuse the operator into a composite
    # ccompiler cannot compile: the pin sends the operator itself to ccompiler
    flags = ["--target", "dnnl,ccompiler", "--pin", f"{op}={'ccompiler'}"]
    shown = check_same(capsys, str(conv_net), flags, tmp_path)
    on_ccompiler = [ops for _, target, ops in shown if target == "ccompiler"]
    assert any(op in ops for ops in on_ccompiler)
    assert not any(op in ops for _, target, ops in shown if target == "dnnl")
