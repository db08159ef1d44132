"""The NumPy backend: SymPy's NumPy printer extended to symgrad's formulas, arguments
converted to float64 arrays, and scalar programs run as plain ``math`` code with NumPy as
the fallback where ``math`` raises (log(-1), overflow), since NumPy gives nan and inf."""
import math

import numpy
from sympy.printing.numpy import NumPyPrinter

from ...core.ops.pointwise import has_scipy
from ..printers import ArrayPrinting, fold
from ..names import shape_code
from .base import Backend


class NumpyCodePrinter(ArrayPrinting, NumPyPrinter):
    """SymPy's NumPy printer, extended to symgrad's formulas."""

    M = "numpy"
    target = "numpy"

    def _print_Max(self, expr):
        return fold("numpy.maximum", [self._print(a) for a in expr.args])

    def _print_Min(self, expr):
        return fold("numpy.minimum", [self._print(a) for a in expr.args])

    def _print_Abs(self, expr):
        return f"numpy.abs({self._print(expr.args[0])})"

    def _print_sign(self, expr):
        """0 at nan, as torch.sign (NumPy's sign of nan is nan)."""
        return f"numpy.sign(numpy.nan_to_num({self._print(expr.args[0])}))"

    def _print_And(self, expr):
        return fold("numpy.logical_and", [self._print(a) for a in expr.args])

    def _print_Or(self, expr):
        return fold("numpy.logical_or", [self._print(a) for a in expr.args])

    def _print_erf(self, expr):
        if has_scipy():
            self.preamble["_erf"] = "from scipy.special import erf as _erf"
        else:
            self.preamble["_erf"] = "_erf = numpy.vectorize(math.erf, otypes=[float])"
        return f"_erf({self._print(expr.args[0])})"


# float64 promoted from arrays of different dtypes: equal to float64 but not the canonical
# dtype object, so ``_dt is _FLOAT64`` (no conversion needed) fails and every result is
# converted; a term of a float32 input alone is float32 in NumPy, float64 in torch
PROMOTED64 = numpy.dtype(numpy.float64).newbyteorder("=")


