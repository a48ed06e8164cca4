"""The command-line tools: ``mncore-opt`` and ``mncore-run``."""

from __future__ import annotations

from typing import IO

from xdsl.tools.command_line_tool import CommandLineTool


class DashIsStdin(CommandLineTool):
    """``-`` as the input file reads standard input, as in ``mlir-opt`` (so
    ``mncore-opt f.mlir | mncore-run -`` works)."""

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.input_file == "-":
            self.args.input_file = None
        return super().get_input_stream()
