"""Code generation: a ``Program`` assembled into the source of a Python function.

The statements come from the backend's printer; this module wraps them in a function
that checks its arguments (count, rank, dims, dtype) and binds the symbolic dims from
their shapes, inlines values used once, writes gradient slices into a zeros buffer in
place and accumulates sums of them there, and releases temporaries after their last use.
The function refers only to its backend's modules: no symgrad objects, no tape. Names
of backends and of ops never appear here: both are read from their registries.
"""
import re

import sympy
from sympy.printing.codeprinter import PrintMethodNotImplementedError

from ..core.build import gc_paused
from ..core.opdef import OPS
from ..core.program import Program
from ..core.shapes import dim_symbols, fmt_shape, shapes_equal
from ..errors import RegistryError, ShapeError
from .backends import backend as backend_named, internal
from .names import code_name, dim_code, is_plain
from .reassociate import for_code


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


def _translated_errors(body, func_name):
    """``body`` such that an error of the array library (an empty reduction without
    identity, a division by a zero dim) becomes an EvaluationError naming the function."""
    message = say(f"{func_name}: the result cannot be computed at these arguments (",
                  Code("type(_error).__name__"), ": ", Code("_error"), ")")
    return (["try:"] + ["    " + line for line in body]
            + ["except ArgumentError:", "    raise",
               "except (ArithmeticError, LookupError, RuntimeError, ValueError) as _error:",
               f"    raise EvaluationError({message}) from _error"])


def _output_code(node, name_of, backend, printer, shape, ids=None):
    """The returned expression for one output: a fresh float array of its shape (``ids``:
    a ``_may_hold_ints`` memo when the function takes ids, which code may keep as ints)."""
    if node is None:
        return backend.zeros(shape)
    if node.is_const:
        if not node.shape:
            return backend.scalar_output(node.attrs["value"], printer)
        return printer.doprint(node.expr)
    name = name_of(node)
    if node.kind != "float" or ids is not None and _may_hold_ints(node, ids):
        return backend.as_float(name, node.shape)
    if node.shape and _views_an_argument(node):
        return backend.copy(name)
    return name if node.shape else backend.scalar_result(name)


def _outputs_code(nodes, shapes, name_of, backend, printer, ids=None):
    """The returned expressions of ``nodes`` (None: zeros). An array two outputs are or
    view (exp(W), exp(W).T) is copied for the second: no two gradients share memory."""
    out, returned = [], set()
    for node, shape in zip(nodes, shapes):
        code = _output_code(node, name_of, backend, printer, shape, ids)
        if node is not None and node.shape and code == name_of(node):
            base = _viewed(node)
            if id(base) in returned:
                code = backend.copy(code)
            returned.add(id(base))
        out.append(code)
    return out


def _ids_memo(inputs):
    return {} if any(x.kind != "float" for x in inputs) else None   # for _may_hold_ints


def _may_hold_ints(node, memo):
    """Whether code may compute ``node``, a float in the graph, as ints: NumPy and torch
    do where every operand is ints but constants and captured arrays (a gather's ids):
    abs(y), y**2, y[1:], sum(y), y @ y of ids y. ``memo``: answers for one function."""
    stack = [node]
    while stack:
        n = stack[-1]
        if id(n) in memo:
            stack.pop()
        elif n.kind != "float" or n.is_leaf:
            memo[id(n)] = n.kind != "float"
            stack.pop()
        else:
            operands = [i for i in n.inputs if not (i.is_const or i.is_array)]
            pending = [i for i in operands if id(i) not in memo]
            if pending:
                stack.extend(pending)
                continue
            memo[id(n)] = bool(operands) and all(memo[id(i)] for i in operands)
            stack.pop()
    return memo[id(node)]


def _viewed(node):
    """The node whose array ``node``'s code may view (exp(W) for exp(W).T)."""
    while OPS[node.op].view and node.inputs:
        node = node.inputs[0]
    return node


def _views_an_argument(node):
    """Whether the array computed for ``node`` may share memory with an argument or a
    captured array (x[0], W.T), or be read-only: an output is then copied, as the user
    may write into a gradient."""
    node = _viewed(node)
    return node.is_symbol or node.is_array or OPS[node.op].readonly


