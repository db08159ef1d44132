"""The straight-line program cut into what Numba runs and what NumPy runs, and the
source of the Numba kernels.

A *segment* is a run of statements compiled as one ``@numba.njit`` kernel; statements
whose op Numba cannot compile (``numpy_only``) run as NumPy code between segments, in the
outer Python function. Inside a kernel, elementwise statements of one shape are fused
into one loop nest (a *group*): each element is computed from the operands' elements as
scalar ``math`` code (the ops' ``math`` spellings), and only values used outside the
group are stored into arrays. Sums and means are loops; everything else is the NumPy
spelling, which Numba compiles (matrix products go to BLAS).
"""
import sympy

from ...core.opdef import OPS
from ...core.shapes import shapes_equal
from ..names import code_name, dim_code, shape_code

# Ops whose NumPy spelling Numba cannot compile (checked against the rule table): they
# run as NumPy code in the outer function. ``learned`` adds ops of kernels that failed.
NUMPY_ONLY = frozenset({
    "arg_extreme", "argsort", "cholesky", "conv", "conv_transpose", "conv_weight",
    "cross_entropy", "cumprod", "det", "diag_embed", "diagonal", "eigh_values",
    "eigh_vectors", "erfcx", "erfinv", "flip", "fmod", "fold", "grid_gather", "grid_scatter",
    "i0",
    "i0e", "i1", "i1e", "inverse", "log_ndtr", "log_softmax", "logcumsumexp",
    "logsumexp", "matrix_exp", "max_pool", "max_pool_backward", "max_pool_gather",
    "max_unpool", "median_index", "mode_index", "one_hot", "polygamma", "put_along_add",
    "qr_q", "qr_r", "quantile_index", "resample", "resample_backward", "roll",
    "running_index", "softmax", "solve", "solve_triangular", "std", "take", "take_add",
    "take_along", "take_diagonal", "to_precision", "unfold", "unpool_add",
    "unpool_gather", "var",
})
learned = set()
# Ops never blamed for a kernel that failed to compile (others in it are).
CORE = frozenset({"add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "square",
                  "matmul", "transpose", "index", "index_scatter", "sum", "mean", "tanh",
                  "sin", "cos", "where", "cast", "gt", "ge", "lt", "le", "eq", "ne"})

DTYPES = {"float": "numpy.float64", "bool": "numpy.bool_", "int": "numpy.int64"}


def numpy_only(node):
    return node.op in NUMPY_ONLY or node.op in learned


MAX_SEGMENT = 50

RESHAPES = ("reshape", "squeeze", "unsqueeze")


def reshaped(x, node):
    """A reshape, squeeze or unsqueeze in a kernel: Numba reshapes contiguous arrays only,
    and a 0-d result is a scalar there."""
    if not node.shape:
        return f"numpy.ascontiguousarray({x}).ravel()[0]"
    return f"numpy.ascontiguousarray({x}).reshape({shape_code(node.shape)})"


class Segment:
    """Statements compiled as one kernel, in program order."""

    def __init__(self, index):
        self.index = index
        self.statements = []
        self.names = set()
        self.weight = 0

    @property
    def kernel(self):
        return f"_k{self.index}"


def split(prog, numba_side, most=None):
    """The program's statements as a list of steps: a Segment, or a single statement
    (name, node, operand names) that NumPy runs. A NumPy statement that does not read
    the open segment runs before it, so the segment grows. A segment holds at most
    ``most`` statements (``MAX_SEGMENT``): LLVM's time grows faster than a function's
    length, so a long program compiles faster as several kernels."""
    most = most or MAX_SEGMENT
    steps, open_seg, count = [], None, 0
    for stmt in prog.statements:
        name, node, operands = stmt
        if numba_side(node):
            if open_seg is not None and open_seg.weight >= most:
                open_seg = None
            if open_seg is None:
                open_seg = Segment(count)
                count += 1
                steps.append(open_seg)
            open_seg.statements.append(stmt)
            open_seg.names.add(name)
            open_seg.weight += 1 if node.shape else 0   # a scalar line is no loop
            continue
        if open_seg is not None and any(n in open_seg.names for n in operands if n):
            open_seg = None
        if open_seg is not None:
            steps.insert(steps.index(open_seg), stmt)
        else:
            steps.append(stmt)
    return steps


