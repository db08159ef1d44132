"""Code generation: a ``Program`` assembled into the source of a Python function.

The statements come from the backend's printer; this module wraps them in a function
that checks its arguments (count, rank, dims, dtype) and binds the symbolic dims from
their shapes, inlines values used once, writes gradient slices into a zeros buffer in
place and accumulates sums of them there, and releases temporaries after their last use.
The function refers only to its backend's modules: no symgrad objects, no tape. Names
of backends and of ops never appear here: both are read from their registries.
"""
import re

from sympy.printing.codeprinter import PrintMethodNotImplementedError

from ..core.build import gc_paused
from ..core.opdef import OPS
from ..core.program import Program
from ..core.shapes import shapes_equal
from ..errors import RegistryError
from .arguments import (  # noqa: F401 - the native backends' emitters read them here
    Argument, Code, _arguments_code, _check_dims_bound, _dim_checks, bindable_dims, say,
    solvable)
from .backends import backend as backend_named, internal
from .names import code_name, is_plain
from .reassociate import for_code


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
    in-place form (``OpDef.augmented``), a slice an op with ``OpDef.scatter``; both
    operands are computed by ``prog`` itself (a node an earlier program computed, its
    ``known``, may be read again after it)."""
    if not any(OPS[node.op].scatter for _, node, _ in prog.statements):
        return {}
    own = {id(node) for _, node, _ in prog.statements}
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
                    and uses[id(p)] == 1 and p.kind == "float" and id(p) in own
                    and id(s) in own
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
    """The statements of ``prog`` (``statement_lines``) and the return line."""
    results = [o for o in list(outputs) + [with_value] if o is not None]
    body, name_of = statement_lines(prog, results, backend, preamble, used)
    body.append(_return_line(outputs, zero_shapes, with_value, name_of, backend, args,
                             _ids_memo(prog.inputs)))
    return body


def statement_lines(prog, results, backend, preamble, used=None):
    """The statements of ``prog`` computing ``results`` (kept under their names), and
    the name of each node afterwards. A value used once is written into the expression
    that uses it, (sin(x))*x instead of a named temporary, up to a nesting depth: fewer
    lines for Python to compile and run, and NumPy temporaries die as soon as they are
    consumed, as in hand-written code. Gradient slices (``OpDef.scatter``) are written
    into a zeros buffer in place, and a sum of them accumulates into one buffer.
    ``used`` (a dict) collects each template the statements fill, with a node and
    operand names that select it."""
    cache = backend.templates
    printer = cache.printer
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
    return _release_temporaries(lines, prog, keep), name_of


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


class StraightLine:
    """The statements of one ``Program`` as a function's body: what ``function_source``
    asks of a body (``codegen.rolled`` makes another kind, with loops)."""

    translatable = True   # its own backend's lines can be translated from the scalar's

    def __init__(self, prog, outputs, zero_shapes, with_value):
        self.prog, self.outputs, self.zero_shapes = prog, outputs, zero_shapes
        self.with_value = with_value
        self.statements = prog.statements

    def lines(self, backend, preamble, args=(), used=None):
        """The body's lines for ``backend``, the last one returning the results."""
        return _body_lines(self.prog, self.outputs, self.zero_shapes, self.with_value,
                           backend, preamble, args, used)

    def return_line(self, backend, args):
        return _return_line(self.outputs, self.zero_shapes, self.with_value,
                            self.prog.name_of, backend, args)


