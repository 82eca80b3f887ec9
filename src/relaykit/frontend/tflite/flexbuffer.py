"""Decoding FlexBuffers, the schemaless format of a TFLite custom operator's options
(TVM's ``relay.frontend.tflite_flexbuffer``), through the ``flatbuffers`` package that
``tflite`` depends on.

>>> import flatbuffers.flexbuffers as fb
>>> FlexBufferDecoder(fb.Dumps({"max_detections": 10, "nms_iou_threshold": 0.5})).decode()
{'max_detections': 10, 'nms_iou_threshold': 0.5}
>>> FlexBufferType.FBT_MAP, BitWidth.BIT_WIDTH_32
(<FlexBufferType.FBT_MAP: 9>, <BitWidth.BIT_WIDTH_32: 2>)
"""

from __future__ import annotations

import importlib
from enum import IntEnum
from typing import Any

from relaykit.errors import FrontendError

__all__ = ["BitWidth", "FlexBufferDecoder", "FlexBufferType"]


class BitWidth(IntEnum):
    """The width of a FlexBuffer scalar or offset."""

    BIT_WIDTH_8 = 0
    BIT_WIDTH_16 = 1
    BIT_WIDTH_32 = 2
    BIT_WIDTH_64 = 3


class FlexBufferType(IntEnum):
    """The type of a FlexBuffer value."""

    FBT_NULL = 0
    FBT_INT = 1
    FBT_UINT = 2
    FBT_FLOAT = 3
    FBT_KEY = 4
    FBT_STRING = 5
    FBT_INDIRECT_INT = 6
    FBT_INDIRECT_UINT = 7
    FBT_INDIRECT_FLOAT = 8
    FBT_MAP = 9
    FBT_VECTOR = 10
    FBT_VECTOR_INT = 11
    FBT_VECTOR_UINT = 12
    FBT_VECTOR_FLOAT = 13
    FBT_VECTOR_KEY = 14
    FBT_VECTOR_STRING = 15
    FBT_VECTOR_INT2 = 16
    FBT_VECTOR_UINT2 = 17
    FBT_VECTOR_FLOAT2 = 18
    FBT_VECTOR_INT3 = 19
    FBT_VECTOR_UINT3 = 20
    FBT_VECTOR_FLOAT3 = 21
    FBT_VECTOR_INT4 = 22
    FBT_VECTOR_UINT4 = 23
    FBT_VECTOR_FLOAT4 = 24
    FBT_BLOB = 25
    FBT_BOOL = 26
    FBT_VECTOR_BOOL = 36


class FlexBufferDecoder:
    """Decodes the FlexBuffer ``buffer`` (bytes) into Python values: ``decode()`` gives
    the root value (a dict for the options map of a custom operator)."""

    def __init__(self, buffer: bytes | bytearray | memoryview) -> None:
        self.buffer = bytes(buffer)

    def decode(self) -> Any:
        try:
            flexbuffers = importlib.import_module("flatbuffers.flexbuffers")
        except ImportError as exc:
            raise FrontendError(
                "decoding FlexBuffers needs the 'flatbuffers' package (installed with "
                "`pip install relaykit[tflite]`)"
            ) from exc
        if not self.buffer:
            raise FrontendError("the FlexBuffer to decode is empty")
        try:
            return flexbuffers.Loads(self.buffer)
        except Exception as exc:
            raise FrontendError(
                f"the {len(self.buffer)} bytes are not a valid FlexBuffer: {exc}"
            ) from exc
