"""Code generation: NumPy, torch and plain-Python printers and compiled gradients.

The printers subclass SymPy's (``NumPyPrinter``, ``TorchPrinter``,
``PythonCodePrinter``) and add a ``_print_<Class>`` method for each symgrad class and for
SymPy classes whose stock printing is wrong for arrays (``Max`` on broadcast operands,
``erf`` without SciPy). A ``Program`` is printed statement by statement through
``TemplateCache``, then wrapped in a function that checks its arguments and binds the
symbolic dims from their shapes. The generated function refers only to NumPy/torch/math:
no symgrad objects, no tape.
"""
import itertools
import linecache
import math

import numpy
import sympy
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from . import sympy_funcs as sf
from .errors import ArgumentError
from .program import Program, TemplateCache
from .shapes import fmt_shape


def _has_scipy():
    try:
        import scipy.special  # noqa: F401
        return True
    except ImportError:
        return False


class _ArrayPrinterMixin:
    """Printing shared by the array backends; ``M`` is the module prefix."""

    M = "numpy"

    def _print(self, expr, **kwargs):
        if isinstance(expr, sympy.Expr) and not expr.is_Atom and expr.is_number:
            try:
                value = complex(expr.evalf())
            except (TypeError, ValueError):
                value = complex(math.nan)
            if value.imag == 0 and math.isfinite(value.real):
                return repr(value.real) if value.real >= 0 else f"({value.real!r})"
        return super()._print(expr, **kwargs)

    def _print_Float(self, expr):
        return repr(float(expr))

    def _print_Infinity(self, expr):
        return "math.inf"

    def _print_NegativeInfinity(self, expr):
        return "-math.inf"

    def _arg(self, expr, level="Atom"):
        return self.parenthesize(expr, PRECEDENCE[level], strict=level == "Atom")

    def _tuple(self, t):
        items = [self._print(v) for v in t]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def _print_Pow(self, expr, rational=False):
        base, e = expr.args
        if e == -1:
            return "1/" + self._arg(base, "Pow")
        if e == sympy.S.Half:
            return f"{self.M}.sqrt({self._print(base)})"
        if e == -sympy.S.Half:
            return f"1/{self.M}.sqrt({self._print(base)})"
        if e == 2:
            b = self._arg(base, "Pow")
            return f"({b}*{b})" if base.is_Atom else f"{b}**2"
        return self._arg(base, "Pow") + "**" + self._arg(e, "Pow")

    def _print_StopGradient(self, expr):
        return self._print(expr.args[0])

    def _print_MatmulOp(self, expr):
        a, b = expr.args
        return f"{self._arg(a, 'Mul')} @ {self._arg(b, 'Pow')}"


