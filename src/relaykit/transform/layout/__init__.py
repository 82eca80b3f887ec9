"""Layout passes: ``ConvertLayout`` and the machinery ``AlterOpLayout`` shares with it
(layout rules per operator, the layout rewriter, the built-in conversion hooks)."""

from . import axis_rules, channel_rules  # noqa: F401 - they fill BUILTIN_RULES
from .alter import AlterOpLayout, alter_op_layout
from .convert import ConvertLayout, convert_layout
from .convert_hooks import LayoutConfig
from .infer import InferCorrectLayoutOutput, layout_rule
from .rewrite import LayoutTransformer

__all__ = [
    "AlterOpLayout",
    "alter_op_layout",
    "ConvertLayout",
    "convert_layout",
    "LayoutConfig",
    "InferCorrectLayoutOutput",
    "layout_rule",
    "LayoutTransformer",
]
