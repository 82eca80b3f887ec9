"""The TensorFlow frontend: ``from_tensorflow(graph_def) -> (mod, params)`` for frozen
GraphDefs (``tf.compat.v1`` graphs, and TF2 functions frozen with
``convert_variables_to_constants_v2``). It reads the protobuf messages directly and
does not import TensorFlow.

- :mod:`.importer`: :func:`from_tensorflow`, the graph walk;
- :mod:`.graphdef`: element types, tensor values, attributes, input references;
- :mod:`.registry`: the converter table and what a converter may ask;
- :mod:`.functions`: function calls and the branches of conditionals;
- :mod:`.parser`: ``TFParser``, a ``.pb`` file or a SavedModel read as a frozen GraphDef;
- :mod:`.ops_math`, :mod:`.ops_nn`, :mod:`.ops_array`: the converters by family.

>>> from relaykit.frontend.tensorflow import supported_ops
>>> {"Conv2D", "StridedSlice", "FusedBatchNormV3"} <= set(supported_ops())
True
"""

from . import ops_array, ops_math, ops_nn  # noqa: F401  (registers the converters)
from .importer import from_tensorflow, supported_ops

__all__ = ["from_tensorflow", "supported_ops"]
