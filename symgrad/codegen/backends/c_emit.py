"""The Python side of ``compile("c")``: a function with the NumPy backend's argument
checks, dims and dtypes, whose statements are NumPy code and calls of C kernels (see
``c.py``). A program of scalars only gets a fast path first: Python floats in, one C call,
Python floats out, with the checked path behind it for anything else."""

from ...errors import ArgumentError, EvaluationError
from .. import source_lines
from ..names import dim_code, shape_code
from .c_build import CHUNK, load
from .c_gram import runtime as gram_runtime
from .c_printer import PRELUDE


def _size_code(shape):
    if not shape:
        return "1"
    return "*".join(f"({dim_code(d)})" for d in shape)


def _kernel_lines(k, shapes, python_floats):
    """Lines calling kernel ``k`` and binding its outputs. ``python_floats``: scalar
    results as Python floats (a program of scalars, as the NumPy backend's math code
    gives them) rather than NumPy float64 (as its array code does)."""
    args = [n if not shapes[n] else f"_p({n})" for n in k.externals] + _dim_args(k)
    out = f"_o{k.index}"
    if k.scalar:
        lines = [f"{out} = _new('double[{len(k.outputs)}]')" if python_floats
                 else f"{out} = numpy.empty({len(k.outputs)})"]
        buffer = out if python_floats else f"_p({out})"
        lines.append(f"_k{k.index}({', '.join(['1'] + args + [buffer])})")
        targets = ", ".join(k.outputs) + ("," if len(k.outputs) == 1 else "")
        lines.append(f"{targets} = {out}" if not python_floats else
                     f"{targets} = " + ", ".join(f"{out}[{j}]" for j in range(len(k.outputs)))
                     + ("," if len(k.outputs) == 1 else ""))
        return lines
    size = f"_n{k.index}"
    shape = shape_code(k.shape)
    lines = [f"{size} = {_size_code(k.shape)}",
             f"{out} = numpy.empty(({len(k.outputs)}, {size}))",
             f"if {size}:",
             f"    _k{k.index}({', '.join([size] + args + [f'_p({out})'])})"]
    lines += [f"{name} = {out}[{j}]" + ("" if len(k.shape) == 1 else f".reshape({shape})")
              for j, name in enumerate(k.outputs)]
    return lines


def _dim_args(k):
    """The dims a kernel reads, as the Python code binds them (``sgd_<name>`` in C)."""
    return [d[len("sgd_"):] for d in k.dims]


def _p_helper(ffi):
    import numpy

    def _p(value):
        return ffi.from_buffer("double[]", numpy.ascontiguousarray(value, dtype=numpy.float64))
    return _p


