"""The ``task.body``s convert-graph-to-task makes: pointwise bodies (an elementwise
op or a fused chain on 0-d tensors, applied at every point of a tile) and tile bodies
(one graph op on the exact types of a task's regions). Equal bodies are made once: the
tiles of an operator whose regions have the same shapes share a tile body.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.task_regions import RegionTypes


def scalar(typ: Attribute) -> TensorType:
    assert isinstance(typ, TensorType)
    return TensorType(typ.element_type, [])


def is_scalar_constant(value: SSAValue) -> bool:
    return isinstance(value.owner, g.ConstantOp) and g.shape_of(value) == ()


def scalar_body(name: str, ops: Sequence[Operation], inputs: Sequence[SSAValue],
                outputs: Sequence[SSAValue], summed: Sequence[SSAValue] = (),
                terms: int = 0) -> t.BodyOp:
    """The ops (elementwise, on tensors) rewritten on 0-d tensors: one block argument
    per input, scalar constants copied in, ``task.yield`` of the outputs. With
    ``terms``, the first ``terms`` block arguments are added up and the inputs in
    ``summed`` stand for that sum (partial products, then their epilogue)."""
    kept = [v for v in inputs if v not in summed]
    element = [scalar(summed[0].type)] * terms if summed else []
    block = Block(arg_types=[*element, *(scalar(v.type) for v in kept)])
    mapping: dict[SSAValue, SSAValue] = dict(zip(kept, block.args[terms:], strict=True))
    if terms:
        total: SSAValue = block.args[0]
        for arg in block.args[1:terms]:
            add = g.AddOp(total, arg)
            block.add_op(add)
            total = add.result
        mapping.update(dict.fromkeys(summed, total))

    def get(value: SSAValue) -> SSAValue:
        if value not in mapping:  # a 0-d constant
            owner = value.owner
            assert isinstance(owner, g.ConstantOp)
            const = owner.clone()
            block.add_op(const)
            mapping[value] = const.results[0]
        return mapping[value]

    for op in ops:
        if isinstance(op, g.ConstantOp):
            get(op.result)
            continue
        new = type(op).create(operands=[get(o) for o in op.operands],
                              result_types=[scalar(r.type) for r in op.results],
                              properties=dict(op.properties), attributes=dict(op.attributes),
                              location=op.location)
        block.add_op(new)
        mapping.update(zip(op.results, new.results, strict=True))
    block.add_op(t.YieldOp.build(operands=[[get(v) for v in outputs]]))
    return t.BodyOp(name, Region(block))


def tile_body(name: str, op: g.GraphOp, ins: RegionTypes, outs: RegionTypes) -> t.BodyOp:
    """``op`` (its class and properties) on tensors of the regions' types."""
    block = Block(arg_types=[TensorType(e, sizes) for e, sizes in ins])
    new = type(op).create(operands=list(block.args), properties=dict(op.properties),
                          result_types=[TensorType(e, sizes) for e, sizes in outs],
                          location=op.location)
    block.add_ops([new, t.YieldOp.build(operands=[list(new.results)])])
    return t.BodyOp(name, Region(block))


class Bodies:
    """The bodies of one kernel, each made once, in the order they are first needed."""

    def __init__(self) -> None:
        self.pointwise_ops: list[t.BodyOp] = []
        self.tile_ops: list[t.BodyOp] = []
        self.names: dict[object, str] = {}  # a body's key -> its symbol
        self.counts: dict[str, int] = {}  # bodies per label
        self.op: Operation | None = None  # the op of the last tile body asked for ...
        self.op_key: object = None  # ... and its class and properties

    @property
    def ops(self) -> list[t.BodyOp]:
        """Pointwise bodies first, then tile bodies, each in the order first needed."""
        return [*self.pointwise_ops, *self.tile_ops]

    def add(self, ops: list[t.BodyOp], key: object, label: str,
            make: Callable[[str], t.BodyOp]) -> str:
        if key not in self.names:
            count = self.counts.get(label, 0)
            self.counts[label] = count + 1
            self.names[key] = name = f"{label}{count}"
            ops.append(make(name))
        return self.names[key]

    def pointwise(self, ops: Sequence[Operation], inputs: Sequence[SSAValue],
                  outputs: Sequence[SSAValue], summed: Sequence[SSAValue] = (),
                  terms: int = 0) -> str:
        """The symbol of the pointwise body of ``ops`` (keyed by its text); ``summed``
        and ``terms`` as :func:`scalar_body` says."""
        op = scalar_body("body", ops, inputs, outputs, summed, terms)

        def named(name: str) -> t.BodyOp:
            op.sym_name = StringAttr(name)
            return op

        return self.add(self.pointwise_ops, str(op), "ew", named)

    def tile(self, op: g.GraphOp, ins: RegionTypes, outs: RegionTypes) -> str:
        """The symbol of the tile body of ``op`` on regions of ``ins`` and ``outs``."""
        if op is not self.op:  # the tiles of one op come together
            self.op, self.op_key = op, (type(op), tuple(op.properties.items()))
        return self.add(self.tile_ops, (self.op_key, ins, outs), op.name.removeprefix("graph."),
                        lambda name: tile_body(name, op, ins, outs))