def scatter_accumulations(prog, outputs):
    """{id(sum node): (fresh operand, scatter operand)} for sums of gradient slices,
    ``scatter(a, i) + scatter(b, j)``, which the code computes in place as
    ``p = scatter(a, i); p[j] += b`` (one buffer instead of three). A sum is an op with an
    in-place form (``OpDef.augmented``), a slice an op with ``OpDef.scatter``."""
    if not any(OPS[node.op].scatter for _, node, _ in prog.statements):
        return {}
    uses = {}
    for _, node, _ in prog.statements:
        for i in node.inputs:
            uses[id(i)] = uses.get(id(i), 0) + 1
    for o in outputs:
        if o is not None:
            uses[id(o)] = uses.get(id(o), 0) + 2
    fused = {}
    for _, node, names in prog.statements:
        if not OPS[node.op].augmented or not node.shape or None in names:
            continue
        a, b = node.inputs
        for s, p in ((b, a), (a, b)):
            if (OPS[s.op].scatter and OPS[p.op].fresh and uses[id(s)] == 1
                    and uses[id(p)] == 1 and p.kind == "float"
                    and shapes_equal(p.shape, node.shape) and shapes_equal(s.shape, node.shape)
                    and id(s) not in fused.values()):
                fused[id(node)] = (p, s)
                break
    return fused


def _release_temporaries(lines, prog, keep):
    """``del`` each array temporary after the last line that names it, as hand-written
    code lets it die: large intermediates then return to the allocator early instead of
    all staying alive until the function returns (fewer page faults, a smaller peak).
    ``lines`` are (text, names of temporaries the line reads or writes)."""
    order = {name: k for k, (name, node, _) in enumerate(prog.statements) if node.shape}
    if not order:
        return [text for text, _ in lines]
    keep = set(keep)
    last = {}
    for k, (_, names) in enumerate(lines):
        for name in names:
            if name in order and name not in keep:
                last[name] = k
    dying = [[] for _ in lines]
    for name, k in last.items():
        dying[k].append(name)
    out = []
    for (text, _), dead in zip(lines, dying):
        out.append(text)
        if dead:
            out.append("del " + ", ".join(sorted(dead, key=order.get)))
    return out


MAX_INLINE_DEPTH = 8


def _body_lines(prog, outputs, zero_shapes, with_value, backend, preamble, args=(),
                used=None):
    """The statements of ``prog``. A value used once is written into the expression
    that uses it, (sin(x))*x instead of a named temporary, up to a nesting depth: fewer
    lines for Python to compile and run, and NumPy temporaries die as soon as they are
    consumed, as in hand-written code. Gradient slices (``OpDef.scatter``) are written
    into a zeros buffer in place, and a sum of them accumulates into one buffer.
    ``used`` (a dict) collects each template the statements fill, with a node and
    operand names that select it."""
    cache = backend.templates
    printer = cache.printer
    results = [o for o in list(outputs) + [with_value] if o is not None]
    fused = scatter_accumulations(prog, results) if backend.scatter_in_place else {}
    skipped = {id(s) for _, s in fused.values()}
    uses = {id(o): 2 for o in results}
    for _, node, _ in prog.statements:
        for i in node.inputs:
            uses[id(i)] = uses.get(id(i), 0) + 1
    for p, _ in fused.values():
        uses[id(p)] = 2
    alias = {}      # name -> the name holding its value (a buffer accumulated in place)
    deferred = {}   # name -> (expression, depth, names it reads) of a value inlined later
    lines = []      # (text, names of temporaries it reads or writes)
    # only array temporaries are released, so a program of scalars tracks no names
    track = any(node.shape for _, node, _ in prog.statements)
    nothing = frozenset()

    def operand(name):
        """An operand's printed value and the temporaries it reads: its deferred
        expression, or its (aliased) name."""
        if name in deferred:
            text, _, reads = deferred.pop(name)
            return f"({text})", reads
        name = alias.get(name, name)
        return name, {name} if track else nothing

    for name, node, operand_names in prog.statements:
        opdef = OPS[node.op]
        if id(node) in skipped:
            continue
        if id(node) in fused:
            p, s = fused[id(node)]
            target = alias.get(prog.name_of(p), prog.name_of(p))
            slice_value = s.inputs[0]
            if slice_value.is_const and not slice_value.shape:
                value, reads = printer.doprint(slice_value.attrs["value"]), set()
            else:
                value, reads = operand(prog.name_of(slice_value))
            subscript = OPS[s.op].scatter(printer, s.attrs)
            lines.append((f"{target}[{subscript}] {opdef.augmented} {value}",
                          reads | {target}))
            alias[name] = target
            continue
        if opdef.scatter and backend.scatter_in_place:
            if operand_names[0]:
                value, reads = operand(operand_names[0])
            else:
                value, reads = printer.doprint(node.inputs[0].attrs["value"]), set()
            lines.append((f"{name} = {backend.zeros(node.shape)}", {name}))
            lines.append((f"{name}[{opdef.scatter(printer, node.attrs)}] = {value}",
                          reads | {name}))
            continue
        tpl = cache.template(node, operand_names)
        preamble.update(tpl.preamble)
        if used is not None and id(tpl) not in used:
            used[id(tpl)] = (tpl, node, operand_names)
        filled, depth, reads = [], 0, set() if track else nothing
        for k, n in enumerate(operand_names):
            if not n:
                filled.append(n)
                continue
            if n in deferred and k in tpl.repeated:
                text, _, inner = deferred.pop(n)
                lines.append((f"{n} = {text}", inner | {n}))
            if n in deferred:
                depth = max(depth, deferred[n][1])
            text, names = operand(n)
            filled.append(text)
            if track:
                reads |= names
        text = tpl.fill(filled)
        if uses.get(id(node), 0) == 1 and depth < MAX_INLINE_DEPTH:
            deferred[name] = (text, depth + 1, reads)
        else:
            lines.append((f"{name} = {text}", reads | {name} if track else nothing))

    def name_of(node):
        name = prog.name_of(node)
        return alias.get(name, name)

    keep = {name_of(o) for o in results}
    body = _release_temporaries(lines, prog, keep)
    body.append(_return_line(outputs, zero_shapes, with_value, name_of, backend, args,
                             _ids_memo(prog.inputs)))
    return body


