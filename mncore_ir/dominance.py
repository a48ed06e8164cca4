"""An O(n) SSA dominance check (xDSL verifies types and traits, not dominance).

Every region in mncore-ir holds a single block (function bodies, ``graph.fused``
bodies), so dominance is lexical: an operand must be a block argument of its own or
an enclosing block, or the result of an op earlier in its own or an enclosing block.
Regions of ``IsolatedFromAbove`` ops see nothing from outside. The walk keeps one set
of visible values, adding a block's values as it goes and removing them when the
block ends, so the cost is linear in ops plus operands.
"""

from __future__ import annotations

from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.traits import IsolatedFromAbove

__all__ = ["DominanceError", "check_dominance"]


class DominanceError(ValueError):
    """An operand that is not visible (does not dominate its use) where it is used;
    ``op`` is the op that uses it, so a caller can point at its source position."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.op = op


def check_dominance(op: Operation) -> None:
    """Check that every use inside ``op``'s regions is dominated by its definition.

    ``op`` is usually a module or a function. When ``op`` is not ``IsolatedFromAbove``,
    values defined outside ``op`` are taken as visible in its regions (they cannot be
    checked from here) unless an isolated op lies in between.
    Raises :class:`DominanceError` naming the first offending op and operand.
    """
    isolated = op.has_trait(IsolatedFromAbove)
    visible: set[SSAValue] = set()
    for region in op.regions:
        for block in region.blocks:
            _check_block(block, visible, None if isolated else op)


def _check_block(block: Block, visible: set[SSAValue], open_root: Operation | None) -> None:
    """Check ``block`` with ``visible`` holding the values of enclosing scopes.

    ``open_root`` is the op the walk started from when values from outside it may be
    used here (no ``IsolatedFromAbove`` op in between), else ``None``.
    """
    added: list[SSAValue] = list(block.args)
    visible.update(added)
    try:
        for op in block.ops:
            for index, operand in enumerate(op.operands):
                if operand not in visible and not _from_outside(operand, open_root):
                    raise DominanceError(_message(op, index, operand), op)
            if op.regions:
                if op.has_trait(IsolatedFromAbove):
                    inner: set[SSAValue] = set()
                    inner_root = None
                else:
                    inner, inner_root = visible, open_root
                for region in op.regions:
                    for nested in region.blocks:
                        _check_block(nested, inner, inner_root)
            visible.update(op.results)
            added.extend(op.results)
    finally:
        visible.difference_update(added)


def _owner_op(value: SSAValue) -> Operation | None:
    """The op that defines ``value``: its result's op, or the op holding its block."""
    if isinstance(value, OpResult):
        return value.op
    if isinstance(value, BlockArgument):
        return value.block.parent_op()
    return None


def _from_outside(value: SSAValue, root: Operation | None) -> bool:
    """Whether ``value`` is defined outside ``root`` (never true when ``root`` is None)."""
    if root is None:
        return False
    owner = _owner_op(value)
    if isinstance(value, BlockArgument) and owner is root:
        return False
    return owner is None or not root.is_ancestor(owner)


def _describe_value(value: SSAValue) -> str:
    """``%name (result 0 of graph.add)`` or ``%name (argument 1 of a block in func.func)``."""
    name = f"%{value.name_hint}" if value.name_hint else "a value"
    if isinstance(value, OpResult):
        return f"{name} (result {value.index} of {value.op.name})"
    if isinstance(value, BlockArgument):
        parent = value.block.parent_op()
        where = f" in {parent.name}" if parent is not None else ""
        return f"{name} (argument {value.index} of a block{where})"
    return name


def _describe_op(op: Operation) -> str:
    """The op's name, with its first result's name when it has one."""
    if op.results and op.results[0].name_hint:
        return f"{op.name} (defining %{op.results[0].name_hint})"
    return op.name


def _message(op: Operation, index: int, value: SSAValue) -> str:
    """Why operand ``index`` of ``op`` (``value``) does not dominate its use.

    Only called on failure, so it may walk up the parents of ``op``.
    """
    use = f"operand {index} of {_describe_op(op)} is {_describe_value(value)}"
    if isinstance(value, OpResult) and value.op is op:
        return f"{use}: an op cannot use its own result"
    block = value.block if isinstance(value, BlockArgument) else _defining_block(value)
    if block is None:
        return f"{use}, which is not in any block (was its op detached or erased?)"
    # Find the ancestor of the use that lies in the defining block, if any, and the
    # first IsolatedFromAbove op crossed on the way up.
    current: Operation | None = op
    crossed: Operation | None = None
    while current is not None and current.parent_block() is not block:
        current = current.parent_op()
        if crossed is None and current is not None and current.has_trait(IsolatedFromAbove):
            crossed = current
    if current is None:
        holder = block.parent_op()
        where = holder.name if holder is not None else "a detached region"
        return (f"{use}, which is defined inside a region of {where} that does not "
                f"enclose this use")
    if crossed is not None:
        return f"{use}, which is defined outside the IsolatedFromAbove op {crossed.name}"
    if current is op:
        return f"{use}, which is defined later in the same block (use before definition)"
    return (f"{use}, which is defined later in an enclosing block, after the "
            f"{current.name} that contains this use")


def _defining_block(value: SSAValue) -> Block | None:
    return value.op.parent_block() if isinstance(value, OpResult) else None
