"""The ``graph`` dialect: tensor operations as a PyTorch user thinks of them.

Every op states its result types in the IR, and its verifier recomputes them with the
op's ``infer`` rule: the importer, the passes and the verifier share one definition of
each op's shape and dtype semantics. Ops are created by typed constructors, operands
positional and properties by keyword, with inferred result types:
``SumOp(x, dims=(0,), keepdim=True)``. What an op computes is in ``graph_semantics``.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    BFloat16Type,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParamAttrConstraint,
    VarConstraint,
    base,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.pattern_rewriter import RewritePattern
from xdsl.traits import (
    ConstantLike,
    HasCanonicalizationPatternsTrait,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    OpTrait,
    Pure,
    RecursivelySpeculatable,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from mncore_ir.dialects.element_types import (  # ELEMENT_TYPES: re-exported, by torch name
    ELEMENT_TYPES as ELEMENT_TYPES,
)
from mncore_ir.dialects.element_types import (
    GRAPH_ELEMENT_TYPES,
    DenseLiteralFormat,
    SupportedElementTypes,
)

Shape = tuple[int, ...]
ui8 = IntegerType(8, Signedness.UNSIGNED)
i32 = IntegerType(32)

#: The element types every graph op's tensors are checked against; shapes are static.
GRAPH_TYPES = SupportedElementTypes("graph", GRAPH_ELEMENT_TYPES, static_shapes=True)


def tensor(shape: Sequence[int], element_type: Attribute = f32) -> TensorType:
    return TensorType(element_type, list(shape))


def shape_of(value: SSAValue | Attribute) -> Shape:
    typ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(typ, TensorType)
    return tuple(typ.get_shape())


def element_type_of(value: SSAValue | Attribute) -> Attribute:
    typ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(typ, TensorType)
    return typ.element_type


def is_float(element_type: Attribute) -> bool:
    return isinstance(element_type, Float32Type | Float64Type | BFloat16Type | Float16Type)


def broadcast_shapes(*shapes: Shape) -> Shape:
    """NumPy/PyTorch broadcasting; raises VerifyException when shapes are incompatible."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        sizes = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise VerifyException(f"shapes {', '.join(map(str, shapes))} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def normalize_dims(dims: Sequence[int], rank: int) -> tuple[int, ...]:
    """Dimensions in [0, rank), accepting negative ones; a 0-d tensor has dims 0 and -1
    as PyTorch allows."""
    size = max(rank, 1)
    out = []
    for d in dims:
        if not -size <= d < size:
            raise VerifyException(f"dimension {d} out of range for rank {rank}")
        out.append(d % size)
    return tuple(out)


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


Props = Mapping[str, Attribute]
#: What a constructor takes as an operand: a value, or an op with one result.
Operand = SSAValue | Operation


def int_prop(props: Props, name: str, default: int | None = None) -> int:
    """The integer property ``name`` (or ``default`` when it is absent)."""
    attr = props.get(name)
    if attr is None and default is not None:
        return default
    if not isinstance(attr, IntegerAttr):
        raise VerifyException(f"property {name} must be an integer")
    return int(attr.value.data)


def ints_prop(props: Props, name: str) -> tuple[int, ...]:
    """The integer array property ``name``."""
    attr = props.get(name)
    if not isinstance(attr, DenseArrayBase):
        raise VerifyException(f"property {name} must be an array of integers")
    return tuple(int(v) for v in attr.get_values())


def float_prop(props: Props, name: str) -> float:
    attr = props.get(name)
    if not isinstance(attr, FloatAttr):
        raise VerifyException(f"property {name} must be a float")
    return float(attr.value.data)


def str_prop(props: Props, name: str, default: str) -> str:
    attr = props.get(name)
    if attr is None:
        return default
    if not isinstance(attr, StringAttr):
        raise VerifyException(f"property {name} must be a string")
    return attr.data


def i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def f64_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), Float64Type())


def tensor_type(value: Operand) -> TensorType:
    """The tensor type of a value (an op: its only result)."""
    typ = SSAValue.get(value).type
    if not isinstance(typ, TensorType):
        raise VerifyException(f"expected a tensor, got {typ}")
    return typ


class Elementwise(OpTrait):
    """Marks ops applied element by element after broadcasting; fusion chains them."""


class GraphCanonicalization(HasCanonicalizationPatternsTrait):
    """Canonicalization patterns of graph ops; they live in ``graph_canonicalization``
    (imported when first asked for) and are looked up by op class."""

    def get_patterns(self, op: type[Operation]) -> tuple[RewritePattern, ...]:
        from mncore_ir.dialects.graph_canonicalization import PATTERNS

        return PATTERNS.get(op, ())

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from mncore_ir.dialects.graph_canonicalization import PATTERNS

        return tuple(p for ps in PATTERNS.values() for p in ps)


class GraphOp(IRDLOperation, abc.ABC):
    """A graph op whose result types follow from its operands and properties."""

    traits = traits_def(GRAPH_TYPES)  # IRDL merges the traits of every base class

    @classmethod
    @abc.abstractmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        """The result types for operands of ``types`` and properties ``props``."""

    def _init(self, operands: Sequence[Operand],
              props: Mapping[str, Attribute] | None = None, variadic: bool = False) -> None:
        """Initialise with inferred result types (the typed constructors' common part);
        ``variadic``: the operands are the op's one variadic group."""
        properties = dict(props or {})
        values = [SSAValue.get(o) for o in operands]
        result_types = type(self).infer([tensor_type(v) for v in values], properties)
        IRDLOperation.__init__(self, operands=[values] if variadic else values,
                               result_types=result_types, properties=properties)

    def verify_(self) -> None:
        try:
            expected = self.infer([tensor_type(o) for o in self.operands], self.properties)
        except VerifyException as e:
            if str(e).startswith(self.name):
                raise
            raise VerifyException(f"{self.name}: {e}") from None
        actual = [r.type for r in self.results]
        if expected != actual:
            shown = ", ".join(map(str, expected))
            raise VerifyException(
                f"{self.name}: result type {', '.join(map(str, actual))} does not match "
                f"the inferred type {shown}"
            )


# --------------------------------------------------------------------------- elementwise


class UnaryOp(GraphOp, abc.ABC):
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure(), Elementwise(), GraphCanonicalization())
    assembly_format = "$input attr-dict `:` type($input)"

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        return [types[0]]

    def __init__(self, input: Operand) -> None:
        self._init([input])


