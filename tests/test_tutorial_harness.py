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
