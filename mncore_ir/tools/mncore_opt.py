"""``mncore-opt``: xDSL's optimizer driver with mncore-ir's dialects, passes and targets."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import re
import secrets
import shutil
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from itertools import accumulate
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.frontend.mlir import MLIRFrontend
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.frontend import Frontend
from xdsl.utils.lexer import Input, Span
from xdsl.xdsl_opt_main import xDSLOptMain

from mncore_ir.dialects.diagnostics import source_location
from mncore_ir.dialects.element_types import ExactDensePrinting
from mncore_ir.parsing import LocatingParser, span_at
from mncore_ir.pipeline import DEVICES, apply_passes, check_ir, device
from mncore_ir.registry import (
    get_all_dialects,
    get_all_frontends,
    get_all_passes,
    get_all_targets,
)
from mncore_ir.tools import DashIsStdin
from mncore_ir.tools.diagnostics import (
    Diagnostic,
    LocatedError,
    parse_expectations,
    unmatched,
)
from mncore_ir.tools.errors import cli_errors
from mncore_ir.tools.help import LAZY_EPILOG, catalogue, lazy_epilog_formatter

#: A ``--split-input-file`` separator: a line starting with ``// -----`` (the rest of
#: the line is dropped with it; the line break stays, so line numbers are kept).
SPLIT_MARKER = re.compile(rb"^// -----[^\n]*", re.MULTILINE)

#: What --help says of the flags whose xDSL help does not describe mncore-opt.
FLAG_HELP = {
    "--disable-verify": "do not verify the IR (while parsing and after each pass)",
    "--output-file": "write the output to this file, replaced only when the run succeeds",
    "--verify-diagnostics": (
        "check the diagnostics (parse, verifier and pass errors, warnings) against the "
        "input's expected-* directives instead of reporting them; exit 0 when all match"),
    "--parsing-diagnostics": (
        "print a parse or verifier error on stdout and go on with the next chunk, "
        "exiting 0"),
    "--split-input-file": (
        "process each part of the input between '// -----' lines on its own; positions "
        "are still those of the whole file"),
}


class ReplaceOnSuccess(io.StringIO):
    """An output buffer that replaces ``path`` when closed, unless an exception is
    propagating: a failed run leaves the user's ``-o`` file as it was.

    The new file is written beside the old one and renamed over it (or over the file a
    symbolic link points to). It gets the old file's mode, or for a new file the mode
    ``open`` would give it (0666 less the umask), not ``mkstemp``'s private 0600.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def close(self) -> None:
        if not self.closed and sys.exc_info()[0] is None:
            self._replace()
        super().close()

    def _replace(self) -> None:
        target = os.path.realpath(self.path)
        if os.path.isdir(target):
            raise OSError(f"cannot write {self.path}: it is a directory")
        try:
            fd, tmp = _create_beside(target)
        except OSError as error:
            raise OSError(f"cannot write {self.path}: {error.strerror}") from error
        try:
            with os.fdopen(fd, "w") as out:
                out.write(self.getvalue())
            if os.path.exists(target):
                shutil.copymode(target, tmp)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise


def _create_beside(path: str) -> tuple[int, str]:
    """A new, empty file in ``path``'s folder: its descriptor and name. Created with
    mode 0666 so that the process's umask decides its permissions, as for ``open``."""
    directory, name = os.path.split(path)
    while True:
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


