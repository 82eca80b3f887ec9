"""TVM's ``relay.quantize._partition``: partition rules and their helpers."""

from relaykit.quantize.partition import (
    QPartitionExpr,
    partition_expr_check,
    register_partition_function,
)

__all__ = ["QPartitionExpr", "partition_expr_check", "register_partition_function"]