class Group:
    """Elementwise statements of one shape computed in one loop nest."""

    def __init__(self, shape, position):
        self.shape = shape
        self.position = position
        self.members = []          # (name, node, operand names)
        self.names = set()


def _index(shape, full, loop):
    """The subscript of an operand of ``shape`` at loop indices over ``full`` (NumPy
    broadcasting: missing leading axes, and axes of size 1 read at 0)."""
    lead = len(full) - len(shape)
    parts = []
    for k, d in enumerate(shape):
        j = lead + k
        parts.append("0" if d == 1 and not full[j] == 1 else f"{loop}{j}")
    return ", ".join(parts)


class KernelWriter:
    """Lines of one kernel's body computing ``statements``; ``needed`` are the names the
    rest of the program (or the result) reads, which must exist after the body."""

    def __init__(self, element_cache, array_cache, fused):
        self.elements = element_cache      # TemplateCache of the scalar (math) printer
        self.arrays = array_cache          # TemplateCache of the NumPy printer
        self.fused = fused                 # scatter accumulations (emit)
        self.preamble = {}

    def loopable(self, node, operands):
        """An elementwise op with a scalar spelling, producing an array."""
        if not OPS[node.op].pointwise or not node.shape:
            return False
        try:
            self.elements.template(node, operands)
        except Exception:   # no math spelling: RegistryError, PrintMethodNotImplementedError
            return False
        return True

    def body(self, statements, needed, prog):
        """The kernel's lines. An elementwise statement joins the latest group of its
        shape whose loop runs after all its operands exist; a value is stored into an
        array only when something outside its group reads it."""
        items = []       # lines (str) and Groups, in order
        where = {}       # name -> Group holding it
        position = {}    # name -> index in items at which it exists
        skipped = {id(s) for _, s in self.fused.values()}
        for name, node, operands in statements:
            if id(node) in skipped:
                continue
            if self.loopable(node, operands) and id(node) not in self.fused:
                group = self._group_for(items, node, operands, where, position)
                if group is None:
                    group = Group(node.shape, len(items))
                    items.append(group)
                group.members.append((name, node, operands))
                group.names.add(name)
                where[name] = group
                position[name] = group.position
                continue
            lines = self._statement(name, node, operands, prog)
            for line in lines:
                items.append(line)
            position[name] = len(items) - 1
        stored = set(needed)
        for name, node, operands in statements:
            for n in operands:
                if n in where and where[n] is not where.get(name):
                    stored.add(n)
        out = []
        for item in items:
            if isinstance(item, Group):
                out += self._loop(item, stored)
            else:
                out.append(item)
        return out

    def _group_for(self, items, node, operands, where, position):
        """The latest group of the node's shape that every operand is available to."""
        for item in reversed(items):
            if not isinstance(item, Group) or not shapes_equal(item.shape, node.shape):
                continue
            if all(n is None or where.get(n) is item or
                   (n in position and position[n] < item.position) or
                   (n not in position) for n in operands):
                return item
        return None

    def _statement(self, name, node, operands, prog):
        """A non-loop statement as kernel lines."""
        opdef = OPS[node.op]
        printer = self.arrays.printer
        if id(node) in self.fused:
            p, s = self.fused[id(node)]
            target = prog.name_of(p)
            value = self._value(prog, s.inputs[0])
            return [f"{target}[{OPS[s.op].scatter(printer, s.attrs)}] {opdef.augmented} "
                    f"{value}", f"{name} = {target}"]
        if opdef.scatter:
            value = self._value(prog, node.inputs[0])
            return [f"{name} = numpy.zeros({shape_code(node.shape)})",
                    f"{name}[{opdef.scatter(printer, node.attrs)}] = {value}"]
        if node.op in ("sum", "mean") and node.inputs[0].shape:
            return self._reduction(name, node, operands[0])
        if node.op in RESHAPES and operands[0]:
            return [f"{name} = {reshaped(operands[0], node)}"]
        if opdef.pointwise and not node.shape:
            try:
                tpl = self.elements.template(node, operands)
            except Exception:   # no scalar spelling: the NumPy one
                tpl = self.arrays.template(node, operands)
        else:
            tpl = self.arrays.template(node, operands)
        self.preamble.update(tpl.preamble)
        return [f"{name} = {tpl.fill(operands)}"]

    def _value(self, prog, node):
        if node.is_const and not node.shape:
            return self.arrays.printer.doprint(node.attrs["value"])
        return prog.name_of(node)

    def _reduction(self, name, node, x):
        """A sum or mean as a loop nest over its operand."""
        shape = node.inputs[0].shape
        axes = set(node.attrs["axis"])
        keep = tuple(1 if k in axes else d for k, d in enumerate(shape))
        idx = ", ".join(f"_i{k}" for k in range(len(shape)))
        count = " * ".join(f"({dim_code(shape[k])})" for k in sorted(axes)) or "1"
        lines, indent = [], ""
        full = len(axes) == len(shape) and not node.attrs["keepdims"]
        acc = f"{name}_" if full else name
        lines.append(f"{acc} = 0.0" if full else f"{acc} = numpy.zeros({shape_code(keep)})")
        for k, d in enumerate(shape):
            lines.append(f"{indent}for _i{k} in range({dim_code(d)}):")
            indent += "    "
        if full:
            lines.append(f"{indent}{acc} += {x}[{idx}]")
        else:
            kidx = ", ".join("0" if k in axes else f"_i{k}" for k in range(len(shape)))
            lines.append(f"{indent}{acc}[{kidx}] += {x}[{idx}]")
        if node.op == "mean":
            lines.append(f"{acc} = {acc} / ({count})")
        if full:
            lines.append(f"{name} = {acc}")
        elif not node.attrs["keepdims"]:
            lines.append(f"{name} = {name}.reshape({shape_code(node.shape)})")
        return lines

    def _loop(self, group, stored):
        shape = group.shape
        lines = []
        for name, node, _ in group.members:
            if name in stored:
                lines.append(f"{name} = numpy.empty({shape_code(shape)}, "
                             f"dtype={DTYPES.get(node.kind, 'numpy.float64')})")
        indent = ""
        for j, d in enumerate(shape):
            lines.append(f"{indent}for _i{j} in range({dim_code(d)}):")
            indent += "    "
        own = ", ".join(f"_i{j}" for j in range(len(shape)))
        for name, node, operands in group.members:
            filled = []
            for n, inp in zip(operands, node.inputs):
                if n is None:
                    filled.append(None)
                elif n in group.names:
                    filled.append(f"{n}_")
                elif not inp.shape:
                    filled.append(n)
                else:
                    filled.append(f"{n}[{_index(inp.shape, shape, '_i')}]")
            tpl = self.elements.template(node, operands)
            self.preamble.update(tpl.preamble)
            lines.append(f"{indent}{name}_ = {tpl.fill(filled)}")
            if name in stored:
                lines.append(f"{indent}{name}[{own}] = {name}_")
        return lines


def kernel_names(seg, dims, later):
    """(argument names, returned names) of a segment's kernel: what it reads from outside
    it (and every dim), and what later steps or the result read from it."""
    own = {name for name, _, _ in seg.statements}
    reads = sorted({n for _, _, operands in seg.statements for n in operands
                    if n and n not in own})
    return (reads + [d for d in dims if d not in reads],
            [n for n, _, _ in seg.statements if n in later])


def dim_names(inputs):
    """Code names of the symbolic dims the outer function binds (every kernel takes them)."""
    out = []
    for x in inputs:
        for d in x.shape:
            for s in sorted(getattr(d, "free_symbols", ()), key=str):
                if isinstance(s, sympy.Symbol) and code_name(s.name) not in out:
                    out.append(code_name(s.name))
    return out