class FloatUnaryOp(UnaryOp, abc.ABC):
    def verify_(self) -> None:
        if not is_float(element_type_of(self.input)):
            raise VerifyException(f"{self.name} expects a floating-point tensor")
        super().verify_()


@irdl_op_definition
class NegOp(UnaryOp):
    """``-x``; booleans have none (torch refuses ``-`` on a bool tensor)."""

    name = "graph.neg"

    def verify_(self) -> None:
        if element_type_of(self.input) == i1:
            raise VerifyException("graph.neg: negation of a boolean tensor is not "
                                  "supported; use graph.not")
        super().verify_()


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "graph.abs"


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "graph.relu"


@irdl_op_definition
class ExpOp(FloatUnaryOp):
    name = "graph.exp"


@irdl_op_definition
class LogOp(FloatUnaryOp):
    name = "graph.log"


@irdl_op_definition
class Log1pOp(FloatUnaryOp):
    name = "graph.log1p"


@irdl_op_definition
class FloorOp(FloatUnaryOp):
    """The largest integer not above ``x`` (ceil, trunc, round and frac are made of
    it)."""

    name = "graph.floor"


@irdl_op_definition
class SqrtOp(FloatUnaryOp):
    name = "graph.sqrt"


@irdl_op_definition
class RsqrtOp(FloatUnaryOp):
    name = "graph.rsqrt"


@irdl_op_definition
class ReciprocalOp(FloatUnaryOp):
    name = "graph.reciprocal"


@irdl_op_definition
class TanhOp(FloatUnaryOp):
    name = "graph.tanh"


@irdl_op_definition
class SigmoidOp(FloatUnaryOp):
    name = "graph.sigmoid"


@irdl_op_definition
class ErfOp(FloatUnaryOp):
    name = "graph.erf"


@irdl_op_definition
class SinOp(FloatUnaryOp):
    name = "graph.sin"


@irdl_op_definition
class CosOp(FloatUnaryOp):
    name = "graph.cos"


@irdl_op_definition
class TanOp(FloatUnaryOp):
    name = "graph.tan"


@irdl_op_definition
class AsinOp(FloatUnaryOp):
    name = "graph.asin"


@irdl_op_definition
class AcosOp(FloatUnaryOp):
    name = "graph.acos"


@irdl_op_definition
class AtanOp(FloatUnaryOp):
    name = "graph.atan"


@irdl_op_definition
class SinhOp(FloatUnaryOp):
    name = "graph.sinh"


@irdl_op_definition
class CoshOp(FloatUnaryOp):
    name = "graph.cosh"


@irdl_op_definition
class AsinhOp(FloatUnaryOp):
    name = "graph.asinh"


@irdl_op_definition
class AcoshOp(FloatUnaryOp):
    name = "graph.acosh"


@irdl_op_definition
class AtanhOp(FloatUnaryOp):
    name = "graph.atanh"


@irdl_op_definition
class Expm1Op(FloatUnaryOp):
    """``exp(x) - 1`` without the cancellation near 0."""

    name = "graph.expm1"


@irdl_op_definition
class ErfcOp(FloatUnaryOp):
    """``1 - erf(x)``, with its relative precision where erf(x) is near 1."""

    name = "graph.erfc"


@irdl_op_definition
class ErfcxOp(FloatUnaryOp):
    """``exp(x^2) erfc(x)``, finite where erfc underflows."""

    name = "graph.erfcx"


@irdl_op_definition
class ErfinvOp(FloatUnaryOp):
    name = "graph.erfinv"


@irdl_op_definition
class LgammaOp(FloatUnaryOp):
    """``log |Γ(x)|``."""

    name = "graph.lgamma"


@irdl_op_definition
class DigammaOp(FloatUnaryOp):
    """``Γ'(x) / Γ(x)``."""

    name = "graph.digamma"


@irdl_op_definition
class NotOp(UnaryOp):
    name = "graph.not"

    def verify_(self) -> None:
        if element_type_of(self.input) != i1:
            raise VerifyException("graph.not expects a tensor of i1")
        super().verify_()


@irdl_op_definition
class ConvertOp(GraphOp):
    """Changes the element type (``tensor.to(dtype)``), keeping the shape."""

    name = "graph.convert"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), GraphCanonicalization(), Elementwise())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    def __init__(self, input: Operand, element_type: Attribute) -> None:
        super().__init__(operands=[input],
                         result_types=[tensor(shape_of(SSAValue.get(input)), element_type)])

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        raise NotImplementedError("graph.convert needs its result type")

    def verify_(self) -> None:
        if shape_of(self.input) != shape_of(self.result):
            raise VerifyException("graph.convert must keep the shape")


