"""``convert-task-to-mncore{machine=...}``: task kernels become ``mncore.program``s.

Every buffer lives in DRAM, row-major, one value per word: f32, and integers and booleans
as exact f32 values (below 2**24); intermediates share DRAM by liveness. The package:

* ``emitter``: allocation (DRAM, the constant pool, LM/GRF slots, staging rings) and the
  instruction API; it only receives calls;
* ``lanes``: lane kernels (each output element a lane, in waves over all PEs): pointwise
  bodies, copies, reductions (over time, or through the tree), gather, scatter,
  embedding, index_put;
* ``scalar``: a ``task.body``'s graph ops as ALU instructions (and ``pow``, floors, exact
  integer quotients);
* ``intervals``: integer intervals, so integers stay exact or are refused;
* ``windows``: conv2d, max-pool and their backward ops; ``matmul``: matmul on the MAU
  (``matmul_columns``: its columns of C to DRAM and back; ``matmul_epilogue``: a cheap
  pointwise consumer of C run on its accumulators);
* ``views``: reshapes and contiguous slices placed on their source's words;
* ``residents``: waves of lanes kept in LM for later tasks that read the same words;
* ``packing``: small tasks of one pointwise body (an optimizer's updates) in shared waves;
* ``program``: one kernel's program, each task dispatched on the class of the op it
  computes.

Instructions are emitted in the order of their meaning, one per step; the pipeline runs
``mncore-schedule`` next to place them in time.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mncore_ir.dialects import task as t
from mncore_ir.dialects.mncore_machines import MACHINES
from mncore_ir.dialects.values import paused_gc
from mncore_ir.transforms.convert_task_to_mncore.common import MNCoreConversionError
from mncore_ir.transforms.convert_task_to_mncore.emitter import MAX_INSTRUCTIONS
from mncore_ir.transforms.convert_task_to_mncore.program import LOWERED, build_program

__all__ = ["LOWERED", "MAX_INSTRUCTIONS", "ConvertTaskToMNCorePass", "MNCoreConversionError"]


@dataclass(frozen=True)
class ConvertTaskToMNCorePass(ModulePass):
    """Lower every ``task.kernel`` to an ``mncore.program`` for ``machine``."""

    name = "convert-task-to-mncore"

    machine: str = "tiny"
    """A machine of ``dialects/mncore_machines.py``."""

    matmul_kernel: str = "auto"
    """``stationary`` (A in LM, ``mma``; K padded to a multiple of 4), ``swapped`` (the
    same kernel on ``C^T = B^T A^T``: B^T in LM), ``split`` and ``swapped-split`` (either
    with K shared out among the L1Bs of each L2B, whose parts the L2 ``reduce`` adds:
    few columns of long K use every L1B), ``streaming`` (any K, ``vmm``) or ``auto``:
    the stationary kernels, whichever is estimated faster, where they apply."""

    max_instructions: int = MAX_INSTRUCTIONS
    """The compile budget: a kernel whose program needs more instructions is refused
    (emitting, scheduling and verifying a program takes time in proportion)."""

    views: bool = True
    """Reshapes and contiguous slices of intermediates as views of their source's DRAM
    words, not copy tasks (``views``)."""

    resident: bool = True
    """A later task reading the words a lane kernel's wave loaded or stored, in the same
    lanes, reads them in the PEs' LM, not through DRAM (``residents``)."""

    packed: bool = True
    """Small tasks that compute one pointwise body on different tensors (an optimizer's
    updates) share waves, lowered as one lane kernel at the last one's place
    (``packing``)."""

    epilogues: bool = True
    """A matmul's cheap pointwise consumer (a bias add and ReLU, a ReLU's mask, an SGD
    update) computed on its accumulators, C never stored (``matmul_epilogue``)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.machine not in MACHINES:
            raise MNCoreConversionError(f"convert-task-to-mncore: unknown machine "
                                        f"{self.machine!r}; machines: {', '.join(MACHINES)}")
        if self.matmul_kernel not in ("auto", "stationary", "swapped", "split",
                                      "swapped-split", "streaming"):
            raise MNCoreConversionError(f"convert-task-to-mncore: matmul_kernel is auto, "
                                        "stationary, swapped, split, swapped-split or "
                                        f"streaming, not {self.matmul_kernel!r}")
        if self.max_instructions < 1:
            raise MNCoreConversionError("convert-task-to-mncore: max_instructions must be at "
                                        f"least 1, not {self.max_instructions}")
        for kernel in [o for o in op.body.block.ops if isinstance(o, t.KernelOp)]:
            with paused_gc():  # instructions by the hundred thousand, none garbage
                program = build_program(kernel, MACHINES[self.machine], self.matmul_kernel,
                                        self.max_instructions, self.views, self.resident,
                                        self.packed, self.epilogues)
            Rewriter.replace_op(kernel, program)
