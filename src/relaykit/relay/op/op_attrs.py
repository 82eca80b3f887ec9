"""``tvm.relay.op.op_attrs``: not in relaykit.

In TVM: TVM's attribute classes of every operator (relaykit's Attrs are generic). The
module imports so that scripts naming it load; each of TVM's names here raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.
"""

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported

_NAMES: list[str] = [
    "AdaptivePool2DAttrs", "AdaptivePool3DAttrs", "AffineGridAttrs",
    "AllClassNonMaximumSuppressionAttrs", "ArangeAttrs", "ArgReduceAttrs", "ArgsortAttrs",
    "AutoSchedulerLayoutTransformAttrs", "AvgPool1DAttrs", "AvgPool2DAttrs",
    "AvgPool3DAttrs", "BatchMatmulAttrs", "BatchNormAttrs", "BatchToSpaceNDAttrs",
    "BiasAddAttrs", "BinaryConv2DAttrs", "BinaryDenseAttrs", "BitPackAttrs",
    "BroadcastAttrs", "CastAttrs", "CastHintAttrs", "ClipAttrs", "CompilerAttrs",
    "ConcatenateAttrs", "Conv1DAttrs", "Conv1DTransposeAttrs", "Conv2DAttrs",
    "Conv2DTransposeAttrs", "Conv2DWinogradAttrs",
    "Conv2DWinogradNNPACKWeightTransformAttrs", "Conv3DAttrs", "Conv3DTransposeAttrs",
    "Conv3DWinogradAttrs", "ConvWinogradWeightTransformAttrs", "CorrelationAttrs",
    "CropAndResizeAttrs", "DebugAttrs", "DeformableConv2DAttrs", "DenseAttrs",
    "DensePackAttrs", "DequantizeAttrs", "DeviceCopyAttrs", "DilateAttrs",
    "Dilation2DAttrs", "DropoutAttrs", "DynExpandDimsAttrs", "EinsumAttrs",
    "ExpandDimsAttrs", "FIFOBufferAttrs", "FixedPointMultiplyAttrs", "GatherAttrs",
    "GatherNDAttrs", "GetValidCountsAttrs", "GlobalPool2DAttrs", "GridSampleAttrs",
    "GroupNormAttrs", "InitOpAttrs", "InstanceNormAttrs", "L2NormalizeAttrs", "LRNAttrs",
    "LayerNormAttrs", "LayoutTransformAttrs", "LeakyReluAttrs", "MatmulAttrs",
    "MatrixSetDiagAttrs", "MaxPool1DAttrs", "MaxPool2DAttrs", "MaxPool3DAttrs",
    "MeshgridAttrs", "MetaScheduleLayoutTransformAttrs", "MirrorPadAttrs",
    "MultiBoxPriorAttrs", "MultiBoxTransformLocAttrs", "NLLLossAttrs", "NdarraySizeAttrs",
    "NonMaximumSuppressionAttrs", "OnDeviceAttrs", "OneHotAttrs", "PReluAttrs", "PadAttrs",
    "ProposalAttrs", "QuantizeAttrs", "ROIAlignAttrs", "ROIPoolAttrs", "ReduceAttrs",
    "RepeatAttrs", "RequantizeAttrs", "ReshapeAttrs", "ReshapeLikeAttrs", "Resize1DAttrs",
    "Resize2DAttrs", "Resize3DAttrs", "ReverseAttrs", "ReverseSequenceAttrs",
    "ScanopAttrs", "ScatterElementsAttrs", "ScatterNDAttrs", "SearchSortedAttrs",
    "SequenceMaskAttrs", "ShapeFuncAttrs", "ShapeOfAttrs", "SimulatedQuantizeAttrs",
    "SliceLikeAttrs", "SlidingWindowAttrs", "SoftmaxAttrs", "SpaceToBatchNDAttrs",
    "SparseConv2DAttrs", "SparseDenseAttrs", "SparseToDenseAttrs", "SparseTransposeAttrs",
    "SplitAttrs", "SqueezeAttrs", "StackAttrs", "StftAttrs", "StridedSliceAttrs",
    "SubPixelAttrs", "TakeAttrs", "ThreefryGenerateAttrs", "TileAttrs", "TopkAttrs",
    "TransposeAttrs", "TriluAttrs", "TupleGetItemAttrs", "UniformAttrs", "UniqueAttrs",
    "UpSampling3DAttrs", "UpSamplingAttrs", "VarianceAttrs", "WithFuncIdAttrs",
    "YoloReorgAttrs",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
