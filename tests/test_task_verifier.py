"""The task verifier checks what every task's body needs, as the targets read it, and
checks sizes without allocating them.

* Hand-written kernels, one per requirement: a pointwise body's arity and iteration
  space; a tile body's graph op verifies (operand count, properties, shapes) on exactly
  the task's regions, laid out as the simulator, Triton and convert-task-to-mncore
  address them. Each is a ``ParseError`` at the task's (or the failing op's)
  ``file:line:col`` with its message.
* Mutants of the task kernels of ``chain.mlir`` and the model zoo (a property of the
  tile op or an operand deleted, a region one smaller or larger in its first or last
  dimension, the tile body following the regions): each is rejected at the task's or
  the tile op's position, or it is a valid kernel on which the task
  simulator, the Triton generator and the mncore lowering run without crashing and the
  mncore program computes what the simulator does. Deleting an operand is always an error; deleting
  an attribute is one unless the graph op gives it a default.
* A 20000x20000 output verifies in memory for its tasks, not its elements, and a DMA
  of 2**28 words is rejected at its position before anything of its size exists.
"""

from __future__ import annotations

import contextlib
import re
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.irdl import OptionalDef
from xdsl.utils.exceptions import ParseError

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import task as t
from mncore_ir.dialects.graph import Graph
from mncore_ir.frontends.fx import import_captured
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import apply_pipeline, make_context
from mncore_ir.targets.graph_interpreter import InterpretationError
from mncore_ir.targets.mncore_simulator import find_program
from mncore_ir.targets.mncore_simulator import simulate as simulate_program
from mncore_ir.targets.task_simulator import find_kernel, simulate
from mncore_ir.targets.triton_descriptors import TritonTargetError
from mncore_ir.targets.triton_megakernel import generate
from mncore_ir.tools.mncore_run import as_tensor, random_inputs
from mncore_ir.transforms.convert_task_to_mncore import LOWERED, MNCoreConversionError

LIT_INPUTS = Path(__file__).parent.parent / "lit_tests" / "transforms" / "Inputs"
GRAPH_OPS = {op.name.removeprefix("graph."): op for op in Graph.operations}
#: Kinds whose regions may be tiles and which convert-task-to-mncore lowers.
TILED_AND_LOWERED = {"elementwise", "matmul", "sum", "mean", "amax", "permute", "reshape",
                     "slice", "embedding"} & set(LOWERED)


def parse(text: str, name: str = "bad.mlir") -> ModuleOp:
    return parse_module(make_context(), text, name)


def assert_rejected(text: str, line: int, message: str, name: str = "bad.mlir") -> None:
    """A ParseError at ``name:line:3`` (the task op) whose message matches."""
    with pytest.raises(ParseError) as info:
        parse(text, name)
    error = str(info.value)
    assert error.startswith(f"{name}:{line}:3\n"), error
    assert re.search(message, error), error


# --------------------------------------------------------------------------- each kind

NEG_BODY = """  task.body @neg(%a: tensor<f32>) {
    %r = graph.neg %a : tensor<f32>
    task.yield %r : tensor<f32>
  }
"""


def tile_body(name: str, args: str, op: str, results: str) -> str:
    """A tile body: ``op`` (text, on ``%a0``, ``%a1``, ... to ``%r``) yielding ``%r``."""
    return (f"  task.body @{name}({args}) {{\n    {op}\n"
            f"    task.yield %r : {results}\n  }}\n")


def kernel(args: str, results: str, *lines: str, body: str = "") -> str:
    """A kernel whose tasks are ``lines`` (after the bodies)."""
    tasks = "".join(f"  {line}\n" for line in lines)
    return f"task.kernel @k({args}) -> ({results}) {{\n{body}{tasks}  task.return\n}}"


X46, Y46 = "%x: memref<4x6xf32>", "%y: memref<4x6xf32>"
WHOLE46 = "[0:4, 0:6]"
AT_OP = "    %r = "  # an error at the graph op of a tile body

