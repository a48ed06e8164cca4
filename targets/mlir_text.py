"""``-t mlir``: xDSL's MLIR text, with every dense literal printed so that it parses
back to the same bytes (``--print-op-generic`` too: xDSL's generic form prints
``dense<[0.0, -0.0]>`` as a splat and quietens signalling NaNs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.syntax_printer import SyntaxPrinter
from xdsl.targets.mlir import MLIRTarget

from mncore_ir.dialects.element_types import ExactDensePrinting


class ExactSyntaxPrinting(ExactDensePrinting, SyntaxPrinter):
    """:class:`ExactDensePrinting` with ``--syntax-highlight``'s colours."""


@dataclass(frozen=True)
class ExactMLIRTarget(MLIRTarget):
    name = "mlir"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        cls = ExactSyntaxPrinting if self.syntax_highlight else ExactDensePrinting
        printer = cls(stream=output, print_generic_format=self.print_generic_format,
                      print_properties_as_attributes=self.print_properties_as_attributes,
                      print_debuginfo=self.print_debuginfo)
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)
