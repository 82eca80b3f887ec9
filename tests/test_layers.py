"""What the layering moved: the TVM names live in the facade, the bottom modules hold the
version and the dtype tables, and importing relaykit loads no workload or importer."""

from __future__ import annotations

import subprocess
import sys

import relaykit
import relaykit.transform
from relaykit import byoc, dtypes, relay
from relaykit._version import __version__
from relaykit.ir import types


def test_relay_transform_holds_the_byoc_passes_under_tvm_names():
    assert relay.transform.MergeComposite is byoc.MergeComposite
    assert relay.transform.AnnotateTarget is byoc.AnnotateTarget
    assert relay.transform.MergeCompilerRegions is byoc.MergeCompilerRegions
    assert relay.transform.PartitionGraph is byoc.PartitionGraph
    assert isinstance(relay.transform.BackwardFoldScaleAxis(), relaykit.transform.FoldScaleAxis)
    assert relay.transform.ForwardFoldScaleAxis().direction == "forward"
    assert relay.transform.InferType is relaykit.transform.InferType
    assert set(relaykit.transform.__all__) < set(relay.transform.__all__)


def test_the_pass_layer_does_not_hold_the_byoc_passes_or_tvm_aliases():
    for name in ("MergeComposite", "PartitionGraph", "BackwardFoldScaleAxis"):
        assert not hasattr(relaykit.transform, name), name


def test_version_and_dtype_tables_come_from_the_bottom_modules():
    assert relaykit.__version__ == __version__
    assert types.DTYPES is dtypes.DTYPES
    assert types.ML_DTYPES is dtypes.ML_DTYPES


def test_relay_op_contrib_is_there_after_import():
    assert callable(relay.op.contrib.register_pattern_table)


def test_import_relaykit_loads_no_workload_no_importer_and_no_onnx():
    code = (
        "import sys, relaykit\n"
        "from relaykit import relay\n"
        "bad = [m for m in ('relaykit.testing', 'relaykit.frontend', 'onnx', 'onnxruntime')"
        " if m in sys.modules]\n"
        "assert not bad, bad\n"
        "assert relay.testing.mlp.get_workload and relaykit.testing.vgg\n"
        "assert 'relaykit.testing' in sys.modules\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