CASES = [
    pytest.param(kernel("%a: memref<4x3xf32>, %b: memref<5x2xf32>", "%c: memref<4x2xf32>",
                        "task.task @mm ins(%a[0:4, 0:3], %b[0:5, 0:2]) outs(%c[0:4, 0:2])",
                        body=tile_body("mm", "%a0: tensor<4x3xf32>, %a1: tensor<5x2xf32>",
                                       "%r = graph.matmul %a0, %a1 : tensor<4x3xf32>, "
                                       "tensor<5x2xf32> -> tensor<4x2xf32>", "tensor<4x2xf32>")),
                 r"graph.matmul cannot multiply shapes \(4, 3\) and \(5, 2\)",
                 AT_OP, id="matmul-inner-dims"),
    pytest.param(kernel("%a: memref<4x3xf32>", "%c: memref<4x2xf32>",
                        "task.task @mm ins(%a[0:4, 0:3]) outs(%c[0:4, 0:2])",
                        body=tile_body("mm", "%a0: tensor<4x3xf32>",
                                       '%r = "graph.matmul"(%a0) : (tensor<4x3xf32>) -> '
                                       "tensor<4x2xf32>", "tensor<4x2xf32>")),
                 r"Expected 2 operands, but got 1", AT_OP, id="matmul-one-operand"),
    pytest.param(kernel("%a: memref<2x4x3xf32>, %b: memref<2x3x2xf32>", "%c: memref<2x4x2xf32>",
                        "task.task @mm ins(%a[0:2, 0:4, 0:3], %b[0:2, 0:3, 0:2]) "
                        "outs(%c[0:2, 0:4, 0:2])",
                        body=tile_body("mm", "%a0: tensor<2x4x3xf32>, %a1: tensor<2x3x2xf32>",
                                       "%r = graph.matmul %a0, %a1 : tensor<2x4x3xf32>, "
                                       "tensor<2x3x2xf32> -> tensor<2x4x2xf32>",
                                       "tensor<2x4x2xf32>")),
                 r"graph.matmul input 0: region \[0:2, 0:4, 0:3\] spans more than one matrix",
                 "  task.task", id="matmul-batch-in-one-task"),
    pytest.param(kernel(X46, "%y: memref<6x4xf32>",
                        "task.task @p ins(%x[0:4, 0:6]) outs(%y[0:6, 0:4])",
                        body=tile_body("p", "%a0: tensor<4x6xf32>",
                                       '%r = "graph.permute"(%a0) : (tensor<4x6xf32>) -> '
                                       "tensor<6x4xf32>", "tensor<6x4xf32>")),
                 r"property 'perm' expected in operation 'graph.permute'", AT_OP,
                 id="permute-no-perm"),
    pytest.param(kernel(X46, "%y: memref<4xf32>",
                        "task.task @sum ins(%x[0:4, 0:3]) outs(%y[0:4])",
                        body=tile_body("sum", "%a0: tensor<4x3xf32>",
                                       "%r = graph.sum %a0 dims = array<i64: 1> : "
                                       "tensor<4x3xf32> -> tensor<4xf32>", "tensor<4xf32>")),
                 r"sum input 0: region \[0:4, 0:3\] does not cover dimension 1 of its buffer "
                 r"\(6\): a task reduces whole dimensions", "  task.task",
                 id="sum-part-of-a-row"),
    pytest.param(kernel(X46, "%y: memref<4xf32>",
                        "task.task @sum ins(%x[2:4, 0:6]) outs(%y[0:2])",
                        "task.task @sum ins(%x[0:2, 0:6]) outs(%y[2:4])",
                        body=tile_body("sum", "%a0: tensor<2x6xf32>",
                                       "%r = graph.sum %a0 dims = array<i64: 1> : "
                                       "tensor<2x6xf32> -> tensor<2xf32>", "tensor<2xf32>")),
                 r"input region \[2:4, 0:6\] starts at 2 in dimension 0, its output tile "
                 r"\[0:2\] at 0", "  task.task", id="sum-rows-elsewhere"),
    pytest.param(kernel(X46, "%y: memref<4x6xf32>",
                        "task.task @sm ins(%x[0:4, 0:3]) outs(%y[0:4, 0:3])",
                        "task.task @sm ins(%x[0:4, 3:6]) outs(%y[0:4, 3:6])",
                        body=tile_body("sm", "%a0: tensor<4x3xf32>",
                                       "%r = graph.softmax %a0 dim 1 : tensor<4x3xf32>",
                                       "tensor<4x3xf32>")),
                 r"softmax operand 0: region \[0:4, 0:3\] does not cover dimension 1 .*: a task "
                 r"holds whole rows", "  task.task", id="softmax-half-rows"),
    pytest.param(kernel("%x: memref<2x4xf32>, %w: memref<4xf32>, %b: memref<4xf32>",
                        "%y: memref<2x4xf32>, %m: memref<2x1xf32>, %s: memref<2x1xf32>",
                        "task.task @ln ins(%x[0:2, 0:4], %w[0:4], %b[0:4]) "
                        "outs(%y[0:2, 0:4], %m[0:2, 0:1], %s[0:2, 0:1])",
                        body="  task.body @ln(%a0: tensor<2x4xf32>, %a1: tensor<4xf32>, "
                             "%a2: tensor<4xf32>) {\n"
                             '    %r:3 = "graph.layer_norm"(%a0, %a1, %a2) <{normalized_dims = '
                             "1 : i64}> : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> "
                             "(tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)\n"
                             "    task.yield %r#0, %r#1, %r#2 : tensor<2x4xf32>, "
                             "tensor<2x1xf32>, tensor<2x1xf32>\n  }\n"),
                 r"property 'eps' expected in operation 'graph.layer_norm'", "    %r:3 = ",
                 id="layer-norm-no-eps"),
    pytest.param(kernel(X46, "%y: memref<4x2xf32>",
                        "task.task @sl ins(%x[0:4, 2:6]) outs(%y[0:4, 0:2])",
                        body=tile_body("sl", "%a0: tensor<4x4xf32>",
                                       "%r = graph.slice %a0 dim 1 [0:2:1] : tensor<4x4xf32> -> "
                                       "tensor<4x2xf32>", "tensor<4x2xf32>")),
                 r"slice input 0: region \[0:4, 2:6\] does not cover dimension 1 .*: start "
                 r"and step index the whole dimension", "  task.task", id="slice-from-a-region"),
    pytest.param(kernel(X46, "%y: memref<24xf32>",
                        "task.task @r6 ins(%x[0:2, 0:3]) outs(%y[0:6])",
                        "task.task @r6 ins(%x[2:4, 0:3]) outs(%y[6:12])",
                        "task.task @r12 ins(%x[0:4, 3:6]) outs(%y[12:24])",
                        body=tile_body("r6", "%a0: tensor<2x3xf32>",
                                       "%r = graph.reshape %a0 : tensor<2x3xf32> -> "
                                       "tensor<6xf32>", "tensor<6xf32>")
                        + tile_body("r12", "%a0: tensor<4x3xf32>",
                                    "%r = graph.reshape %a0 : tensor<4x3xf32> -> "
                                    "tensor<12xf32>", "tensor<12xf32>")),
                 r"reshape input 0: region \[0:2, 0:3\] does not cover dimension 1 .*: a "
                 r"reshape task copies a run of consecutive elements", "  task.task",
                 id="reshape-strided"),
    pytest.param(kernel("%w: memref<5x3xf32>, %i: memref<4xi64>", "%y: memref<4x3xf32>",
                        "task.task @emb ins(%w[0:5, 0:3], %i[2:4]) outs(%y[0:2, 0:3])",
                        "task.task @emb ins(%w[0:5, 0:3], %i[0:2]) outs(%y[2:4, 0:3])",
                        body=tile_body("emb", "%a0: tensor<5x3xf32>, %a1: tensor<2xi64>",
                                       "%r = graph.embedding %a0[%a1] : tensor<5x3xf32>, "
                                       "tensor<2xi64> -> tensor<2x3xf32>", "tensor<2x3xf32>")),
                 r"embedding: index region \[2:4\] is not at the rows of the output tile "
                 r"\[0:2, 0:3\]", "  task.task", id="embedding-rows-elsewhere"),
    pytest.param(kernel("%x: memref<4x6xf32>, %i: memref<4x2xi64>", "%y: memref<4x2xf32>",
                        "task.task @ga ins(%x[0:4, 0:6], %i[0:2, 0:2]) outs(%y[0:2, 0:2])",
                        "task.task @ga ins(%x[0:4, 0:6], %i[2:4, 0:2]) outs(%y[2:4, 0:2])",
                        body=tile_body("ga", "%a0: tensor<4x6xf32>, %a1: tensor<2x2xi64>",
                                       "%r = graph.gather %a0[%a1] dim 1 : tensor<4x6xf32>, "
                                       "tensor<2x2xi64> -> tensor<2x2xf32>", "tensor<2x2xf32>")),
                 r"gather input 1: region \[0:2, 0:2\] does not cover dimension 0 .*: the "
                 r"targets run this op over whole buffers", "  task.task", id="gather-tiled"),
    pytest.param(kernel("%x: memref<1x1x4x4xf32>, %w: memref<1x1x3x3xf32>, %b: memref<1xf32>",
                        "%y: memref<1x1x2x2xf32>",
                        "task.task @conv ins(%x[0:1, 0:1, 0:4, 0:4], %w[0:1, 0:1, 0:3, 0:3], "
                        "%b[0:1]) outs(%y[0:1, 0:1, 0:2, 0:2])",
                        body=tile_body("conv", "%a0: tensor<1x1x4x4xf32>, "
                                       "%a1: tensor<1x1x3x3xf32>, %a2: tensor<1xf32>",
                                       '%r = "graph.conv2d"(%a0, %a1, %a2) <{groups = 1 : i64, '
                                       "padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>}>"
                                       " : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, "
                                       "tensor<1xf32>) -> tensor<1x1x2x2xf32>",
                                       "tensor<1x1x2x2xf32>")),
                 r"property 'stride' expected in operation 'graph.conv2d'", AT_OP,
                 id="conv-no-stride"),
    pytest.param(kernel(f"{X46}, %z: memref<4x6xf32>", Y46,
                        f"task.task @neg ins(%x{WHOLE46}, %z{WHOLE46}) outs(%y{WHOLE46})",
                        body=NEG_BODY),
                 r"task.body @neg takes \(tensor<f32>\) but the task needs \(tensor<f32>, "
                 r"tensor<f32>\)", "  task.task", id="elementwise-body-arity"),
    pytest.param(kernel(X46, Y46, f"task.task @neg ins(%x{WHOLE46}) outs(%y{WHOLE46})"),
                 r"task.task refers to @neg, which is no task.body of this kernel",
                 "  task.task", id="no-body"),
    pytest.param(kernel(X46, Y46, f"task.task @exp ins(%x{WHOLE46}) outs(%y{WHOLE46})",
                        body=tile_body("exp", "%a0: tensor<2x6xf32>",
                                       "%r = graph.exp %a0 : tensor<2x6xf32>",
                                       "tensor<2x6xf32>")),
                 r"task.body @exp takes \(tensor<2x6xf32>\) but the task needs "
                 r"\(tensor<4x6xf32>\)", "  task.task", id="tile-body-of-other-shapes"),
    pytest.param(kernel(X46, Y46, f"task.task @neg ins(%x[0:2, 0:6]) outs(%y{WHOLE46})",
                        body=NEG_BODY),
                 r"pointwise task: input 0 region \[0:2, 0:6\] does not broadcast to the output "
                 r"tile \(4x6\)", "  task.task", id="elementwise-input-too-small"),
    pytest.param(kernel(X46, "%y: memref<4x6xf32>, %z: memref<2x6xf32>",
                        "task.task @two ins(%x[0:4, 0:6]) outs(%y[0:4, 0:6], %z[0:2, 0:6])",
                        body="""  task.body @two(%a: tensor<f32>) {
    task.yield %a, %a : tensor<f32>, tensor<f32>
  }
"""),
                 r"pointwise task: output 1 region \[0:2, 0:6\] is not the size of output 0\'s "
                 r"\(4x6\)", "  task.task", id="elementwise-outputs-differ"),
]