def _return_line(outputs, zero_shapes, with_value, name_of, backend, args, ids=None):
    result = results_code(outputs, zero_shapes, with_value, name_of, backend,
                          backend.templates.printer, ids)
    return f"return {backend.result(result, args)}"


def results_code(outputs, zero_shapes, with_value, name_of, backend, printer, ids=None):
    """The outputs' expressions as a tuple, (value, tuple) with ``with_value``."""
    items = _outputs_code(outputs, zero_shapes, name_of, backend, printer, ids)
    result = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if with_value is not None:
        value = _output_code(with_value, name_of, backend, printer, with_value.shape, ids)
        result = f"({value}, {result})"
    return result


def _scalar_body(prog, inputs, outputs, zero_shapes, with_value, backend, preamble, args):
    """The statements as plain float code, for a backend with a ``scalar_backend`` and a
    program of scalars in which every op has a spelling for it, and the backend's own
    statements translated from them when that is exact (``_translated_body``; else None):
    (scalar lines, own lines) or None."""
    scalar = getattr(backend, "scalar_backend", None)
    if scalar is None or any(x.shape for x in inputs) or any(
            node.shape for _, node, _ in prog.statements):
        return None
    helpers, used = {}, {}
    scalar = internal(scalar)
    try:
        lines = _body_lines(prog, outputs, zero_shapes, with_value, scalar, helpers,
                            used=used)
    except (RegistryError, PrintMethodNotImplementedError):
        return None
    preamble.update(helpers)
    returned = lines[-1][len("return "):]
    own = _translated_body(lines[:-1], used, scalar, backend, preamble)
    if own is not None:
        own.append(_return_line(outputs, zero_shapes, with_value, prog.name_of, backend,
                                args))
    return lines[:-1] + [f"return {backend.result(returned, args)}"], own


def _translated_body(lines, used, scalar, backend, preamble):
    """``backend``'s statements of a scalar program from the ``scalar`` backend's
    (``lines``, without the return), when each template they filled reads the same with
    the scalar backend's module name replaced by the backend's (math.sin -> numpy.sin);
    else None. Both bodies come from one pass over the program then: for long scalar
    programs the second pass was a fifth of the time to a compiled function. Operand
    names never contain a module prefix (``core.names``), so replacing it in the filled
    lines is replacing it in the templates."""
    if len(scalar.modules) != 1 or scalar.modules[0] not in backend.modules:
        return None
    prefix = re.compile(r"\b" + re.escape(scalar.modules[0]) + r"\.")
    own_prefix = backend.templates.printer.M + "."
    cache = backend.templates
    needs = {}
    for tpl, node, names in used.values():
        own = cache.template(node, names)
        if own._format != prefix.sub(own_prefix, tpl._format):
            return None
        needs.update(own.preamble)
    preamble.update(needs)
    return prefix.sub(own_prefix, "\n".join(lines)).split("\n") if lines else []


