"""The C backend, ``compile("c")``: native code for the elementwise parts of a program,
NumPy for the rest, with the NumPy backend's signature, checks, dtypes and results.

What runs natively: every pointwise op with a C form (``c_printer``: arithmetic, powers,
exp/log/trig/hyperbolic functions, erf/erfc, abs, sign, maximum/minimum, comparisons and
logic, where, clamp, relu/sigmoid/softplus/logaddexp/hypot, rounding, fmod/remainder,
nextafter) on scalars and on arrays whose operands have the op's own shape or are scalars.
Consecutive such statements of one shape are fused into one C loop over the elements
(a *kernel*), however long the chain; a program of scalars only becomes one C function
called directly through cffi (about a microsecond per call). Symmetric weighted Gram
products ``Xᵀ diag(w) X`` (the Hessians of generalised linear models, Gauss–Newton
``Jᵀ J``) run natively too, as calls of one kernel (``c_gram``). Everything else
(reductions, other products, reshapes and slices, gathers and scatters, decompositions,
sorting, convolutions, broadcasting between different shapes, ops without a C form)
runs as the NumPy backend's code between the kernels: the compiled function is a hybrid,
so every program the NumPy backend compiles compiles here too.

Kernels compute in double; arrays reach them as contiguous float64 (converted if they
are not) and results take the arguments' dtype as the NumPy backend's do. A program with
no native part is the NumPy backend's function itself. The C source of a program is built
once per source text (``c_build``: cffi's API mode, the system compiler, a disk cache).
"""
import re

from sympy.printing.codeprinter import PrintMethodNotImplementedError

from ...core.build import gc_paused
from ...core.opdef import OPS
from ...core.program import Program, TemplateCache
from ...core.shapes import shapes_equal
from ...errors import RegistryError
from ..names import code_name, is_plain
from ..reassociate import for_code
from . import c_gram
from .base import Backend
from .c_build import CHUNK, CompilerError  # noqa: F401 - CompilerError: compile("c") without a compiler
from . import c_rolled, rolled_native
from .c_emit import build_hybrid
from .c_printer import CCodePrinter
from .numpy import NumpyBackend

_NUMPY = NumpyBackend()
_TEMPLATES = None


def _c_templates():
    global _TEMPLATES
    if _TEMPLATES is None:
        _TEMPLATES = TemplateCache(CCodePrinter(), float_constants=True)
    return _TEMPLATES


NATIVE_KINDS = ("float", "bool")


class Kernel:
    """Fused statements of one shape: one C loop (or one C function for scalars)."""

    def __init__(self, index, shape):
        self.index = index
        self.shape = shape
        self.statements = []    # (name, node, operand names, C template)
        self.members = set()    # names computed here
        self.externals = []     # names read from outside, in order
        self.outputs = []       # names the rest of the program (or the result) needs

    @property
    def scalar(self):
        return not self.shape


def _native_statements(prog, statements):
    """{name: C template} of the ``statements`` (the program's, in order) that can run in
    C (see the module docstring); a boolean value stays inside C only when every reader is
    C too."""
    cache = _c_templates()
    native = {}
    for name, node, operands in statements:
        opdef = OPS[node.op]
        if not opdef.pointwise or node.kind not in NATIVE_KINDS:
            continue
        if any(n is not None and (i.kind not in NATIVE_KINDS or i.shape and not
                                  shapes_equal(i.shape, node.shape))
               for i, n in zip(node.inputs, operands)):
            continue
        try:
            native[name] = cache.template(node, operands)
        except (PrintMethodNotImplementedError, RegistryError, KeyError, TypeError,
                ValueError, AttributeError):
            continue
    readers = {}
    for name, node, operands in statements:
        for n in operands:
            if n is not None:
                readers.setdefault(n, []).append(name)
    results = {prog.name_of(o) for o in prog.outputs if o is not None}
    changed = True
    while changed:
        changed = False
        for name, node, _ in statements:
            if name in native and node.kind == "bool" and (
                    name in results or any(r not in native for r in readers.get(name, ()))):
                del native[name]
                changed = True
    return native