@pytest.mark.parametrize(("text", "message", "blamed"), CASES)
def test_requirements_are_errors_at_the_task_or_its_op(text: str, message: str,
                                                        blamed: str) -> None:
    """Each error is at a line starting with ``blamed``: a task, or the graph op of a
    tile body that does not verify."""
    lines = text.splitlines()
    bad = [i for i, line in enumerate(lines, 1) if line.startswith(blamed)]
    with pytest.raises(ParseError) as info:
        parse(text)
    error = str(info.value)
    column = len(blamed) - len(blamed.lstrip()) + 1
    assert any(error.startswith(f"bad.mlir:{line}:{column}\n") for line in bad), error
    assert re.search(message, error), error


def test_a_task_of_no_body_is_refused_by_the_simulator() -> None:
    """A kernel built without verifying it: the simulator names what is missing."""
    module = parse(kernel(X46, Y46, f"task.task @neg ins(%x{WHOLE46}) outs(%y{WHOLE46})",
                          body=NEG_BODY))
    kernel_op = find_kernel(module)
    body = kernel_op.bodies()["neg"]
    body.detach()
    body.erase()
    with pytest.raises(InterpretationError, match=r"task\.task refers to @neg, which is no "
                                                  r"task\.body of this kernel"):
        simulate(kernel_op, [np.zeros((4, 6), np.float32)])