class NumpyCodePrinter(_ArrayPrinterMixin, NumPyPrinter):
    """SymPy's NumPy printer, extended to symgrad's classes."""

    M = "numpy"

    def __init__(self, settings=None):
        super().__init__(dict({"fully_qualified_modules": True}, **(settings or {})))
        self.preamble = {}

    def _print_Max(self, expr):
        args = [self._print(a) for a in expr.args]
        return self._fold("numpy.maximum", args)

    def _print_Min(self, expr):
        args = [self._print(a) for a in expr.args]
        return self._fold("numpy.minimum", args)

    @staticmethod
    def _fold(fn, args):
        out = args[0]
        for a in args[1:]:
            out = f"{fn}({out}, {a})"
        return out

    def _print_Abs(self, expr):
        return f"numpy.abs({self._print(expr.args[0])})"

    def _print_And(self, expr):
        return self._fold("numpy.logical_and", [self._print(a) for a in expr.args])

    def _print_Or(self, expr):
        return self._fold("numpy.logical_or", [self._print(a) for a in expr.args])

    def _print_erf(self, expr):
        if _has_scipy():
            self.preamble["_erf"] = "from scipy.special import erf as _erf"
        else:
            self.preamble["_erf"] = "_erf = numpy.vectorize(math.erf, otypes=[float])"
        return f"_erf({self._print(expr.args[0])})"

    def _print_sigmoid(self, expr):
        return f"numpy.exp(-numpy.logaddexp(0.0, -{self._arg(expr.args[0], 'Mul')}))"

    def _print_softplus(self, expr):
        return f"numpy.logaddexp(0.0, {self._print(expr.args[0])})"

    def _print_relu(self, expr):
        return f"numpy.maximum({self._print(expr.args[0])}, 0.0)"

    def _print_Where(self, expr):
        c, a, b = (self._print(x) for x in expr.args)
        return f"numpy.where({c}, {a}, {b})"

    def _print_Clamp(self, expr):
        x, lo, hi = expr.args
        lo = "None" if lo is sympy.S.NegativeInfinity else self._print(lo)
        hi = "None" if hi is sympy.S.Infinity else self._print(hi)
        return f"numpy.clip({self._print(x)}, {lo}, {hi})"

    def _print_AsFloat(self, expr):
        return f"numpy.where({self._print(expr.args[0])}, 1.0, 0.0)"

    def _print_SumOp(self, expr):
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"numpy.sum({self._print(x)})"
        return f"numpy.sum({self._print(x)}, axis={self._tuple(axes)}, keepdims={keep is sympy.true})"

    def _print_MeanOp(self, expr):
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"numpy.mean({self._print(x)})"
        return f"numpy.mean({self._print(x)}, axis={self._tuple(axes)}, keepdims={keep is sympy.true})"

    def _print_TransposeOp(self, expr):
        x, axes = expr.args
        if tuple(axes) == (1, 0):
            return f"{self._arg(x)}.T"
        return f"numpy.transpose({self._print(x)}, {self._tuple(axes)})"

    def _print_ReshapeOp(self, expr):
        return f"numpy.reshape({self._print(expr.args[0])}, {self._tuple(expr.args[1])})"

    def _print_SqueezeOp(self, expr):
        return f"numpy.squeeze({self._print(expr.args[0])}, axis={self._tuple(expr.args[1])})"

    def _print_UnsqueezeOp(self, expr):
        return f"numpy.expand_dims({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_BroadcastOp(self, expr):
        return f"numpy.broadcast_to({self._print(expr.args[0])}, {self._tuple(expr.args[1])})"

    def _print_FillOp(self, expr):
        shape, value = expr.args
        return f"numpy.full({self._tuple(shape)}, {self._print(value)}, dtype=numpy.float64)"

    def _print_ArraySymbol(self, expr):
        return expr.name


