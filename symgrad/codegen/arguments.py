"""Argument checks of generated functions: the count, rank, shape and dims of each
argument, the symbolic dims bound from their shapes, and messages built at run time
(``say``) that quote the user's names safely. ``emit`` and the native backends' emitters
put these lines at the top of every function they generate."""
import sympy

from ..core.opdef import OPS
from ..core.shapes import dim_symbols, fmt_shape
from ..errors import ShapeError
from .names import code_name, dim_code


class Argument:
    """An argument of the generated function: the user's input, the name the code gives
    it (``code``, see ``names``) and its name as messages quote it (``label``, a Python
    string literal of the user's spelling)."""

    __slots__ = ("node", "code", "label", "shape")

    def __init__(self, node):
        self.node = node
        self.code = code_name(node.name)
        self.label = repr(node.name)
        self.shape = node.shape


def say(*parts):
    """A message built at run time: literal text (given as str, quoted safely) and code
    expressions (given as ``Code``) joined with ``+``."""
    return " + ".join(p.text if isinstance(p, Code) else repr(p) for p in parts)


class Code:
    """A code expression inside a message (``say``)."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = f"str({text})"


def _shape_checks(args, backend):
    """Per argument, the lines that check its rank and shape and bind the symbolic dims
    it is the first to hold (under their code names)."""
    checks, bound = [], {}
    for a in args:
        lines = []
        checks.append(lines)
        if a.node.kind == "float" and not backend.checks_shape(a):
            continue
        want = f"argument {a.node.name} must have shape {fmt_shape(a.shape)}, got "
        got_shape = Code(f"tuple({a.code}.shape)")
        if all(isinstance(d, int) or getattr(d, "is_Integer", False) for d in a.shape):
            lines.append(f"if {a.code}.shape != {tuple(int(d) for d in a.shape)!r}:")
            lines.append(f"    raise ArgumentError({say(want + 'shape ', got_shape)})")
            continue
        lines.append(f"if {backend.ndim(a.code)} != {len(a.shape)}:")
        lines.append(f"    raise ArgumentError({say(want + 'shape ', got_shape)})")
        for axis, d in enumerate(a.shape):
            got = f"{a.code}.shape[{axis}]"
            if isinstance(d, sympy.Symbol) and d not in bound:
                bound[d] = (f"{a.node.name}.shape[{axis}]", code_name(d.name))
                lines.append(f"{code_name(d.name)} = {got}")
                continue
            solved = solvable(d, bound)
            if solved is not None:
                s, scale, offset = solved
                bound[s] = (f"{a.node.name}.shape[{axis}]", code_name(s.name))
                lines.append(f"{code_name(s.name)} = ({got} - ({dim_code(offset)})) // "
                             f"{scale}")
            lines.append(f"if {got} != {dim_code(d)}:")
            if isinstance(d, sympy.Symbol):
                where, code = bound[d]
                message = say(want, got_shape, f", but {d} = ", Code(code), f" from {where}")
                lines.append(f"    raise ArgumentError({message})")
            else:
                lines.append(f"    raise ArgumentError({say(want, got_shape)})")
    return checks


def solvable(d, bound):
    """(symbol, scale, offset) when ``d`` is ``scale*symbol + offset`` with a positive
    integer ``scale``, ``symbol`` not yet ``bound`` and ``offset`` of bound dims only: an
    argument's size along ``d`` then gives the symbol (``"4*H"`` gives H = size // 4; the
    check that follows refuses a size that is not of that form)."""
    if isinstance(d, int) or isinstance(d, sympy.Symbol):
        return None
    free = [s for s in d.free_symbols if s not in bound]
    if len(free) != 1:
        return None
    s = free[0]
    scale = d.coeff(s)
    offset = sympy.expand(d - scale * s)
    if not (scale.is_Integer and scale > 0) or offset.has(s):
        return None
    return s, int(scale), offset


def bindable_dims(shapes):
    """The dims compiled code learns from arguments of ``shapes``: bare dims, and dims
    solvable from an expression such as ``4*H`` (``solvable``)."""
    bound = {}
    for shape in shapes:
        for d in shape:
            if isinstance(d, sympy.Symbol):
                bound.setdefault(d, True)
    changed = True
    while changed:
        changed = False
        for shape in shapes:
            for d in shape:
                solved = solvable(d, bound)
                if solved is not None:
                    bound[solved[0]] = True
                    changed = True
    return set(bound)


def _arguments_code(args, backend, arrays, preamble):
    """Lines that convert and check the arguments: one after the other, or every
    conversion first when the backend's prologue reads the converted arguments. Integer
    and boolean arguments (``index_argument_lines``) are checked for their dtype and shape
    and take no part in choosing the result's dtype."""
    floats = [a for a in args if a.node.kind == "float"]
    conversions = [backend.argument_lines(a) if a.node.kind == "float"
                   else backend.index_argument_lines(a) for a in args]
    if len(floats) < len(args):
        preamble.update(backend.index_helpers)
    checks = _shape_checks(args, backend)
    prologue = backend.prologue([a.code for a in floats], arrays, floats)
    entry = backend.entry_lines(floats)
    ready = None
    if args and len(floats) == len(args) and all(a.shape for a in args):
        ready = backend.ready_lines(floats)
    if ready is not None:
        cond, lines = ready
        slow = [line for c in conversions for line in c] + prologue
        return (entry + [f"if {cond}:"] + ["    " + line for line in lines] + ["else:"]
                + ["    " + line for line in slow] + [line for c in checks for line in c])
    if backend.converts_first:
        return entry + [line for c in conversions for line in c] + prologue + [
            line for c in checks for line in c]
    return entry + [line for c, k in zip(conversions, checks) for line in c + k] + prologue


