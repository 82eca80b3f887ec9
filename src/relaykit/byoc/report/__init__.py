"""What a partition did, for people: the per-operator report, the summary and the drawings.

- :mod:`.explain`: :func:`explain`, why every operator went where it went (:class:`Report`);
- :mod:`.summary`: :func:`summarize`, per-target functions, operators, MACs and bytes;
- :mod:`.visual`: the partition drawn, as DOT or as a self-contained HTML page
  (:mod:`.values` finds the inputs, weights and outputs each operator reads or makes,
  :mod:`.layout` places the nodes, :mod:`.style` colours them, :mod:`.drawing` draws
  the SVG with the regions outlined, :mod:`.html` and :mod:`.assets` write the page).

>>> from relaykit.byoc.report import explain, summarize
>>> callable(explain) and callable(summarize)
True
"""

from .explain import OpReport, Report, explain
from .summary import Summary, summarize

__all__ = ["OpReport", "Report", "Summary", "explain", "summarize"]