class _TorchPrinting(_ArrayPrinterMixin):
    """symgrad's additions to SymPy's torch printer (``TorchCodePrinter``). ``_dt`` and
    ``_dev`` are the dtype and device of the arguments, bound by the generated function."""

    M = "torch"

    def __init__(self, settings=None):
        super().__init__(settings)
        self.preamble = {}

    def _print_Max(self, expr):
        return self._minmax("torch.maximum", "min", expr)

    def _print_Min(self, expr):
        return self._minmax("torch.minimum", "max", expr)

    def _minmax(self, fn, bound, expr):
        tensors = [a for a in expr.args if not a.is_number]
        numbers = [a for a in expr.args if a.is_number]
        out = self._print(tensors[0])
        for a in tensors[1:]:
            out = f"{fn}({out}, {self._print(a)})"
        for a in numbers:
            out = f"torch.clamp({out}, {bound}={self._print(a)})"
        return out

    def _print_Pow(self, expr, rational=False):
        base, e = expr.args
        if e == 2 or e == -1 or abs(e) == sympy.S.Half:
            return _ArrayPrinterMixin._print_Pow(self, expr)
        if base.is_number:
            return f"torch.pow(torch.as_tensor({self._print(base)}, dtype=_dt, device=_dev), {self._print(e)})"
        return f"torch.pow({self._print(base)}, {self._print(e)})"

    def _print_Abs(self, expr):
        return f"torch.abs({self._print(expr.args[0])})"

    def _print_sign(self, expr):
        return f"torch.sign({self._print(expr.args[0])})"

    def _print_log1p(self, expr):
        return f"torch.log1p({self._print(expr.args[0])})"

    def _print_expm1(self, expr):
        return f"torch.expm1({self._print(expr.args[0])})"

    def _print_sigmoid(self, expr):
        return f"torch.sigmoid({self._print(expr.args[0])})"

    def _print_softplus(self, expr):
        x = self._print(expr.args[0])
        return f"torch.logaddexp({x}, torch.zeros_like({x}))"

    def _print_relu(self, expr):
        return f"torch.relu({self._print(expr.args[0])})"

    def _print_Where(self, expr):
        c, a, b = (self._print(x) for x in expr.args)
        if expr.args[1].is_number and expr.args[2].is_number:
            a = f"torch.as_tensor({a}, dtype=_dt, device=_dev)"
        return f"torch.where({c}, {a}, {b})"

    def _print_Clamp(self, expr):
        x, lo, hi = expr.args
        lo = "None" if lo is sympy.S.NegativeInfinity else self._print(lo)
        hi = "None" if hi is sympy.S.Infinity else self._print(hi)
        return f"torch.clamp({self._print(x)}, min={lo}, max={hi})"

    def _print_AsFloat(self, expr):
        return f"({self._print(expr.args[0])}).to(_dt)"

    def _print_StopGradient(self, expr):
        return f"{self._arg(expr.args[0])}.detach()"

    def _print_Relational(self, expr):
        fn = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}[expr.rel_op]
        return f"torch.{fn}({self._print(expr.lhs)}, {self._print(expr.rhs)})"

    def _print_And(self, expr):
        return NumpyCodePrinter._fold("torch.logical_and", [self._print(a) for a in expr.args])

    def _print_Or(self, expr):
        return NumpyCodePrinter._fold("torch.logical_or", [self._print(a) for a in expr.args])

    def _print_Not(self, expr):
        return f"torch.logical_not({self._print(expr.args[0])})"

    def _print_SumOp(self, expr):
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"torch.sum({self._print(x)})"
        return f"torch.sum({self._print(x)}, dim={self._tuple(axes)}, keepdim={keep is sympy.true})"

    def _print_MeanOp(self, expr):
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"torch.mean({self._print(x)})"
        return f"torch.mean({self._print(x)}, dim={self._tuple(axes)}, keepdim={keep is sympy.true})"

    def _print_TransposeOp(self, expr):
        x, axes = expr.args
        if tuple(axes) == (1, 0):
            return f"{self._arg(x)}.T"
        return f"torch.permute({self._print(x)}, {self._tuple(axes)})"

    def _print_ReshapeOp(self, expr):
        return f"torch.reshape({self._print(expr.args[0])}, {self._tuple(expr.args[1])})"

    def _print_SqueezeOp(self, expr):
        return f"torch.squeeze({self._print(expr.args[0])}, dim={self._tuple(expr.args[1])})"

    def _print_UnsqueezeOp(self, expr):
        return f"torch.unsqueeze({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_BroadcastOp(self, expr):
        return f"torch.broadcast_to({self._print(expr.args[0])}, {self._tuple(expr.args[1])})"

    def _print_FillOp(self, expr):
        shape, value = expr.args
        return f"torch.full({self._tuple(shape)}, {self._print(value)}, dtype=_dt, device=_dev)"

    def _print_ArraySymbol(self, expr):
        return f"torch.as_tensor({expr.name}, dtype=_dt, device=_dev)"


