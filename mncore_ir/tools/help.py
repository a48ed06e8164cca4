"""What ``mncore-opt --help`` says beyond its flags: each pass with its options and
their defaults, each target, each device's pipeline, and how diagnostics are checked.

The catalogue imports every pass and target, which takes seconds, so it is built only
when the help is printed (:func:`lazy_epilog_formatter`).
"""

from __future__ import annotations

import argparse
import dataclasses
import textwrap
from collections.abc import Callable, Mapping

from xdsl.passes import ModulePass
from xdsl.utils.hints import type_repr
from xdsl.utils.target import Target

HELP_EPILOG = """
errors:
  A bad input is one message, FILE:LINE:COL: error: MESSAGE, with the source line and
  a caret; the exit status is 1. The IR is verified (types, traits, SSA dominance)
  after parsing and after every pass; invalid IR after a pass names that pass.
  'internal error in pass NAME' is a bug in that pass, not a diagnosis of the input;
  MNCORE_TRACEBACK=1 shows its traceback.

--split-input-file:
  The input is cut at each '// -----' line; each part is parsed, transformed and
  printed on its own (the outputs separated by '// -----'), and positions are still
  those of the whole file.

--verify-diagnostics (as in mlir-opt):
  Each part's diagnostics (parse and verifier errors, errors raised by passes, Python
  warnings) are matched against the directives written in it:
    // expected-error@+1 {{text}}      the next line (@+N: N lines below, @-N: above)
    %0 = ... // expected-error {{text}} the directive's own line
    // expected-error@above {{text}}   the nearest line above without a directive
    // expected-error@below {{text}}   the nearest line below without a directive
    // expected-error@unknown {{text}} a diagnostic without a source position
    expected-warning, expected-note, expected-remark: the other severities
    expected-error-re {{at {{[0-9]+}}}}: {{...}} inside the text is a regex
  The text must occur in the message. Each unexpected diagnostic and each directive
  that nothing matched is reported at its FILE:LINE:COL, and the exit status is 1;
  when everything matches, it is 0.
"""

#: The marker :func:`lazy_epilog_formatter`'s formatter replaces with the catalogue.
LAZY_EPILOG = "\0catalogue\0"


def lazy_epilog_formatter(
    catalogue_text: Callable[[], str],
) -> type[argparse.HelpFormatter]:
    """A help formatter that keeps line breaks in the epilog and puts
    ``catalogue_text()`` where the epilog is :data:`LAZY_EPILOG`."""

    class Formatter(argparse.RawDescriptionHelpFormatter):
        def add_text(self, text: str | None) -> None:
            super().add_text(catalogue_text() + HELP_EPILOG if text == LAZY_EPILOG else text)

    return Formatter


def catalogue(passes: Mapping[str, type[ModulePass]],
              targets: Mapping[str, type[Target] | Callable[..., object]],
              devices: Mapping[str, tuple[str, str]] | None = None) -> str:
    """The passes, each with its options (``name: type = default``), the targets, then
    the devices (``name: (summary, pipeline)``)."""
    lines = ["passes (-p 'name,name{option=value option=value}'):"]
    for name, cls in passes.items():
        lines.append(_entry(name, cls))
        lines += [f"      {option}" for option in pass_options(cls)]
    lines.append("")
    lines.append("targets (-t name):")
    lines += [_entry(name, cls) for name, cls in targets.items()]
    if devices:
        lines += ["", "devices (--device name: its pipeline runs before -p's passes):"]
        for name, (summary, pipeline) in devices.items():
            lines.append(textwrap.fill(summary, width=100, initial_indent=f"  {name:<24} ",
                                       subsequent_indent=" " * 27))
            lines.append(f"      {pipeline}")
    return "\n".join(lines) + "\n"


def pass_options(cls: type[ModulePass]) -> list[str]:
    """``name: type = default`` for each option (dataclass field) of a pass."""
    options = []
    for field in dataclasses.fields(cls):
        typ = field.type if isinstance(field.type, str) else type_repr(field.type)
        if field.default is not dataclasses.MISSING:
            default = _spelling(field.default)
        elif field.default_factory is not dataclasses.MISSING:
            default = _spelling(field.default_factory())
        else:
            default = "(required)"
        options.append(f"{field.name}: {typ.strip(chr(39))} = {default}")
    return options


def _spelling(value: object) -> str:
    """A default as a pass option is written: ``true``, ``64,64``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(_spelling(v) for v in value)
    if value is None:
        return "none"
    return str(value)


def _entry(name: str, cls: object) -> str:
    """``  name   summary``, the summary wrapped under itself."""
    summary = _summary(cls)
    if not summary:
        return f"  {name}"
    return textwrap.fill(summary, width=100, initial_indent=f"  {name:<24} ",
                         subsequent_indent=" " * 27)


def _summary(cls: object) -> str:
    """The first sentence of the class's own docstring (not one it inherits, nor the
    signature ``dataclass`` writes for an undocumented class)."""
    doc = getattr(cls, "__dict__", {}).get("__doc__") or ""
    name = getattr(cls, "__name__", "")
    if not doc.strip() or doc.startswith(f"{name}("):
        return ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = paragraph.split(". ")[0].removesuffix(".")
    return sentence.replace("``", "")
