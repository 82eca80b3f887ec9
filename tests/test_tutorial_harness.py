"""benchmarks/tutorials: a gallery script is split into its code cells and run cell by
cell, each failure recorded with the cell that raised it, later cells still run."""

import os
import subprocess
import sys

HARNESS = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "tutorials")
sys.path.insert(0, HARNESS)

from cells import split_cells  # noqa: E402

SCRIPT = '''"""
Title
=====
"""
import numpy as np
import tvm
from tvm import relay

######################################################################
# Build a function
# ----------------
x = relay.var("x", shape=(2,))
f = relay.Function([x], relay.exp(x))

# %%
# A failing cell
raise_here = undefined_name

######################################################################
# A comment-only cell

######################################################################
out = relay.create_executor(mod=tvm.IRModule.from_expr(f)).evaluate()(np.zeros(2, "float32"))
assert out.numpy().tolist() == [1.0, 1.0]
'''


def test_split_cells_follows_gallery_separators():
    cells = split_cells(SCRIPT)
    assert [c.has_code for c in cells] == [True, True, True, False, True]
    assert cells[1].code.lstrip().startswith("# Build a function")
    assert cells[2].line == SCRIPT.splitlines().index("# %%") + 2


def test_run_records_the_failing_cell_and_continues(tmp_path):
    (tmp_path / "demo.py").write_text(SCRIPT)
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(HARNESS, "..", "..", "src"), env.get("PYTHONPATH", "")]
    )
    subprocess.run(
        [
            sys.executable,
            os.path.join(HARNESS, "run.py"),
            str(tmp_path / "demo.py"),
            "--out",
            str(out),
            "--cache",
            str(tmp_path / "cache"),
        ],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )
    summary = (out / "summary.md").read_text()
    assert "| demo.py | 3/4 | cell 2: NameError: name 'undefined_name' is not defined" in summary


def test_standins_label_dict_and_mxnet_records(tmp_path):
    import mxnet_standin
    import numpy as np
    from standins import _image_records, _label_dict

    _label_dict(str(tmp_path / "labels.txt"))
    labels = eval((tmp_path / "labels.txt").read_text())  # the tutorials eval it
    assert len(labels) == 1000 and labels[281] == "class 281"
    # one entry a line, as in the original file (from_paddle.py indexes its lines)
    assert (tmp_path / "labels.txt").read_text().splitlines()[281] == " 281: 'class 281',"

    _image_records(str(tmp_path / "val.rec"), count=3, size=256)
    mean, std = (123.68, 116.779, 103.939), (58.393, 57.12, 57.375)
    it = mxnet_standin.io.ImageRecordIter(
        path_imgrec=str(tmp_path / "val.rec"),
        batch_size=1,
        data_shape=(3, 224, 224),
        resize=256,
        mean_r=mean[0],
        mean_g=mean[1],
        mean_b=mean[2],
        std_r=std[0],
        std_g=std[1],
        std_b=std[2],
    )
    batches = list(it)
    assert len(batches) == 3
    with np.load(tmp_path / "val.rec") as records:
        image = records["images"][0].astype(np.float64)  # 256x256: resize keeps it
    expected = ((image[16:240, 16:240] - mean) / std).transpose(2, 0, 1)
    got = batches[0].data[0].asnumpy()
    assert got.shape == (1, 3, 224, 224) and got.dtype == np.float32
    np.testing.assert_allclose(got[0], expected, rtol=1e-4, atol=1e-4)


def test_cells_run_under_the_scripts_path_and_lines(tmp_path):
    """As sphinx-gallery runs them: a script finds files beside it through
    ``inspect.getfile`` (TVM's pipeline tutorial does), and errors name its own lines."""
    sep = "#" * 30
    script = "\n".join(
        [
            "import inspect, os",
            sep,
            "here = os.path.dirname(inspect.getfile(lambda: None))",
            "assert here == os.path.dirname(__file__), (here, __file__)",
            sep,
            "",
            "missing_name",
            "",
        ]
    )
    (tmp_path / "paths.py").write_text(script)
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(HARNESS, "..", "..", "src"), env.get("PYTHONPATH", "")]
    )
    subprocess.run(
        [
            sys.executable,
            os.path.join(HARNESS, "run.py"),
            str(tmp_path / "paths.py"),
            "--out",
            str(out),
            "--cache",
            str(tmp_path / "cache"),
        ],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )
    summary = (out / "summary.md").read_text()
    assert (
        "| paths.py | 2/3 | cell 2: NameError: name 'missing_name' is not defined [paths.py:7]"
        in summary
    )
