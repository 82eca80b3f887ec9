"""``tvm.relay.frontend.tensorflow_parser``: ``TFParser``, a TensorFlow model on disk
as a frozen GraphDef (:mod:`relaykit.frontend.tensorflow.parser`)."""

from relaykit.frontend.tensorflow.parser import TFParser

__all__ = ["TFParser"]
