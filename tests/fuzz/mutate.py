"""Seed IR and the mutations applied to it.

A mutant is a seed (one ``// -----`` chunk of a lit test or an example, comments
dropped) with one to four mutations stacked; every choice is drawn from the
``random.Random`` passed in, so a (seed, index) pair always gives the same mutant.
Texts are ``str`` in which undecodable bytes are kept as surrogate escapes, so garbage
bytes survive the round trip to the file the tools read.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

#: How xDSL's ``--split-input-file`` separates the modules of one file.
SPLIT = re.compile(r"^// -----.*$", re.MULTILINE)

#: Interesting numbers: the edges of i32/i64, the largest double, a size too big to tile.
NUMBERS = ("0", "1", "-1", "2147483648", "-2147483649", "9223372036854775808",
           "-9223372036854775809", "1e308", "-1e308", "20000", "0.5", "4294967296")

#: Dimension sizes: empty, huge, larger than any index, dynamic.
SIZES = ("0", "1", "20000", "100000", "2147483648", "9223372036854775807", "?")

#: Element types, the ones graph supports and the ones it does not.
TYPES = ("f32", "f16", "bf16", "f64", "f80", "i1", "i8", "i32", "i64", "i128", "index", "ui8")

#: A standalone number: not part of a name (``%0``, ``f32``, ``lm0``) or of a shape.
NUMBER = re.compile(r"(?<![\w%@#.$-])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
#: A dimension of a shape: ``4`` and ``8`` in ``tensor<4x8xf32>``.
DIM = re.compile(r"(?<=[<x])(?:\d+|\?)(?=x)")
#: An element type, alone (``: f32``) or ending a shape (``4x8xf32``).
TYPE = re.compile(r"(?:(?<=\dx)|(?<=<)|(?<![\w%@#.$\"-]))(?:" + "|".join(
    sorted(TYPES, key=len, reverse=True)) + r")(?![\w.])")
#: ``dialect.op``, bare or quoted (the generic form).
OP_NAME = re.compile(r"(?<![\w%@#.$])[a-z_]+\.[a-z_0-9.]+(?![\w])")
SSA_NAME = re.compile(r"%[A-Za-z0-9_$.-]+")


@dataclass(frozen=True)
class Seed:
    """One module of IR to mutate; ``name`` says where it came from."""

    name: str
    text: str


@dataclass(frozen=True)
class Mutant:
    seed: Seed
    text: str
    mutations: tuple[str, ...]

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8", "surrogateescape")


def split_seeds(name: str, text: str) -> list[Seed]:
    """The ``// -----`` chunks of ``text`` without comment or blank lines (mutating a
    comment tests nothing)."""
    chunks = SPLIT.split(text)
    seeds = []
    for i, chunk in enumerate(chunks):
        lines = [line for line in chunk.splitlines()
                 if line.strip() and not line.lstrip().startswith("//")]
        if lines:
            label = f"{name}#{i}" if len(chunks) > 1 else name
            seeds.append(Seed(label, "\n".join(lines) + "\n"))
    return seeds


def seed_files(root: Path) -> list[Path]:
    """Every ``.mlir`` file of the lit tests (Inputs included) and the examples; not
    what lit wrote under ``Output/``, so that the seeds do not depend on whether lit ran."""
    folders = (root / "lit_tests", root / "examples")
    return sorted(p for folder in folders for p in folder.rglob("*.mlir")
                  if "Output" not in p.relative_to(folder).parts)


def load_seeds(root: Path, files: Iterable[Path]) -> dict[str, list[Seed]]:
    """The seeds of each file, keyed by its path relative to ``root``."""
    out = {}
    for path in files:
        name = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        seeds = split_seeds(name, path.read_text(errors="surrogateescape"))
        if seeds:
            out[name] = seeds
    return out


@cache
def registered_op_names() -> tuple[str, ...]:
    """The names of every op of every dialect the tools register."""
    from mncore_ir.registry import get_all_dialects

    return tuple(sorted(op.name for factory in get_all_dialects().values()
                        for op in factory().operations))


# -- the mutations: each returns the mutated text and what it did, or None when it
# -- does not apply to this text.

Mutation = Callable[[random.Random, str], tuple[str, str] | None]


def _replace_match(rng: random.Random, text: str, pattern: re.Pattern[str],
                   choices: Callable[[str], list[str]], what: str) -> tuple[str, str] | None:
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    m = rng.choice(matches)
    options = [c for c in choices(m.group()) if c != m.group()]
    if not options:
        return None
    new = rng.choice(options)
    line = text.count("\n", 0, m.start()) + 1
    return text[:m.start()] + new + text[m.end():], f"{what} {m.group()!r}->{new!r} line {line}"


def delete_line(rng: random.Random, text: str) -> tuple[str, str] | None:
    lines = text.splitlines(keepends=True)
    if len(lines) < 2:
        return None
    i = rng.randrange(len(lines))
    return "".join(lines[:i] + lines[i + 1:]), f"delete line {i + 1}"


def duplicate_line(rng: random.Random, text: str) -> tuple[str, str] | None:
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines))
    return "".join(lines[:i + 1] + lines[i:]), f"duplicate line {i + 1}"


def swap_lines(rng: random.Random, text: str) -> tuple[str, str] | None:
    lines = text.splitlines(keepends=True)
    if len(lines) < 2:
        return None
    i, j = sorted(rng.sample(range(len(lines)), 2))
    lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines), f"swap lines {i + 1} and {j + 1}"


def change_number(rng: random.Random, text: str) -> tuple[str, str] | None:
    return _replace_match(rng, text, NUMBER, lambda _: list(NUMBERS), "number")


def change_size(rng: random.Random, text: str) -> tuple[str, str] | None:
    return _replace_match(rng, text, DIM, lambda _: list(SIZES), "size")


def change_type(rng: random.Random, text: str) -> tuple[str, str] | None:
    return _replace_match(rng, text, TYPE, lambda _: list(TYPES), "type")


def _replace_everywhere(rng: random.Random, text: str, pattern: re.Pattern[str],
                        choices: Sequence[str], what: str) -> tuple[str, str] | None:
    """Replace every occurrence of one value: the program often stays consistent, so
    the mutant gets past the verifier into the passes and executors."""
    values = sorted({m.group() for m in pattern.finditer(text)})
    if not values:
        return None
    old = rng.choice(values)
    new = rng.choice([c for c in choices if c != old])
    return pattern.sub(lambda m: new if m.group() == old else m.group(), text), \
        f"every {what} {old!r}->{new!r}"


def change_every_size(rng: random.Random, text: str) -> tuple[str, str] | None:
    return _replace_everywhere(rng, text, DIM, SIZES, "size")


def change_every_type(rng: random.Random, text: str) -> tuple[str, str] | None:
    return _replace_everywhere(rng, text, TYPE, TYPES, "type")


def change_op_name(rng: random.Random, text: str) -> tuple[str, str] | None:
    names = registered_op_names()
    matches = [m for m in OP_NAME.finditer(text) if m.group() in names]
    if not matches:
        return None
    m = rng.choice(matches)
    new = rng.choice([n for n in names if n != m.group()])
    line = text.count("\n", 0, m.start()) + 1
    return text[:m.start()] + new + text[m.end():], f"op {m.group()}->{new} line {line}"


def rename_ssa(rng: random.Random, text: str) -> tuple[str, str] | None:
    """Rename one occurrence (a use or a definition) to another name of the text, or
    to one that is defined nowhere."""
    names = sorted(set(SSA_NAME.findall(text)))
    return _replace_match(rng, text, SSA_NAME, lambda _: [*names, "%undefined"], "ssa")


def truncate(rng: random.Random, text: str) -> tuple[str, str] | None:
    if len(text) < 2:
        return None
    at = rng.randrange(1, len(text))
    return text[:at], f"truncate at char {at}"


def garbage_bytes(rng: random.Random, text: str) -> tuple[str, str] | None:
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    at = rng.randrange(len(text) + 1)
    garbage = junk.decode("utf-8", "surrogateescape")
    return text[:at] + garbage + text[at:], f"insert bytes {junk!r} at char {at}"


def unterminate_string(rng: random.Random, text: str) -> tuple[str, str] | None:
    """Drop one quote of a string, or open a string that never closes."""
    quotes = [i for i, c in enumerate(text) if c == '"']
    if quotes and rng.random() < 0.7:
        at = rng.choice(quotes)
        return text[:at] + text[at + 1:], f"drop quote at char {at}"
    at = rng.randrange(len(text) + 1)
    return text[:at] + '"abc' + text[at:], f"open string at char {at}"


#: Every mutation with its weight.
MUTATIONS: dict[Mutation, int] = {
    delete_line: 3, duplicate_line: 3, swap_lines: 3, change_number: 4, change_size: 4,
    change_type: 4, change_every_size: 4, change_every_type: 4, change_op_name: 3,
    rename_ssa: 3, truncate: 1, garbage_bytes: 1, unterminate_string: 1,
}


def mutate(rng: random.Random, seed: Seed) -> Mutant:
    """``seed`` with one to four mutations stacked (fewer more often)."""
    count = rng.choices((1, 2, 3, 4), weights=(50, 25, 15, 10))[0]
    text, done = seed.text, []
    for _ in range(20):  # mutations that do not apply are drawn again
        if len(done) == count:
            break
        mutation = rng.choices(list(MUTATIONS), weights=list(MUTATIONS.values()))[0]
        result = mutation(rng, text)
        if result is not None:
            text, what = result
            done.append(what)
    return Mutant(seed, text, tuple(done))