def _plan(prog, native, statements):
    """The program (its ``statements``) as a list of ("numpy", statement) and ("kernel",
    Kernel) in an order that respects every dependency: a kernel collects the native
    statements of its shape; NumPy statements that read it wait until a native statement
    needs one of theirs (or the program ends), and the kernel is emitted before them. An
    array kernel of one statement becomes NumPy code again."""
    items, open_kernels, owner = [], [], {}
    deferred, deferred_names = [], set()   # NumPy statements waiting for an open kernel

    def close(kernel):
        open_kernels.remove(kernel)
        items.append(("kernel", kernel))

    def flush():
        """The waiting NumPy statements, after the kernels they read."""
        needed = {owner[n] for _, _, ops in deferred for n in ops if n in owner}
        for k in [k for k in open_kernels if k in needed]:
            close(k)
        items.extend(("numpy", st) for st in deferred)
        deferred.clear()
        deferred_names.clear()

    for statement in statements:
        name, node, operands = statement
        needed = {owner[n] for n in operands if n is not None and n in owner}
        waits = any(n in deferred_names for n in operands if n is not None)
        if name not in native:
            # a NumPy statement reading an open kernel waits, so that later native
            # statements independent of it still join that kernel (one pass over memory)
            if waits or any(k in open_kernels for k in needed):
                deferred.append(statement)
                deferred_names.add(name)
            else:
                items.append(("numpy", statement))
            continue
        if waits:
            flush()
        kernel = next((k for k in open_kernels if shapes_equal(k.shape, node.shape)), None)
        for k in [k for k in open_kernels if k in needed and k is not kernel]:
            close(k)
        if kernel is None:
            kernel = Kernel(len([i for i in items if i[0] == "kernel"]) + len(open_kernels),
                            node.shape)
            open_kernels.append(kernel)
        kernel.statements.append((name, node, operands, native[name]))
        kernel.members.add(name)
        owner[name] = kernel
    flush()
    for k in list(open_kernels):
        close(k)
    # one array op alone gains nothing in C over NumPy's own loop: it stays NumPy code
    items = [("numpy", k.statements[0][:3]) if kind == "kernel" and not k.scalar
             and len(k.statements) == 1 else (kind, k) for kind, k in items]
    kernels = [k for kind, k in items if kind == "kernel"]
    for i, k in enumerate(kernels):
        k.index = i
    readers = {}
    for kind, item in items:
        reads = ([n for n in item[2] if n is not None] if kind == "numpy" else
                 [n for _, _, ops, _ in item.statements for n in ops if n is not None])
        for n in reads:
            readers.setdefault(n, set()).add(id(item))
    results = {prog.name_of(o) for o in prog.outputs if o is not None}
    for k in kernels:
        seen = set()
        for _, _, operands, _ in k.statements:
            for n in operands:
                if n is not None and n not in k.members and n not in seen:
                    seen.add(n)
                    k.externals.append(n)
        k.outputs = [name for name, _, _, _ in k.statements
                     if name in results or readers.get(name, set()) - {id(k)}]
    return items, kernels


def _kernel_c(k, shapes):
    """(declaration, definition, dims) of kernel ``k``; ``shapes``: {name: shape} of values."""
    if k.scalar and len(k.statements) > CHUNK:
        return _chunked_kernel_c(k)
    names, params = {}, ["long n"]
    for j, n in enumerate(k.externals):
        if shapes[n]:
            names[n] = f"a{j}[i]"
            params.append(f"const double *restrict a{j}")
        else:
            names[n] = f"s{j}"
            params.append(f"double s{j}")
    dims = sorted({d for _, _, _, tpl in k.statements for d in _dims_in(tpl)})
    params += [f"double {d}" for d in dims]
    params.append("double *restrict out")
    body = []
    for j, (name, node, operands, tpl) in enumerate(k.statements):
        text = tpl.fill([names[n] if n is not None else None for n in operands])
        body.append(f"        const double t{j} = {text};")
        names[name] = f"t{j}"
    slot = {name: j for j, name in enumerate(k.outputs)}
    for name in k.outputs:
        body.append(f"        out[{slot[name]}*n + i] = {names[name]};")
    signature = f"void sg_k{k.index}({', '.join(params)})"
    definition = (signature + " {\n    for (long i = 0; i < n; i++) {\n" + "\n".join(body)
                  + "\n    }\n}\n")
    return signature + ";", definition, dims