# --------------------------------------------------------------------------- mutants


@dataclass(frozen=True)
class MiniTask:
    """One task as a kernel of its own: inputs are kernel arguments, outputs buffers. A
    tile body is made from the op, its properties and the task's regions (so a mutated
    region mutates the op); a pointwise body is kept as it is."""

    kind: str  # "elementwise" or the tile op's name without "graph."
    body: str  # the pointwise task.body's text, or ""
    ins: tuple[tuple[str, t.Tile], ...]
    outs: tuple[tuple[str, t.Tile], ...]
    types: dict[str, str]  # buffer name -> memref type text
    attrs: tuple[tuple[str, str], ...]  # the tile op's properties: name, attribute text

    @staticmethod
    def of(task: t.TaskOp, bodies: dict[str, t.BodyOp]) -> MiniTask:
        names: dict[object, str] = {}
        types: dict[str, str] = {}

        def name(value: SSAValue) -> str:
            if value not in names:
                names[value] = f"%b{len(names)}"
                types[names[value]] = str(value.type)
            return names[value]

        what = t.computation(task, bodies)
        ins = tuple((name(v), tile) for v, tile in task.reads())
        outs = tuple((name(v), tile) for v, tile in task.writes())
        if isinstance(what, t.BodyOp):
            return MiniTask("elementwise", str(what), ins, outs, types, ())
        assert what is not None
        return MiniTask(what.name.removeprefix("graph."), "", ins, outs, types,
                        tuple((k, str(a)) for k, a in what.properties.items()))

    def tensor(self, pair: tuple[str, t.Tile]) -> str:
        """The tensor type of a region."""
        element = self.types[pair[0]][7:-1].split("x")[-1]
        return f"tensor<{''.join(f'{s}x' for s in pair[1].sizes)}{element}>"

    def tile_body(self) -> list[str]:
        """``@b``: the op on tensors of the regions, in the generic form."""
        args = [f"%a{i}" for i in range(len(self.ins))]
        results = [f"%r{i}" for i in range(len(self.outs))]
        ins, outs = [self.tensor(p) for p in self.ins], [self.tensor(p) for p in self.outs]
        props = ", ".join(f"{k} = {v}" for k, v in self.attrs)
        typed = ", ".join(f"{a}: {s}" for a, s in zip(args, ins, strict=True))
        defined = f"{', '.join(results)} = " if results else ""
        op = (f"    {defined}\"graph.{self.kind}\"({', '.join(args)})"
              + (f" <{{{props}}}>" if props else "")
              + f" : ({', '.join(ins)}) -> ({', '.join(outs)})")
        yielded = (f"    task.yield {', '.join(results)} : {', '.join(outs)}" if results
                   else '    "task.yield"() : () -> ()')
        return [f"  task.body @b({typed}) {{", op, yielded, "  }"]

    def text(self) -> tuple[str, list[int]]:
        """The kernel and the lines an error may be at: its task's, and its tile body's
        op's (which need not accept mutated regions)."""
        read = dict.fromkeys(n for n, _ in self.ins)
        args = ", ".join(f"{n}: {self.types[n]}" for n in read)
        lines = ["task.kernel @mini(" + args + ") -> () {"]
        blamed = []
        if self.body:
            lines += ["  " + line for line in self.body.splitlines()]
            symbol = self.body.split("@")[1].split("(")[0]
        else:
            lines += self.tile_body()
            blamed.append(len(lines) - 2)  # the op's line
            symbol = "b"
        lines += [f"  {n} = task.buffer : {self.types[n]}"
                  for n in dict.fromkeys(n for n, _ in self.outs) if n not in read]
        regions = lambda pairs: ", ".join(f"{n}[{tile}]" for n, tile in pairs)  # noqa: E731
        task = f"  task.task @{symbol}"
        task += f" ins({regions(self.ins)})" if self.ins else ""
        task += f" outs({regions(self.outs)})" if self.outs else ""
        lines += [task, "  task.return", "}"]
        return "\n".join(lines), [len(lines) - 2, *blamed]

    def mutants(self) -> Iterator[tuple[str, MiniTask]]:
        for i, (key, _) in enumerate(self.attrs):
            yield f"no attribute {key}", replace(self, attrs=self.attrs[:i] + self.attrs[i + 1:])
        for what in ("ins", "outs"):
            pairs = getattr(self, what)
            for i in range(len(pairs)):
                yield f"no {what} {i}", replace(self, **{what: pairs[:i] + pairs[i + 1:]})
        for what in ("ins", "outs"):
            pairs = getattr(self, what)
            for i, (n, tile) in enumerate(pairs):  # the first and the last dimension
                shape = [int(s) for s in self.types[n][7:-1].split("x")[:-1]]
                for d in sorted({0, len(shape) - 1} if shape else set()):
                    o, s = tile.offsets[d], tile.sizes[d]
                    size = s - 1 if s > 1 else s + 1
                    if o + size > shape[d]:
                        continue
                    sizes = (*tile.sizes[:d], size, *tile.sizes[d + 1:])
                    changed = (n, t.Tile(tile.offsets, sizes))
                    yield (f"{what} {i} size {size} in dimension {d}",
                           replace(self, **{what: (*pairs[:i], changed, *pairs[i + 1:])}))