@gc_paused
def build_source(outputs, inputs, backend, func_name="gradient", with_value=None,
                 zero_shapes=None, standalone=True, lazy_fallback=False):
    """Python source of a function of ``inputs`` returning the tuple ``outputs`` (None
    entries become zeros of ``zero_shapes``), or ``(value, outputs)`` with ``with_value``.
    Returns (source, {name: constant array the source refers to}).

    A backend with a ``scalar_backend`` (NumPy) runs a program of scalars as plain
    ``math`` code and falls back to its own where math raises (log(-1), overflow), since
    NumPy and torch give nan and inf there. With ``lazy_fallback`` the fallback is kept as
    text and compiled on first need: Python's compiler is the slowest step for very long
    programs."""
    if isinstance(backend, str):
        backend = backend_named(backend)
    if zero_shapes is None:
        if any(o is None for o in outputs):
            raise ValueError("build_source: give zero_shapes when an output is None")
        zero_shapes = [o.shape for o in outputs]
    zero_shapes = list(zero_shapes)
    if len(zero_shapes) != len(outputs):
        raise ValueError(f"build_source: {len(outputs)} outputs but {len(zero_shapes)} "
                         "zero_shapes")
    outputs, with_value = for_code(outputs, with_value, inputs)
    targets = [o for o in outputs if o is not None]
    if with_value is not None:
        targets.append(with_value)
    # Captured arrays are globals _c0, _c1, ... of the function; a backend that converts
    # them on entry reads them through locals _c0_, _c1_, ...
    local = "_" if backend.arrays_on_entry else ""
    prog = Program(targets, inputs, prefix="_t", array_name=lambda node, k: f"_c{k}{local}",
                   input_name=lambda x: code_name(x.name))
    arrays = {name[:len(name) - len(local)]: value for name, value in prog.arrays.items()}
    _check_dims_bound(prog, inputs)
    args = [Argument(x) for x in inputs]
    if not is_plain(func_name):
        func_name = "gradient"
    unpack = ", ".join(a.code for a in args) + ("," if len(args) == 1 else "") + " = args"
    names = ", ".join(x.name for x in inputs)
    count = say(f"{func_name}() takes {len(inputs)} arguments ({names}), got ", Code("len(args)"))
    body = [f"if len(args) != {len(inputs)}:", f"    raise ArgumentError({count})"]
    if args:
        body.append(unpack)
    preamble = {}   # helper definitions the statements use
    body += _arguments_code(args, backend, {name: name + local for name in arrays}, preamble)
    body += _dim_checks(prog, inputs)
    computing = len(body)
    floats = [a for a in args if a.node.kind == "float"]
    bodies = None if len(floats) < len(args) else _scalar_body(
        prog, inputs, outputs, zero_shapes, with_value, backend, preamble, args)
    scalar_body, translated = bodies if bodies else (None, None)
    fallback = []
    if scalar_body:
        body.append("try:")
        body += ["    " + line for line in scalar_body]
        body.append("except (ArithmeticError, ValueError):")
        body.append("    return _fallback(_dt, *args)" if lazy_fallback else "    pass")
    own_body = backend.body_prefix(floats)
    own_body += translated if translated is not None else _body_lines(
        prog, outputs, zero_shapes, with_value, backend, preamble, floats)
    if scalar_body and lazy_fallback:
        fallback_src = "\n".join(["def _fallback_impl(_dt, *args):", "    " + unpack]
                                 + ["    " + b for b in own_body]) + "\n"
        fallback = [f"_FALLBACK = {fallback_src!r}", "",
                    "def _fallback(_dt, *args):",
                    "    global _fallback",
                    "    exec(compile(_FALLBACK, '<symgrad-fallback>', 'exec'), globals())",
                    "    _fallback = _fallback_impl",
                    "    return _fallback_impl(_dt, *args)", ""]
    else:
        body += own_body
    body = body[:computing] + _translated_errors(body[computing:], func_name)

    lines = []
    if standalone:
        lines += [f"import {m}" for m in backend.modules]
        lines += ["", "ArgumentError = ValueError", "EvaluationError = ValueError"]
        lines += backend.standalone_lines()
        for name, value in arrays.items():
            lines.append(f"{name} = {backend.array_literal(value)}")
    lines += [backend.argument_helper] + list(preamble.values())
    lines += fallback
    lines += ["", f"def {func_name}(*args):"] + ["    " + b for b in body]
    lines += backend.wrap_lines(func_name, args)
    return "\n".join(lines) + "\n", arrays