def _check_dims_bound(prog, inputs):
    """Compiled code learns each symbolic dim from an argument's shape: a dim that only
    appears inside the function (``broadcast_to(x, ("k", 3))``) has no value at run time."""
    bound = bindable_dims([x.shape for x in inputs])
    for _, node, _ in prog.statements:
        if not node.shape and not node.is_const:
            continue
        dims = set(dim_symbols(node.shape))
        if node.is_const:
            dims |= {s for s in node.attrs["value"].free_symbols if s.is_integer}
        free = dims - bound
        if free:
            names = ", ".join(sorted(map(str, free)))
            raise ShapeError(
                f"the dim {names} is used by {node.op} (shape {fmt_shape(node.shape)}) but no "
                f"argument's shape contains it, so compiled code cannot know its size; give "
                f"{names} to an argument's shape (shapes={{...: (..., {names!r}, ...)}}) or "
                "use a concrete size")


def _dim_checks(prog, inputs):
    """Lines refusing arguments for which a dim expression of the program is negative
    (``x[1:]`` has n - 1 elements: none for n = 0 in torch, an error here), or for which
    an op's assumption about symbolic dims fails (``OpDef.requires``: x[3] of an (n,)
    array at n = 2, which compiled kernels would read out of bounds)."""
    seen, lines = set(), []

    def check(d, said):
        if isinstance(d, int) or isinstance(d, sympy.Symbol) or d in seen \
                or _nonnegative_at_zero_sizes(d):
            return
        seen.add(d)
        dims = sorted(d.free_symbols, key=str)
        values = [part for s in dims for part in (f"{s} = ", Code(code_name(s.name)), ", ")]
        message = say(f"{said}; at these arguments ", *values[:-1],
                      "; give arguments with larger dims")
        lines.extend([f"if {dim_code(d)} < 0:", f"    raise ArgumentError({message})"])

    for _, node, _ in prog.statements:
        for d in node.shape:
            check(d, f"{node.op} makes an array of shape {fmt_shape(node.shape)}, whose dim "
                     f"{d} must not be negative")
        requires = OPS[node.op].requires
        if requires is not None:
            for d, what in requires(node.attrs, [i.shape for i in node.inputs]):
                check(sympy.sympify(d), what)
    return lines


def _nonnegative_at_zero_sizes(d):
    """Whether ``d`` is >= 0 for all dims >= 0 (dim symbols say >= 1; arguments may be
    empty)."""
    sizes = {s: sympy.Dummy(integer=True, nonnegative=True) for s in d.free_symbols}
    return bool(d.xreplace(sizes).is_nonnegative)
