"""The Numba backend's pipeline (``backends.numba`` says what the code is): the program
cut into kernels and NumPy statements (``backends.numba_kernels``), the kernels written
to a file in the cache directory named by a hash of their source and imported from
there (Numba's cache needs a real file), compiled for their argument types at once (a
kernel Numba cannot compile makes its ops run as NumPy instead), and the outer function
assembled from ``emit``'s argument checks and error translation."""
import importlib.util
import os
import sys
import threading
import warnings

import numpy

from ..core.build import gc_paused
from ..core.user_cache import cache_folder, write_atomically
from ..core.opdef import OPS
from ..core.program import Program
from ..errors import ArgumentError, EvaluationError
from .backends import internal, numba_kernels as nk, rolled_native
from . import source_lines
from .backends.numba import require_numba
from .emit import (Argument, Code, _arguments_code, _check_dims_bound, _dim_checks,
                   _ids_memo, _translated_errors, results_code, say,
                   scatter_accumulations)
from .names import code_name, is_plain
from .reassociate import for_code

MAX_ATTEMPTS = 6
_lock = threading.Lock()


def cache_dir():
    """Where kernel sources (and Numba's cache beside them) live."""
    return cache_folder("numba")


def load_module(src):
    """The module of kernel source ``src``, written once to the cache directory under a
    hash of the source and imported from there."""
    import hashlib
    digest = hashlib.sha256(src.encode()).hexdigest()[:24]
    name = f"symgrad_numba_{digest}"
    module = sys.modules.get(name)
    if module is not None:
        return module
    path = os.path.join(cache_dir(), f"k{digest}.py")
    if not os.path.exists(path):
        write_atomically(path, src)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def _numba_type(numba, node):
    """The Numba type of a value the program computes or takes (arrays are passed
    C-contiguous: a kernel compiled for one layout only is compiled once)."""
    dtype = {"bool": numba.boolean, "int": numba.int64}.get(node.kind, numba.float64)
    if not node.shape:
        return dtype
    return numba.types.Array(dtype, len(node.shape), "C")


@gc_paused
def compile_function(backend, outputs, inputs, func_name="gradient", with_value=None,
                     zero_shapes=None):
    """``outputs`` as a function of ``inputs`` for the Numba backend (see
    ``codegen.compile.compile_function``)."""
    numba = require_numba()
    exclude = set()
    for _ in range(MAX_ATTEMPTS):
        built = build(backend, outputs, inputs, func_name, with_value, zero_shapes, exclude)
        src, kernel_src, arrays, types, where = built
        with _lock:
            module = load_module(kernel_src)
            failed = _compile_kernels(numba, module, types)
        if not failed:
            break
        for seg_ops in failed:
            new = {op for op in seg_ops if op not in nk.CORE} or set(seg_ops)
            exclude |= new
            if len(new) == 1:   # the one op to blame: NumPy runs it from now on
                nk.learned.update(op for op in new if op not in nk.CORE)
    else:
        src, kernel_src, arrays, types, where = build(
            backend, outputs, inputs, func_name, with_value, zero_shapes, None)
        module = load_module(kernel_src)
    namespace = backend.namespace()
    namespace["ArgumentError"] = ArgumentError
    namespace["EvaluationError"] = EvaluationError
    namespace.update({n: getattr(module, n) for n in types})
    namespace.update(arrays)
    name = func_name if is_plain(func_name) else "gradient"
    fn = source_lines.define(src, namespace, name, "numba")
    fn.__doc__ = where
    return fn


def source(backend, outputs, inputs, func_name="gradient", with_value=None, zero_shapes=None):
    """The outer function and its kernel module, as one text (for reading: the
    kernels are imported from the cache file named in its first line)."""
    require_numba()
    src, kernel_src, _, _, _ = build(backend, outputs, inputs, func_name, with_value,
                                     zero_shapes, set())
    return kernel_src + "\n\n# ----- outer function -----\n\n" + src


