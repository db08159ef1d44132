"""The torch backend: SymPy's torch printer extended to symgrad's formulas. Constants are
created with the dtype and device of the arguments (``_dt``, ``_dev``, bound by the
generated function), so the code runs wherever its arguments live."""
import numpy
import sympy

from ...core.optional import require_torch
from ..names import shape_code
from ..printers import ArrayPrinting, fold
from .base import Backend


class TorchPrinting(ArrayPrinting):
    """symgrad's additions to SymPy's torch printer (``torch_printer`` builds the class
    on first use: SymPy's torch printer imports torch)."""

    M = "torch"
    target = "torch"

    def _print_Add(self, expr, order=None):
        """``1 - t`` as ``torch.rsub(t, 1)``: a number on the left of a tensor operator
        goes through Python's reflected-operator fallback, several times slower for the
        small tensors of an unrolled recurrence (σ(x)(1 - σ(x)) in every gate)."""
        numbers = [a for a in expr.args if a.is_number]
        rest = [a for a in expr.args if not a.is_number]
        if len(numbers) == 1 and len(rest) == 1:
            coeff, term = rest[0].as_coeff_Mul()
            if coeff == -1 and not all(s.is_integer for s in term.free_symbols):
                return f"torch.rsub({self._print(term)}, {self._print(numbers[0])})"
        return super()._print_Add(expr, order)

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
        dims = base.is_number or all(v.is_integer for v in base.free_symbols)
        if e == 2 or e == -1 or abs(e) == sympy.S.Half or dims and e.is_Integer and e >= 0:
            return ArrayPrinting._print_Pow(self, expr)   # n**3 is a size: an int
        if dims:
            return (f"torch.pow(torch.as_tensor({self._print(base)}, dtype=_dt, device=_dev), "
                    f"{self._print(e)})")
        return f"torch.pow({self._print(base)}, {self._print(e)})"

    def _print_Abs(self, expr):
        return f"torch.abs({self._print(expr.args[0])})"

    def _print_sign(self, expr):
        return f"torch.sign({self._print(expr.args[0])})"

    def _print_log1p(self, expr):
        return f"torch.log1p({self._print(expr.args[0])})"

    def _print_expm1(self, expr):
        return f"torch.expm1({self._print(expr.args[0])})"

    def _print_Relational(self, expr):
        fn = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}[expr.rel_op]
        return f"torch.{fn}({self._print(expr.lhs)}, {self._print(expr.rhs)})"

    def _print_And(self, expr):
        return fold("torch.logical_and", [self._print(a) for a in expr.args])

    def _print_Or(self, expr):
        return fold("torch.logical_or", [self._print(a) for a in expr.args])

    def _print_Not(self, expr):
        return f"torch.logical_not({self._print(expr.args[0])})"


_printer_class = None


def torch_printer():
    """``TorchCodePrinter``: SymPy's torch printer with ``TorchPrinting``, built on first
    use so that ``import symgrad`` does not import torch."""
    global _printer_class
    if _printer_class is None:
        from sympy.printing.pytorch import TorchPrinter
        _printer_class = type("TorchCodePrinter", (TorchPrinting, TorchPrinter),
                              {"__doc__": TorchPrinting.__doc__, "__module__": __name__})
    return _printer_class


class TorchBackend(Backend):
    name = "torch"
    modules = ("math", "numpy", "torch")
    arrays_on_entry = True
    rolls_loops = True
    converts_first = True    # the prologue reads the first argument's dtype and device
    argument_helper = (
        "def _promoted(*tensors):\n"
        "    dtypes = [t.dtype for t in tensors if t.dim()] or [t.dtype for t in tensors]\n"
        "    dt = dtypes[0]\n"
        "    for d in dtypes[1:]:\n"
        "        dt = torch.promote_types(dt, d)\n"
        "    return dt\n\n\n"

        "def _real_tensor(value, name):\n"
        "    if isinstance(value, torch.Tensor):\n"
        "        if value.is_complex() or value.dtype == torch.bool:\n"
        "            raise ArgumentError('argument %s must be real numbers (float or int), "
        "got a tensor of dtype %s' % (name, value.dtype))\n"
        "        return value.to(torch.float64)\n"
        "    array = numpy.asarray(value)\n"
        "    if array.dtype.kind not in 'fiu':\n"
        "        raise ArgumentError('argument %s must be real numbers, got %s of dtype %s' "
        "% (name, type(value).__name__, array.dtype))\n"
        "    return torch.as_tensor(array, dtype=torch.float64)\n")

    def printer(self):
        return torch_printer()()

    def namespace(self):
        import math
        torch = require_torch('compile("torch")')
        return {"math": math, "numpy": numpy, "torch": torch}

    index_helpers = {"_index_tensor": (
        "def _index_tensor(value, name, kind):\n"
        "    t = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)\n"
        "    if (t.dtype != torch.bool) if kind == 'bool' else (t.dtype == torch.bool or "
        "t.is_floating_point() or t.is_complex()):\n"
        "        raise ArgumentError('argument %s must be %s, got dtype %s' % (name, "
        "'booleans (a bool tensor)' if kind == 'bool' else 'integers (an int64 tensor)', "
        "t.dtype))\n"
        "    return t if kind == 'bool' else t.long()")}

    def index_argument_lines(self, a):
        return [f"{a.code} = _index_tensor({a.code}, {a.label}, {a.node.kind!r})"]

    def argument_lines(self, a):
        n = a.code
        return [f"if not isinstance({n}, torch.Tensor) or not {n}.is_floating_point():",
                f"    {n} = _real_tensor({n}, {a.label})"]

    def ndim(self, name):
        return f"{name}.dim()"

    def prologue(self, names, arrays, args=()):
        if not names:
            lines = ["_dt, _dev = torch.float64, torch.device('cpu')"]
        elif len(names) == 1:
            lines = [f"_dt, _dev = {names[0]}.dtype, {names[0]}.device"]
        else:
            same = " == ".join(f"{n}.dtype" for n in names)
            together = ", ".join(names)
            lines = [f"_dt, _dev = {names[0]}.dtype, {names[0]}.device",
                     f"if not ({same}):",
                     f"    _dt = _promoted({together})",
                     f"    {together} = {', '.join(f'{n}.to(_dt)' for n in names)}"]
        for name, local in arrays.items():
            lines.append(f"{local} = torch.as_tensor({name}, dtype=_dt if "
                         f"{name}.is_floating_point() else None, device=_dev)")
        return lines

    def zeros(self, shape):
        return f"torch.zeros({shape_code(shape)}, dtype=_dt, device=_dev)"

    def copy(self, name):
        return f"{name}.clone()"

    def as_float(self, name, shape):
        return f"{name}.to(_dt, copy=True)"

    def scalar_output(self, value, printer):
        return f"torch.full((), {printer.doprint(value)}, dtype=_dt, device=_dev)"

    def array_constant(self, array):
        import torch
        return torch.from_numpy(numpy.array(array))

    def array_literal(self, array):
        """In the array's own dtype: torch.tensor of a list of floats is float32."""
        return f"torch.tensor(numpy.array({array.tolist()!r}, dtype={array.dtype.str!r}))"