class BinaryOp(GraphOp, abc.ABC):
    """Broadcasting binary op; both operands have the same element type."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise(), GraphCanonicalization())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(self, lhs: Operand, rhs: Operand) -> None:
        self._init([lhs, rhs])

    @classmethod
    def result_element_type(cls, operand: Attribute) -> Attribute:
        return operand

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        a, b = types
        if a.element_type != b.element_type:
            raise VerifyException(
                f"{cls.name} operands have different element types "
                f"{a.element_type} and {b.element_type}"
            )
        shape = broadcast_shapes(shape_of(a), shape_of(b))
        return [tensor(shape, cls.result_element_type(a.element_type))]


@irdl_op_definition
class AddOp(BinaryOp):
    name = "graph.add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "graph.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    name = "graph.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """True division of floats."""

    name = "graph.div"

    def verify_(self) -> None:
        if not is_float(element_type_of(self.lhs)):
            raise VerifyException("graph.div expects floating-point operands")
        super().verify_()


@irdl_op_definition
class PowOp(BinaryOp):
    name = "graph.pow"


@irdl_op_definition
class Atan2Op(BinaryOp):
    """The angle of the point ``(rhs, lhs)``: ``atan2(y, x)`` with ``y`` first, as torch."""

    name = "graph.atan2"

    def verify_(self) -> None:
        if not is_float(element_type_of(self.lhs)):
            raise VerifyException("graph.atan2 expects floating-point operands")
        super().verify_()


@irdl_op_definition
class FmodOp(BinaryOp):
    """The remainder of the quotient rounded toward zero (C's ``fmod``, torch.fmod): it
    has the dividend's sign. Exact for floats, as the quotient is never rounded."""

    name = "graph.fmod"


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "graph.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "graph.minimum"


@irdl_op_definition
class AndOp(BinaryOp):
    name = "graph.and"


@irdl_op_definition
class OrOp(BinaryOp):
    name = "graph.or"


class CompareOp(BinaryOp, abc.ABC):
    @classmethod
    def result_element_type(cls, operand: Attribute) -> Attribute:
        return i1


@irdl_op_definition
class EqOp(CompareOp):
    name = "graph.eq"


@irdl_op_definition
class NeOp(CompareOp):
    name = "graph.ne"


@irdl_op_definition
class LtOp(CompareOp):
    name = "graph.lt"


@irdl_op_definition
class LeOp(CompareOp):
    name = "graph.le"


@irdl_op_definition
class GtOp(CompareOp):
    name = "graph.gt"


@irdl_op_definition
class GeOp(CompareOp):
    name = "graph.ge"


@irdl_op_definition
class WhereOp(GraphOp):
    """``cond ? lhs : rhs`` with broadcasting."""

    name = "graph.where"
    cond = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Elementwise())
    assembly_format = (
        "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($lhs) `,` type($rhs)"
        " `->` type($result)"
    )

    def __init__(self, cond: Operand, lhs: Operand, rhs: Operand) -> None:
        self._init([cond, lhs, rhs])

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        c, a, b = types
        if c.element_type != i1:
            raise VerifyException("graph.where condition must be a tensor of i1")
        if a.element_type != b.element_type:
            raise VerifyException("graph.where branches have different element types")
        return [tensor(broadcast_shapes(*map(shape_of, types)), a.element_type)]


class GeluRule:
    """Shape rule of gelu and its backward: the type of the last operand, a float."""

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        if str_prop(props, "approximate", "none") not in ("none", "tanh"):
            raise VerifyException(f'{cls.name} approximate must be "none" or "tanh"')
        if not is_float(types[-1].element_type):
            raise VerifyException(f"{cls.name} expects a floating-point tensor")
        return [types[-1]]


@irdl_op_definition
class GeluOp(GeluRule, GraphOp):
    """GELU; ``approximate`` is ``"none"`` (erf) or ``"tanh"``."""

    name = "graph.gelu"
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    approximate = prop_def(StringAttr, default_value=StringAttr("none"))
    traits = traits_def(Pure(), Elementwise())
    assembly_format = "$input (`approximate` $approximate^)? attr-dict `:` type($input)"

    def __init__(self, input: Operand, *, approximate: str = "none") -> None:
        self._init([input], {"approximate": StringAttr(approximate)})


@irdl_op_definition
class GeluBackwardOp(GeluRule, GraphOp):
    name = "graph.gelu_backward"
    T: ClassVar = VarConstraint("T", base(TensorType))
    grad = operand_def(T)
    input = operand_def(T)
    result = result_def(T)
    approximate = prop_def(StringAttr, default_value=StringAttr("none"))
    traits = traits_def(Pure(), Elementwise())
    assembly_format = (
        "$grad `,` $input (`approximate` $approximate^)? attr-dict `:` type($input)"
    )

    def __init__(self, grad: Operand, input: Operand, *, approximate: str = "none") -> None:
        self._init([grad, input], {"approximate": StringAttr(approximate)})


# --------------------------------------------------------------------------- constants


@irdl_op_definition
class ConstantOp(DenseLiteralFormat, IRDLOperation):
    """A tensor of known values; splats print as one value, and values xDSL would print
    inexactly (signalling NaNs, a splat of ``0.0`` and ``-0.0``) as their bytes."""

    name = "graph.constant"
    T: ClassVar = VarConstraint("T", base(TensorType))
    value = prop_def(ParamAttrConstraint(DenseIntOrFPElementsAttr, (T, AnyAttr())))
    result = result_def(T)
    traits = traits_def(Pure(), ConstantLike(), GRAPH_TYPES)

    def __init__(self, value: DenseIntOrFPElementsAttr) -> None:
        super().__init__(properties={"value": value}, result_types=[value.type])



# --------------------------------------------------------------------------- reductions


class ReduceOp(GraphOp, abc.ABC):
    input = operand_def(TensorType)
    result = result_def(TensorType)
    dims = prop_def(DenseArrayBase[I64])
    keepdim = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure(), GraphCanonicalization())
    assembly_format = (
        "$input `dims` `=` qualified($dims) (`keepdim` `=` $keepdim^)? attr-dict"
        " `:` type($input) `->` type($result)"
    )

    def __init__(self, input: Operand, *, dims: Sequence[int], keepdim: bool = False) -> None:
        self._init([input], {"dims": i64_array(dims), "keepdim": BoolAttr.from_bool(keepdim)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        shape = shape_of(types[0])
        dims = normalize_dims(ints_prop(props, "dims"), len(shape))
        if len(set(dims)) != len(dims):
            raise VerifyException(f"{cls.name} has repeated dimensions")
        empty = [d for d in dims if shape and shape[d] == 0]
        if empty:
            cls.check_empty_reduction(empty[0], types[0].element_type)
        keep = bool(int_prop(props, "keepdim", 0))
        out = [1 if i in dims else s for i, s in enumerate(shape)] if keep else [
            s for i, s in enumerate(shape) if i not in dims
        ]
        return [tensor(out, types[0].element_type)]

    @classmethod
    def check_empty_reduction(cls, dim: int, element_type: Attribute) -> None:
        """Refuse a reduction over the zero-size dimension ``dim`` that has no value
        (a sum over no elements is 0)."""


@irdl_op_definition
class SumOp(ReduceOp):
    name = "graph.sum"


@irdl_op_definition
class MeanOp(ReduceOp):
    """The mean; of no elements it is nan (a float), as in torch."""

    name = "graph.mean"

    @classmethod
    def check_empty_reduction(cls, dim: int, element_type: Attribute) -> None:
        if not is_float(element_type):
            raise VerifyException(f"graph.mean: dimension {dim} has size 0, and the mean of "
                                  f"no elements (nan) has no {element_type} value")


@irdl_op_definition
class AmaxOp(ReduceOp):
    """The maximum; over a zero-size dimension it has no value (torch raises)."""

    name = "graph.amax"

    @classmethod
    def check_empty_reduction(cls, dim: int, element_type: Attribute) -> None:
        raise VerifyException(f"graph.amax: dimension {dim} has size 0, and the maximum of "
                              "no elements is undefined")


# --------------------------------------------------------------------------- linear algebra


@irdl_op_definition
class MatmulOp(GraphOp):
    """``[..., m, k] @ [..., k, n]`` with equal batch dimensions."""

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), GraphCanonicalization())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(self, lhs: Operand, rhs: Operand) -> None:
        self._init([lhs, rhs])

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        a, b = map(shape_of, types)
        if len(a) < 2 or len(a) != len(b) or a[:-2] != b[:-2] or a[-1] != b[-2]:
            raise VerifyException(f"graph.matmul cannot multiply shapes {a} and {b}")
        if types[0].element_type != types[1].element_type:
            raise VerifyException("graph.matmul operands have different element types")
        return [tensor((*a[:-1], b[-1]), types[0].element_type)]


