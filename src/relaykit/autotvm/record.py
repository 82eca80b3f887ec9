"""``tvm.autotvm.record``: tuning logs (JSON lines, one measurement a line).

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "log.json")
>>> open(path, "w").write(MeasureRecord("k", "conv2d", "im2col", [0.002]).to_json() + "\\n") > 0
True
>>> [r.choice for r in load_from_file(path)]
['im2col']
"""

from __future__ import annotations

from relaykit.execution.tuning import MeasureRecord, load_records

__all__ = ["load_from_file", "pick_best", "MeasureRecord"]


def load_from_file(filename: str) -> list[MeasureRecord]:
    """The records of a tuning log."""
    return load_records(filename)


def pick_best(in_file: str, out_file: str) -> None:
    """Keep only the best record of each workload of ``in_file``, written to ``out_file``."""
    kept: dict[str, MeasureRecord] = {}
    for r in load_records(in_file):
        if not r.error and r.costs and (r.key not in kept or r.mean < kept[r.key].mean):
            kept[r.key] = r
    with open(out_file, "w") as f:
        f.writelines(r.to_json() + "\n" for r in kept.values())
