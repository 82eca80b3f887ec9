"""The dnnl backend's second stage: compile a partitioned region.

The codegen (:mod:`.codegen`, ``relay.ext.dnnl``) takes every ``Compiler="dnnl"``
function of a build and turns each into a compiled region:

- :mod:`.lower`: a Relay function to a region program of oneDNN-level nodes;
- :mod:`.dedup`: nodes doing the same operation on the same tensors merged into one;
- :mod:`.fuse`: scale/shift folding, post-op fusion, 1x1 + depthwise pairs;
- :mod:`.winograd`: which 3x3 convolutions run by Winograd's F(2x2, 3x3);
- :mod:`.tune`: the activation layouts, chosen by timing a few builds.

The program format and the engine that builds and runs it are the next stage
(:mod:`relaykit.backends.dnnl.run`).
"""