def build(backend, outputs, inputs, func_name, with_value, zero_shapes, exclude):
    """(outer source, kernel module source, {captured name: array},
    {kernel name: argument types}, docstring)."""
    numba = require_numba()
    if zero_shapes is None:
        zero_shapes = [o.shape for o in outputs]
    zero_shapes = list(zero_shapes)
    outputs, with_value = for_code(outputs, with_value, inputs)
    targets = [o for o in outputs if o is not None]
    if with_value is not None:
        targets.append(with_value)
    prog = Program(targets, inputs, prefix="_t", array_name=lambda node, k: f"_c{k}",
                   input_name=lambda x: code_name(x.name))
    arrays = {n: numpy.ascontiguousarray(v) for n, v in prog.arrays.items()}
    _check_dims_bound(prog, inputs)
    args = [Argument(x) for x in inputs]
    if not is_plain(func_name):
        func_name = "gradient"
    unpack = ", ".join(a.code for a in args) + ("," if len(args) == 1 else "") + " = args"
    names = ", ".join(x.name for x in inputs)
    count = say(f"{func_name}() takes {len(inputs)} arguments ({names}), got ",
                Code("len(args)"))
    body = [f"if len(args) != {len(inputs)}:", f"    raise ArgumentError({count})"]
    if args:
        body.append(unpack)
    preamble = {}
    body += _arguments_code(args, backend, {}, preamble)
    body += _dim_checks(prog, inputs)
    floats = [a for a in args if a.node.kind == "float"]
    for a in args:   # kernels are compiled for C-contiguous float64 arrays
        if a.shape and a.node.kind == "float":
            body += [f"if {a.code}.dtype is not _FLOAT64 or not {a.code}.flags.c_contiguous:",
                     f"    {a.code} = numpy.ascontiguousarray({a.code}, dtype=_FLOAT64)"]
        elif a.node.kind != "float" and a.shape:
            body += [f"{a.code} = numpy.ascontiguousarray({a.code})"]
        elif a.node.kind != "float":   # a 0-d id or flag: the kernel takes a scalar
            body += [f"{a.code} = {'bool' if a.node.kind == 'bool' else 'int'}({a.code})"]
    computing = len(body)

    if exclude is None:   # every attempt failed: NumPy only
        numba_side = lambda node: False  # noqa: E731
    else:
        numba_side = lambda node: not nk.numpy_only(node) and node.op not in exclude  # noqa: E731,E501
    steps = nk.split(prog, numba_side)
    results = {prog.name_of(t) for t in targets}
    later_reads = _later_reads(steps, results)
    dims = nk.dim_names(inputs)
    elements, kernel_arrays = backend.caches()
    numpy_cache = backend.templates
    node_of = {name: node for name, node, _ in prog.statements}
    inputs_named = {prog.name_of(x) for x in inputs}
    node_of.update({prog.name_of(x): x for x in inputs})
    kernel_lines = ["import math", "import numpy", "import numba", ""]
    kernel_preamble = {}
    kernels = []
    types = {}
    in_numba, in_numpy = set(), set()
    if any(not isinstance(s, nk.Segment) for s in steps):
        body += backend.body_prefix(floats)
    for k, step in enumerate(steps):
        if not isinstance(step, nk.Segment):
            name, node, operands = step
            in_numpy.add(node.op)
            body += _numpy_statement(name, node, operands, numpy_cache, preamble, backend)
            continue
        in_numba.update(node.op for _, node, _ in step.statements)
        own = {id(node) for _, node, _ in step.statements}
        fused = {key: value for key, value in scatter_accumulations(
            prog, targets).items() if key in own and id(value[0]) in own
            and id(value[1]) in own}
        writer = nk.KernelWriter(elements, kernel_arrays, fused)
        kargs, kouts = nk.kernel_names(step, dims, later_reads[k])
        lines = writer.body(step.statements, set(kouts), prog)
        kernel_preamble.update(writer.preamble)
        returned = "(" + ", ".join(kouts) + ("," if len(kouts) == 1 else "") + ")"
        kernels += ["", "", "@numba.njit(cache=True, error_model='numpy')",
                    f"def {step.kernel}({', '.join(kargs)}):"]
        kernels += ["    " + line for line in lines] + [f"    return {returned}"]
        types[step.kernel] = (tuple(_arg_type(numba, n, node_of, arrays) for n in kargs),
                              {node.op for _, node, _ in step.statements})
        assigned = ", ".join(kouts) + ("," if len(kouts) == 1 else "")
        passed = [f"numpy.ascontiguousarray({n})" if n in node_of and n not in inputs_named
                  and node_of[n].shape else n for n in kargs]
        call = f"{step.kernel}({', '.join(passed)})"
        body.append(f"{assigned} = {call}" if kouts else call)

    def name_of(node):
        return prog.name_of(node)
    printer = numpy_cache.printer
    # a program of scalars returns Python floats, as the NumPy backend's math code does
    scalars = len(floats) == len(inputs) and not any(x.shape for x in inputs) and not any(
        node.shape for _, node, _ in prog.statements)
    returns = internal("math") if scalars else backend
    ids = _ids_memo(inputs)
    result = results_code(outputs, zero_shapes, with_value, name_of, returns, printer, ids)
    body.append(f"return {backend.result(result, floats)}")
    body = body[:computing] + _translated_errors(body[computing:], func_name)

    for helper, text in kernel_preamble.items():
        kernel_lines.append(text)
        if text.lstrip().startswith("def "):
            kernel_lines.append(f"{helper} = numba.njit(cache=True, "
                                f"error_model='numpy')({helper})")
    kernel_src = "\n".join(kernel_lines + kernels) + "\n"
    lines = [backend.argument_helper] + list(preamble.values())
    lines += ["", f"def {func_name}(*args):"] + ["    " + b for b in body]
    where = (f"{func_name}: compiled for numba. Ops in Numba kernels: "
             f"{', '.join(sorted(in_numba)) or 'none'}; ops run by NumPy: "
             f"{', '.join(sorted(in_numpy)) or 'none'}.")
    return "\n".join(lines) + "\n", kernel_src, arrays, types, where




