"""Code generation: a ``Program`` assembled into a Python function, compiled or as source.

The statements come from the backend's printer (``code_printers``); this module wraps
them in a function that checks its arguments (count, rank, dims, dtype) and binds the
symbolic dims from their shapes, inlines values used once, accumulates gradient slices in
place and releases temporaries early. The generated function refers only to
NumPy/torch/math: no symgrad objects, no tape.
"""
import collections
import itertools
import re
import linecache
import math

import numpy
import sympy

from . import sympy_funcs as sf
from .code_printers import _float_literal, templates
from .errors import ArgumentError, ShapeError
from .graph import gc_paused
from .program import Program
from .shapes import fmt_shape, shapes_equal


def _shape_tuple(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _dims_code(inputs, backend):
    """Lines that check each argument's rank and shape and bind the symbolic dims."""
    lines, bound = [], {}
    for x in inputs:
        name, shape = x.name, x.shape
        want = fmt_shape(shape)
        if backend == "numpy" and shape:
            lines.append(f"if type({name}) is not numpy.ndarray or {name}.dtype.kind != 'f':")
            lines.append(f"    {name} = _real_array({name}, '{name}')")
        elif backend == "numpy":
            lines.append(f"if type({name}) is not float:")
            lines.append(f"    {name} = _real_array({name}, '{name}')")
            lines.append(f"    if type({name}) is not float:")
            lines.append(f"        raise ArgumentError('argument {name} must have shape (), "
                         f"got shape %s' % (tuple({name}.shape),))")
            continue
        ndim = f"{name}.ndim" if backend == "numpy" else f"{name}.dim()"
        lines.append(f"if {ndim} != {len(shape)}:")
        lines.append(f"    raise ArgumentError('argument {name} must have shape {want}, "
                     f"got shape %s' % (tuple({name}.shape),))")
        for axis, d in enumerate(shape):
            got = f"{name}.shape[{axis}]"
            if isinstance(d, sympy.Symbol) and str(d) not in bound:
                bound[str(d)] = f"{name}.shape[{axis}]"
                lines.append(f"{d} = {got}")
                continue
            lines.append(f"if {got} != {d}:")
            if str(d) in bound:
                lines.append(f"    raise ArgumentError('argument {name} must have shape {want}, "
                             f"got %s, but {d} = %s from {bound[str(d)]}' "
                             f"% (tuple({name}.shape), {d}))")
            else:
                lines.append(f"    raise ArgumentError('argument {name} must have shape {want}, "
                             f"got %s' % (tuple({name}.shape),))")
    return lines


# Arguments that are not already float arrays go through these (generated code, so
# compiled functions and source() need nothing from symgrad).
ARGUMENT_HELPERS = {
    "numpy": (
        "def _real_array(value, name):\n"
        "    array = numpy.asarray(value)\n"
        "    if array.dtype.kind not in 'fiu':\n"
        "        raise ArgumentError('argument %s must be real numbers (float or int), got "
        "%s of dtype %s' % (name, type(value).__name__, array.dtype))\n"
        "    if array.dtype.kind != 'f':\n"
        "        array = array.astype(numpy.float64)\n"
        "    return array if array.ndim else float(array)\n"),
    "torch": (
        "def _real_tensor(value, name):\n"
        "    if isinstance(value, torch.Tensor):\n"
        "        raise ArgumentError('argument %s must be a floating-point tensor, got dtype "
        "%s; convert it with .double() or .float()' % (name, value.dtype))\n"
        "    array = numpy.asarray(value)\n"
        "    if array.dtype.kind not in 'fiu':\n"
        "        raise ArgumentError('argument %s must be real numbers, got %s of dtype %s' "
        "% (name, type(value).__name__, array.dtype))\n"
        "    return torch.as_tensor(array, dtype=torch.float64)\n"),
}


def _check_dims_bound(prog, inputs):
    """Compiled code learns each symbolic dim from an argument's shape: a dim that only
    appears inside the function (``broadcast_to(x, ("k", 3))``) has no value at run time."""
    from .shapes import dim_symbols
    bound = {d for x in inputs for d in dim_symbols(x.shape)}
    for _, node, _ in prog.statements:
        dims = set(dim_symbols(node.shape))
        if node.op == "const":
            dims |= {s for s in node.attrs["value"].free_symbols if s.is_integer}
        free = dims - bound
        if free:
            names = ", ".join(sorted(map(str, free)))
            raise ShapeError(
                f"the dim {names} is used by {node.op} (shape {fmt_shape(node.shape)}) but no "
                f"argument's shape contains it, so compiled code cannot know its size; give "
                f"{names} to an argument's shape (shapes={{...: (..., {names!r}, ...)}}) or "
                "use a concrete size")


def _zeros_code(shape, backend):
    if backend == "math":
        return "0.0"
    if backend == "numpy":
        return f"numpy.zeros({_shape_tuple(shape)})" if shape else "0.0"
    return f"torch.zeros({_shape_tuple(shape)}, dtype=_dt, device=_dev)"


def _output_code(node, name_of, backend, printer, shape):
    """The returned expression for one output: a fresh array of the right shape."""
    if node is None:
        return _zeros_code(shape, backend)
    if node.op == "const":
        if not node.shape and backend == "math":
            return _float_literal(float(node.attrs["value"]))
        if not node.shape and backend == "numpy":
            return printer.doprint(node.attrs["value"])
        return printer.doprint(sf.FillOp(sf.sym_tuple(node.shape), node.attrs["value"]))
    name = name_of(node)
    if node.op in ("symbol", "broadcast_to", "array") and node.shape:
        return (f"numpy.array({name}, dtype=numpy.float64)" if backend == "numpy"
                else f"{name}.clone()")
    return name


# Ops whose generated code always returns a newly allocated array (never a view of an
# operand): such a temporary may be updated in place by its only consumer.
FRESH_OPS = {"index_scatter", "add", "sub", "mul", "div", "neg"}


def scatter_accumulations(prog, outputs):
    """{id(add node): (fresh operand, index_scatter operand)} for sums of gradient
    slices, ``scatter(a, i) + scatter(b, j)``, which the code computes in place as
    ``p = scatter(a, i); p[j] += b`` (one buffer instead of three)."""
    if not any(node.op == "index_scatter" for _, node, _ in prog.statements):
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
        if node.op != "add" or not node.shape or None in names:
            continue
        a, b = node.inputs
        for s, p in ((b, a), (a, b)):
            if (s.op == "index_scatter" and p.op in FRESH_OPS and uses[id(s)] == 1
                    and uses[id(p)] == 1 and p.kind == "float"
                    and shapes_equal(p.shape, node.shape) and shapes_equal(s.shape, node.shape)
                    and id(s) not in fused.values()):
                fused[id(node)] = (p, s)
                break
    return fused


_NAME = re.compile(r"\b_t\d+\b")


def _release_temporaries(lines, prog, keep):
    """``del`` each array temporary after its last use, as hand-written code lets it die:
    large intermediates then return to the allocator early instead of all staying
    alive until the function returns (fewer page faults, a smaller peak)."""
    arrays = {name for name, node, _ in prog.statements if node.shape}
    if not arrays:
        return lines
    keep = set(keep) | {name for name, node, _ in prog.statements if not node.shape}
    last = {}
    for k, line in enumerate(lines):
        for name in _NAME.findall(line):
            last[name] = k
    dying = [[] for _ in lines]
    for name, k in last.items():
        if name not in keep:
            dying[k].append(name)
    out = []
    for line, dead in zip(lines, dying):
        out.append(line)
        if dead:
            out.append("del " + ", ".join(sorted(dead, key=lambda n: int(n[2:]))))
    return out


MAX_INLINE_DEPTH = 8


def _body_lines(prog, outputs, zero_shapes, with_value, backend, preamble):
    """The statements of ``prog``. A value used once is written into the expression
    that uses it, (sin(x))*x instead of a named temporary, up to a nesting depth: fewer
    lines for Python to compile and run, and NumPy temporaries die as soon as they are
    consumed, as in hand-written code. Gradient slices (``index_scatter``) are written
    into a zeros buffer in place, and a sum of them accumulates into one buffer."""
    cache = templates(backend)
    results = [o for o in list(outputs) + [with_value] if o is not None]
    fused = scatter_accumulations(prog, results)
    skipped = {id(s) for _, s in fused.values()}
    uses = {id(o): 2 for o in results}
    for _, node, _ in prog.statements:
        for i in node.inputs:
            uses[id(i)] = uses.get(id(i), 0) + 1
    for p, _ in fused.values():
        uses[id(p)] = 2
    alias = {}      # name -> the name holding its value (a buffer accumulated in place)
    deferred = {}   # name -> (expression, depth) of a value inlined where it is used
    lines = []

    def operand_text(name):
        """An operand's printed value: its deferred expression, or its (aliased) name."""
        if name in deferred:
            return f"({deferred.pop(name)[0]})"
        return alias.get(name, name)

    for name, node, operand_names in prog.statements:
        if id(node) in skipped:
            continue
        if id(node) in fused:
            p, s = fused[id(node)]
            target = alias.get(prog.name_of(p), prog.name_of(p))
            value = operand_text(prog.name_of(s.inputs[0]))
            index = s.local_expr([sympy.Symbol("_")]).args[2]
            lines.append(f"{target}[{cache.printer._index_text(index)}] += {value}")
            alias[name] = target
            continue
        if node.op == "index_scatter" and backend != "math":
            value = operand_text(operand_names[0]) if operand_names[0] else \
                cache.printer.doprint(node.inputs[0].attrs["value"])
            index = node.local_expr([sympy.Symbol("_")]).args[2]
            lines.append(f"{name} = {_zeros_code(node.shape, backend)}")
            lines.append(f"{name}[{cache.printer._index_text(index)}] = {value}")
            continue
        tpl = cache.template(node, operand_names)
        preamble.update(tpl.preamble)
        filled, depth = [alias.get(n, n) if n else n for n in operand_names], 0
        for k, operand in enumerate(operand_names):
            if operand not in deferred:
                continue
            text, d = deferred.pop(operand)
            if k in tpl.repeated:
                lines.append(f"{operand} = {text}")
            else:
                filled[k] = f"({text})"
                depth = max(depth, d)
        text = tpl.fill(filled)
        if uses.get(id(node), 0) == 1 and depth < MAX_INLINE_DEPTH:
            deferred[name] = (text, depth + 1)
        else:
            lines.append(f"{name} = {text}")

    def name_of(node):
        name = prog.name_of(node)
        return alias.get(name, name)

    keep = {name_of(o) for o in results}
    lines = _release_temporaries(lines, prog, keep)
    items = [_output_code(o, name_of, backend, cache.printer, s)
             for o, s in zip(outputs, zero_shapes)]
    result = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if with_value is not None:
        value = _output_code(with_value, name_of, backend, cache.printer, with_value.shape)
        result = f"{value}, {result}"
    lines.append(f"return {result}")
    return lines


@gc_paused
def build_source(outputs, inputs, backend, func_name="gradient", with_value=None,
                 zero_shapes=None, standalone=True, lazy_fallback=False):
    """Python source of a function of ``inputs`` returning the tuple ``outputs`` (None
    entries become zeros of ``zero_shapes``), or ``(value, outputs)`` with ``with_value``.
    Returns (source, constant arrays it refers to).

    A NumPy function of scalars runs plain ``math`` code and falls back to NumPy where
    math raises (log(-1), overflow), since NumPy and torch give nan and inf there. With
    ``lazy_fallback`` the NumPy version is kept as text and compiled on first need:
    Python's compiler is the slowest step for very long programs."""
    if zero_shapes is None:
        if any(o is None for o in outputs):
            raise ValueError("build_source: give zero_shapes when an output is None")
        zero_shapes = [o.shape for o in outputs]
    zero_shapes = list(zero_shapes)
    if len(zero_shapes) != len(outputs):
        raise ValueError(f"build_source: {len(outputs)} outputs but {len(zero_shapes)} "
                         "zero_shapes")
    targets = [o for o in outputs if o is not None]
    if with_value is not None:
        targets.append(with_value)
    prog = Program(targets, inputs, prefix="_t", local_arrays=backend == "torch")
    _check_dims_bound(prog, inputs)
    names = [x.name for x in inputs]
    body = [f"if len(args) != {len(inputs)}:",
            f"    raise ArgumentError('{func_name}() takes {len(inputs)} arguments "
            f"({', '.join(names)}), got %d' % len(args))"]
    if names:
        body.append(", ".join(names) + ("," if len(names) == 1 else "") + " = args")
    if backend == "torch":
        for n in names:
            body.append(f"if not isinstance({n}, torch.Tensor) or not {n}.is_floating_point():")
            body.append(f"    {n} = _real_tensor({n}, '{n}')")
        body.append(f"_dt, _dev = {names[0]}.dtype, {names[0]}.device" if names
                    else "_dt, _dev = torch.float64, torch.device('cpu')")
        for name, local in prog.array_locals.items():
            body.append(f"{local} = torch.as_tensor({name}, dtype=_dt if {name}.is_floating_point() else None, device=_dev)")
    body += _dims_code(inputs, backend)
    scalar_only = backend == "numpy" and all(not x.shape for x in inputs) and all(
        not node.shape for _, node, _ in prog.statements)
    preamble = {}   # helper definitions the statements use
    fallback = []
    if scalar_only:
        body.append("try:")
        body += ["    " + line for line in
                 _body_lines(prog, outputs, zero_shapes, with_value, "math", preamble)]
        body.append("except (ArithmeticError, ValueError):")
        if lazy_fallback:
            body.append("    return _numpy_fallback(*args)")
        else:
            body.append("    pass")
    numpy_body = []
    if backend == "numpy":
        numpy_body += [f"{x.name} = numpy.float64({x.name})" for x in inputs if not x.shape]
    numpy_body += _body_lines(prog, outputs, zero_shapes, with_value, backend, preamble)
    if scalar_only and lazy_fallback:
        unpack = ", ".join(names) + ("," if len(names) == 1 else "") + " = args"
        fallback_src = "\n".join(["def _numpy_fallback_impl(*args):", "    " + unpack]
                                 + ["    " + b for b in numpy_body]) + "\n"
        fallback = [f"_NUMPY_FALLBACK = {fallback_src!r}", "",
                    "def _numpy_fallback(*args):",
                    "    global _numpy_fallback",
                    "    exec(compile(_NUMPY_FALLBACK, '<symgrad-numpy-fallback>', 'exec'), "
                    "globals())",
                    "    _numpy_fallback = _numpy_fallback_impl",
                    "    return _numpy_fallback_impl(*args)", ""]
    else:
        body += numpy_body

    lines = []
    if standalone:
        lines += ["import math", "import numpy"] + (["import torch"] if backend == "torch" else [])
        lines += ["", "ArgumentError = ValueError"]
        for name, arr in prog.arrays.items():
            ctor = "torch.tensor" if backend == "torch" else "numpy.array"
            lines.append(f"{name} = {ctor}({arr.tolist()!r})")
    lines += [ARGUMENT_HELPERS[backend]] + list(preamble.values())
    lines += fallback
    lines += ["", f"def {func_name}(*args):"] + ["    " + b for b in body]
    return "\n".join(lines) + "\n", prog.arrays


_counter = itertools.count()
_sources = collections.deque()
MAX_SOURCES = 256


@gc_paused
def compile_function(outputs, inputs, backend, func_name="gradient", with_value=None,
                     zero_shapes=None):
    """Compile to a Python function whose globals hold only numpy, torch and math."""
    src, arrays = build_source(outputs, inputs, backend, func_name, with_value, zero_shapes,
                               standalone=False, lazy_fallback=True)
    namespace = {"numpy": numpy, "math": math, "ArgumentError": ArgumentError}
    if backend == "torch":
        import torch
        namespace["torch"] = torch
    if backend == "torch":
        arrays = {k: torch.from_numpy(numpy.array(v)) for k, v in arrays.items()}
    namespace.update(arrays)
    filename = f"<symgrad-{backend}-{next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    _sources.append(filename)
    if len(_sources) > MAX_SOURCES:  # tracebacks show recent code; old sources go
        linecache.cache.pop(_sources.popleft(), None)
    exec(compile(src, filename, "exec"), namespace)  # noqa: S102 - generated by us
    return namespace[func_name]
