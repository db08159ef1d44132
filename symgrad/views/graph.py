"""Printing the backward graph behind ``y.grad_fn``: ``print_graph`` (an indented tree,
as PyTorch users draw it) and ``to_dot`` (Graphviz). Both walk the ``grad_fn`` objects
through their public face (``name()``, ``next_functions``), iteratively, and expand a
function reached twice only once, so the output is linear in the size of the graph.
"""
import os
import shutil
from typing import IO, Any

from ..core.graph import Tensor
from ..core.shapes import fmt_shape
from ..errors import SymgradError


def _root(y):
    if isinstance(y, Tensor):
        fn = y.grad_fn
        if fn is None:
            raise SymgradError(f"the Tensor ({y.op}, shape {fmt_shape(y.shape)}) has no "
                               "grad_fn: it is a leaf or does not depend on any symbol")
        return fn
    return y


def _is_leaf_function(fn):
    """PyTorch's AccumulateGrad: where a leaf's gradient ends up (it has ``variable``)."""
    return fn.name() == "AccumulateGrad"


def _label(fn):
    if _is_leaf_function(fn):
        v = fn.variable
        return f"{v.name} {fmt_shape(v.shape)}" if v.shape else v.name
    return None


MAX_INDENT = 24   # levels; deeper functions are printed at this indentation with their level


def graph_text(y):
    """The text ``print_graph`` prints: one line per function, children indented under
    their parent down to ``MAX_INDENT`` levels, deeper ones marked with their level (so
    the text stays linear in the size of the graph however deep it is)."""
    lines, seen = [], set()
    stack = [(_root(y), 0)]
    while stack:
        fn, level = stack.pop()
        text = "    " * min(level, MAX_INDENT)
        if level > MAX_INDENT:
            text += f"[{level}] "
        text += repr(fn)
        label = _label(fn)
        if label:
            text += f"  {label}"
        if id(fn) in seen and fn.next_functions:
            lines.append(text + "  (shown above)")
            continue
        seen.add(id(fn))
        lines.append(text)
        for nxt, _ in reversed(fn.next_functions):
            if nxt is not None:
                stack.append((nxt, level + 1))
    return "\n".join(lines)


def print_graph(y: Any, file: IO[str] | None = None) -> None:
    """Print the backward graph of ``y`` (a Tensor or a grad_fn) as an indented tree, as
    PyTorch users draw it; a function reached twice is expanded once."""
    print(graph_text(y), file=file)


def _quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(y: Any, filename: str | os.PathLike[str] | None = None) -> str:
    """Graphviz DOT text of the backward graph of ``y``; with ``filename`` also write it:
    ``.dot``/``.gv`` as text, ``.png``/``.svg``/``.pdf`` rendered by Graphviz (needs the
    ``graphviz`` package and the ``dot`` program)."""
    root = _root(y)
    ids: dict[int, str] = {}
    lines: list[str] = []
    edges: list[Any] = []
    stack = [root]
    while stack:
        fn = stack.pop()
        if id(fn) in ids:
            continue
        ids[id(fn)] = f"n{len(ids)}"
        if _is_leaf_function(fn):
            attrs = f"label={_quote(_label(fn))}, style=filled, fillcolor=lightblue"
        elif fn is root:
            attrs = f"label={_quote(fn.name())}, style=filled, fillcolor=darkolivegreen1"
        else:
            attrs = f"label={_quote(fn.name())}"
        lines.append(f"  {ids[id(fn)]} [{attrs}];")
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                edges.append((nxt, fn))
                stack.append(nxt)
    lines += [f"  {ids[id(a)]} -> {ids[id(b)]};" for a, b in edges]
    text = ("digraph backward {\n  node [shape=box, fontname=\"monospace\"];\n"
            + "\n".join(lines) + "\n}\n")
    if filename is not None:
        _write(text, str(filename))
    return text


def graphviz_available():
    """True when DOT can be rendered: the graphviz package and the ``dot`` program."""
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


def _write(text, filename):
    suffix = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if suffix in ("dot", "gv"):
        with open(filename, "w") as f:
            f.write(text)
        return
    if suffix not in ("png", "svg", "pdf"):
        raise SymgradError(f"to_dot: cannot write {filename!r}; use a .dot, .gv, .png, .svg "
                           "or .pdf file name")
    if not graphviz_available():
        raise SymgradError(f"to_dot: rendering {filename!r} needs the graphviz Python package "
                           "and the Graphviz 'dot' program (pip install graphviz; apt install "
                           "graphviz); write a .dot file instead, or use the returned text")
    import graphviz
    graphviz.Source(text).render(outfile=filename, format=suffix, cleanup=True)
