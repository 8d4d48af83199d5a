"""The mutants of bench.mutation: one-line slips a reviewer misses, found by walking a module's AST.

A mutant is one change at one spot: a comparison's boundary or sense flipped (< and <=, > and >=, == and !=,
in and not in, is and is not), an integer off by one, a dict entry or a keyword argument dropped (a dropped
field), two neighbouring labels or arguments of the same kind swapped (two string constants, or two names such
as two conventions constants), True and False or `and` and `or` exchanged, a `not` dropped, + and -
exchanged, a returned value replaced by None.

Spots whose change no user could see are never mutated, so they do not count as survivors: docstrings, type
annotations, f-strings (message text; their inner positions are not reliable before Python 3.12 either), two
pieces of prose swapped, `__repr__`/`__str__`, logging and print calls, documentation keywords (`description=`, `title=`, ...) and
`if TYPE_CHECKING:` blocks. A mutant that does not compile or whose AST equals the original's is dropped too.

The sample is drawn with random.Random(seed) over every mutant of the target files, in file order, so one seed
on one tree (one commit) names one sample.
"""

from __future__ import annotations

import ast
import copy
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

FLIP: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                          ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
                          ast.IsNot: ast.Is}
# Swapping these calls' arguments is a TypeError on the first call, not a bug a test has to find.
BUILTINS = frozenset({"isinstance", "issubclass", "getattr", "hasattr", "setattr"})
# Keyword arguments that only document (a schema's or CLI's text): dropping one changes no behaviour.
DOC_KEYWORDS = frozenset({"description", "title", "help", "examples", "metavar", "doc", "deprecated"})
# Methods that only describe an object to a reader.
TEXT_METHODS = frozenset({"__repr__", "__str__", "__format__", "__rich_repr__"})
# Calls whose arguments are message text: print, warnings.warn and anything of a logger.
LOGGERS = frozenset({"log", "logger", "logging", "_log", "_logger", "LOG"})


@dataclass(frozen=True)
class Mutant:
    file: str            # relative to the tree
    line: int
    kind: str
    before: str          # the source segment replaced
    after: str           # what replaces it
    start: tuple[int, int]
    end: tuple[int, int]
    detail: str = ""     # what a drop or swap took out or exchanged, so that two mutants of one spot differ

    def describe(self) -> str:
        what = f"{self.kind} {self.detail}" if self.detail else self.kind
        return f"{self.file}:{self.line} {what}: {short(self.before)}  ->  {short(self.after)}"

    def legacy(self) -> str:
        """describe() as bench.mutation wrote it before `detail` (two drops at one call could read alike)."""
        return f"{self.file}:{self.line} {self.kind}: {short(self.before)}  ->  {short(self.after)}"


