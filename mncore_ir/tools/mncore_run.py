"""``mncore-run FILE``: run the entry function of an IR file and print its outputs.

A graph ``func.func`` runs on the reference interpreter; a ``task.kernel`` runs on the
megakernel simulator, optionally in a random topological order, with a timing report
and a Perfetto trace from the timing model; an ``mncore.program`` runs on the cycle
simulator, with its report and a trace of its slots."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import IO

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import mncore as mn
from mncore_ir.dialects import task as t
from mncore_ir.dialects.element_types import NARROW_FLOATS
from mncore_ir.dialects.values import round_narrow
from mncore_ir.parsing import LocatingParser
from mncore_ir.registry import get_all_dialects, get_all_frontends
from mncore_ir.targets.graph_interpreter import (
    DEFAULT_MAX_BYTES,
    InterpretationError,
    check_sizes,
    constant_value,
    find_function,
    numpy_dtype,
    run_ranks,
)
from mncore_ir.targets.mncore_simulator import chrome_trace as program_trace
from mncore_ir.targets.mncore_simulator import simulate as simulate_program
from mncore_ir.targets.task_simulator import simulate_ranks
from mncore_ir.targets.task_timing import MachineModel, chrome_trace, estimate
from mncore_ir.tools import DashIsStdin
from mncore_ir.tools.diagnostics import LocatedError
from mncore_ir.tools.errors import cli_errors


def random_inputs(types: Sequence[TensorType], seed: int, int_high: int) -> list[np.ndarray]:
    """Normal floats, integers uniform in [0, int_high) (or up to the largest value of
    a narrower type), fair booleans.

    Each is drawn in its own dtype, so that drawing takes no more memory than the
    inputs themselves (a float64 draw cast to float32 took three times as much).
    """
    rng = np.random.default_rng(seed)
    out = []
    for typ in types:
        shape, dtype = g.shape_of(typ), numpy_dtype(typ.element_type)
        if dtype.kind == "f":
            out.append(rng.standard_normal(shape, dtype=dtype))
            if typ.element_type in NARROW_FLOATS:  # drawn in f32, the dtype holding them
                round_narrow(out[-1], typ.element_type)
        elif dtype.kind == "b":
            out.append(rng.integers(0, 2, shape, dtype=dtype))
        else:
            high = min(int_high, int(np.iinfo(dtype).max) + 1)
            out.append(rng.integers(0, high, shape, dtype=dtype))
    return out


def format_value(value: np.ndarray, typ: TensorType) -> str:
    body = np.array2string(value, threshold=64, edgeitems=3, precision=6, separator=", ")
    return f"{typ}: {body}"


class MNCoreRunMain(DashIsStdin):
    #: The source spans of the parsed ops (errors point at them).
    op_spans: dict[Operation, Span]

    def __init__(self, args: Sequence[str] | None = None) -> None:
        from xdsl.context import Context

        self.op_spans = {}
        self.available_frontends = {}
        self.ctx = Context()
        self.register_all_dialects()
        self.register_all_frontends()
        parser = argparse.ArgumentParser(description="Run an mncore-ir function.")
        self.register_all_arguments(parser)
        self.args = parser.parse_args(args)

    def register_all_dialects(self) -> None:
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        self.available_frontends.update(get_all_frontends())

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument("--function", help="the function to run (default: the "
                                "module's only function, or @main)")
        inputs = arg_parser.add_mutually_exclusive_group()
        inputs.add_argument("--args", nargs="+", metavar="LITERAL",
                            help="one MLIR dense literal per argument, e.g. "
                                 "'dense<[1.0, 2.0]> : tensor<2xf32>'")
        inputs.add_argument("--random-inputs", type=seed, metavar="SEED",
                            help="random inputs from this seed")
        arg_parser.add_argument("--int-high", type=positive_int, default=4,
                                help="random integer inputs are drawn from [0, INT_HIGH) "
                                     "(narrower types: up to their largest value)")
        arg_parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                                metavar="N", help="refuse to run when one tensor or buffer, "
                                "or all inputs together, would take more than N bytes "
                                f"(default: {DEFAULT_MAX_BYTES})")
        arg_parser.add_argument("--save-outputs", metavar="FILE.npz",
                                help="also save the outputs as result0, result1, ...")
        arg_parser.add_argument("--ranks", type=positive_int, default=1, metavar="N",
                                help="run on N simulated ranks whose collectives meet (rank "
                                     "r's random inputs from SEED + r; --args: the same on "
                                     "every rank); outputs are printed per rank")
        kernels = arg_parser.add_argument_group("task kernels (the megakernel simulator)")
        kernels.add_argument("--random-order", type=int, metavar="SEED",
                             help="run the tasks in a random topological order")
        kernels.add_argument("--timing", action="store_true",
                             help="print the timing model's report after the outputs (for "
                                  "an mncore.program: the cycle simulator's report)")
        kernels.add_argument("--machine", default="", metavar="K=V,...",
                             help="timing model parameters: workers, dispatch_s, launch_s, "
                                  "peak_flops, bandwidth, link_bandwidth, link_latency_s "
                                  "(defaults: an H200)")
        kernels.add_argument("--trace", metavar="FILE.json",
                             help="write a Chrome/Perfetto trace of the megakernel schedule")

    def parse_chunk(self, chunk: IO[bytes], file_extension: str,
                    start_offset: int = 0) -> ModuleOp | None:
        """Parse with :class:`LocatingParser` (the ``mlir`` frontend's parser) keeping
        the ops' spans, so that an error while running can point at its op."""
        self.op_spans = {}
        if parse_spec(self.args.frontend or file_extension).name != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        parser = LocatingParser(self.ctx, chunk.read(), self.get_input_name())
        self.op_spans = parser.op_spans
        return parser.parse_verified_module(not self.args.no_implicit_module)

    @contextmanager
    def located(self) -> Iterator[None]:
        """An :class:`InterpretationError` that blames a parsed op, at the op's source."""
        try:
            yield
        except InterpretationError as error:
            span = self.op_spans.get(error.op) if error.op is not None else None
            if span is None:
                raise
            raise LocatedError(span, str(error)) from error

    def parse_literal(self, text: str, index: int, expected: TensorType | None) -> np.ndarray:
        parser = LocatingParser(self.ctx, text, f"--args[{index}]")
        attr = parser.parse_attribute()
        if parser._current_token.kind != MLIRTokenKind.EOF:
            parser.raise_error("unexpected text after the literal")
        if not isinstance(attr, DenseIntOrFPElementsAttr):
            raise InterpretationError(f"--args[{index}] is not a dense tensor literal: {text}")
        if expected is not None and attr.type != expected:
            raise InterpretationError(f"--args[{index}] has type {attr.type}, "
                                      f"the function expects {expected}")
        return constant_value(attr)

    def entry(self, module: ModuleOp) -> Operation:
        """The function, kernel or program to run."""
        name = self.args.function
        for kind in (mn.ProgramOp, t.KernelOp):
            ops = [op for op in module.ops if isinstance(op, kind)]
            others = [op for op in module.ops if not isinstance(op, kind)]
            if ops and (not others or any(op.sym_name.data == name for op in ops)):
                return find_function(module, name, kind)
        return find_function(module, name)

    def check_dram(self, program: mn.ProgramOp) -> None:
        """The cycle simulator holds DRAM up to the last word a tensor or DMA touches."""
        words = max([tensor.at.address.data + math.prod(tensor.type.get_shape())
                     for tensor in program.body.block.ops if isinstance(tensor, mn.TensorOp)]
                    + [op.dram.address.data + op.dram_extent()
                       for op in program.units() if isinstance(op, mn.DmaOp)] + [0])
        if 4 * words > self.args.max_bytes:
            raise InterpretationError(
                f"@{program.sym_name.data} addresses {4 * words:,} bytes of DRAM, more than "
                f"the limit of {self.args.max_bytes:,} bytes (--max-bytes)")

    def run_program(self, program: mn.ProgramOp) -> None:
        """An mncore program on the cycle simulator."""
        if self.args.random_order is not None:
            raise InterpretationError("--random-order needs a task.kernel")
        if self.args.machine:
            raise InterpretationError("--machine applies to task kernels; an mncore.program "
                                      "names its machine")
        ins = program.tensors("input")
        types = [tensor.type for tensor in ins]
        check_sizes(program, types, self.args.max_bytes)
        self.check_dram(program)
        if self.args.args is not None:
            if len(self.args.args) != len(types):
                raise InterpretationError(f"@{program.sym_name.data} takes {plural(len(types))}"
                                          f", got {len(self.args.args)}")
            inputs = [self.parse_literal(text, i, typ) for i, (text, typ) in
                      enumerate(zip(self.args.args, types, strict=True))]
        elif self.args.random_inputs is not None:
            inputs = random_inputs(types, self.args.random_inputs, self.args.int_high)
        elif types:
            raise InterpretationError(f"@{program.sym_name.data} takes {plural(len(types))}: "
                                      "give --args or --random-inputs")
        else:
            inputs = []
        events: list[dict[str, object]] | None = [] if self.args.trace else None
        with self.located():
            outputs, report = simulate_program(program, inputs, events)
        for i, (value, tensor) in enumerate(zip(outputs, program.tensors("output"),
                                                strict=True)):
            print(f"result{i} = {format_value(value, tensor.type)}")
        if self.args.save_outputs:
            np.savez(self.args.save_outputs, **{f"result{i}": v for i, v in enumerate(outputs)})
        if self.args.timing:
            print(report.format())
        if self.args.trace:
            with open(self.args.trace, "w") as f:
                f.write(program_trace(program, events or []))

    def run(self) -> None:
        for path in (self.args.save_outputs, self.args.trace):  # before the run, not after
            folder = os.path.dirname(path) if path else ""
            if folder and not os.path.isdir(folder):
                raise InterpretationError(f"cannot write {path}: no folder {folder}")
        stream, ext = self.get_input_stream()
        module = self.parse_chunk(stream, ext)
        assert isinstance(module, ModuleOp)
        func = self.entry(module)
        if isinstance(func, mn.ProgramOp):
            return self.run_program(func)
        is_kernel = isinstance(func, t.KernelOp)
        if not is_kernel:
            for flag in ("random_order", "trace"):
                if getattr(self.args, flag) is not None:
                    raise InterpretationError(f"--{flag.replace('_', '-')} needs a task.kernel")
            if self.args.timing or self.args.machine:
                raise InterpretationError("--timing and --machine need a task.kernel")
        types = [as_tensor(typ) for typ in func.function_type.inputs.data]
        check_sizes(func, types, self.args.max_bytes)
        if self.args.args is not None:
            if len(self.args.args) != len(types):
                raise InterpretationError(f"@{func.sym_name.data} takes {len(types)} arguments, "
                                          f"got {len(self.args.args)}")
            inputs = [self.parse_literal(t, i, typ)
                      for i, (t, typ) in enumerate(zip(self.args.args, types, strict=True))]
        elif self.args.random_inputs is not None:
            inputs = random_inputs(types, self.args.random_inputs, self.args.int_high)
        elif types:
            raise InterpretationError(f"@{func.sym_name.data} takes {len(types)} arguments: "
                                      f"give --args or --random-inputs")
        else:
            inputs = []
        ranks = self.args.ranks
        per_rank = [inputs if self.args.random_inputs is None else
                    random_inputs(types, self.args.random_inputs + r, self.args.int_high)
                    for r in range(ranks)]
        with self.located():
            if is_kernel:
                machine = self.machine(func)
                results = simulate_ranks(func, per_rank, self.args.random_order,
                                         max_bytes=self.args.max_bytes)
            else:
                results = run_ranks(module, per_rank, func.sym_name.data, self.args.max_bytes)
        result_types = [as_tensor(typ) for typ in func.function_type.outputs.data]
        saved = {}
        for r, outputs in enumerate(results):
            prefix = f"rank{r} " if ranks > 1 else ""
            for i, (value, typ) in enumerate(zip(outputs, result_types, strict=True)):
                print(f"{prefix}result{i} = {format_value(value, typ)}")
                saved[f"{prefix.strip()}_result{i}".lstrip("_")] = value
        if self.args.save_outputs:
            np.savez(self.args.save_outputs, **saved)
        if is_kernel and (self.args.timing or self.args.trace):
            report, timeline = estimate(func, machine)
            if self.args.timing:
                print(report.format())
            if self.args.trace:
                with open(self.args.trace, "w") as f:
                    f.write(chrome_trace(func, timeline, report))

    def machine(self, kernel: t.KernelOp) -> MachineModel:
        """``--machine``; the worker count defaults to the kernel's ``workers``."""
        try:
            machine = MachineModel.from_options(self.args.machine)
        except ValueError as error:
            raise InterpretationError(f"--machine: {error}") from None
        workers = kernel.attributes.get("workers")
        if "workers=" not in self.args.machine and isinstance(workers, IntegerAttr):
            machine = replace(machine, workers=workers.value.data)
        return machine


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


def seed(text: str) -> int:
    """An argparse type: a random seed, an integer of at least 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is not a seed (a non-negative integer)")
    return value


def plural(n: int, noun: str = "input") -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def as_tensor(typ: Attribute) -> TensorType:
    """Kernel arguments are memrefs; literals and random inputs are drawn as tensors."""
    if isinstance(typ, MemRefType):
        return TensorType(typ.element_type, typ.get_shape())
    assert isinstance(typ, TensorType)
    return typ


def main(argv: Sequence[str] | None = None) -> None:
    with cli_errors("mncore-run"):
        MNCoreRunMain(argv).run()


if __name__ == "__main__":
    main()