@irdl_op_definition
class MatmulPermutedOp(GraphOp):
    """``lhs @ permute(rhs, rhs_perm)``: a matmul reading its right operand through a
    permutation (``[1, 0]``: the weight of ``F.linear``; ``[1, 2, 3, 0]``: the keys of
    a KV cache laid out position-first). convert-graph-to-task makes it of a matmul
    whose right operand is a permute, so that the operand is read where it lies instead
    of being copied first (a decode step would copy every weight and cache)."""

    name = "graph.matmul_permuted"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    rhs_perm = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    assembly_format = ("$lhs `,` $rhs `rhs_perm` `=` qualified($rhs_perm) attr-dict `:` "
                       "type($lhs) `,` type($rhs) `->` type($result)")

    def __init__(self, lhs: Operand, rhs: Operand, *, rhs_perm: Sequence[int]) -> None:
        self._init([lhs, rhs], {"rhs_perm": i64_array(rhs_perm)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        (permuted,) = PermuteOp.infer([types[1]], {"perm": props.get("rhs_perm")})
        try:
            return MatmulOp.infer([types[0], permuted], props)
        except VerifyException as e:
            raise VerifyException(str(e).replace("graph.matmul", cls.name, 1)) from None


#: The matmul ops: they tile, lay out and cost alike (the right operand's last two
#: operand is read through a permutation in the second).
MATMULS: tuple[type[GraphOp], ...] = (MatmulOp, MatmulPermutedOp)


def is_transpose(perm: Sequence[int]) -> bool:
    """Whether ``perm`` swaps the last two dimensions and keeps the others (F.linear's
    weight, a batched ``x @ y.mT``)."""
    return list(perm) == [*range(len(perm) - 2), len(perm) - 1, len(perm) - 2]


# --------------------------------------------------------------------------- shapes


@irdl_op_definition
class ReshapeOp(GraphOp):
    name = "graph.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), GraphCanonicalization())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: Operand, shape: Sequence[int]) -> None:
        super().__init__(operands=[input],
                         result_types=[tensor(shape, element_type_of(SSAValue.get(input)))])

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        raise NotImplementedError("graph.reshape needs its result type")

    def verify_(self) -> None:
        a, b = shape_of(self.input), shape_of(self.result)
        if math.prod(a) != math.prod(b):
            raise VerifyException(f"graph.reshape cannot reshape {a} to {b}")
        if element_type_of(self.input) != element_type_of(self.result):
            raise VerifyException("graph.reshape must keep the element type")


@irdl_op_definition
class ExpandOp(GraphOp):
    """Broadcasts to the result shape (``Tensor.expand``)."""

    name = "graph.expand"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), GraphCanonicalization())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: Operand, shape: Sequence[int]) -> None:
        super().__init__(operands=[input],
                         result_types=[tensor(shape, element_type_of(SSAValue.get(input)))])

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        raise NotImplementedError("graph.expand needs its result type")

    def verify_(self) -> None:
        a, b = shape_of(self.input), shape_of(self.result)
        try:
            broadcast = broadcast_shapes(a, b)
        except VerifyException as e:
            raise VerifyException(f"graph.expand cannot broadcast {a} to {b}: {e}") from None
        if len(b) < len(a) or broadcast != b:
            raise VerifyException(f"graph.expand cannot broadcast {a} to {b}")
        if element_type_of(self.input) != element_type_of(self.result):
            raise VerifyException("graph.expand must keep the element type")