def corpus_tasks(modules: list[ModuleOp]) -> list[MiniTask]:
    """One task per kind, attribute names and region ranks (the first seen)."""
    seen: dict[object, MiniTask] = {}
    for module in modules:
        kernel_op = find_kernel(module)
        bodies = kernel_op.bodies()
        for task in kernel_op.tasks():
            mini = MiniTask.of(task, bodies)
            key = (mini.kind, tuple(k for k, _ in mini.attrs),
                   tuple(len(tile.sizes) for _, tile in mini.ins),
                   tuple(len(tile.sizes) for _, tile in mini.outs))
            seen.setdefault(key, mini)
    return list(seen.values())


def has_default(kind: str, attribute: str) -> bool:
    """Whether ``graph.<kind>`` declares the property optional or with a default."""
    definition = GRAPH_OPS[kind].get_irdl_definition().properties[attribute]
    return isinstance(definition, OptionalDef) or definition.default_value is not None


@pytest.fixture(scope="module")
def corpus(captured_steps: Callable) -> list[MiniTask]:
    text = (LIT_INPUTS / "chain.mlir").read_text()
    modules = [parse_module(make_context(), text, "chain.mlir")]
    for name in ("mlp_sgd", "cnn_sgd", "gpt_adamw"):
        modules.append(import_captured(captured_steps(name)[1]))
    for module in modules:
        apply_pipeline(module, "canonicalize,cse,dce,graph-fuse-elementwise,"
                               "convert-graph-to-task")
    return corpus_tasks(modules)