def build_hybrid(emit, prog, plan, outputs, inputs, func_name, with_value, zero_shapes,
                 kernel_c, numpy_backend, name, grams=None):
    """The compiled function of ``prog`` run as ``plan`` (``c._plan``): kernels built by
    ``kernel_c``, Gram products (``grams``: {statement name: ``c_gram.Gram``}) by the Gram
    kernel, the rest printed by ``numpy_backend``, checks from ``emit``."""
    grams = grams or {}
    Argument, Code, say = emit.Argument, emit.Code, emit.say
    items, kernels = plan
    shapes = {prog.name_of(x): x.shape for x in inputs}
    shapes.update({n: v.shape for n, v in zip(prog.arrays, prog.arrays.values())})
    shapes.update({s[0]: s[1].shape for s in prog.statements})
    decls, defs = [], []
    for k in kernels:
        decl, definition, k.dims = kernel_c(k, shapes)
        decls.append(decl)
        defs.append(definition)
    longest = max((min(len(k.statements), CHUNK) if k.scalar else len(k.statements)
                   for k in kernels), default=0)
    lib = ffi = None
    if kernels:
        lib, ffi = load("\n".join(decls), PRELUDE + "\n" + "\n".join(defs),
                        sum(len(k.statements) for k in kernels), longest)

    args = [Argument(x) for x in inputs]
    floats = [a for a in args if a.node.kind == "float"]
    all_scalar = (not prog.statements or all(not node.shape for _, node, _ in prog.statements)) \
        and all(not a.shape for a in args) and len(floats) == len(args) \
        and all(kind == "kernel" for kind, _ in items) and len(kernels) == 1

    templates = numpy_backend.templates
    printer = templates.printer
    preamble = {}
    results = [o for o in outputs]

    def body_lines(python_floats):
        lines = [] if python_floats else numpy_backend.body_prefix(floats)
        for kind, item in items:
            if kind == "kernel":
                lines += _kernel_lines(item, shapes, python_floats)
                continue
            stmt_name, node, operands = item
            if stmt_name in grams:
                lines.append(grams[stmt_name].line())
                continue
            tpl = templates.template(node, operands)
            preamble.update(tpl.preamble)
            lines.append(f"{stmt_name} = {tpl.fill(operands)}")
        return lines

    # an all-scalar program returns Python floats, as the NumPy backend's math code does
    returns = emit.internal("math") if all_scalar else numpy_backend

    ids = emit._ids_memo(inputs)

    def result_code(name_of):
        return emit.results_code(results, zero_shapes, with_value, name_of, returns,
                                 printer, ids)

    unpack = ", ".join(a.code for a in args) + ("," if len(args) == 1 else "") + " = args"
    names = ", ".join(x.name for x in inputs)
    count = say(f"{name}() takes {len(inputs)} arguments ({names}), got ", Code("len(args)"))
    head = [f"if len(args) != {len(inputs)}:", f"    raise ArgumentError({count})"]
    if args:
        head.append(unpack)
    arrays = {n: n for n in prog.arrays}
    head += emit._arguments_code(args, numpy_backend, arrays, preamble)
    head += emit._dim_checks(prog, inputs)
    body = body_lines(all_scalar)
    body.append(f"return {numpy_backend.result(result_code(prog.name_of), floats)}")
    checked = head + emit._translated_errors(body, name)

    src = [numpy_backend.argument_helper]
    fast = []
    if all_scalar and args:
        (k,) = kernels
        slot = {n: j for j, n in enumerate(k.outputs)}
        fast_of = lambda node: (f"_o[{slot[prog.name_of(node)]}]"   # noqa: E731
                                if prog.name_of(node) in slot else prog.name_of(node))
        test = " and ".join(f"type({a.code}) is float" for a in args)
        call = ", ".join(["1"] + list(k.externals) + _dim_args(k) + ["_o"])
        fast = [f"if len(args) == {len(args)}:", "    " + unpack, f"    if {test}:",
                f"        _o = _new('double[{len(k.outputs)}]')",
                f"        _k0({call})",
                f"        return {result_code(fast_of)}"]
    src += list(preamble.values())
    if fast:
        src += ["", "def _checked(*args):"] + ["    " + line for line in checked]
        src += ["", f"def {name}(*args):"] + ["    " + line for line in fast]
        src += ["    return _checked(*args)"]
    else:
        src += ["", f"def {name}(*args):"] + ["    " + line for line in checked]
    text = "\n".join(src) + "\n"

    namespace = numpy_backend.namespace()
    namespace.update({"ArgumentError": ArgumentError, "EvaluationError": EvaluationError})
    if ffi is not None:
        namespace.update({"_new": ffi.new, "_p": _p_helper(ffi)})
    if grams:
        namespace["_gram"] = gram_runtime()
    namespace.update(prog.arrays)
    for k in kernels:
        namespace[f"_k{k.index}"] = getattr(lib, f"sg_k{k.index}")
    fn = source_lines.define(text, namespace, name, "c")
    fn.__symgrad_c_source__ = PRELUDE + "\n" + "\n".join(defs) + (
        f"\n/* {', '.join(grams)}: symgrad's Gram kernel, c_gram_src.source() */\n"
        if grams else "")
    return fn