class MNCoreOptMain(DashIsStdin, xDSLOptMain):
    """``xdsl-opt`` with mncore-ir's registrations, plus: errors at source positions
    (parsed ops remember their spans), the IR verified and its dominance checked after
    every pass, internal errors named by pass, ``-o`` written only on success, and
    ``--verify-diagnostics`` matching ``expected-*`` directives as in ``mlir-opt``."""

    op_spans: dict[Operation, Span]
    source: Input | None = None  # the chunk parsed last, for positions of later ops
    line_offset: int

    def register_all_dialects(self) -> None:
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        frontends = get_all_frontends()
        located_mlir = frontends["mlir"]

        def mlir() -> type[Frontend]:
            # --disable-verify also skips the verification done while parsing
            return MLIRFrontend if self.args.disable_verify else located_mlir()

        self.available_frontends.update(frontends, mlir=mlir)

    def register_all_passes(self) -> None:
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        self.available_targets.update(get_all_targets())

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        for flag, text in FLAG_HELP.items():
            # argparse has no public way to reword an option that is already added
            arg_parser._option_string_actions[flag].help = text
        arg_parser.add_argument(
            "--device", choices=list(DEVICES), default=None,
            help="run the pipeline that this lazy-tensor device runs on an imported graph "
                 "(before -p's passes; for mncore, the machine $MNCORE_MACHINE or tiny)")
        arg_parser.formatter_class = lazy_epilog_formatter(self.catalogue)
        arg_parser.epilog = LAZY_EPILOG

    def catalogue(self) -> str:
        """The passes with their options and the targets, for ``--help``."""
        passes = {name: factory() for name, factory in self.available_passes.items()}
        targets = {name: factory() for name, factory in self.available_targets.items()}
        devices = {name: (d.summary, d.pipeline)
                   for name, d in DEVICES.items()}
        return catalogue(passes, targets, devices)

    def parse_chunk(self, chunk: IO[bytes], file_extension: str,
                    start_offset: int = 0) -> ModuleOp | None:
        """Parse with :class:`LocatingParser` (the ``mlir`` frontend's parser) keeping
        the ops' spans, so that errors from passes can point at the source too."""
        self.op_spans, self.line_offset, self.source = {}, start_offset, None
        frontend = parse_spec(self.args.frontend or file_extension).name
        with self.timed("Parsing"):
            if frontend != "mlir" or self.args.disable_verify:
                return super().parse_chunk(chunk, file_extension, start_offset)
            parser = LocatingParser(self.ctx, chunk.read(), self.get_input_name(),
                                    start_offset)
            self.op_spans, self.source = parser.op_spans, parser.lexer.input
            return parser.parse_verified_module(not self.args.no_implicit_module)

    @contextlib.contextmanager
    def timed(self, what: str) -> Iterator[None]:
        """With ``--time-passes``, ``what took N seconds``: parsing, each pass, the
        verification after it and printing are accounted for, not only the passes."""
        started = time.perf_counter()
        try:
            yield
        finally:
            if self.args.time_passes:
                print(f"{what} took {time.perf_counter() - started} seconds")

    def output_resulting_program(self, prog: ModuleOp) -> str:
        with self.timed("Printing"):
            return super().output_resulting_program(prog)

    def setup_pipeline(self) -> None:
        """xDSL's pipeline and its between-pass options, with :func:`check_ir` (types,
        traits and SSA dominance, naming the pass) for xDSL's plain verification."""
        started = time.perf_counter()

        def callback(previous: ModulePass | None, module: ModuleOp,
                     following: ModulePass | None) -> None:
            nonlocal started
            if self.args.time_passes and previous is not None:
                print(f"Pass {previous.name} took {time.perf_counter() - started} seconds")
            if not self.args.disable_verify:
                with self.timed(f"Verification after {previous.name if previous else 'parsing'}"):
                    check_ir(module, previous)
            if previous and following and self.args.print_between_passes:
                print(f"IR after {previous.name}:")
                ExactDensePrinting(stream=sys.stdout).print_op(module)
                print("\n\n\n")
            started = time.perf_counter()

        spec = self.args.passes
        if self.args.device:
            spec = ",".join(p for p in (device(self.args.device).pipeline, spec) if p)
        self.pipeline = PassPipeline.parse_spec(self.available_passes, spec, callback)

    def apply_passes(self, prog: ModuleOp) -> None:
        """Apply the pipeline; a diagnostic that blames an op is moved to its span: the
        op's own, when it was parsed, else that of its source location (an op that a
        pass made of a parsed one)."""
        try:
            apply_passes(self.pipeline, self.ctx, prog)
        except DiagnosticException as error:
            op = getattr(error, "op", None)
            if not isinstance(op, Operation):
                raise
            span = self.op_spans.get(op)
            location = source_location(op) if span is None and self.source else None
            if location is not None and self.source is not None:
                span = span_at(self.source, location, self.line_offset)
            if span is None:
                raise
            located = dataclasses.replace(span, line_offset=self.line_offset)
            raise LocatedError(located, str(error).strip()) from error

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        """xDSL's input, but ``--split-input-file`` cuts only at lines that start with
        ``// -----`` (as mlir-opt does; xDSL cuts inside any line that contains it),
        and each chunk keeps the number of lines before it, for positions."""
        if not self.args.split_input_file:
            return super().prepare_input()
        stream, file_extension = self.get_input_stream()
        with stream:
            parts = SPLIT_MARKER.split(stream.read())
        if file_extension not in self.available_frontends:
            raise ValueError(f"Unrecognized file extension '{file_extension}'")
        offsets = accumulate([0, *(part.count(b"\n") for part in parts[:-1])])
        chunks = [(io.BytesIO(part), offset) for part, offset in zip(parts, offsets, strict=True)]
        return chunks, file_extension

    def prepare_output(self) -> IO[str]:
        if self.args.output_file is None:
            return sys.stdout
        return ReplaceOnSuccess(self.args.output_file)

    def run(self) -> None:
        if not self.args.verify_diagnostics:
            super().run()
            return
        chunks, file_extension = self.prepare_input()
        output = self.prepare_output()
        try:
            failures: list[str] = []
            for index, (chunk, offset) in enumerate(chunks):
                with chunk:
                    text = chunk.read()
                if index > 0:
                    output.write("// -----\n")
                expectations = parse_expectations(text.decode(errors="replace"),
                                                  self.get_input_name(), offset)
                diagnostics, printed = self.run_chunk(text, file_extension, offset)
                output.write(printed)
                failures += unmatched(expectations, diagnostics, self.get_input_name())
            output.flush()
            if failures:
                sys.stdout.flush()
                for failure in failures:
                    print(f"mncore-opt: {failure}", file=sys.stderr)
                raise SystemExit(1)
        finally:
            if output is not sys.stdout:
                output.close()

    def run_chunk(self, text: bytes, file_extension: str,
                  offset: int) -> tuple[list[Diagnostic], str]:
        """Parse, transform and print one chunk: its diagnostics (errors, and warnings
        of the category ``warnings.warn`` gives by default: ``UserWarning``) and its
        output (empty after an error). Other warnings (deprecations, ...) are about the
        code, not the input: they are shown as usual."""
        diagnostics: list[Diagnostic] = []
        printed = ""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            try:
                module = self.parse_chunk(io.BytesIO(text), file_extension, offset)
                if module is not None:
                    self.apply_passes(module)
                    printed = self.output_resulting_program(module)
            except (ParseError, LocatedError) as error:
                span = dataclasses.replace(error.span, line_offset=offset)
                diagnostics.append(Diagnostic("error", error.msg, span))
            except DiagnosticException as error:
                diagnostics.append(Diagnostic("error", str(error).strip()))
        for warning in caught:
            if issubclass(warning.category, UserWarning):
                diagnostics.append(Diagnostic("warning", str(warning.message)))
            else:
                warnings.showwarning(warning.message, warning.category, warning.filename,
                                     warning.lineno)
        return diagnostics, printed


def main(argv: Sequence[str] | None = None) -> None:
    with cli_errors("mncore-opt"):
        MNCoreOptMain("mncore-ir optimizer driver", argv).run()


if __name__ == "__main__":
    main()