class MathCodePrinter(_ArrayPrinterMixin, PythonCodePrinter):
    """Plain Python floats and ``math``: the fastest code when every value is a scalar."""

    M = "math"

    def __init__(self, settings=None):
        super().__init__(dict({"fully_qualified_modules": True}, **(settings or {})))
        self.preamble = {}

    def _print_Pow(self, expr, rational=False):
        base, e = expr.args
        if e == -1 or abs(e) == sympy.S.Half or e == 2:
            return _ArrayPrinterMixin._print_Pow(self, expr)
        return self._arg(base, "Pow") + "**" + self._arg(e, "Pow")

    def _print_sigmoid(self, expr):
        return f"(1.0/(1.0 + math.exp(-{self._arg(expr.args[0], 'Mul')})))"

    def _print_softplus(self, expr):
        x = self._print(expr.args[0])
        return f"(max({x}, 0.0) + math.log1p(math.exp(-abs({x}))))"

    def _print_relu(self, expr):
        return f"max({self._print(expr.args[0])}, 0.0)"

    def _print_Where(self, expr):
        c, a, b = (self._print(x) for x in expr.args)
        return f"({a} if {c} else {b})"

    def _print_Clamp(self, expr):
        x, lo, hi = expr.args
        out = self._print(x)
        if lo is not sympy.S.NegativeInfinity:
            out = f"max({out}, {self._print(lo)})"
        if hi is not sympy.S.Infinity:
            out = f"min({out}, {self._print(hi)})"
        return out

    def _print_AsFloat(self, expr):
        return f"(1.0 if {self._print(expr.args[0])} else 0.0)"

    def _print_FillOp(self, expr):
        shape, value = expr.args
        if len(shape):
            raise ValueError("MathCodePrinter prints scalars only")
        return repr(float(value))


_torch_printer_class = None


def torch_printer_class():
    """``TorchCodePrinter``, built on first use: SymPy's torch printer imports torch,
    which ``import symgrad`` should not pay for."""
    global _torch_printer_class
    if _torch_printer_class is None:
        try:
            from sympy.printing.pytorch import TorchPrinter as base
        except ImportError:  # pragma: no cover - SymPy < 1.13
            base = NumPyPrinter
        _torch_printer_class = type("TorchCodePrinter", (_TorchPrinting, base),
                                    {"__doc__": _TorchPrinting.__doc__,
                                     "__module__": __name__})
    return _torch_printer_class


def __getattr__(name):
    if name == "TorchCodePrinter":
        return torch_printer_class()
    raise AttributeError(name)


PRINTERS = {"numpy": NumpyCodePrinter, "torch": lambda: torch_printer_class()(),
            "math": MathCodePrinter}
_template_caches = {}


def templates(backend):
    cache = _template_caches.get(backend)
    if cache is None:
        if backend not in PRINTERS:
            raise ArgumentError(f"unknown backend {backend!r}; choose 'numpy' or 'torch'")
        cache = _template_caches[backend] = TemplateCache(PRINTERS[backend]())
    return cache


# ----- function assembly ---------------------------------------------------------------

