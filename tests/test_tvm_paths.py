"""TVM's module paths import as statements, and the facade's new names behave.

Every path here is one of TVM v0.19's ``python/tvm/relay/**`` (or ``tvm.target``,
``tvm.runtime``, ``tvm.tir``) modules; a path relaykit leaves out imports too, and its
names raise UnsupportedFeatureError when used.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import relaykit
from relaykit import relay
from relaykit.errors import ArgumentError, IRError, UnsupportedFeatureError

_PATH_TEXT = """
relay.adt relay.analysis relay.analysis.analysis relay.analysis.annotated_regions
relay.analysis.call_graph relay.analysis.count_layers relay.analysis.feature
relay.analysis.operations_distribution relay.analysis.sparse_conv2d relay.analysis.sparse_dense
relay.backend relay.backend.aot relay.backend.contrib relay.backend.contrib.uma
relay.backend.contrib.uma.api relay.backend.contrib.uma.api.codegen
relay.backend.contrib.uma.api.lower relay.backend.contrib.uma.api.partitioner
relay.backend.contrib.uma.api.utils relay.backend.contrib.uma.backend relay.backend.executor
relay.backend.executor_factory relay.backend.graph_executor_codegen relay.backend.interpreter
relay.backend.name_transforms relay.backend.runtime relay.backend.te_compiler
relay.backend.utils relay.backend.vm relay.base relay.build_module relay.collage
relay.collage.collage relay.data_dep_optimization relay.data_dep_optimization.bsr_conv2d
relay.data_dep_optimization.bsr_dense relay.data_dep_optimization.simplify_fc_transpose
relay.data_dep_optimization.utils relay.dataflow_pattern relay.debug relay.expr
relay.expr_functor relay.frontend relay.frontend.caffe relay.frontend.caffe2
relay.frontend.change_datatype relay.frontend.common relay.frontend.coreml
relay.frontend.darknet relay.frontend.keras relay.frontend.mxnet
relay.frontend.mxnet_qnn_op_utils relay.frontend.nnvm_common relay.frontend.oneflow
relay.frontend.onnx relay.frontend.paddlepaddle relay.frontend.pytorch
relay.frontend.pytorch_utils relay.frontend.qnn_torch relay.frontend.tensorflow
relay.frontend.tensorflow2 relay.frontend.tensorflow2_ops relay.frontend.tensorflow_ops
relay.frontend.tensorflow_parser relay.frontend.tflite relay.frontend.tflite_flexbuffer
relay.function relay.loops relay.op relay.op._make relay.op.algorithm relay.op.annotation
relay.op.annotation.annotation relay.op.contrib relay.op.contrib.arm_compute_lib
relay.op.contrib.bnns relay.op.contrib.clml relay.op.contrib.coreml relay.op.contrib.cublas
relay.op.contrib.cudnn relay.op.contrib.cutlass relay.op.contrib.dnnl relay.op.contrib.libtorch
relay.op.contrib.mrvl relay.op.contrib.register relay.op.contrib.te_target
relay.op.contrib.tensorrt relay.op.contrib.vitis_ai relay.op.dyn relay.op.dyn.image
relay.op.dyn.nn relay.op.image relay.op.image.image relay.op.memory relay.op.memory.memory
relay.op.nn relay.op.nn.nn relay.op.nn.utils relay.op.op relay.op.op_attrs relay.op.random
relay.op.random.kernel relay.op.reduce relay.op.strategy relay.op.strategy.adreno
relay.op.strategy.arm_cpu relay.op.strategy.bifrost relay.op.strategy.cuda
relay.op.strategy.generic relay.op.strategy.hexagon relay.op.strategy.hls
relay.op.strategy.intel_graphics relay.op.strategy.mali relay.op.strategy.rocm
relay.op.strategy.x86 relay.op.tensor relay.op.transform relay.op.vision
relay.op.vision.multibox relay.op.vision.nms relay.op.vision.rcnn relay.op.vision.yolo
relay.op.vm relay.op.vm.vm relay.param_dict relay.parser relay.prelude relay.qnn relay.qnn.op
relay.qnn.op.canonicalizations relay.qnn.op.layout_conversions relay.qnn.op.legalizations
relay.qnn.op.op relay.qnn.op.qnn relay.qnn.strategy relay.qnn.strategy.arm_cpu
relay.qnn.strategy.generic relay.qnn.strategy.hexagon relay.qnn.transform relay.quantize
relay.quantize.kl_divergence relay.quantize.quantize relay.scope_builder relay.testing
relay.testing.darknet relay.testing.nat relay.testing.py_converter relay.testing.resnet_3d
relay.testing.synthetic relay.testing.tf relay.testing.tflite relay.testing.yolo_detection
relay.transform relay.transform.fake_quantization_to_integer relay.transform.flexible_shape
relay.transform.infer_layout_utils relay.transform.memory_plan relay.transform.mixed_precision
relay.transform.recast relay.transform.suffixes relay.transform.transform relay.ty
relay.type_functor relay.vm target target.codegen target.target tir tir.expr
runtime.name_transforms runtime.container _ffi.base
"""
PATHS = _PATH_TEXT.split()


@pytest.mark.parametrize("path", PATHS)
def test_path_imports_as_a_statement(path: str) -> None:
    module = importlib.import_module(f"relaykit.{path}")
    exec(f"import relaykit.{path}", {})  # the statement form, not only attribute access
    for name in getattr(module, "__all__", []):
        assert hasattr(module, name) or isinstance(getattr(type(module), name, None), property), (
            f"{path}.{name}"
        )


def test_from_import_statements() -> None:
    from relaykit.relay.analysis import Feature, detect_feature  # noqa: F401
    from relaykit.relay.backend.interpreter import Interpreter  # noqa: F401
    from relaykit.relay.frontend.common import infer_type  # noqa: F401
    from relaykit.relay.op.contrib.dnnl import partition_for_dnnl
    from relaykit.relay.op.nn.nn import conv2d
    from relaykit.relay.transform import mixed_precision  # noqa: F401

    assert conv2d is relaykit.op.nn.conv2d
    assert callable(partition_for_dnnl)


def test_out_of_scope_names_raise_typed_errors() -> None:
    from relaykit.relay.frontend import from_caffe
    from relaykit.relay.op.strategy.x86 import conv2d_strategy_cpu
    from relaykit.relay.testing.resnet_3d import get_workload

    for name in (from_caffe, conv2d_strategy_cpu, get_workload):
        with pytest.raises(UnsupportedFeatureError, match="not available in relaykit"):
            name()
    from relaykit.relay.backend.contrib.uma.backend import UMABackend

    with pytest.raises(UnsupportedFeatureError):

        class _Backend(UMABackend):  # type: ignore[misc]
            pass

    with pytest.raises(UnsupportedFeatureError):
        importlib.import_module("relaykit.relay.op.strategy.cuda").no_such_name  # noqa: B018


def test_devices_that_do_not_exist_can_be_named() -> None:
    for dev in (
        relaykit.device("cuda"),
        relaykit.device("gpu", 1),
        relaykit.opencl(),
        relaykit.cuda(),
    ):
        assert not dev.exist
    assert relaykit.device("llvm -mcpu=skylake").exist
    assert relaykit.runtime.enabled("llvm") and not relaykit.runtime.enabled("cuda")
    with pytest.raises(IRError, match="unknown device type"):
        relaykit.device("abacus")
    with pytest.raises(IRError, match="does not exist"):
        relaykit.nd.array(np.zeros(2), relaykit.cuda(0))


def test_building_for_an_unavailable_target_raises_at_build_time() -> None:
    x = relay.var("x", shape=(2,))
    mod = relaykit.IRModule.from_expr(relay.Function([x], x + x))
    with pytest.raises(relaykit.errors.BuildError, match="not available"):
        relay.build(mod, target="cuda")


def test_use_as_tvm_from_the_package() -> None:
    relaykit.use_as_tvm()
    try:
        tvm = importlib.import_module("tvm")
        dnnl = importlib.import_module("tvm.relay.op.contrib.dnnl")
        assert tvm is relaykit
        assert dnnl.partition_for_dnnl is relaykit.relay.op.contrib.dnnl.partition_for_dnnl
    finally:
        relaykit.remove_tvm_alias()


def test_type_var_analyses() -> None:
    from relaykit.relay.analysis import all_type_vars, bound_type_vars, free_type_vars

    a, b, c = relay.TypeVar("a"), relay.TypeVar("b"), relay.TypeVar("c")
    assert all_type_vars(relay.FuncType([b], c, [a])) == [a, b, c]
    x = relay.Var("x", a)
    f = relay.Function([x], relay.Tuple([]), type_params=[b])
    assert bound_type_vars(f) == [b]
    assert free_type_vars(f) == [a]


def test_feature_detection_and_well_formedness() -> None:
    from relaykit.relay.analysis import Feature, detect_feature, well_formed

    x = relay.var("x", shape=(2,))
    y = x + x
    feats = detect_feature(relay.Function([x], relay.Tuple([y, y])))
    assert Feature.fGraph in feats and Feature.fTuple in feats
    v = relay.const(1.0)
    assert well_formed(relay.Let(x, v, x))
    assert not well_formed(relay.Tuple([relay.Let(x, v, x), relay.Let(x, v, x)]))


def test_name_transforms() -> None:
    from relaykit.relay.backend import name_transforms as nt
    from relaykit.runtime.name_transforms import sanitize_name

    assert nt.to_c_function_style(nt.prefix_generated_name(["model", "run"])) == "TVMGenModelRun"
    assert sanitize_name("a:0") == "a_0"
    with pytest.raises(ArgumentError, match="not TVM prefixed"):
        nt.to_c_variable_style("Cake")