def _arg_type(numba, name, node_of, arrays):
    if name in arrays:
        return numba.typeof(arrays[name])
    node = node_of.get(name)
    if node is None:     # a dim
        return numba.int64
    return _numba_type(numba, node)


def _later_reads(steps, results):
    """Per step, the names that steps after it or the result read."""
    out = [None] * len(steps)
    reads = set(results)
    for k in range(len(steps) - 1, -1, -1):
        out[k] = set(reads)
        step = steps[k]
        stmts = step.statements if isinstance(step, nk.Segment) else [step]
        for _, _, operands in stmts:
            reads.update(n for n in operands if n)
    return out


def _numpy_statement(name, node, operands, cache, preamble, backend):
    """A statement run by NumPy in the outer function."""
    opdef = OPS[node.op]
    if opdef.scatter:
        value = operands[0] or cache.printer.doprint(node.inputs[0].attrs["value"])
        return [f"{name} = {backend.zeros(node.shape)}",
                f"{name}[{opdef.scatter(cache.printer, node.attrs)}] = {value}"]
    tpl = cache.template(node, operands)
    preamble.update(tpl.preamble)
    return [f"{name} = {tpl.fill(operands)}"]


def _compile_kernels(numba, module, types):
    """Compile each kernel for its argument types now (or load it from Numba's cache);
    the ops of each kernel that failed."""
    failed = []
    for name, (sig, ops) in types.items():
        kernel = getattr(module, name)
        try:
            with warnings.catch_warnings():   # '@' on a strided view: still right
                warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
                kernel.compile(sig)
        except Exception:   # TypingError, LoweringError, UnsupportedError, ...
            failed.append(ops)
    return failed


class Rolled:
    """A rolled gradient of scalars (``codegen.rolled``) as one ``@numba.njit`` function
    with loops (``backends.rolled_native``) in a module of its own, and the Python
    function around it."""

    @staticmethod
    def build(backend, emit, body, func_name, with_value):
        """(kernel module source, outer source, its name)."""
        require_numba()
        elements, _ = backend.caches()
        helpers = {}
        lines, _, _ = rolled_native.function_lines(
            body, elements, rolled_native.PythonSyntax(), with_value, helpers)
        module = ["import math", "import numpy", "import numba", ""]
        for helper, text in helpers.items():
            module.append(text)
            if text.lstrip().startswith("def "):
                module.append(f"{helper} = numba.njit(cache=True, "
                              f"error_model='numpy')({helper})")
        module += ["", "", "@numba.njit(cache=True, error_model='numpy')"] + lines
        name = func_name if is_plain(func_name) else "gradient"
        call = [f"_o = _k({', '.join(emit.Argument(x).code for x in body.plan.inputs)})"]
        outer = rolled_native.wrapper_source(emit, body, backend, name, call, with_value)
        return "\n".join(module) + "\n", outer, name

    @staticmethod
    def compile(backend, emit, body, func_name, with_value):
        """The compiled function, or None when Numba cannot compile the kernel (the NumPy
        backend's loops then run it)."""
        numba = require_numba()
        kernel_src, outer, name = Rolled.build(backend, emit, body, func_name, with_value)
        with _lock:
            module = load_module(kernel_src)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    module.sg_r.compile((numba.float64,) * len(body.plan.inputs))
            except Exception:   # noqa: BLE001 - any failure of Numba's: NumPy runs it
                return None
        namespace = backend.namespace()
        namespace.update({"ArgumentError": ArgumentError, "EvaluationError": EvaluationError,
                          "_k": module.sg_r})
        return source_lines.define(outer, namespace, name, "numba")

    @staticmethod
    def source(backend, emit, body, func_name, with_value):
        """The kernel module and the outer function, as one text (for reading)."""
        kernel_src, outer, _ = Rolled.build(backend, emit, body, func_name, with_value)
        return kernel_src + "\n\n# ----- outer function (_k is sg_r) -----\n\n" + outer
