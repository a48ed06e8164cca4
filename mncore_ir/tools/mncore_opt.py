"""``mncore-opt``: xDSL's optimizer driver with mncore-ir's dialects, passes and targets."""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import IO

from xdsl.frontend.mlir import MLIRFrontend
from xdsl.utils.frontend import Frontend
from xdsl.xdsl_opt_main import xDSLOptMain

from mncore_ir.registry import (
    get_all_dialects,
    get_all_frontends,
    get_all_passes,
    get_all_targets,
)
from mncore_ir.tools.errors import cli_errors


class ReplaceOnSuccess(io.StringIO):
    """An output buffer that replaces ``path`` when closed, unless an exception is
    propagating: a failed run leaves the user's ``-o`` file as it was."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def close(self) -> None:
        if not self.closed and sys.exc_info()[0] is None:
            directory = os.path.dirname(os.path.abspath(self.path))
            with tempfile.NamedTemporaryFile("w", dir=directory, delete=False) as tmp:
                tmp.write(self.getvalue())
            os.replace(tmp.name, self.path)
        super().close()


class MNCoreOptMain(xDSLOptMain):
    """The registration hooks differ from ``xdsl-opt``, and ``-o`` is written only when
    the run succeeds."""

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

    def prepare_output(self) -> IO[str]:
        if self.args.output_file is None:
            return sys.stdout
        return ReplaceOnSuccess(self.args.output_file)


def main(argv: Sequence[str] | None = None) -> None:
    with cli_errors("mncore-opt"):
        MNCoreOptMain("mncore-ir optimizer driver", argv).run()


if __name__ == "__main__":
    main()