def run_everywhere(module: ModuleOp, seed: int = 0) -> None:
    """The task simulator, the Triton generator and (for tiled kinds it lowers) the
    mncore program on the same inputs: no crash but the targets' own refusals, and the
    mncore program's outputs equal the simulator's."""
    kernel_op = find_kernel(module)
    types = [as_tensor(a) for a in kernel_op.function_type.inputs.data]
    inputs = random_inputs(types, seed, 2)
    try:
        expected = simulate(kernel_op, inputs)
    except InterpretationError:
        return  # e.g. an index out of range: refused with a message
    with contextlib.suppress(TritonTargetError):
        generate(kernel_op)
    bodies = kernel_op.bodies()
    if not all(label(t.computation(task, bodies)) in TILED_AND_LOWERED
               for task in kernel_op.tasks()):
        return  # whole-buffer kinds: no region to misplace, and slow to lower
    try:
        apply_pipeline(module, "convert-task-to-mncore{machine=tiny}")
    except MNCoreConversionError:
        return
    outputs, _ = simulate_program(find_program(module), inputs)
    for ours, theirs in zip(outputs, expected, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def label(what: object) -> str:
    """The kind of task computing ``what`` (``computation()``), as TILED_AND_LOWERED
    names it."""
    return what.name.removeprefix("graph.") if isinstance(what, g.GraphOp) else "elementwise"


def rest_of(shape: list[int], tile: t.Tile) -> list[t.Tile]:
    """Boxes covering ``shape`` outside ``tile`` exactly once (slabs, one dimension at
    a time: before and after the tile in dimension d, inside it before d)."""
    out = []
    for d, n in enumerate(shape):
        inside = [(o, s) for o, s in zip(tile.offsets[:d], tile.sizes[:d], strict=True)]
        after = [(0, m) for m in shape[d + 1:]]
        for start, end in ((0, tile.offsets[d]), (tile.offsets[d] + tile.sizes[d], n)):
            if end > start:
                box = [*inside, (start, end - start), *after]
                out.append(t.Tile(tuple(o for o, _ in box), tuple(s for _, s in box)))
    return out


def as_outputs(mini: MiniTask) -> str:
    """The mini kernel with the buffers it writes as kernel outputs, the rest of each
    filled with zeros by tasks of its own, so that the targets' results compare."""
    read = {n for n, _ in mini.ins}
    outs = [n for n in dict.fromkeys(n for n, _ in mini.outs) if n not in read]
    text, _ = mini.text()
    head, rest = text.split(") -> () {", 1)
    rest = re.sub(r"  %b\d+ = task\.buffer : memref<[^>]*>\n", "", rest)
    fills, bodies = [], {}
    for n, tile in mini.outs:
        shape = [int(s) for s in mini.types[n][7:-1].split("x")[:-1]]
        element = mini.types[n][7:-1].split("x")[-1]
        zero = {"i1": "false", "f32": "0.0"}.get(element, "0")
        bodies[element] = (f"  task.body @zero_{element}() {{\n"
                           f"    %c = graph.constant dense<{zero}> : tensor<{element}>\n"
                           f"    task.yield %c : tensor<{element}>\n  }}\n")
        fills += [f"  task.task @zero_{element} outs({n}[{box}])\n"
                  for box in rest_of(shape, tile)]
    results = ", ".join(f"{n}: {mini.types[n]}" for n in outs)
    body, tail = rest.rsplit("  task.return", 1)
    return (f"{head}) -> ({results}) {{\n{''.join(bodies.values())}{body.lstrip(chr(10))}"
            f"{''.join(fills)}  task.return{tail}")


def test_corpus_tasks_verify_and_run(corpus: list[MiniTask]) -> None:
    """The unmutated mini kernels are valid, and agree across the targets."""
    kinds = {mini.kind for mini in corpus}
    assert {"elementwise", "matmul", "sum", "permute", "reshape", "slice", "embedding",
            "layer_norm", "softmax", "gather", "scatter", "index_put", "conv2d",
            "max_pool2d_backward"} <= kinds
    for mini in corpus:
        run_everywhere(parse(as_outputs(mini), "mini.mlir"))


def test_mutants_are_rejected_at_the_task_or_run_everywhere(corpus: list[MiniTask]) -> None:
    rejected = accepted = 0
    for mini in corpus:
        for what, mutant in mini.mutants():
            text, lines = mutant.text()
            where = f"{mini.kind} task, {what}:\n{text}"
            try:
                parse(text, "mini.mlir")
            except ParseError as error:
                at = zip(lines, (3, 5), strict=False)  # the task's line, the op's
                assert any(str(error).startswith(f"mini.mlir:{line}:{column}\n")
                           for line, column in at), f"{where}\n{error}"
                rejected += 1
                continue
            accepted += 1
            assert not what.startswith("no ins") and not what.startswith("no outs"), where
            if what.startswith("no attribute"):  # only one with a default may go
                assert has_default(mini.kind, what.split()[-1]), where
            run_everywhere(parse(as_outputs(mutant), "mini.mlir"))
    print(f"{rejected} mutants rejected, {accepted} accepted")
    assert rejected > 3 * accepted


# --------------------------------------------------------------------------- sizes


def peak_bytes(action: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        action()
    except ParseError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


HUGE = kernel("%x: memref<20000x20000xf32>", "%y: memref<20000x20000xf32>",
              *(f"task.task @neg ins(%x[{r}:{r + 5000}, 0:20000]) "
                f"outs(%y[{r}:{r + 5000}, 0:20000])" for r in range(0, 20000, 5000)),
              body=NEG_BODY)


def test_a_huge_output_verifies_in_memory_for_its_tasks() -> None:
    """1.6 GB of f32 in four tasks: the written-once check looks at four boxes."""
    assert peak_bytes(lambda: parse(HUGE, "huge.mlir")) < 50 << 20


def test_a_huge_output_written_twice_names_the_first_element() -> None:
    text = HUGE.replace("%x[15000:20000", "%x[14999:19999").replace(
        "%y[15000:20000", "%y[14999:19999")
    with pytest.raises(ParseError, match=r"huge\.mlir:1:1\n.*\n.*\n.*output 0 of task\.kernel "
                       r"@k: element \[14999, 0\] is written by 2 tasks, not exactly one"):
        parse(text, "huge.mlir")
    assert peak_bytes(lambda: parse(text, "huge.mlir")) < 50 << 20


@pytest.mark.parametrize(("tiles", "first", "count"), [
    ([((0, 0), (2, 4)), ((2, 0), (2, 4))], None, 1),
    ([((0, 0), (2, 4)), ((1, 0), (3, 4))], (1, 0), 2),
    ([((0, 0), (2, 4)), ((2, 1), (2, 3))], (2, 0), 0),
    ([((0, 0), (4, 2)), ((0, 2), (4, 2)), ((3, 3), (1, 1))], (3, 3), 2),
    ([((0, 0), (4, 4)), ((0, 0), (4, 4)), ((1, 1), (1, 1))], (0, 0), 2),
    ([((0, 0), (1, 4)), ((1, 0), (1, 4)), ((3, 0), (1, 4)), ((2, 1), (1, 3))], (2, 0), 0),
])
def test_written_once_on_boxes_matches_counting_elements(tiles: list, first: tuple | None,
                                                         count: int) -> None:
    """The box check against counting every element, and its diagnosis."""
    boxes = [t.Tile(o, s) for o, s in tiles]
    counts = np.zeros((4, 4), np.int64)
    for box in boxes:
        counts[box.slices()] += 1
    assert t.covered_once((4, 4), boxes) == bool((counts == 1).all())
    if first is not None:
        assert t.first_miscounted((4, 4), boxes) == (first, count)
        assert tuple(np.argwhere(counts != 1)[0]) == first and counts[first] == count


DMA = """mncore.program @p machine "tiny" {
  mncore.dma 0 "load" dram[0] -> l2bm[0] words 268435456 tag 1
  mncore.wait 1 tag 1
}"""


def test_a_dma_of_2_28_words_is_rejected_without_allocating_it() -> None:
    with pytest.raises(ParseError, match=r"dma\.mlir:2:3\n.*\n.*\n.*dram\[0\] \+ 268435456 "
                       r"words is beyond dram \(1048576 words on tiny\)"):
        parse(DMA, "dma.mlir")
    strided = DMA.replace("tag 1\n", "run 1 stride 4096 tag 1\n", 1)
    extent = 4096 * (2**28 - 1) + 1  # from the first word to the last
    with pytest.raises(ParseError, match=rf"dma\.mlir:2:3\n.*\n.*\n.*dram\[0\] \+ "
                       rf"{extent} words is beyond dram"):
        parse(strided, "dma.mlir")
    assert peak_bytes(lambda: parse(DMA, "dma.mlir")) < 50 << 20
