"""``graph-unroll-steps``: a step function becomes one function running ``steps`` steps,
each step's carried outputs feeding the next step's inputs.

A decode step maps (weights, caches, token, position) to (next token, logits, new
caches, new position); unrolled, the chosen token, caches and position flow from step
to step inside one function, so a megakernel compiled from it decodes ``steps`` tokens
in one launch with the argmax on the device: the host only reads the tokens at the end
(MPK's persistent decode loop, written statically). ``carry`` lists, for each input,
the output that replaces it at the next step, or -1 for an input every step reads as
it is (the weights). The unrolled function returns, step by step, the outputs that
``collect`` lists (by default those not carried: a decode step's chosen token is
carried and collected), then the carried outputs of the last step.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException


class UnrollError(DiagnosticException):
    """Options that do not fit the function."""


@dataclass(frozen=True)
class GraphUnrollStepsPass(ModulePass):
    """Run a step function several times in one function, outputs feeding inputs."""

    name = "graph-unroll-steps"

    steps: int = 2
    """How many steps the unrolled function runs."""

    carry: tuple[int, ...] = ()
    """Per input, the output that feeds it at the next step (-1: none)."""

    collect: tuple[int, ...] | None = None
    """The outputs returned at every step (default: the ones not carried)."""

    function: str = "main"
    """The step function (replaced by its unrolled form, under the same name)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.body.block.ops
                 if isinstance(f, FuncOp) and f.sym_name.data == self.function]
        if not funcs:
            raise UnrollError(f"graph-unroll-steps: no func.func @{self.function}")
        step = funcs[0]
        ins, outs = step.function_type.inputs.data, step.function_type.outputs.data
        if self.steps < 1:
            raise UnrollError("graph-unroll-steps: steps must be >= 1")
        if len(self.carry) != len(ins):
            raise UnrollError(f"graph-unroll-steps: carry has {len(self.carry)} entries; "
                              f"@{self.function} has {len(ins)} inputs")
        for i, o in enumerate(self.carry):
            if o != -1 and not (0 <= o < len(outs) and outs[o] == ins[i]):
                what = (f"output {o} is {outs[o]}" if 0 <= o < len(outs)
                        else f"there is no output {o}")
                raise UnrollError(f"graph-unroll-steps: input {i} ({ins[i]}) cannot be "
                                  f"carried from output {o}: {what}")
        carried = {o for o in self.carry if o != -1}
        kept = (list(self.collect) if self.collect is not None
                else [o for o in range(len(outs)) if o not in carried])
        if any(not 0 <= o < len(outs) for o in kept):
            raise UnrollError(f"graph-unroll-steps: collect names outputs {kept}; "
                              f"@{self.function} has {len(outs)}")
        block = Block(arg_types=ins)
        for new, old in zip(block.args, step.body.block.args, strict=True):
            new.name_hint = old.name_hint
        values: list[SSAValue] = list(block.args)
        results: list[SSAValue] = []
        for _ in range(self.steps):
            mapping: dict[SSAValue, SSAValue] = dict(zip(step.body.block.args, values,
                                                         strict=True))
            returned: list[SSAValue] = []
            for inner in step.body.block.ops:
                if isinstance(inner, ReturnOp):
                    returned = [mapping.get(v, v) for v in inner.operands]
                    break
                block.add_op(inner.clone(value_mapper=mapping))
            results += [returned[o] for o in kept]
            values = [returned[o] if o != -1 else values[i] for i, o in enumerate(self.carry)]
        results += [values[i] for i, o in enumerate(self.carry) if o != -1]
        block.add_op(ReturnOp(*results))
        unrolled = FuncOp.from_region(self.function, list(ins), [r.type for r in results],
                                      Region(block))
        op.body.block.insert_op_before(unrolled, step)
        step.detach()
        step.erase()