@irdl_op_definition
class PermuteOp(GraphOp):
    name = "graph.permute"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    perm = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure(), GraphCanonicalization())
    assembly_format = (
        "$input `perm` `=` qualified($perm) attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: Operand, *, perm: Sequence[int]) -> None:
        self._init([input], {"perm": i64_array(perm)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        shape = shape_of(types[0])
        perm = ints_prop(props, "perm")
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(f"graph.permute: {list(perm)} is not a permutation "
                                  f"of {len(shape)} dimensions")
        return [tensor([shape[p] for p in perm], types[0].element_type)]


@irdl_op_definition
class SliceOp(GraphOp):
    """``input[start:end:step]`` along ``dim``."""

    name = "graph.slice"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    start = prop_def(IntegerAttr[I64])
    end = prop_def(IntegerAttr[I64])
    step = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, i64))
    traits = traits_def(Pure())
    assembly_format = (
        "$input `dim` $dim ` ` `[` $start `:` $end (`:` $step^)? `]` attr-dict `:` type($input)"
        " `->` type($result)"
    )

    def __init__(self, input: Operand, *, dim: int, start: int, end: int, step: int = 1) -> None:
        self._init([input], {"dim": i64_attr(dim), "start": i64_attr(start),
                             "end": i64_attr(end), "step": i64_attr(step)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        shape = list(shape_of(types[0]))
        (dim,) = normalize_dims([int_prop(props, "dim")], len(shape))
        start, end = int_prop(props, "start"), int_prop(props, "end")
        step = int_prop(props, "step", 1)
        if not (0 <= start <= end <= shape[dim] and step >= 1):
            raise VerifyException(
                f"graph.slice [{start}:{end}:{step}] out of bounds for size {shape[dim]}"
            )
        shape[dim] = -(-(end - start) // step)
        return [tensor(shape, types[0].element_type)]


@irdl_op_definition
class ConcatOp(GraphOp):
    name = "graph.concat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    assembly_format = "$inputs `dim` $dim attr-dict `:` type($inputs) `->` type($result)"

    def __init__(self, *inputs: Operand, dim: int) -> None:
        self._init(inputs, {"dim": i64_attr(dim)}, variadic=True)

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        if not types:
            raise VerifyException("graph.concat needs at least one input")
        shapes = [list(shape_of(t)) for t in types]
        (dim,) = normalize_dims([int_prop(props, "dim")], len(shapes[0]))
        for s, t in zip(shapes, types, strict=True):
            if len(s) != len(shapes[0]) or t.element_type != types[0].element_type or any(
                a != b for i, (a, b) in enumerate(zip(s, shapes[0], strict=True)) if i != dim
            ):
                raise VerifyException("graph.concat inputs differ outside the concat dimension")
        out = shapes[0]
        out[dim] = sum(s[dim] for s in shapes)
        return [tensor(out, types[0].element_type)]


# --------------------------------------------------------------------------- indexing


@irdl_op_definition
class EmbeddingOp(GraphOp):
    """Rows of ``weight`` picked by ``indices``."""

    name = "graph.embedding"
    weight = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$weight `[` $indices `]` attr-dict `:` type($weight) `,` type($indices)"
        " `->` type($result)"
    )

    def __init__(self, weight: Operand, indices: Operand) -> None:
        self._init([weight, indices])

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        w, idx = types
        if len(shape_of(w)) != 2 or idx.element_type != i64:
            raise VerifyException("graph.embedding expects a 2-D weight and i64 indices")
        _check_indexable(cls.name, shape_of(w), 0, shape_of(idx))
        return [tensor((*shape_of(idx), shape_of(w)[1]), w.element_type)]


@irdl_op_definition
class IndexPutOp(GraphOp):
    """``input[indices] = values`` (or ``+=`` with ``accumulate``) along dimension 0."""

    name = "graph.index_put"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    values = operand_def(TensorType)
    result = result_def(TensorType)
    accumulate = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    assembly_format = (
        "$input `[` $indices `]` `,` $values (`accumulate` `=` $accumulate^)? attr-dict `:`"
        " type($input) `,` type($indices) `,` type($values) `->` type($result)"
    )

    def __init__(self, input: Operand, indices: Operand, values: Operand, *,
                 accumulate: bool = False) -> None:
        self._init([input, indices, values], {"accumulate": BoolAttr.from_bool(accumulate)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        x, idx, val = types
        expected = (*shape_of(idx), *shape_of(x)[1:])
        if idx.element_type != i64 or val.element_type != x.element_type:
            raise VerifyException("graph.index_put expects i64 indices and matching values")
        if not shape_of(x):
            raise VerifyException("graph.index_put needs an input of rank 1 or more")
        _check_indexable(cls.name, shape_of(x), 0, shape_of(idx))
        if broadcast_shapes(shape_of(val), expected) != expected:
            raise VerifyException(f"graph.index_put values must broadcast to {expected}")
        return [x]


def _check_indexable(name: str, shape: Shape, dim: int, index: Shape) -> None:
    """Refuse indices of shape ``index`` into the empty dimension ``dim`` of an input of
    ``shape``: no index value is valid there (torch raises when it runs)."""
    if shape and not shape[dim] and math.prod(index):
        raise VerifyException(f"{name}: dimension {dim} of the input {shape} is empty, so "
                              f"no index is valid, and the index has shape {index}")


def _check_index_extent(name: str, shape: Shape, index: Shape, dim: int) -> None:
    """torch.gather and torch.scatter: a non-empty index may be no larger than the
    input outside ``dim`` (an empty one is not checked)."""
    (dim,) = normalize_dims([dim], len(shape))
    _check_indexable(name, shape, dim, index)
    if math.prod(index) and any(n > s for d, (n, s) in enumerate(zip(index, shape, strict=True))
                                if d != dim):
        raise VerifyException(f"{name}: index shape {index} is larger than the input shape "
                              f"{shape} outside dimension {dim}")


@irdl_op_definition
class GatherOp(GraphOp):
    """``torch.gather``: ``out[i][j] = input[i][index[i][j]]`` for ``dim = 1``."""

    name = "graph.gather"
    input = operand_def(TensorType)
    index = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    assembly_format = (
        "$input `[` $index `]` `dim` $dim attr-dict `:` type($input) `,` type($index)"
        " `->` type($result)"
    )

    def __init__(self, input: Operand, index: Operand, *, dim: int) -> None:
        self._init([input, index], {"dim": i64_attr(dim)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        x, idx = types
        if idx.element_type != i64 or len(shape_of(x)) != len(shape_of(idx)):
            raise VerifyException("graph.gather expects i64 indices of the input's rank")
        _check_index_extent(cls.name, shape_of(x), shape_of(idx), int_prop(props, "dim"))
        return [tensor(shape_of(idx), x.element_type)]


@irdl_op_definition
class ScatterOp(GraphOp):
    """``torch.scatter`` of a scalar ``value`` (a 0-d tensor) at ``index`` along ``dim``."""

    name = "graph.scatter"
    input = operand_def(TensorType)
    index = operand_def(TensorType)
    value = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    assembly_format = (
        "$input `[` $index `]` `dim` $dim `,` $value attr-dict `:` type($input) `,`"
        " type($index) `,` type($value) `->` type($result)"
    )

    def __init__(self, input: Operand, index: Operand, value: Operand, *, dim: int) -> None:
        self._init([input, index, value], {"dim": i64_attr(dim)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        x, idx, val = types
        if idx.element_type != i64 or len(shape_of(x)) != len(shape_of(idx)):
            raise VerifyException("graph.scatter expects i64 indices of the input's rank")
        if shape_of(val) != () or val.element_type != x.element_type:
            raise VerifyException("graph.scatter value must be a 0-d tensor of the input's type")
        _check_index_extent(cls.name, shape_of(x), shape_of(idx), int_prop(props, "dim"))
        return [x]


# --------------------------------------------------------------------------- composites


class RowRule:
    """Shape rule of the row ops and their backward: the first operand's type, a float."""

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        normalize_dims([int_prop(props, "dim")], len(shape_of(types[0])))
        if not is_float(types[0].element_type):
            raise VerifyException(f"{cls.name} expects a floating-point tensor")
        return [types[0]]


class RowOp(RowRule, GraphOp, abc.ABC):
    """A composite op over one dimension: softmax and log-softmax."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    dim = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    assembly_format = "$input `dim` $dim attr-dict `:` type($input)"

    def __init__(self, input: Operand, *, dim: int) -> None:
        self._init([input], {"dim": i64_attr(dim)})


@irdl_op_definition
class SoftmaxOp(RowOp):
    name = "graph.softmax"


@irdl_op_definition
class LogSoftmaxOp(RowOp):
    name = "graph.log_softmax"


class RowBackwardOp(RowRule, GraphOp, abc.ABC):
    """The input gradient of a row op, from the output gradient and the op's output."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    grad = operand_def(T)
    output = operand_def(T)
    result = result_def(T)
    dim = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    assembly_format = "$grad `,` $output `dim` $dim attr-dict `:` type($output)"

    def __init__(self, grad: Operand, output: Operand, *, dim: int) -> None:
        self._init([grad, output], {"dim": i64_attr(dim)})


@irdl_op_definition
class SoftmaxBackwardOp(RowBackwardOp):
    name = "graph.softmax_backward"


@irdl_op_definition
class LogSoftmaxBackwardOp(RowBackwardOp):
    name = "graph.log_softmax_backward"


def _norm_stats_shape(shape: Shape, normalized: int) -> Shape:
    return (*shape[: len(shape) - normalized], *([1] * normalized))


@irdl_op_definition
class LayerNormOp(GraphOp):
    """Layer norm over the last ``normalized_dims`` dimensions; also yields mean and rstd."""

    name = "graph.layer_norm"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    output = result_def(TensorType)
    mean = result_def(TensorType)
    rstd = result_def(TensorType)
    normalized_dims = prop_def(IntegerAttr[I64])
    eps = prop_def(FloatAttr[Float64Type])
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $weight `,` $bias `dims` $normalized_dims `eps` $eps attr-dict `:`"
        " type($input) `,` type($weight) `,` type($bias) `->` type($output) `,` type($mean)"
        " `,` type($rstd)"
    )

    def __init__(self, input: Operand, weight: Operand, bias: Operand, *,
                 normalized_dims: int, eps: float) -> None:
        self._init([input, weight, bias], {"normalized_dims": i64_attr(normalized_dims),
                                           "eps": f64_attr(eps)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        x, w, b = types
        k = int_prop(props, "normalized_dims")
        shape = shape_of(x)
        if not 1 <= k <= len(shape):
            raise VerifyException("graph.layer_norm normalizes 1 to rank dimensions")
        if shape_of(w) != shape[-k:] or shape_of(b) != shape[-k:]:
            raise VerifyException(f"graph.layer_norm weight and bias must have shape "
                                  f"{shape[-k:]}")
        stats = tensor(_norm_stats_shape(shape, k), x.element_type)
        return [x, stats, stats]


@irdl_op_definition
class LayerNormBackwardOp(GraphOp):
    """Gradients of input, weight and bias of a layer norm."""

    name = "graph.layer_norm_backward"
    T: ClassVar = VarConstraint("T", base(TensorType))
    S: ClassVar = VarConstraint("S", base(TensorType))
    grad = operand_def(T)
    input = operand_def(T)
    mean = operand_def(S)
    rstd = operand_def(S)
    weight = operand_def(TensorType)
    grad_input = result_def(TensorType)
    grad_weight = result_def(TensorType)
    grad_bias = result_def(TensorType)
    normalized_dims = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    assembly_format = (
        "$grad `,` $input `,` $mean `,` $rstd `,` $weight `dims` $normalized_dims attr-dict"
        " `:` type($input) `,` type($mean) `,` type($weight)"
        " `->` type($grad_input) `,` type($grad_weight) `,` type($grad_bias)"
    )

    def __init__(self, grad: Operand, input: Operand, mean: Operand, rstd: Operand,
                 weight: Operand, *, normalized_dims: int) -> None:
        self._init([grad, input, mean, rstd, weight],
                   {"normalized_dims": i64_attr(normalized_dims)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        _grad, x, mean, _rstd, w = types
        (out, stats, _) = LayerNormOp.infer([x, w, w], props)
        if mean != stats:
            raise VerifyException(f"graph.layer_norm_backward statistics must have type {stats}")
        return [out, w, w]


def _window_props(stride: Sequence[int], padding: Sequence[int],
                  dilation: Sequence[int]) -> dict[str, Attribute]:
    return {"stride": i64_array(stride), "padding": i64_array(padding),
            "dilation": i64_array(dilation)}


class WindowOp(GraphOp, abc.ABC):
    """Shared properties of 2-D windowed ops."""

    stride = prop_def(DenseArrayBase[I64])
    padding = prop_def(DenseArrayBase[I64])
    dilation = prop_def(DenseArrayBase[I64])

    @classmethod
    def spatial_out(cls, size: Sequence[int], kernel: Sequence[int],
                    props: Props) -> list[int]:
        """Output height and width, after checking the window properties."""
        return _spatial_out(cls.name, size, kernel, props)


def _spatial_out(name: str, size: Sequence[int], kernel: Sequence[int],
                 props: Props) -> list[int]:
    stride, padding, dilation = (ints_prop(props, n) for n in ("stride", "padding", "dilation"))
    for what, v, low in (("kernel", kernel, 1), ("stride", stride, 1),
                         ("padding", padding, 0), ("dilation", dilation, 1)):
        if len(v) != 2 or min(v) < low:
            raise VerifyException(f"{name}: {what} must be two integers >= {low}")
    out = [(size[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1)
           // stride[i] + 1 for i in range(2)]
    if min(out) < 1:
        raise VerifyException(f"{name}: the window does not fit the input "
                              f"({size[0]}x{size[1]}, output {out[0]}x{out[1]})")
    return out


@irdl_op_definition
class Conv2dOp(WindowOp):
    """2-D convolution (NCHW input, OIHW weight) with bias."""

    name = "graph.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    groups = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, i64))
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $weight `,` $bias"
        " `stride` qualified($stride) `padding` qualified($padding)"
        " `dilation` qualified($dilation)"
        " (`groups` $groups^)? attr-dict `:` type($input) `,` type($weight) `,` type($bias)"
        " `->` type($result)"
    )

    def __init__(self, input: Operand, weight: Operand, bias: Operand, *, stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], groups: int = 1) -> None:
        self._init([input, weight, bias], {**_window_props(stride, padding, dilation),
                                           "groups": i64_attr(groups)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        x, w, b = map(shape_of, types)
        groups = int_prop(props, "groups", 1)
        if groups < 1 or len(x) != 4 or len(w) != 4 or x[1] != w[1] * groups or (
                w[0] % groups or b != (w[0],)):
            raise VerifyException(f"graph.conv2d: input {x}, weight {w} and bias {b} do not "
                                  f"fit (NCHW input, OIHW weight, {groups} groups)")
        if not x[1] or not w[0]:  # torch refuses no outputs, misshapes the result of no inputs
            raise VerifyException(f"graph.conv2d: input {x} and weight {w} must have at least "
                                  "one input and one output channel")
        hw = cls.spatial_out(x[2:], w[2:], props)
        return [tensor((x[0], w[0], *hw), types[0].element_type)]


@irdl_op_definition
class Conv2dBackwardOp(WindowOp):
    """Gradients of input, weight and bias of ``graph.conv2d``."""

    name = "graph.conv2d_backward"
    T: ClassVar = VarConstraint("T", base(TensorType))
    W: ClassVar = VarConstraint("W", base(TensorType))
    grad = operand_def(TensorType)
    input = operand_def(T)
    weight = operand_def(W)
    grad_input = result_def(T)
    grad_weight = result_def(W)
    grad_bias = result_def(TensorType)
    groups = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, i64))
    traits = traits_def(Pure())
    assembly_format = (
        "$grad `,` $input `,` $weight"
        " `stride` qualified($stride) `padding` qualified($padding)"
        " `dilation` qualified($dilation)"
        " (`groups` $groups^)? attr-dict `:` type($grad) `,` type($input) `,`"
        " type($weight) `->` type($grad_bias)"
    )

    def __init__(self, grad: Operand, input: Operand, weight: Operand, *, stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], groups: int = 1) -> None:
        self._init([grad, input, weight], {**_window_props(stride, padding, dilation),
                                           "groups": i64_attr(groups)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        g, x, w = types
        (fwd,) = Conv2dOp.infer([x, w, tensor((shape_of(w)[0],), w.element_type)], props)
        if fwd != g:
            raise VerifyException(f"graph.conv2d_backward: gradient must have type {fwd}")
        return [x, w, tensor((shape_of(w)[0],), w.element_type)]


def _check_pool_input(name: str, shape: Shape) -> None:
    """An NCHW input with channels and pixels; only the batch may be empty (as in torch)."""
    if len(shape) != 4:
        raise VerifyException(f"{name} expects an NCHW input")
    if 0 in shape[1:]:
        raise VerifyException(f"{name}: input {shape} has a zero-size channel or spatial "
                              "dimension (only the batch may be empty)")


@irdl_op_definition
class MaxPool2dOp(WindowOp):
    """2-D max pooling; also yields the flat ``h * W + w`` index of each maximum."""

    name = "graph.max_pool2d"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    indices = result_def(TensorType)
    kernel = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    assembly_format = (
        "$input `kernel` qualified($kernel)"
        " `stride` qualified($stride) `padding` qualified($padding)"
        " `dilation` qualified($dilation)"
        " attr-dict `:` type($input) `->` type($result) `,` type($indices)"
    )

    def __init__(self, input: Operand, *, kernel: Sequence[int], stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int]) -> None:
        self._init([input], {**_window_props(stride, padding, dilation),
                             "kernel": i64_array(kernel)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        x = shape_of(types[0])
        _check_pool_input(cls.name, x)
        hw = cls.spatial_out(x[2:], ints_prop(props, "kernel"), props)
        return [tensor((*x[:2], *hw), types[0].element_type), tensor((*x[:2], *hw), i64)]


@irdl_op_definition
class MaxPool2dBackwardOp(GraphOp):
    """Routes each output gradient to the input position its index names. The
    optional ``window`` (the forward's kernel, stride, padding and dilation) promises
    that each index lies in its output's window, as a max-pool's own indices do: a
    kernel may then look only at the outputs whose windows hold a position, not at the
    whole plane."""

    name = "graph.max_pool2d_backward"
    T: ClassVar = VarConstraint("T", base(TensorType))
    grad = operand_def(TensorType)
    input = operand_def(T)
    indices = operand_def(TensorType)
    result = result_def(T)
    kernel = opt_prop_def(DenseArrayBase[I64])
    stride = opt_prop_def(DenseArrayBase[I64])
    padding = opt_prop_def(DenseArrayBase[I64])
    dilation = opt_prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    assembly_format = (
        "$grad `,` $input `,` $indices (`window` qualified($kernel)^ `stride`"
        " qualified($stride) `padding` qualified($padding) `dilation` qualified($dilation))?"
        " attr-dict `:` type($grad) `,` type($indices) `,` type($input)"
    )

    def __init__(self, grad: Operand, input: Operand, indices: Operand, *,
                 window: tuple[Sequence[int], Sequence[int], Sequence[int], Sequence[int]]
                 | None = None) -> None:
        """``window``: (kernel, stride, padding, dilation) of the forward pooling."""
        props = {} if window is None else {
            "kernel": i64_array(window[0]), **_window_props(*window[1:])}
        self._init([grad, input, indices], props)

    def window(self) -> tuple[list[int], list[int], list[int], list[int]] | None:
        """(kernel, stride, padding, dilation), if the op has all four (the verifier
        refuses some without the others)."""
        if self.kernel is None or self.stride is None or self.padding is None or (
                self.dilation is None):
            return None
        return (list(self.kernel.get_values()), list(self.stride.get_values()),
                list(self.padding.get_values()), list(self.dilation.get_values()))

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        g, x, idx = types
        if shape_of(g) != shape_of(idx) or idx.element_type != i64:
            raise VerifyException("graph.max_pool2d_backward indices must match the gradient")
        _check_pool_input(cls.name, shape_of(x))
        given = [n for n in ("kernel", "stride", "padding", "dilation") if n in props]
        if given and len(given) != 4:
            raise VerifyException(f"{cls.name}: a window needs kernel, stride, padding and "
                                  "dilation")
        if given:  # the pooled plane: floor mode, or one more row or column (ceil mode)
            floor = _spatial_out(cls.name, shape_of(x)[2:], ints_prop(props, "kernel"), props)
            got = shape_of(g)[2:]
            if any(not f <= n <= f + 1 for f, n in zip(floor, got, strict=True)):
                raise VerifyException(
                    f"{cls.name}: a {floor[0]}x{floor[1]} window grid over the input does "
                    f"not give the gradient's {got[0]}x{got[1]}")
        return [x]


# --------------------------------------------------------------------------- fusion


@irdl_op_definition
class YieldOp(IRDLOperation):
    name = "graph.yield"
    values = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure(), HasParent(FusedOp)))
    assembly_format = "$values attr-dict `:` type($values)"


@irdl_op_definition
class FusedOp(GraphOp):
    """A chain of elementwise ops run as one: the body sees the operands as block
    arguments and yields the results."""

    name = "graph.fused"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), RecursiveMemoryEffect(), RecursivelySpeculatable())
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $outputs) $body"

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        raise NotImplementedError("graph.fused result types come from its body")

    def verify_(self) -> None:
        block = self.body.block
        if [a.type for a in block.args] != [o.type for o in self.inputs]:
            raise VerifyException("graph.fused block arguments must match its operands")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("graph.fused body must end with graph.yield")
        if [v.type for v in last.values] != [r.type for r in self.outputs]:
            raise VerifyException("graph.fused yields types other than its results")
        for op in block.ops:
            if not (op.has_trait(Elementwise) or isinstance(op, ConstantOp | YieldOp)):
                raise VerifyException(f"graph.fused body may hold only elementwise ops, "
                                      f"not {op.name}")


# --------------------------------------------------------------------------- collectives

#: How a collective combines the ranks' values (``torch.distributed``'s names).
COLLECTIVE_REDUCTIONS = ("sum", "avg", "max", "min", "product")


class CollectiveOp(GraphOp, abc.ABC):
    """An op over the ``group_size`` ranks of a device group, each running the same
    function: every rank reaches it in the same order, so it has no ``Pure`` trait (no
    pass removes, merges or moves one). ``group`` names the group for the engine that
    runs it (a ``torch.distributed`` group name; any name for simulated ranks)."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    group = prop_def(StringAttr)
    group_size = prop_def(IntegerAttr[I64])

    @classmethod
    def check_group(cls, props: Props) -> int:
        size = int_prop(props, "group_size")
        if size < 1:
            raise VerifyException(f"{cls.name}: a group has at least one rank, not {size}")
        reduce = props.get("reduce")
        if isinstance(reduce, StringAttr) and reduce.data not in COLLECTIVE_REDUCTIONS:
            raise VerifyException(f"{cls.name}: unknown reduction {reduce.data!r}; "
                                  f"reductions: {', '.join(COLLECTIVE_REDUCTIONS)}")
        return size


class ReducingCollectiveOp(CollectiveOp, abc.ABC):
    """A collective that combines the ranks' values by ``reduce``."""

    reduce = prop_def(StringAttr)
    assembly_format = ("$input $reduce `group` $group `size` $group_size attr-dict `:` "
                       "type($input) `->` type($result)")

    def __init__(self, input: Operand, *, reduce: str, group: str, group_size: int) -> None:
        self._init([input], {"reduce": StringAttr(reduce), "group": StringAttr(group),
                             "group_size": i64_attr(group_size)})


@irdl_op_definition
class AllReduceOp(ReducingCollectiveOp):
    """Every rank gets the ``reduce`` of all ranks' inputs, elementwise."""

    name = "graph.all_reduce"

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        cls.check_group(props)
        return [types[0]]


@irdl_op_definition
class AllGatherOp(CollectiveOp):
    """The ranks' inputs concatenated along dim 0, in rank order, on every rank."""

    name = "graph.all_gather"
    assembly_format = ("$input `group` $group `size` $group_size attr-dict `:` "
                       "type($input) `->` type($result)")

    def __init__(self, input: Operand, *, group: str, group_size: int) -> None:
        self._init([input], {"group": StringAttr(group), "group_size": i64_attr(group_size)})

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        size = cls.check_group(props)
        shape = list(shape_of(types[0]))
        if not shape:
            raise VerifyException(f"{cls.name} gathers along dim 0: a 0-d input has none")
        shape[0] *= size
        return [tensor(shape, types[0].element_type)]


@irdl_op_definition
class ReduceScatterOp(ReducingCollectiveOp):
    """The ``reduce`` of all ranks' inputs, cut into ``group_size`` equal parts along
    dim 0: rank r gets part r."""

    name = "graph.reduce_scatter"

    @classmethod
    def infer(cls, types: Sequence[TensorType], props: Props) -> list[TensorType]:
        size = cls.check_group(props)
        shape = list(shape_of(types[0]))
        if not shape or shape[0] % size:
            raise VerifyException(f"{cls.name}: dim 0 of {types[0]} does not split into "
                                  f"{size} equal parts")
        shape[0] //= size
        return [tensor(shape, types[0].element_type)]


COLLECTIVES = (AllReduceOp, AllGatherOp, ReduceScatterOp)


ELEMENTWISE_UNARY = (NegOp, AbsOp, ReluOp, ExpOp, LogOp, Log1pOp, SqrtOp, RsqrtOp, ReciprocalOp,
                     TanhOp, SigmoidOp, ErfOp, NotOp, FloorOp, SinOp, CosOp, TanOp, AsinOp,
                     AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp, Expm1Op,
                     ErfcOp, ErfcxOp, ErfinvOp, LgammaOp, DigammaOp)
ELEMENTWISE_BINARY = (AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, AndOp, OrOp,
                      EqOp, NeOp, LtOp, LeOp, GtOp, GeOp, Atan2Op, FmodOp)

Graph = Dialect(
    "graph",
    [
        *ELEMENTWISE_UNARY,
        *ELEMENTWISE_BINARY,
        ConvertOp, WhereOp, GeluOp, GeluBackwardOp, ConstantOp,
        SumOp, MeanOp, AmaxOp, MatmulOp, MatmulPermutedOp,
        ReshapeOp, ExpandOp, PermuteOp, SliceOp, ConcatOp,
        EmbeddingOp, IndexPutOp, GatherOp, ScatterOp,
        SoftmaxOp, LogSoftmaxOp, SoftmaxBackwardOp, LogSoftmaxBackwardOp,
        LayerNormOp, LayerNormBackwardOp,
        Conv2dOp, Conv2dBackwardOp, MaxPool2dOp, MaxPool2dBackwardOp,
        YieldOp, FusedOp,
        *COLLECTIVES,
    ],
)