def _chunked_kernel_c(k):
    """A long scalar kernel as functions of CHUNK statements (``c_build``: the compiler's
    optimiser is superlinear in one function's length, so chunks keep -O2 affordable): a
    value read by a later chunk (or returned) lives in the array ``v``, allocated once per
    call, the others in locals."""
    chunk_of, last_reader = {}, {}
    for j, (name, _, operands, _) in enumerate(k.statements):
        chunk_of[name] = j // CHUNK
        for n in operands:
            if n is not None:
                last_reader[n] = max(last_reader.get(n, 0), j // CHUNK)
    slots = {n: i for i, n in enumerate(k.externals)}
    for name, _, _, _ in k.statements:
        if name in k.outputs or last_reader.get(name, -1) > chunk_of[name]:
            slots[name] = len(slots)
    dims = sorted({d for _, _, _, tpl in k.statements for d in _dims_in(tpl)})
    functions = []
    for c in range((len(k.statements) + CHUNK - 1) // CHUNK):
        local, body = {}, []
        for j, (name, node, operands, tpl) in enumerate(
                k.statements[c * CHUNK:(c + 1) * CHUNK], start=c * CHUNK):
            text = tpl.fill([None if n is None else local.get(n, f"v[{slots.get(n)}]")
                             for n in operands])
            body.append(f"    const double t{j} = {text};")
            local[name] = f"t{j}"
            if name in slots:
                body.append(f"    v[{slots[name]}] = t{j};")
        params = ", ".join(["double *restrict v"] + [f"double {d}" for d in dims])
        functions.append(f"static void sg_k{k.index}_{c}({params}) {{\n" + "\n".join(body)
                         + "\n}\n")
    params = ["long n"] + [f"double s{j}" for j in range(len(k.externals))] + [
        f"double {d}" for d in dims] + ["double *restrict out"]
    signature = f"void sg_k{k.index}({', '.join(params)})"
    calls = "".join(f"    sg_k{k.index}_{c}({', '.join(['v'] + dims)});\n"
                    for c in range(len(functions)))
    main = (signature + " {\n"
            + f"    double *v = (double *)malloc({len(slots)} * sizeof(double));\n"
            + "".join(f"    v[{j}] = s{j};\n" for j in range(len(k.externals)))
            + calls
            + "".join(f"    out[{o}] = v[{slots[name]}];\n" for o, name in enumerate(k.outputs))
            + "    free(v);\n}\n")
    return signature + ";", "\n".join(functions) + "\n" + main, dims


def _dims_in(tpl):
    return set(re.findall(r"\bsgd_\w+\b", "".join(p for p in tpl.pieces
                                                     if isinstance(p, str))))


class CBackend(Backend):
    """``compile("c")``: see the module docstring."""

    name = "c"
    blas_threads = True      # the code between its kernels is NumPy's
    modules = ("math", "numpy")

    def printer(self):
        """The printer of the statements outside the kernels: NumPy's (the kernels' C
        comes from ``c_printer``)."""
        return _NUMPY.printer()

    def namespace(self):
        return _NUMPY.namespace()

    @gc_paused
    def compile_function(self, emit, numpy_function, outputs, inputs, func_name="gradient",
                         with_value=None, zero_shapes=None):
        """The compiled function (``codegen.compile`` passes the ``emit`` module, whose
        argument checks the function shares, and ``numpy_function()``, the NumPy
        backend's function, returned when nothing of the program runs in C)."""
        if zero_shapes is None:
            zero_shapes = [o.shape for o in outputs]
        zero_shapes = list(zero_shapes)
        outputs, with_value = for_code(outputs, with_value, inputs)
        targets = [o for o in outputs if o is not None]
        if with_value is not None:
            targets.append(with_value)
        prog = Program(targets, inputs, prefix="_t", array_name=lambda node, k: f"_c{k}",
                       input_name=lambda x: code_name(x.name))
        emit._check_dims_bound(prog, inputs)
        grams, dropped = c_gram.find(prog, prog.statements)
        statements = [(name, node, grams[name].operands if name in grams else operands)
                      for name, node, operands in prog.statements if name not in dropped]
        native = _native_statements(prog, statements)
        if not native and not grams:
            return numpy_function()
        return build_hybrid(emit, prog, _plan(prog, native, statements), outputs, inputs,
                            func_name, with_value, zero_shapes, _kernel_c, _NUMPY,
                            func_name if is_plain(func_name) else "gradient", grams)

    def rolls(self, plan):
        """A rolled gradient of scalars whose every statement has a C form is one C
        function with loops (``c_rolled``); one with arrays keeps its straight-line
        program, whose elementwise chains become C kernels."""
        return rolled_native.native(plan, _c_templates(), NATIVE_KINDS)

    def compile_rolled(self, emit, body, func_name, with_value, zero_shapes):
        return c_rolled.compile_rolled(emit, body, _NUMPY, _c_templates(),
                                       func_name if is_plain(func_name) else "gradient",
                                       with_value)

    def zeros(self, shape):
        return _NUMPY.zeros(shape)

    def copy(self, name):
        return _NUMPY.copy(name)

    def as_float(self, name, shape):
        return _NUMPY.as_float(name, shape)