def short(text: str, width: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _dotted(node: ast.AST) -> list[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return parts[::-1]


def _is_message_call(node: ast.Call) -> bool:
    names = _dotted(node.func)
    return (names == ["print"] or names[-2:] == ["warnings", "warn"]
            or any(n in LOGGERS for n in names[:-1]))


def skipped_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes a mutation must not touch (see the module's docstring)."""
    skip: set[int] = set()

    def all_of(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name in TEXT_METHODS:
                all_of(node)
                continue
            all_of(node.returns)
            for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs, node.args.vararg,
                      node.args.kwarg]:
                if a is not None:
                    all_of(a.annotation)
        elif isinstance(node, ast.AnnAssign):
            all_of(node.annotation)
        elif isinstance(node, ast.JoinedStr):
            all_of(node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            all_of(node)
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            all_of(node)
        elif isinstance(node, ast.Call) and _is_message_call(node):
            all_of(node)
        elif isinstance(node, ast.keyword) and node.arg in DOC_KEYWORDS:
            all_of(node)
    return skip


def _label_kind(node: ast.AST) -> str | None:
    """What a swap may exchange: two string literals, or two names (cv.POOL and cv.TEAM), never one of each."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "str"
    if isinstance(node, (ast.Attribute, ast.Name)):
        return "name"
    return None


def _prose(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and any(c.isspace() for c in node.value)


def _swaps(values: list[ast.expr]) -> Iterator[tuple[int, int]]:
    """Neighbouring pairs of the same label kind that differ, but two pieces of prose (a title and a help text
    swapped is message text, not a label)."""
    labelled = [(i, _label_kind(v)) for i, v in enumerate(values) if _label_kind(v)]
    for (a, ka), (b, kb) in zip(labelled, labelled[1:]):
        if ka == kb and ast.dump(values[a]) != ast.dump(values[b]) and not (_prose(values[a]) and _prose(values[b])):
            yield a, b


def _is_none(node: ast.AST | None) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def variants(node: ast.AST) -> Iterator[tuple[str, ast.AST, str]]:
    """(kind, mutated copy of node, what was dropped or swapped) for every mutation of this node."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in FLIP:
        new = copy.deepcopy(node)
        new.ops = [FLIP[type(node.ops[0])]()]
        yield "flip comparison", new, ""
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        yield "flip boolean", ast.Constant(not node.value), ""
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        yield "off by one", ast.Constant(node.value + 1 if node.value <= 0 else node.value - 1 if node.value > 1 else 2), ""
    elif isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "and/or", new, ""
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop not", copy.deepcopy(node.operand), ""
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and not any(
            isinstance(side, ast.JoinedStr) or (isinstance(side, ast.Constant) and isinstance(side.value, str))
            for side in (node.left, node.right)):
        new = copy.deepcopy(node)
        new.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
        yield "+/-", new, ""
    elif isinstance(node, ast.Return) and not _is_none(node.value):
        yield "return None", ast.Return(ast.Constant(None)), ""
    elif isinstance(node, ast.Dict) and len(node.keys) >= 2 and all(k is not None for k in node.keys):
        for i in range(len(node.keys)):
            new = copy.deepcopy(node)
            del new.keys[i], new.values[i]
            yield "drop dict key", new, f"`{short(ast.unparse(node.keys[i]), 60)}`"
        for a, b in _swaps(node.values):
            new = copy.deepcopy(node)
            new.values[a], new.values[b] = new.values[b], new.values[a]
            yield "swap labels", new, f"`{short(ast.unparse(node.values[a]), 40)}`/`{short(ast.unparse(node.values[b]), 40)}`"
    elif isinstance(node, ast.Call):
        if len(node.args) >= 2 and not (isinstance(node.func, ast.Name) and node.func.id in BUILTINS):
            for a, b in _swaps(node.args):
                new = copy.deepcopy(node)
                new.args[a], new.args[b] = new.args[b], new.args[a]
                yield "swap arguments", new, f"{a + 1}/{b + 1}"
        for i, kw in enumerate(node.keywords):
            if kw.arg is not None and kw.arg not in DOC_KEYWORDS:
                new = copy.deepcopy(node)
                del new.keywords[i]
                yield "drop keyword", new, f"`{kw.arg}`"


def mutations(source: str, rel: str) -> list[Mutant]:
    """Every mutant of one module's source, in the order of an AST walk."""
    tree = ast.parse(source)
    skip = skipped_nodes(tree)
    lines = [line.encode() for line in source.splitlines(keepends=True)]
    out = []
    for node in ast.walk(tree):
        if id(node) in skip or not hasattr(node, "lineno") or node.end_lineno is None:
            continue
        (l1, c1), (l2, c2) = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        segment = (lines[l1 - 1][c1:c2] if l1 == l2 else
                   lines[l1 - 1][c1:] + b"".join(lines[l1:l2 - 1]) + lines[l2 - 1][:c2]).decode()
        for kind, new, detail in variants(node):
            after = ast.unparse(new)
            if not isinstance(node, ast.stmt) and ("\n" in segment or "\n" in after):
                after = f"({after})"
            out.append(Mutant(rel, node.lineno, kind, segment, after, (l1, c1), (l2, c2), detail))
    return out


def apply(source: str, m: Mutant) -> str:
    """source with m's segment replaced (positions are UTF-8 byte offsets, as ast gives them)."""
    lines = source.splitlines(keepends=True)
    (l1, c1), (l2, c2) = m.start, m.end
    head = lines[l1 - 1].encode()[:c1].decode()
    tail = lines[l2 - 1].encode()[c2:].decode()
    return "".join(lines[: l1 - 1]) + head + m.after + tail + "".join(lines[l2:])


def is_real(source: str, m: Mutant, original_dump: str | None = None) -> bool:
    """The mutant compiles and changes the module's AST (else it is no bug at all)."""
    mutated = apply(source, m)
    try:
        tree = ast.parse(mutated)
        compile(tree, m.file, "exec")
    except SyntaxError:
        return False
    return ast.dump(tree) != (original_dump if original_dump is not None else ast.dump(ast.parse(source)))


def target_files(tree: Path, patterns: list[str]) -> list[str]:
    """The files the patterns name (an __init__.py only when it holds code), sorted."""
    return sorted({p.relative_to(tree).as_posix() for pat in patterns for p in tree.glob(pat)
                   if p.name != "__init__.py" or p.stat().st_size > 200})


def sample(tree: Path, patterns: list[str], seed: int, n: int) -> list[Mutant]:
    """n mutants drawn uniformly over every mutant of the target files with random.Random(seed)."""
    sources = {rel: (tree / rel).read_text() for rel in target_files(tree, patterns)}
    every = [m for rel, source in sources.items() for m in mutations(source, rel)]
    random.Random(seed).shuffle(every)
    dumps: dict[str, str] = {}
    chosen: list[Mutant] = []
    for m in every:
        if m.file not in dumps:
            dumps[m.file] = ast.dump(ast.parse(sources[m.file]))
        if is_real(sources[m.file], m, dumps[m.file]):
            chosen.append(m)
            if len(chosen) == n:
                break
    return chosen
