"""The DRAM of a simulated ``mncore`` program: the inputs and constants placed in it,
the outputs read back, and how far it reaches (the simulator holds it whole)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mncore_ir.dialects import mncore as m
from mncore_ir.dialects.diagnostics import InterpretationError
from mncore_ir.dialects.values import constant_value, numpy_dtype
from mncore_ir.targets.graph_interpreter import DEFAULT_MAX_BYTES


def load_inputs(program: m.ProgramOp, tensors: dict[str, list[m.TensorOp]], dram: np.ndarray,
                inputs: Sequence[Any]) -> None:
    """Place the inputs and the constants in ``dram`` (``[word, 1]``), refusing what a
    word cannot hold."""
    ins = tensors["input"]
    if len(inputs) != len(ins):
        raise InterpretationError(f"@{program.sym_name.data} takes {len(ins)} inputs, "
                                  f"got {len(inputs)}")
    for tensor, value in zip(ins, inputs, strict=True):
        given = np.asarray(value)
        if given.dtype.kind in "iu" and given.size and (
                int(given.max()) >= 1 << 24 or int(given.min()) <= -(1 << 24)):
            raise InterpretationError(f"input @{tensor.sym_name.data} holds integers of "
                                      "magnitude 2**24 or more, which a word holds only "
                                      "approximately")
        arr = given.astype(np.float32)
        shape = tuple(tensor.type.get_shape())
        if arr.shape != shape:
            raise InterpretationError(f"input @{tensor.sym_name.data} has shape {arr.shape}, "
                                      f"expected {shape}")
        at = tensor.at.address.data
        dram[at:at + arr.size, 0] = arr.reshape(-1)
    for tensor in tensors["constant"]:
        assert tensor.value is not None  # the verifier: constants have values
        values = constant_value(tensor.value).reshape(-1)
        at = tensor.at.address.data
        dram[at:at + values.size, 0] = values


def read_outputs(outputs: list[m.TensorOp], dram: np.ndarray) -> list[np.ndarray]:
    """The output tensors from ``dram`` (words hold integers and booleans as exact f32)."""
    results = []
    for tensor in outputs:
        shape = tuple(tensor.type.get_shape())
        at = tensor.at.address.data
        words = dram[at:at + math.prod(shape), 0].reshape(shape)
        dtype = numpy_dtype(tensor.type.element_type)
        results.append(words.copy() if dtype == np.float32 else
                       (words != 0) if dtype == np.bool_ else np.rint(words).astype(dtype))
    return results


def dram_extent(program: m.ProgramOp, max_bytes: int = DEFAULT_MAX_BYTES) -> int:
    """The DRAM words the simulator holds: up to the last word a tensor or a DMA
    touches; refused, naming what reaches farthest, past ``max_bytes`` of f32."""
    ends: list[tuple[int, str]] = [(1, "")]
    ends += [(t.at.address.data + math.prod(t.type.get_shape()), f"mncore.tensor @"
              f"{t.sym_name.data}") for t in program.body.block.ops if isinstance(t, m.TensorOp)]
    ends += [(op.dram.address.data + op.dram_extent(), f"the mncore.dma of step {op.at}")
             for op in program.units() if isinstance(op, m.DmaOp)]
    words, what = max(ends)
    if 4 * words > max_bytes:
        raise InterpretationError(
            f"@{program.sym_name.data}: {what} reaches dram[{words - 1}], so the simulator "
            f"would hold {4 * words:,} bytes of DRAM, more than the limit of {max_bytes:,}")
    return words
