"""The package's layering, read from its source with ``ast`` (ARCHITECTURE.md).

Parts: the Face (``symgrad/__init__``, ``__main__``, ``api``, ``check``, ``cli``), ``core``,
``diff``, ``views``, ``codegen``, ``torchfront``, and ``errors`` underneath all of them.
Arrows (what a part may import; every part may import itself and ``errors``):

    Face        -> everything
    torchfront  -> core, diff
    diff        -> core
    views       -> core
    codegen     -> core
    core        -> (nothing)

Nevers: no import cycle between modules, counting imports inside functions; nothing but
the Face imports the Face; only the torch front end, the torch backend and ``check``
import torch, and only inside functions; no module over 600 lines; ``rules/`` holds no
code. The checker is tested on a package with a wrong arrow too, so it cannot pass
vacuously.
"""
import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "symgrad"

FACE = "face"
ALLOWED = {
    FACE: {FACE, "core", "diff", "views", "codegen", "torchfront", "errors"},
    "torchfront": {"torchfront", "core", "diff", "errors"},
    "diff": {"diff", "core", "errors"},
    "views": {"views", "core", "errors"},
    "codegen": {"codegen", "core", "errors"},
    "core": {"core", "errors"},
    "errors": {"errors"},
}
TORCH_ALLOWED = ("symgrad.torchfront", "symgrad.codegen.backends.torch", "symgrad.check")
MAX_LINES = 600


def part(module):
    """The part a dotted module name belongs to."""
    pieces = module.split(".")
    if len(pieces) > 1 and pieces[1] in ALLOWED and pieces[1] != FACE:
        return pieces[1]
    return FACE


def read_package(root=PACKAGE):
    """{dotted module name: source} of every module under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = (path.read_text(encoding="utf-8"),
                                               path.name == "__init__.py")
    return out


def imports(module, source, is_package, known):
    """(imported module, line, inside a function) for every import in ``source``; a name
    imported from a package counts as its submodule when there is one."""
    found = []
    for node, lazy in _import_nodes(source):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno, lazy) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            found += [(n, node.lineno, lazy) for n in (subs or [base])]
    return found


@functools.cache
def _import_nodes(source):
    """(import statement, inside a function) of ``source``, parsed once per text (the
    wrong-arrow tests change one module and read all the others again)."""
    tree = ast.parse(source)
    functions = [n for n in ast.walk(tree)
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    inner = {id(n) for f in functions for n in ast.walk(f) if n is not f}
    return tuple((node, id(node) in inner) for node in ast.walk(tree)
                 if isinstance(node, (ast.Import, ast.ImportFrom)))


def violations(modules):
    """Every broken arrow and never in ``modules`` ({name: (source, is_package)})."""
    problems, edges = [], {m: set() for m in modules}
    for m, (source, is_package) in modules.items():
        lines = source.count("\n")
        if lines > MAX_LINES:
            problems.append(f"{m} has {lines} lines (more than {MAX_LINES})")
        for target, line, lazy in imports(m, source, is_package, modules):
            if target == "torch" or target.startswith("torch."):
                if not m.startswith(TORCH_ALLOWED):
                    problems.append(f"{m}:{line} imports torch; only the torch front end, "
                                    "the torch backend and check may")
                elif not lazy:
                    problems.append(f"{m}:{line} imports torch at import time; import it "
                                    "inside the function that needs it")
                continue
            if target not in modules:
                continue
            edges[m].add(target)
            src, dst = part(m), part(target)
            if dst not in ALLOWED[src]:
                problems.append(f"{m}:{line} imports {target}: {src} may not import {dst}")
    problems += [f"import cycle: {' -> '.join(c)}" for c in cycles(edges)]
    return problems


def cycles(edges):
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_package_keeps_its_layers():
    problems = violations(read_package())
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module, line, expected", [
    ("symgrad.core.graph", "from ..views import text", "core may not import views"),
    ("symgrad.core.graph", "def f():\n    from ..codegen import emit", "core may not import codegen"),
    ("symgrad.diff.reverse", "from ..views.text import format_expr", "diff may not import views"),
    ("symgrad.views.text", "from ..diff import rules", "views may not import diff"),
    ("symgrad.codegen.emit", "from .. import api", "codegen may not import face"),
    ("symgrad.core.build", "from .ops import pointwise", "import cycle"),
    ("symgrad.views.text", "import torch", "only the torch front end"),
    ("symgrad.torchfront.dispatch", "import torch", "at import time"),
    ("symgrad.core.graph", "x = 1\n" * 700, "more than 600"),
])
def test_a_wrong_arrow_is_caught(module, line, expected):
    modules = read_package()
    source, is_package = modules[module]
    modules[module] = (source + "\n" + line + "\n", is_package)
    assert any(expected in p for p in violations(modules)), violations(modules)


def test_rules_hold_no_code():
    files = [p for p in (ROOT / "rules").iterdir() if p.is_file()]
    assert files and all(p.suffix == ".yaml" for p in files), files


def test_every_package_is_installed():
    """pyproject.toml lists every package (a missing one would be absent from the wheel)."""
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    packages = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("__init__.py")}
    assert packages <= listed, sorted(packages - listed)