class NumpyBackend(Backend):
    name = "numpy"
    modules = ("math", "numpy")
    scalar_backend = "math"
    rolls_loops = True
    blas_threads = True
    argument_helper = (
        "def _real_array(value, name, array_param=False):\n"
        "    array = numpy.asarray(value)\n"
        "    if array.dtype.kind not in 'fiu':\n"
        "        raise ArgumentError('argument %s must be real numbers (float or int), got "
        "%s of dtype %s' % (name, type(value).__name__, array.dtype))\n"
        "    if array.dtype.kind != 'f':\n"
        "        array = array.astype(numpy.float64)\n"
        "    return array if array.ndim or array_param else float(array)\n\n\n"
        "def _scalar_dtype(values):\n"
        "    dt = None\n"
        "    for v in values:\n"
        "        d = getattr(v, 'dtype', None)\n"
        "        if d is not None and not isinstance(d, numpy.dtype):\n"
        "            d = numpy.asarray(v).dtype\n"
        "        d = d if d is not None and d.kind == 'f' else _FLOAT64\n"
        "        dt = d if dt is None else numpy.promote_types(dt, d)\n"
        "    return _FLOAT64 if dt is None or dt == _FLOAT64 else dt\n\n\n"
        "def _promoted(*arrays):\n"
        "    dt = numpy.result_type(*arrays)\n"
        "    return _PROMOTED64 if dt is _FLOAT64 else dt\n\n\n"
        "def _in_dtype(dt, values):\n"
        "    if type(values) is tuple:\n"
        "        return tuple(_in_dtype(dt, v) for v in values)\n"
        "    return numpy.asarray(values, dtype=_FLOAT64 if dt is _PROMOTED64 else dt)[()]\n")

    def printer(self):
        return NumpyCodePrinter()

    def namespace(self):
        return {"numpy": numpy, "math": math, "_FLOAT64": numpy.dtype(numpy.float64),
                "_PROMOTED64": PROMOTED64}

    def argument_lines(self, a):
        name = a.code
        if a.shape:
            return [f"if type({name}) is not numpy.ndarray or {name}.dtype.kind != 'f':",
                    f"    {name} = _real_array({name}, {a.label}, True)"]
        message = repr(f"argument {a.node.name} must have shape (), got shape ")
        return [f"if type({name}) is not float:",
                "    _dt = _scalar_dtype(args) if _dt is _FLOAT64 else _dt",
                f"    {name} = _real_array({name}, {a.label})",
                f"    if type({name}) is not float:",
                f"        raise ArgumentError({message} + str(tuple({name}.shape)))"]

    index_helpers = {"_index_array": (
        "def _index_array(value, name, kind):\n"
        "    array = numpy.asarray(value)\n"
        "    if (array.dtype != bool) if kind == 'bool' else (array.dtype.kind not in 'iu'):\n"
        "        raise ArgumentError('argument %s must be %s, got dtype %s' % (name, "
        "'booleans (a bool array)' if kind == 'bool' else 'integers (an int64 array)', "
        "array.dtype))\n"
        "    return array if kind == 'bool' else array.astype(numpy.int64, copy=False)")}

    def index_argument_lines(self, a):
        return [f"{a.code} = _index_array({a.code}, {a.label}, {a.node.kind!r})"]

    def entry_lines(self, args):
        """An all-scalar program takes its dtype from NumPy scalars among the arguments
        (``_scalar_dtype``; Python numbers count as float64), as torch from 0-d tensors."""
        return ["_dt = _FLOAT64"] if not args or any(not a.shape for a in args) else []

    def checks_shape(self, a):
        """Scalars are checked by their conversion already."""
        return bool(a.shape)

    def prologue(self, names, arrays, args=()):
        arrays_in = [a.code for a in args if a.shape]
        if not arrays_in:
            return []
        same = " is ".join(f"{n}.dtype" for n in arrays_in)
        if len(arrays_in) == 1:
            return [f"_dt = {arrays_in[0]}.dtype"]
        return [f"_dt = {arrays_in[0]}.dtype if {same} else "
                f"_promoted({', '.join(arrays_in)})"]

    def ready_lines(self, args):
        """float64 ndarrays need no conversion, and the result dtype is float64."""
        cond = " and ".join(f"type({a.code}) is numpy.ndarray and {a.code}.dtype is _FLOAT64"
                            for a in args)
        return cond, ["_dt = _FLOAT64"]

    def body_prefix(self, args):
        return [f"{a.code} = numpy.float64({a.code})" for a in args if not a.shape]

    def result(self, expr, args):
        if not args:
            return expr
        return f"{expr} if _dt is _FLOAT64 else _in_dtype(_dt, {expr})"

    def zeros(self, shape):
        return f"numpy.zeros({shape_code(shape)})" if shape else "numpy.float64(0.0)"

    def copy(self, name):
        return f"numpy.array({name}, _FLOAT64)"

    def scalar_output(self, value, printer):
        """A NumPy scalar, as the computed scalars of an array program are."""
        return f"numpy.float64({printer.doprint(value)})"

    def scalar_result(self, name):
        """A computed scalar output as a NumPy scalar: ``numpy.where`` and a few other
        functions return 0-d arrays for scalar operands."""
        return f"{name}[()]"

    def as_float(self, name, shape):
        if not shape:
            return f"numpy.float64({name})"
        return f"numpy.array({name}, _FLOAT64)"

    def standalone_lines(self):
        return ["_FLOAT64 = numpy.dtype(numpy.float64)",
                "_PROMOTED64 = _FLOAT64.newbyteorder('=')"]

    def array_literal(self, array):
        return f"numpy.array({array.tolist()!r})"
