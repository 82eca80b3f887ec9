"""The machine: runs a VM executable's functions on a frame stack of its own.

Registers hold tensors (``numpy.ndarray``), :class:`~relaykit.runtime.container.ADT`
objects and :class:`VMClosure` values; calls of Relay functions push a frame on the
machine's own stack, so recursion in the program never touches Python's recursion limit.
Frames are pooled per function and machine, and kernels stay bound to the planned
storage of their frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from relaykit.dtypes import converts_exactly
from relaykit.errors import ExecutionError, ExecutorUsageError, FunctionNotFoundError
from relaykit.runtime.container import ADT
from relaykit.runtime.module import PythonModule
from relaykit.runtime.ndarray import Device, NDArray, cpu

from .bytecode import (
    ALLOC_ADT,
    ALLOC_CLOSURE,
    ALLOC_STORAGE,
    ALLOC_TENSOR,
    FATAL,
    GET_FIELD,
    GET_TAG,
    GOTO,
    IF,
    INVOKE_CLOSURE,
    INVOKE_FUNC,
    INVOKE_PACKED,
    LOAD_CONST,
    LOAD_CONSTI,
    MOVE,
    RESHAPE_TENSOR,
    RET,
    PrimitiveRecord,
    format_instruction,
)
from .executable import Executable, VMExecutableModule, primitive_resolver
from .primitives import Primitive
from .typespec import dtype_name, type_spec_str

__all__ = ["VMClosure", "VirtualMachine"]


class VMClosure:
    """A function value: the index of its (lifted) VM function and its captured values."""

    __slots__ = ("captured", "func_index")

    def __init__(self, func_index: int, captured: list[Any]) -> None:
        self.func_index = func_index
        self.captured = captured

    def __repr__(self) -> str:
        return f"<VMClosure of function {self.func_index}, {len(self.captured)} captured>"


class _Frame:
    """One activation's registers and bound-kernel slots (pooled per function). The
    last slot counts the times an output of dynamic shape became another array (the
    kernels of ``planned`` mode 4 check their inputs again only then)."""

    __slots__ = ("regs", "slots")

    def __init__(self, regs: list[Any], ncode: int) -> None:
        self.regs = regs
        self.slots: list[Any] = [None] * ncode + [0]


def _to_runtime(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return NDArray(value)
    if isinstance(value, ADT):
        return ADT(value.tag, [_to_runtime(v) for v in value.fields])
    return value


def _from_user(value: Any, spec: Any, name: str) -> Any:
    """A user's input as a machine value: arrays (cast to the parameter's dtype as the
    interpreter does), tuples as ADTs."""
    tensor = isinstance(spec, dict) and spec.get("t") == "tensor"
    if tensor and type(value) is np.ndarray and dtype_name(value.dtype) == spec["dtype"]:
        return value
    if isinstance(value, NDArray):
        value = value.numpy()
    if tensor and isinstance(value, (ADT, tuple, list)) and len(value) == 1:
        # TVM's VM makes a Python list a tuple object, and an operator given a tuple
        # object takes its fields: one tensor in a list stands for that tensor.
        (only,) = value.fields if isinstance(value, ADT) else value
        if isinstance(only, (np.ndarray, NDArray)):
            return _from_user(only, spec, name)
    if isinstance(value, (ADT, tuple, list)) and not tensor:
        fields = value.fields if isinstance(value, ADT) else list(value)
        sub = (
            spec["fields"]
            if isinstance(spec, dict) and spec.get("t") == "tuple"
            else [None] * len(fields)
        )
        if len(sub) != len(fields):
            raise ExecutorUsageError(
                f"input {name!r} expects a tuple of {len(sub)} fields, got {len(fields)}"
            )
        tag = value.tag if isinstance(value, ADT) else 0
        return ADT(
            tag,
            [
                _from_user(v, s, f"{name}.{i}")
                for i, (v, s) in enumerate(zip(fields, sub, strict=True))
            ],
        )
    if isinstance(value, VMClosure):
        return value
    arr = np.asarray(value)
    if tensor and dtype_name(arr.dtype) != spec["dtype"]:
        loose = not isinstance(value, np.ndarray) and np.dtype(spec["dtype"]).kind not in "iu"
        if loose or converts_exactly(arr, spec["dtype"]):  # a list's fractions are no ints
            arr = arr.astype(spec["dtype"])
        else:
            raise ExecutorUsageError(
                f"input {name!r} expects {type_spec_str(spec)}, got an array of dtype {arr.dtype}"
            )
        # Shapes are not checked here (TVM's VM does not either): each operator checks
        # the shapes it receives against its call's types.
    return arr


class VirtualMachine:
    """Runs an :class:`Executable` (TVM's ``runtime.vm.VirtualMachine``).

    ``vm.invoke("main", *args)`` (or ``vm["main"](...)``, ``vm.run(...)``) returns an
    :class:`~relaykit.runtime.NDArray` or an :class:`ADT`. A machine keeps pooled frames
    and bound kernels; use one machine per thread.
    """

    def __init__(
        self, exe: Any, device: Device | Sequence[Device] | None = None, memory_cfg: Any = None
    ):
        if isinstance(exe, VMExecutableModule):
            exe = Executable(exe)
        if not isinstance(exe, Executable):
            raise ExecutorUsageError(
                f"VirtualMachine runs a VM Executable, got {type(exe).__name__}"
            )
        if any(c is None for c in exe.mod.constants):
            raise ExecutorUsageError(
                "the executable's late-bound constants are not loaded: call "
                "load_late_bound_consts(path) or load_late_bound_consts_from_map(...) first"
            )
        self.exe = exe
        self.module = exe.mod
        devices = list(device) if isinstance(device, (list, tuple)) else [device or cpu()]
        self.device = devices[0] or cpu()
        self.functions = self.module.functions
        self.constants = self.module.constants
        self.shared: dict[str, Any] = {}
        self.prims: list[Primitive] = [self._resolve(r) for r in self.module.primitives]
        self.pools: list[list[_Frame]] = [[] for _ in self.functions]
        self._inputs: dict[str, list[Any]] = {}
        self._outputs: Any = None
        #: The machine as a runtime module (``invoke``, ``set_input``, ``get_output``...).
        self.vm_module = PythonModule(
            "vm",
            {
                "invoke": self.invoke,
                "set_input": self.set_input,
                "get_output": self.get_output,
                "get_num_outputs": self.get_num_outputs,
                "get_input_index": self.get_input_index,
                "invoke_stateful": self.invoke_stateful,
            },
        )

    def _resolve(self, rec: PrimitiveRecord) -> Primitive:
        resolver = primitive_resolver(rec.kind)
        if resolver is None:
            raise ExecutionError(
                f"the VM executable calls a primitive of kind {rec.kind!r} ({rec.name}), which "
                "no loaded layer provides: import relaykit (relaykit.execution.vm registers 'op')"
            )
        return resolver(rec, self.module, self.shared)

    # -- TVM's interface -------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Callable[..., Any]:
        self._index(name)
        return lambda *args, **kwargs: self.invoke(name, *args, **kwargs)

    def _index(self, name: str) -> int:
        i = self.module.func_index.get(name)
        if i is None:
            raise FunctionNotFoundError(
                f"the VM executable has no function {name!r} (it has: "
                f"{', '.join(f.name for f in self.functions)})"
            )
        return i

    def get_input_index(self, input_name: str, func_name: str = "main") -> int:
        params = self.functions[self._index(func_name)].params
        return params.index(input_name) if input_name in params else -1

    def _arguments(
        self, func_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> list[Any]:
        fn = self.functions[self._index(func_name)]
        if len(args) > len(fn.params):
            raise ExecutorUsageError(
                f"{func_name} takes {len(fn.params)} inputs ({', '.join(fn.params)}), "
                f"got {len(args)}"
            )
        values: list[Any] = list(args) + [None] * (len(fn.params) - len(args))
        for k, v in kwargs.items():
            if k not in fn.params:
                continue  # as TVM's VM: keywords may be a superset (e.g. parameters bound since)
            values[fn.params.index(k)] = v
        return values

    def set_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """Inputs of ``func_name`` for a later ``invoke(func_name)`` / ``run()``."""
        self._inputs[func_name] = self._arguments(func_name, args, kwargs)

    def set_one_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        fn = self.functions[self._index(func_name)]
        current = self._inputs.setdefault(func_name, [None] * len(fn.params))
        if args:
            if len(args) != 2:
                raise ExecutorUsageError("set_one_input takes (func_name, index or name, value)")
            key, value = args
            index = key if isinstance(key, int) else self.get_input_index(key, func_name)
            if not 0 <= index < len(fn.params):
                raise ExecutorUsageError(f"{func_name} has no input {key!r}")
            current[index] = value
        for k, v in kwargs.items():
            index = self.get_input_index(k, func_name)
            if index < 0:
                raise ExecutorUsageError(f"{func_name} has no input {k!r}")
            current[index] = v

    def invoke(self, func_name: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``func_name`` on the inputs (or on those given to ``set_input``)."""
        if args or kwargs:
            values = self._arguments(func_name, args, kwargs)
        else:
            values = self._inputs.get(func_name, [])
            fn = self.functions[self._index(func_name)]
            if len(values) != len(fn.params):
                values = [None] * len(fn.params)
        index = self._index(func_name)
        fn = self.functions[index]
        missing = [p for p, v in zip(fn.params, values, strict=False) if v is None]
        if missing:
            raise ExecutorUsageError(
                f"missing inputs of {func_name}: {', '.join(missing)} (pass them to invoke or "
                "set_input)"
            )
        types = fn.param_types or [None] * len(fn.params)
        machine_args = [
            _from_user(v, t, p) for v, t, p in zip(values, types, fn.params, strict=False)
        ]
        return _to_runtime(self.execute(index, machine_args))

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self.invoke("main", *args, **kwargs)

    def invoke_stateful(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """Run and keep the result for :meth:`get_outputs`."""
        self._outputs = self.invoke(func_name, *args, **kwargs)

    def get_outputs(self) -> list[Any]:
        out = self._outputs
        if out is None:
            raise ExecutorUsageError("no outputs yet: call invoke_stateful first")
        return list(out.fields) if isinstance(out, ADT) else [out]

    def get_num_outputs(self) -> int:
        return len(self.get_outputs())

    def get_output(self, index: int) -> Any:
        return self.get_outputs()[index]

    def invoke_with_outputs(
        self, func_name: str, input_args: Mapping[str, Any], output_args: Sequence[Any]
    ) -> None:
        """Run with named inputs and copy the outputs into ``output_args``."""
        result = self.invoke(func_name, **dict(input_args))
        outs = list(result.fields) if isinstance(result, ADT) else [result]
        if len(outs) != len(output_args):
            raise ExecutorUsageError(
                f"{func_name} has {len(outs)} outputs, {len(output_args)} output arrays given"
            )
        for dst, src in zip(output_args, outs, strict=True):
            if isinstance(dst, NDArray):
                dst.copyfrom(src)
            else:
                np.copyto(dst, src.numpy())

    def benchmark(
        self,
        device: Any = None,
        *args: Any,
        func_name: str = "main",
        repeat: int = 5,
        number: int = 5,
        min_repeat_ms: Any = None,
        end_to_end: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Mean, median, min, max and std of ``repeat`` timings of ``number`` runs (s),
        through the machine module's ``time_evaluator`` as in TVM."""
        if args or kwargs:
            self.set_input(func_name, *args, **kwargs)
        evaluator = self.vm_module.time_evaluator(
            "invoke", device, repeat=repeat, number=number, min_repeat_ms=min_repeat_ms or 0
        )
        return evaluator(func_name)

    # -- the loop --------------------------------------------------------------------------------
    def _new_frame(self, findex: int) -> _Frame:
        fn = self.functions[findex]
        regs: list[Any] = [None] * fn.num_regs
        for ins in fn.prologue:
            op = ins[0]
            if op == LOAD_CONST:
                regs[ins[2]] = self.constants[ins[1]]
            elif op == ALLOC_STORAGE:
                regs[ins[4]] = np.empty(ins[1], np.uint8)
            else:  # ALLOC_TENSOR
                regs[ins[5]] = _tensor_in(regs[ins[1]], ins[2], ins[3], ins[4])
        return _Frame(regs, len(fn.code))

    def execute(self, findex: int, args: list[Any]) -> Any:  # noqa: C901, PLR0912, PLR0915
        """Run function ``findex`` on machine values; its machine result."""
        functions = self.functions
        pools = self.pools
        prims = self.prims
        consts = self.constants
        stack: list[tuple[Any, ...]] = []
        fidx = findex
        pool = pools[fidx]
        frame = pool.pop() if pool else self._new_frame(fidx)
        regs = frame.regs
        regs[: len(args)] = args
        code = functions[fidx].code
        slots = frame.slots
        pc = 0
        while True:
            ins = code[pc]
            op = ins[0]
            if op == INVOKE_PACKED and ins[4] == 4:
                # Dynamic shape, inputs are frame-owned arrays: checked again only when
                # one of them may have become another array.
                slot = slots[pc]
                if slot is None or slot[0] != slots[-1]:
                    prim = prims[ins[1]]
                    vals = [regs[r] for r in ins[2]]
                    if prim.record.groups:
                        vals = _regroup(vals, prim.record.groups)
                    key = tuple(map(id, vals))
                    if slot is None or slot[2] != key:
                        prim.check_inputs([regs[r] for r in ins[2]])
                        bound = prim.bind_dynamic(vals, regs[ins[3]])
                        if bound is None:
                            slots[-1] += 1
                            slots[pc] = None
                            regs[ins[3]] = prim.call(vals)
                            pc += 1
                            continue
                        if bound[0] is not regs[ins[3]]:
                            slots[-1] += 1
                        regs[ins[3]] = bound[0]
                        slot = (0, bound[1], key, vals)
                    slot = slots[pc] = (slots[-1], slot[1], key, slot[3])
                slot[1]()
                pc += 1
            elif op == INVOKE_PACKED and ins[4] == 3:
                # Planned, inputs fixed for the frame: the kernel bound once.
                run = slots[pc]
                if run is None:
                    prim = prims[ins[1]]
                    vals = [regs[r] for r in ins[2]]
                    prim.check_inputs(vals)
                    if prim.record.groups:
                        vals = _regroup(vals, prim.record.groups)
                    run = slots[pc] = prim.bind(vals, regs[ins[3]])
                    if run is None:
                        raise ExecutionError(f"{prim.describe()} cannot run into planned storage")
                run()
                pc += 1
            elif op == INVOKE_PACKED:
                prim = prims[ins[1]]
                groups = prim.record.groups
                vals = [regs[r] for r in ins[2]]
                if groups:
                    vals = _regroup(vals, groups)
                if ins[4] == 1:
                    slot = slots[pc]
                    key = tuple(map(id, vals))
                    if slot is None or slot[0] != key:
                        prim.check_inputs([regs[r] for r in ins[2]])
                        run = prim.bind(vals, regs[ins[3]])
                        if run is None:
                            raise ExecutionError(
                                f"{prim.describe()} cannot run into planned storage"
                            )
                        slot = slots[pc] = (key, run, vals)
                    slot[1]()
                elif ins[4] == 2:
                    # Dynamic shape, frame-owned output: bound again only when an input
                    # is another array (the arrays of one shape are reused run to run).
                    slot = slots[pc]
                    key = tuple(map(id, vals))
                    if slot is None or slot[0] != key:
                        prim.check_inputs([regs[r] for r in ins[2]])
                        bound = prim.bind_dynamic(vals, regs[ins[3]])
                        slots[-1] += 1 if bound is None or bound[0] is not regs[ins[3]] else 0
                        if bound is None:
                            regs[ins[3]] = prim.call(vals)
                            pc += 1
                            continue
                        regs[ins[3]] = bound[0]
                        slot = slots[pc] = (key, bound[1], vals)
                    slot[1]()
                elif ins[4] == 6:
                    # Dynamic shape, a new output each run: sized by the shape function.
                    prim.check_inputs([regs[r] for r in ins[2]])
                    bound = prim.bind_dynamic(vals, None)
                    if bound is None:
                        regs[ins[3]] = prim.call(vals)
                    else:
                        bound[1]()
                        regs[ins[3]] = bound[0]
                elif ins[4] == 5:
                    # A fresh output (allocated just before): the host kernel bound to it.
                    prim.check_inputs([regs[r] for r in ins[2]])
                    run = prim.bind(vals, regs[ins[3]])
                    if run is None:
                        regs[ins[3]] = prim.call(vals)
                    else:
                        run()
                else:
                    regs[ins[3]] = prim.call(vals)
                pc += 1
            elif op == ALLOC_STORAGE:
                regs[ins[4]] = np.empty(ins[1], np.uint8)
                pc += 1
            elif op == ALLOC_TENSOR:
                regs[ins[5]] = _tensor_in(regs[ins[1]], ins[2], ins[3], ins[4])
                pc += 1
            elif op == MOVE:
                regs[ins[2]] = regs[ins[1]]
                pc += 1
            elif op == LOAD_CONST:
                regs[ins[2]] = consts[ins[1]]
                pc += 1
            elif op in (INVOKE_FUNC, INVOKE_CLOSURE):
                if op == INVOKE_FUNC:
                    callee = ins[1]
                    call_args = [regs[r] for r in ins[2]]
                else:
                    clo = regs[ins[1]]
                    if type(clo) is not VMClosure:
                        raise ExecutionError(f"cannot call a {type(clo).__name__} value")
                    callee = clo.func_index
                    call_args = [*clo.captured, *(regs[r] for r in ins[2])]
                stack.append((fidx, frame, code, pc, ins[3]))
                if len(stack) > 10_000_000:
                    raise ExecutionError("the VM's frame stack overflowed (unbounded recursion?)")
                fidx = callee
                pool = pools[fidx]
                frame = pool.pop() if pool else self._new_frame(fidx)
                regs = frame.regs
                regs[: len(call_args)] = call_args
                code = functions[fidx].code
                slots = frame.slots
                pc = 0
            elif op == RET:
                result = regs[ins[1]]
                pools[fidx].append(frame)
                if not stack:
                    return result
                fidx, frame, code, pc, dst = stack.pop()
                regs = frame.regs
                slots = frame.slots
                regs[dst] = result
                pc += 1
            elif op == IF:
                pc = pc + 1 if _truth(regs[ins[1]]) == _truth(regs[ins[2]]) else ins[3]
            elif op == GOTO:
                pc = ins[1]
            elif op == ALLOC_ADT:
                regs[ins[3]] = ADT(ins[1], [regs[r] for r in ins[2]])
                pc += 1
            elif op == GET_FIELD:
                obj = regs[ins[1]]
                if type(obj) is not ADT:
                    raise ExecutionError(f"GetField of a {type(obj).__name__} value")
                regs[ins[3]] = obj[ins[2]]
                pc += 1
            elif op == GET_TAG:
                regs[ins[2]] = regs[ins[1]].tag
                pc += 1
            elif op == LOAD_CONSTI:
                regs[ins[2]] = ins[1]
                pc += 1
            elif op == ALLOC_CLOSURE:
                captured = [regs[r] for r in ins[2]]
                clo = VMClosure(ins[1], captured)
                if ins[4] >= 0:
                    captured[ins[4]] = clo
                regs[ins[3]] = clo
                pc += 1
            elif op == RESHAPE_TENSOR:
                # The same source array gives the same view object (kernels bound to it
                # stay bound).
                src = regs[ins[1]]
                shape = ins[2]
                if type(shape) is not list:  # a register: the shape computed at run time
                    regs[ins[3]] = _reshape(src, [int(d) for d in regs[shape].reshape(-1)])
                    pc += 1
                    continue
                slot = slots[pc]
                if slot is None or slot[0] is not src:
                    slot = slots[pc] = (src, _reshape(src, shape))
                regs[ins[3]] = slot[1]
                pc += 1
            elif op == FATAL:
                raise ExecutionError(ins[1])
            else:
                raise ExecutionError(f"unknown VM instruction {format_instruction(ins)}")


_DTYPES: dict[str, np.dtype[Any]] = {}


def _tensor_in(storage: np.ndarray, offset: int, shape: list[int], dtype: str) -> np.ndarray:
    """``alloc_tensor``: a tensor of ``shape`` and ``dtype`` at ``offset`` of ``storage``."""
    dt = _DTYPES.get(dtype)
    if dt is None:
        dt = _DTYPES[dtype] = np.dtype(dtype)
    n = math.prod(shape) * dt.itemsize
    if offset + n > storage.nbytes:
        raise ExecutionError(
            f"alloc_tensor: {tuple(shape)} {dtype} at offset {offset} does not fit in a "
            f"storage of {storage.nbytes} bytes"
        )
    return storage[offset : offset + n].view(dt).reshape(shape)


def _reshape(value: Any, shape: list[int]) -> np.ndarray:
    try:
        return value.reshape(shape)
    except (AttributeError, ValueError) as err:
        raise ExecutionError(
            f"reshape_tensor: cannot view {getattr(value, 'shape', type(value).__name__)} as "
            f"{tuple(shape)}: {err}"
        ) from None


def _truth(v: Any) -> Any:
    if type(v) is np.ndarray or isinstance(v, np.generic):
        return bool(v)
    return v


def _regroup(vals: list[Any], groups: list[int]) -> list[Any]:
    out: list[Any] = []
    i = 0
    for g in groups:
        if g == -1:
            out.append(vals[i])
            i += 1
        elif g == -2:
            v = vals[i]
            out.append(list(v.fields) if isinstance(v, ADT) else v)
            i += 1
        else:
            out.append(vals[i : i + g])
            i += g
    return out
