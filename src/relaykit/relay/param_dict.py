"""``tvm.relay.param_dict``: save and load parameter dictionaries as bytes.

>>> import numpy as np
>>> blob = save_param_dict({"w": np.ones(2, "float32")})
>>> load_param_dict(blob)["w"].numpy().tolist()
[1.0, 1.0]
"""

from relaykit.runtime.params import load_param_dict, save_param_dict

__all__ = ["load_param_dict", "save_param_dict"]