def _shape_tuple(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _dims_code(inputs, backend):
    """Lines that check each argument's rank and shape and bind the symbolic dims."""
    lines, bound = [], {}
    for x in inputs:
        name, shape = x.name, x.shape
        want = fmt_shape(shape)
        if backend == "numpy" and shape:
            lines.append(f"{name} = numpy.asarray({name})")
        ndim = f"numpy.ndim({name})" if backend == "numpy" else f"{name}.dim()"
        if backend == "numpy" and not shape:
            lines.append(f"if type({name}) is not float and {ndim} != 0:")
        else:
            lines.append(f"if {ndim} != {len(shape)}:")
        lines.append(f"    raise ArgumentError('argument {name} must have shape {want}, "
                     f"got shape %s' % (tuple(numpy.shape({name})),))")
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


def _zeros_code(shape, backend):
    if backend == "math":
        return "0.0"
    if backend == "numpy":
        return f"numpy.zeros({_shape_tuple(shape)})" if shape else "0.0"
    return f"torch.zeros({_shape_tuple(shape)}, dtype=_dt, device=_dev)"


def _output_code(node, prog, backend, printer, shape):
    """The returned expression for one output: a fresh array of the right shape."""
    if node is None:
        return _zeros_code(shape, backend)
    if node.op == "const":
        if not node.shape and backend == "math":
            return repr(float(node.attrs["value"]))
        if not node.shape and backend == "numpy":
            return printer.doprint(node.attrs["value"])
        return printer.doprint(sf.FillOp(sf.sym_tuple(node.shape), node.attrs["value"]))
    name = prog.name_of(node)
    if node.op in ("symbol", "broadcast_to", "array") and node.shape:
        return (f"numpy.array({name}, dtype=numpy.float64)" if backend == "numpy"
                else f"{name}.clone()")
    return name


def _body_lines(prog, outputs, zero_shapes, with_value, backend):
    cache = templates(backend)
    lines = [f"{name} = {cache.statement(node, operand_names)}"
             for name, node, operand_names in prog.statements]
    items = [_output_code(o, prog, backend, cache.printer, s) for o, s in zip(outputs, zero_shapes)]
    result = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if with_value is not None:
        value = _output_code(with_value, prog, backend, cache.printer, with_value.shape)
        result = f"{value}, {result}"
    lines.append(f"return {result}")
    return lines


def build_source(outputs, inputs, backend, func_name="gradient", with_value=None,
                 zero_shapes=None, standalone=True):
    """Python source of a function of ``inputs`` returning the tuple ``outputs`` (None
    entries become zeros of ``zero_shapes``), or ``(value, outputs)`` with ``with_value``.
    Returns (source, constant arrays it refers to)."""
    zero_shapes = list(zero_shapes) if zero_shapes is not None else [x.shape for x in inputs]
    targets = [o for o in outputs if o is not None]
    if with_value is not None:
        targets.append(with_value)
    prog = Program(targets, inputs, prefix="_t", local_arrays=backend == "torch")
    names = [x.name for x in inputs]
    body = [f"if len(args) != {len(inputs)}:",
            f"    raise ArgumentError('{func_name}() takes {len(inputs)} arguments "
            f"({', '.join(names)}), got %d' % len(args))"]
    if names:
        body.append(", ".join(names) + ("," if len(names) == 1 else "") + " = args")
    if backend == "torch":
        for n in names:
            body.append(f"{n} = {n} if isinstance({n}, torch.Tensor) else "
                        f"torch.as_tensor({n}, dtype=torch.float64)")
        body.append(f"_dt, _dev = {names[0]}.dtype, {names[0]}.device" if names
                    else "_dt, _dev = torch.float64, torch.device('cpu')")
        for name, local in prog.array_locals.items():
            body.append(f"{local} = torch.as_tensor({name}, dtype=_dt, device=_dev)")
    body += _dims_code(inputs, backend)
    scalar_only = backend == "numpy" and all(not x.shape for x in inputs) and all(
        not node.shape for _, node, _ in prog.statements)
    if scalar_only:
        # Plain floats and math first; on a domain error or overflow (where math raises
        # and NumPy/torch give nan or inf) fall through to the NumPy version.
        body.append("try:")
        body += ["    " + line for line in
                 _body_lines(prog, outputs, zero_shapes, with_value, "math")]
        body.append("except (ArithmeticError, ValueError):")
        body.append("    pass")
    if backend == "numpy":
        body += [f"{x.name} = numpy.float64({x.name})" for x in inputs if not x.shape]
    body += _body_lines(prog, outputs, zero_shapes, with_value, backend)

    lines = []
    if standalone:
        lines += ["import math", "import numpy"] + (["import torch"] if backend == "torch" else [])
        lines += ["", "ArgumentError = ValueError"]
        for name, arr in prog.arrays.items():
            ctor = "torch.tensor" if backend == "torch" else "numpy.array"
            lines.append(f"{name} = {ctor}({arr.tolist()!r})")
    preamble = dict(templates(backend).printer.preamble)
    lines += list(preamble.values())
    lines += ["", f"def {func_name}(*args):"] + ["    " + b for b in body]
    return "\n".join(lines) + "\n", prog.arrays


_counter = itertools.count()


def compile_function(outputs, inputs, backend, func_name="gradient", with_value=None,
                     zero_shapes=None):
    """Compile to a Python function whose globals hold only numpy, torch and math."""
    src, arrays = build_source(outputs, inputs, backend, func_name, with_value, zero_shapes,
                               standalone=False)
    namespace = {"numpy": numpy, "math": math, "ArgumentError": ArgumentError}
    if backend == "torch":
        import torch
        namespace["torch"] = torch
    if backend == "torch":
        arrays = {k: torch.from_numpy(numpy.array(v)) for k, v in arrays.items()}
    namespace.update(arrays)
    filename = f"<symgrad-{backend}-{next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), namespace)  # noqa: S102 - generated by us
    return namespace[func_name]
