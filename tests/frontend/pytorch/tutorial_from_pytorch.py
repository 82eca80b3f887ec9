# ruff: noqa: E402, I001, UP032 - TVM's tutorial code, kept as TVM ships it
"""TVM's tutorial "Compile PyTorch Models" (gallery/how_to/compile_models/from_pytorch.py),
as TVM ships it, with three substitutions marked SUBSTITUTED: the torchvision model
(a local ResNet-18 with random weights: torchvision does not install here), the cat
picture (a random, already preprocessed image) and the synset download (the class
ids are compared instead of names). Run with ``python -m relaykit.tvm`` (``import tvm``
is relaykit); argv: model width and image size (default: torchvision's 64 and 224).
"""

import sys

import tvm
from tvm import relay

import numpy as np

# PyTorch imports
import torch

# SUBSTITUTED: import torchvision -> the local model zoo of these tests
import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "torch_models", pathlib.Path(__file__).with_name("torch_models.py")
)
torch_models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(torch_models)
width = int(sys.argv[1]) if len(sys.argv) > 1 else 64
size = int(sys.argv[2]) if len(sys.argv) > 2 else 224

######################################################################
# Load a pretrained PyTorch model
# -------------------------------
model_name = "resnet18"
# SUBSTITUTED: model = getattr(torchvision.models, model_name)(pretrained=True)
model = torch_models.randomize(getattr(torch_models, model_name)(width=width))
model = model.eval()

# We grab the TorchScripted model via tracing
input_shape = [1, 3, size, size]
input_data = torch.randn(input_shape)
scripted_model = torch.jit.trace(model, input_data).eval()

######################################################################
# Load a test image
# -----------------
# SUBSTITUTED: the downloaded cat picture, resized and normalised
img = np.random.default_rng(0).standard_normal((3, size, size)).astype("float32")
img = np.expand_dims(img, 0)

######################################################################
# Import the graph to Relay
# -------------------------
# Convert PyTorch graph to Relay graph. The input name can be arbitrary.
input_name = "input0"
shape_list = [(input_name, img.shape)]
mod, params = relay.frontend.from_pytorch(scripted_model, shape_list)

######################################################################
# Relay Build
# -----------
# Compile the graph to llvm target with given input specification.
target = tvm.target.Target("llvm", host="llvm")
dev = tvm.cpu(0)
with tvm.transform.PassContext(opt_level=3):
    lib = relay.build(mod, target=target, params=params)

######################################################################
# Execute the portable graph on TVM
# ---------------------------------
# Now we can try deploying the compiled model on target.
from tvm.contrib import graph_executor

dtype = "float32"
m = graph_executor.GraphModule(lib["default"](dev))
# Set inputs
m.set_input(input_name, tvm.nd.array(img.astype(dtype)))
# Execute
m.run()
# Get outputs
tvm_output = m.get_output(0)

# SUBSTITUTED: the synset downloads; class ids are printed instead of names

# Get top-1 result for TVM
top1_tvm = np.argmax(tvm_output.numpy()[0])

# Convert input to PyTorch variable and get PyTorch result for comparison
with torch.no_grad():
    torch_img = torch.from_numpy(img)
    output = model(torch_img)

    # Get top-1 result for PyTorch
    top1_torch = np.argmax(output.numpy())

print("Relay top-1 id: {}".format(top1_tvm))
print("Torch top-1 id: {}".format(top1_torch))
err = np.abs(tvm_output.numpy() - output.numpy()).max() / np.abs(output.numpy()).max()
print("relative error: {:.2e}".format(err))
