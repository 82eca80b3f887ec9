"""``tvm.relay.frontend.tensorflow2``: TVM's importer of TF2 graphs, here the same
importer as ``relay.frontend.tensorflow`` (:mod:`relaykit.frontend.tensorflow`): give
it the graph of a function frozen with ``convert_variables_to_constants_v2``."""

from relaykit.frontend.tensorflow import from_tensorflow

__all__ = ["from_tensorflow"]
