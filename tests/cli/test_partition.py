"""``relaykit partition`` and ``relaykit demo --walkthrough``."""

import json

from relaykit.cli import main

SMALL = ["--image-size", "32"]


def test_partition_a_workload_prints_per_target_summary(capsys):
    assert main(["partition", "vgg11", "--target", "byoc-target", *SMALL]) == 0
    out = capsys.readouterr().out
    assert "using the built-in demo rules" in out
    assert "Target byoc-target: 8 functions, 27 operators" in out
    assert "tvmgen_default_byoc_target_main_25" in out
    assert "Operator breakdown" in out
    assert "Host: 14 operators" in out


def test_partition_json(capsys):
    assert main(["partition", "vgg11", "--target", "byoc-target", "--json", *SMALL]) == 0
    data = json.loads(capsys.readouterr().out)
    target = data["targets"]["byoc-target"]
    assert target["regions"] == 8
    assert target["operators"] == 27
    first = target["functions"][0]
    assert first["op_names"] == ["nn.conv2d", "nn.bias_add", "nn.relu"]
    # conv 3x3 from 3 to 64 channels on 32x32: 64*32*32 outputs x 27 MACs each
    assert first["macs"] == 64 * 32 * 32 * 27
    assert first["param_bytes"] == (64 * 3 * 3 * 3 + 64) * 4
    assert data["breakdown"]["before"]["nn.conv2d"] == 8
    assert data["breakdown"]["after"]["host"].get("nn.conv2d", 0) == 0
    assert data["breakdown"]["after"]["byoc-target"]["nn.conv2d"] == 8


def test_partition_options_prune_pin_and_explain(capsys):
    args = [
        "partition",
        "vgg11",
        "--target",
        "byoc-target",
        "--min-ops",
        "4",
        "--pin",
        "nn.dense",
        "--explain",
        "--json",
        *SMALL,
    ]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    target = data["targets"]["byoc-target"]
    assert target["regions"] == 3
    assert target["pruned"] == [
        "region 0: region pruned: 3 ops < min 4",
        "region 3: region pruned: 3 ops < min 4",
    ]
    dense = [r for r in data["explain"]["ops"] if r["op"] == "nn.dense"]
    assert all(r["why"] == "pinned to host by user" for r in dense)


def test_partition_a_text_file(tmp_path, capsys):
    path = tmp_path / "model.relay"
    path.write_text(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(1, 8), float32], %w: Tensor[(4, 8), float32]) {\n"
        "  %0 = nn.dense(%x, %w, units=4);\n"
        "  nn.softmax(%0)\n"
        "}\n"
    )
    assert main(["partition", str(path), "--target", "byoc-target", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    target = data["targets"]["byoc-target"]
    assert target["regions"] == 1
    assert target["macs"] == 32
    assert target["param_bytes"] == 4 * 8 * 4


def test_targets_without_rules_are_reported(capsys):
    assert main(["partition", "mlp", "--target", "nothing-registered"]) == 0
    out = capsys.readouterr().out
    assert "nothing-registered: no rules or patterns registered" in out
    assert "Target nothing-registered: 0 functions" in out


def test_unknown_model_is_an_error(capsys):
    assert main(["partition", "no-such-model", "--target", "x"]) == 2
    assert "unknown model 'no-such-model'" in capsys.readouterr().err


def test_demo_runs_the_walkthrough_end_to_end(capsys):
    assert main(["demo", "--walkthrough", *SMALL]) == 0
    out = capsys.readouterr().out
    assert "8 functions partitioned for byoc-target:" in out
    assert "@tvmgen_default_byoc_target_main_25  (nn.dense)" in out
    for step in (
        "MergeComposite",
        'AnnotateTarget("byoc-target")',
        "MergeCompilerRegions",
        "PartitionGraph",
    ):
        assert f"== after {step}" in out
    assert "max abs difference: 0" in out
