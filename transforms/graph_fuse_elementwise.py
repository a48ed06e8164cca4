"""``graph-fuse-elementwise``: chains of elementwise ops become one ``graph.fused`` op.

One pass over each block in order. An elementwise op joins the open group of any
operand it consumes when it has the group's result shape (so a group is one iteration
space; broadcast operands stay inputs). A group closes as soon as an op outside it uses
one of its values, which guarantees that placing the fused op where the group's last
member stood keeps every use after its definition. Splat 0-d constants are copied into
the body instead of becoming inputs. A group none of whose values is used is dead
code and stays as it is (a fused op without results would have nothing to tile).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t


@dataclass(eq=False)
class _Group:
    members: list[Operation] = field(default_factory=list)
    shape: tuple[int, ...] = ()
    open: bool = True


def _fusible(op: Operation) -> bool:
    return op.has_trait(g.Elementwise) and len(op.results) == 1


def _scalar_constant(value: SSAValue) -> bool:
    return isinstance(value.owner, g.ConstantOp) and g.shape_of(value) == ()


def _find_groups(block: Block) -> list[_Group]:
    group_of: dict[Operation, _Group] = {}
    groups: list[_Group] = []
    for op in block.ops:
        producers = {group_of[o.owner] for o in op.operands
                     if isinstance(o.owner, Operation) and o.owner in group_of}
        if _fusible(op):
            shape = g.shape_of(op.results[0])
            joinable = [grp for grp in producers if grp.open and grp.shape == shape]
            if joinable:
                target = joinable[0]
                for other in joinable[1:]:  # merge: both open, so still legal
                    target.members.extend(other.members)
                    for m in other.members:
                        group_of[m] = target
                    other.members = []
                target.members.append(op)
                group_of[op] = target
                producers -= set(joinable)
            else:
                grp = _Group([op], shape)
                groups.append(grp)
                group_of[op] = grp
        for grp in producers:  # used from outside: no member may follow
            grp.open = False
    return [grp for grp in groups if len(grp.members) > 1]


def _outputs(members: list[Operation]) -> list[SSAValue]:
    """The members' values used outside the group: the fused op's results."""
    inside = set(members)
    return [r for op in members for r in op.results
            if any(use.operation not in inside for use in r.uses)]


def _fuse(group: _Group, position: dict[Operation, int]) -> None:
    members = sorted(group.members, key=position.__getitem__)
    inside = set(members)
    inputs: list[SSAValue] = []
    for op in members:
        for o in op.operands:
            if o.owner not in inside and not _scalar_constant(o) and o not in inputs:
                inputs.append(o)
    outputs = _outputs(members)

    body = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args, strict=True))
    for op in members:
        for o in op.operands:
            if o not in mapping:  # a scalar constant: copy it in
                assert isinstance(o.owner, g.ConstantOp)
                const = o.owner.clone()
                body.add_op(const)
                mapping[o] = const.results[0]
        clone = op.clone(value_mapper=mapping)
        body.add_op(clone)
        mapping.update(zip(op.results, clone.results, strict=True))
    body.add_op(g.YieldOp.build(operands=[[mapping[r] for r in outputs]]))
    fused = g.FusedOp.build(operands=[inputs], result_types=[[r.type for r in outputs]],
                            regions=[Region(body)])
    Rewriter.insert_op(fused, InsertPoint.after(members[-1]))
    for old, new in zip(outputs, fused.results, strict=True):
        new.name_hint = old.name_hint
        old.replace_uses_with_if(new, lambda use: use.operation not in inside)
    copied = {o.owner for op in members for o in op.operands
              if _scalar_constant(o) and isinstance(o.owner, Operation)}
    for op in reversed(members):
        Rewriter.erase_op(op)
    for const in copied:
        if isinstance(const, Operation) and not any(r.uses for r in const.results):
            Rewriter.erase_op(const)


@dataclass(frozen=True)
class GraphFuseElementwisePass(ModulePass):
    """Fuse chains of elementwise graph ops into ``graph.fused`` regions."""

    name = "graph-fuse-elementwise"

    min_ops: int = 2
    """Groups with fewer ops are left alone."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.min_ops < 1:
            raise DiagnosticException("graph-fuse-elementwise: min_ops must be >= 1")
        # not inside a fused op, nor a task's body: the task level takes a body of 0-d
        # elementwise ops or of one graph op, never a graph.fused
        blocks = [b for o in op.walk() if not isinstance(o, g.FusedOp | t.BodyOp)
                  for r in o.regions for b in r.blocks]
        for block in blocks:
            position = {o: i for i, o in enumerate(block.ops)}  # merged groups need sorting
            for group in _find_groups(block):
                # A chain none of whose values is used is dead code, not a fused op
                # without results (which no lowering could tile): dce's to remove.
                if len(group.members) >= self.min_ops and _outputs(group.members):
                    _fuse(group, position)