def _scalar_body(body, inputs, backend, preamble, args):
    """The statements as plain float code, for a backend with a ``scalar_backend`` and a
    program of scalars in which every op has a spelling for it, and the backend's own
    statements translated from them when that is exact (``_translated_body``; else None):
    (scalar lines, own lines) or None."""
    scalar = getattr(backend, "scalar_backend", None)
    if scalar is None or any(x.shape for x in inputs) or any(
            node.shape for _, node, _ in body.statements):
        return None
    helpers, used = {}, {}
    scalar = internal(scalar)
    try:
        lines = body.lines(scalar, helpers, used=used)
    except (RegistryError, PrintMethodNotImplementedError):
        return None
    preamble.update(helpers)
    returned = lines[-1][len("return "):]
    own = _translated_body(lines[:-1], used, scalar, backend, preamble) \
        if body.translatable else None
    if own is not None:
        own.append(body.return_line(backend, args))
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
    Returns (source, {name: constant array the source refers to}); see
    ``function_source``."""
    if isinstance(backend, str):
        backend = backend_named(backend)
    zero_shapes = checked_zero_shapes(outputs, zero_shapes)
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
    body = StraightLine(prog, outputs, zero_shapes, with_value)
    return function_source(body, inputs, backend, func_name, arrays, standalone,
                           lazy_fallback), arrays


def checked_zero_shapes(outputs, zero_shapes):
    if zero_shapes is None:
        if any(o is None for o in outputs):
            raise ValueError("build_source: give zero_shapes when an output is None")
        zero_shapes = [o.shape for o in outputs]
    zero_shapes = list(zero_shapes)
    if len(zero_shapes) != len(outputs):
        raise ValueError(f"build_source: {len(outputs)} outputs but {len(zero_shapes)} "
                         "zero_shapes")
    return zero_shapes


def function_source(body, inputs, backend, func_name, arrays, standalone=True,
                    lazy_fallback=False):
    """The source of a function of ``inputs`` computing ``body`` (a ``StraightLine`` or
    another body with its ``statements``, ``lines`` and ``return_line``): the checks of
    its arguments, then the body.

    A backend with a ``scalar_backend`` (NumPy) runs a program of scalars as plain
    ``math`` code and falls back to its own where math raises (log(-1), overflow), since
    NumPy and torch give nan and inf there. With ``lazy_fallback`` the fallback is kept as
    text and compiled on first need: Python's compiler is the slowest step for very long
    programs."""
    local = "_" if backend.arrays_on_entry else ""
    _check_dims_bound(body, inputs)
    args = [Argument(x) for x in inputs]
    if not is_plain(func_name):
        func_name = "gradient"
    unpack = ", ".join(a.code for a in args) + ("," if len(args) == 1 else "") + " = args"
    names = ", ".join(x.name for x in inputs)
    count = say(f"{func_name}() takes {len(inputs)} arguments ({names}), got ", Code("len(args)"))
    lines = [f"if len(args) != {len(inputs)}:", f"    raise ArgumentError({count})"]
    if args:
        lines.append(unpack)
    preamble = {}   # helper definitions the statements use
    lines += _arguments_code(args, backend, {name: name + local for name in arrays}, preamble)
    lines += _dim_checks(body, inputs)
    computing = len(lines)
    floats = [a for a in args if a.node.kind == "float"]
    bodies = None if len(floats) < len(args) else _scalar_body(
        body, inputs, backend, preamble, args)
    scalar_body, translated = bodies if bodies else (None, None)
    fallback = []
    if scalar_body:
        lines.append("try:")
        lines += ["    " + line for line in scalar_body]
        lines.append("except (ArithmeticError, ValueError):")
        lines.append("    return _fallback(_dt, *args)" if lazy_fallback else "    pass")
    own_body = backend.body_prefix(floats)
    own_body += translated if translated is not None else body.lines(backend, preamble,
                                                                     floats)
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
        lines += own_body
    lines = lines[:computing] + _translated_errors(lines[computing:], func_name)

    out = []
    if standalone:
        out += [f"import {m}" for m in backend.modules]
        out += ["", "ArgumentError = ValueError", "EvaluationError = ValueError"]
        out += backend.standalone_lines()
        for name, value in arrays.items():
            out.append(f"{name} = {backend.array_literal(value)}")
    out += [backend.argument_helper] + list(preamble.values())
    out += fallback
    out += ["", f"def {func_name}(*args):"] + ["    " + b for b in lines]
    out += backend.wrap_lines(func_name, args)
    return "\n".join(out) + "\n"
