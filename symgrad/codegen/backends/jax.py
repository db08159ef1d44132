"""The JAX backend: jax.numpy code under ``jax.jit``, the way to XLA's fusion, accelerators
and sharding.

Spellings. An OpDef's ``jax=`` spelling is used where it has one (``jax.nn.sigmoid``,
``jax.scipy.special``, ``eigh`` without JAX's symmetrisation). Every other op is spelled
by its NumPy spelling read as jax.numpy (``jax_text``: ``numpy.f`` becomes
``jax.numpy.f``, plus the few idioms jax.numpy spells differently), helpers too, since
jax.numpy mirrors NumPy. Helpers whose NumPy code cannot be traced (in-place writes,
``numpy.add.at``, ``sliding_window_view``, checks of values) have JAX versions of the same
name and signature in ``OVERRIDES``: ``x.at[i].set``/``.add`` for scatters, XLA's
convolutions (``lax.conv_general_dilated``, the transposes as their exact adjoints through
``jax.vjp``, ``unfold`` as ``conv_general_dilated_patches``), ``lax.linalg`` and
``jax.scipy.linalg`` for triangular solves and ``expm``, and id checks that run on the
host once values exist (``jax.debug.callback``). An OpDef spelled ``jax="host"``
(``HOST``: pooling and resampling windows, unpooling, grid sampling, ``mode``,
fractional max pooling, whose NumPy code loops and writes in place) runs its NumPy code on
the host inside the jitted function through ``jax.pure_callback``: the same values, no
fusion, a host round trip on an accelerator; a native form can replace it op by op.

Precision. JAX computes in float32 unless ``jax_enable_x64`` is on. The compiled function
turns it on for its own call only (``jax.enable_x64``, a thread-local scope; the global
setting is left as the user set it), so it computes in the arguments' dtype as the NumPy
and torch backends do: float64 arrays (and Python floats) in float64, float32 arrays in
float32. The float64 arrays it returns stay float64; JAX code that uses them outside
such a scope with x64 off computes in float32 (JAX's own rule). Called inside an outer
transform (``jax.jit``, ``jax.vmap``, ``jax.grad`` of code that calls it), it takes the
tracers as they are and leaves precision to the outer scope: entering x64 there would
mix the outer trace's float32 avals with float64 buffers.

The call waits for its results (``block_until_ready``): host callbacks (id checks, host
ops) then run inside that scope, and an id out of range is an ``ArgumentError`` raised by
the call itself.

Shapes. ``jax.jit`` traces the function once per argument shapes and dtypes; symbolic
dims are read from the traced shapes, which are static, so each new size is a new trace.
"""
import math
import re
import zlib

import numpy
import sympy
from sympy.printing.numpy import JaxPrinter

from ...core.opdef import render
from ..names import shape_code
from ..printers import ArrayPrinting, fold
from .base import Backend

# float(numpy.float64(c)/n), a constant over dims, stays host arithmetic: dims are static
NUMPY_NAME = re.compile(r"(?<![\w.])(?<!float\()numpy\.")
# NumPy idioms jax.numpy spells differently (sizes of static shapes stay Python ints)
IDIOMS = ((re.compile(r"int\(numpy\.prod\("), "int(math.prod("),
          (re.compile(r"kind=(['\"])stable\1"), "stable=True"),
          (re.compile(r"numpy\.errstate\("), "_errstate("))
HOST = "host"   # an OpDef's ``jax=HOST``: its NumPy code runs on the host (``_host``)


def jax_text(text):
    """NumPy code as jax.numpy code: ``numpy.f`` becomes ``jax.numpy.f``."""
    for pattern, replacement in IDIOMS:
        text = pattern.sub(replacement, text)
    return NUMPY_NAME.sub("jax.numpy.", text)


# 64-bit arguments and results cross the callback as pairs of uint32: JAX converts what
# a callback takes and returns under the x64 setting of the thread that runs it, which is
# one of XLA's (x64 off: float32), not the caller's scope
HOST_HELPERS = {
    "_host": (
        "def _host_function(source, helpers):\n"
        "    namespace = {'numpy': numpy, 'math': math, 'ArgumentError': ArgumentError}\n"
        "    for helper in helpers:\n"
        "        exec(helper, namespace)\n"
        "    exec(source, namespace)\n"
        "    return namespace['_f']\n\n\n"
        "def _host(fn, dims, *args):\n"
        "    args = [jax.numpy.asarray(a) for a in args]\n"
        "    kinds = [(numpy.dtype(a.dtype), a.shape) for a in args]\n"
        "    passed = [jax.lax.bitcast_convert_type(a, numpy.uint32) if k.itemsize == 8 "
        "else a for a, (k, _) in zip(args, kinds)]\n"
        "    floats = [a.dtype for a in args if a.dtype.kind == 'f']\n"
        "    with numpy.errstate(all='ignore'):\n"
        "        probe = numpy.asarray(fn(dims, *[numpy.zeros(a.shape, a.dtype) for a in args]))\n"
        "    dt = (floats[0] if floats else jax.numpy.float64) if probe.dtype.kind == 'f' "
        "else probe.dtype\n"
        "    dt = numpy.dtype(dt)\n"
        "    wide = dt.itemsize == 8\n"
        "    shape = probe.shape + (2,) if wide else probe.shape\n"
        "    out = jax.ShapeDtypeStruct(shape, numpy.uint32 if wide else dt)\n\n"
        "    def call(*v):\n"
        "        v = [numpy.ascontiguousarray(a).view(k).reshape(s) if k.itemsize == 8 else "
        "numpy.asarray(a) for a, (k, s) in zip(v, kinds)]\n"
        "        r = numpy.ascontiguousarray(fn(dims, *v), dtype=dt)\n"
        "        return r.view(numpy.uint32).reshape(shape) if wide else r\n"
        "    got = jax.pure_callback(call, out, *passed)\n"
        "    return jax.lax.bitcast_convert_type(got, dt) if wide else got")}


ERRSTATE = ("class _errstate:\n"
            "    def __init__(self, **kw):\n"
            "        pass\n\n"
            "    def __enter__(self):\n"
            "        return self\n\n"
            "    def __exit__(self, *exc):\n"
            "        return False\n")


def require_jax(feature):
    """The jax module, or a MissingDependencyError naming ``feature``."""
    import importlib

    from ...core.optional import MissingDependencyError
    try:
        return importlib.import_module("jax")
    except ImportError as e:
        raise MissingDependencyError(
            f"{feature} needs JAX, which is not installed here; install it with "
            "pip install 'symgrad[jax]' (the NumPy backend works without it)") from e


class JaxPrinting(ArrayPrinting):
    """symgrad's additions to SymPy's JAX printer."""

    M = "jax.numpy"
    target = "jax"

    def _print_OpBase(self, expr):
        """The op's JAX spelling, or its NumPy spelling read as jax.numpy (the helpers it
        brings too)."""
        opdef = type(expr).opdef
        own = opdef.spell.get("jax")
        if own is not None and own.form == HOST:
            return self._host_call(expr)
        if own is not None:
            return render(expr, self, "jax")
        before = dict(self.preamble)
        text = render(expr, self, "numpy")
        for name, source in list(self.preamble.items()):
            if before.get(name) is not source:
                own = OVERRIDES[name] if name in OVERRIDES else jax_text(source)
                self.preamble[name] = before.get(name, own)
        return jax_text(text)

    def _host_call(self, expr):
        """The op's NumPy code run on the host through ``jax.pure_callback``: for ops
        whose NumPy code loops or writes in place and has no jax.numpy form yet."""
        from .numpy import NumpyCodePrinter
        opdef = type(expr).opdef
        operands = [sympy.Symbol(f"hostarg{k}") for k in range(len(expr.operands))]
        params = expr.args[len(expr.operands):]
        dims = sorted({s for p in params for s in getattr(p, "free_symbols", ())
                       if s.is_integer}, key=str)
        printer = NumpyCodePrinter()
        text = printer.doprint(type(expr)(*operands, *params))
        dim_names = [printer.doprint(d) for d in dims]
        unpack = f"    {', '.join(dim_names)}, = _dims\n" if dims else ""
        source = (f"def _f(_dims, {', '.join(str(o) for o in operands)}):\n{unpack}"
                  f"    return {text}\n")
        helpers = tuple(printer.preamble.values())
        name = f"_host_{opdef.name}_{zlib.crc32((source + repr(helpers)).encode()):08x}"
        self.preamble.update(HOST_HELPERS)
        self.preamble[name] = f"{name} = _host_function({source!r}, {helpers!r})"
        dim_values = "(" + "".join(f"{self._print(d)}, " for d in dims) + ")"
        args = "".join(f", {self._print(o)}" for o in expr.operands)
        return f"_host({name}, {dim_values}{args})"

    def _print_Max(self, expr):
        return fold("jax.numpy.maximum", [self._print(a) for a in expr.args])

    def _print_Min(self, expr):
        return fold("jax.numpy.minimum", [self._print(a) for a in expr.args])

    def _print_Abs(self, expr):
        return f"jax.numpy.abs({self._print(expr.args[0])})"

    def _print_sign(self, expr):
        """0 at nan, as torch.sign."""
        return f"jax.numpy.sign(jax.numpy.nan_to_num({self._print(expr.args[0])}))"

    def _print_And(self, expr):
        return fold("jax.numpy.logical_and", [self._print(a) for a in expr.args])

    def _print_Or(self, expr):
        return fold("jax.numpy.logical_or", [self._print(a) for a in expr.args])

    def _print_Not(self, expr):
        return f"jax.numpy.logical_not({self._print(expr.args[0])})"

    def _print_erf(self, expr):
        return f"jax.scipy.special.erf({self._print(expr.args[0])})"

    def _print_log1p(self, expr):
        return f"jax.numpy.log1p({self._print(expr.args[0])})"

    def _print_expm1(self, expr):
        return f"jax.numpy.expm1({self._print(expr.args[0])})"

    def _print_Pow(self, expr, rational=False):
        base, e = expr.args
        if e.is_Integer or e == -1 or abs(e) == sympy.S.Half or self._divides_by_dims(expr):
            return ArrayPrinting._print_Pow(self, expr)
        if base.is_number or all(v.is_integer for v in base.free_symbols):   # dims
            return f"jax.numpy.power(float({self._print(base)}), {self._print(e)})"
        return f"jax.numpy.power({self._print(base)}, {self._print(e)})"


_printer_class = None


def jax_printer():
    """``JaxCodePrinter``: SymPy's JAX printer with ``JaxPrinting``."""
    global _printer_class
    if _printer_class is None:
        _printer_class = type("JaxCodePrinter", (JaxPrinting, JaxPrinter),
                              {"__doc__": JaxPrinting.__doc__, "__module__": __name__})
    return _printer_class


class JaxBackend(Backend):
    name = "jax"
    modules = ("math", "re", "numpy", "jax", "jax.numpy", "jax.scipy.special", "jax.scipy.linalg")
    scatter_in_place = False     # JAX arrays are immutable
    rolls_loops = True
    loop_style = "scan"          # a Python loop would be unrolled by jit: jax.lax.scan
    scan_helper = (
        "def _scan(body, state, xs, length, reverse=False):\n"
        "    first = None if xs is None else jax.tree_util.tree_map(lambda x: x[0], xs)\n"
        "    out = jax.eval_shape(body, state, first)[0]\n"
        "    state = tuple(jax.numpy.asarray(s, dtype=o.dtype) for s, o in zip(state, out))\n"
        "    return jax.lax.scan(body, state, xs, length=length, reverse=reverse)\n")
    arrays_on_entry = True
    converts_first = True        # the prologue reads the arguments' dtype
    argument_helper = (
        "def _real_array(value, name):\n"
        "    array = jax.numpy.asarray(value)\n"
        "    if array.dtype.kind not in 'fiu':\n"
        "        raise ArgumentError('argument %s must be real numbers (float or int), got "
        "%s of dtype %s' % (name, type(value).__name__, array.dtype))\n"
        "    return array if array.dtype.kind == 'f' else array.astype(jax.numpy.float64)\n\n\n"
        + ERRSTATE + "\n\n"
        "def _in_dtype(dt, values):\n"
        "    if type(values) is tuple:\n"
        "        return tuple(_in_dtype(dt, v) for v in values)\n"
        "    return jax.numpy.asarray(values, dtype=dt)\n\n\n"
        "def _jitted(fn, names):\n"
        "    compiled = jax.jit(fn)\n\n"
        "    def call(*args):\n"
        "        args = [a if isinstance(a, (jax.Array, numpy.ndarray, float, int)) "
        "else numpy.asarray(a) for a in args]\n"
        "        for a, name in zip(args, names):\n"
        "            kind = numpy.dtype(getattr(a, 'dtype', float)).kind\n"
        "            if kind not in 'biuf':\n"
        "                raise ArgumentError('argument %s must be real numbers (float or "
        "int), got %s of dtype %s' % (name, type(a).__name__, a.dtype))\n"
        "        if any(isinstance(a, jax.core.Tracer) for a in args):\n"
        "            return compiled(*args)\n"
        "        try:\n"
        "            with jax.enable_x64(True):\n"
        "                return jax.block_until_ready(compiled(*args))\n"
        "        except jax.errors.JaxRuntimeError as e:\n"
        "            said = re.findall(r'(?m)(?:^|[.])ArgumentError: (.*)$', str(e))\n"
        "            if said:\n"
        "                raise ArgumentError(said[-1]) from None\n"
        "            raise\n"
        "    call.__name__ = call.__qualname__ = fn.__name__\n"
        "    call.__wrapped__ = compiled\n"
        "    return call\n")

    def printer(self):
        return jax_printer()()

    def namespace(self):
        jax = require_jax('compile("jax")')
        import jax.numpy  # noqa: F401
        import jax.scipy.special  # noqa: F401
        import jax.scipy.linalg  # noqa: F401
        return {"math": math, "re": re, "numpy": numpy, "jax": jax}

    index_helpers = {"_index_array": (
        "def _index_array(value, name, kind):\n"
        "    array = jax.numpy.asarray(value)\n"
        "    if (array.dtype != bool) if kind == 'bool' else (array.dtype.kind not in 'iu'):\n"
        "        raise ArgumentError('argument %s must be %s, got dtype %s' % (name, "
        "'booleans (a bool array)' if kind == 'bool' else 'integers (an int64 array)', "
        "array.dtype))\n"
        "    return array if kind == 'bool' else array.astype(jax.numpy.int64)")}

    def index_argument_lines(self, a):
        return [f"{a.code} = _index_array({a.code}, {a.label}, {a.node.kind!r})"]

    def argument_lines(self, a):
        return [f"{a.code} = _real_array({a.code}, {a.label})"]

    def prologue(self, names, arrays, args=()):
        # torch's rule, as the other backends: 0-d arguments take part only when every
        # argument is 0-d (a float32 array times a 0-d float64 array is float32)
        shaped = [a.code for a in args if a.shape]
        if shaped:
            names = shaped
        if not names:
            lines = ["_dt = jax.numpy.float64"]
        else:
            lines = [f"_dt = jax.numpy.result_type({', '.join(names)})"]
        for name, local in arrays.items():
            lines.append(f"{local} = jax.numpy.asarray({name}, dtype=_dt if "
                         f"{name}.dtype.kind == 'f' else None)")
        return lines

    def result(self, expr, args):
        return f"_in_dtype(_dt, {expr})"

    def zeros(self, shape):
        return f"jax.numpy.zeros({shape_code(shape)}, dtype=_dt)"

    def copy(self, name):
        return name          # immutable: an output cannot alias anything the user mutates

    def as_float(self, name, shape):
        return f"jax.numpy.asarray({name}, dtype=_dt)"

    def scalar_output(self, value, printer):
        return f"jax.numpy.asarray({printer.doprint(value)}, dtype=_dt)"

    def array_constant(self, array):
        return numpy.array(array)

    def array_literal(self, array):
        return f"numpy.array({array.tolist()!r})"

    def wrap_lines(self, func_name, args):
        names = tuple(a.node.name for a in args)
        return [f"{func_name} = _jitted({func_name}, {names!r})"]


def _conv_pad_source():
    from ...core.ops import conv_kernels
    from ...core.sources import function_source
    return jax_text("\n\n\n".join(function_source(f) for f in (
        conv_kernels._conv_pad, conv_kernels._conv_sizes))).rstrip()


_CONV_PAD = (_conv_pad_source() + "\n\n\n"
             "def _lax_conv(x, w, stride, dilation, groups):\n"
             "    return jax.lax.conv_general_dilated(x, w, stride, 'VALID', "
             "rhs_dilation=dilation, feature_group_count=groups, "
             "precision=jax.lax.Precision.HIGHEST)")

_UNFOLD = (
        "def _unfold(x, kernel, stride, padding, dilation):\n"
        "    nd = len(kernel)\n"
        "    batched = x.ndim == nd + 2\n"
        "    x = _conv_pad(x if batched else x[None], padding)\n"
        "    n, c = x.shape[:2]\n"
        "    out = _conv_sizes(x.shape[2:], kernel, stride, dilation)\n"
        "    if not n * c * math.prod(out):\n"
        "        y = jax.numpy.zeros((n, c * math.prod(kernel), math.prod(out)), x.dtype)\n"
        "    else:\n"
        "        y = jax.lax.conv_general_dilated_patches(x, tuple(kernel), stride, 'VALID', "
        "rhs_dilation=dilation, precision=jax.lax.Precision.HIGHEST)\n"
        "        y = y.reshape(n, c * math.prod(kernel), math.prod(out))\n"
        "    return y if batched else y[0]")

# Helpers of NumPy spellings that cannot be traced (they write in place, loop over values,
# check values, or use sliding_window_view), by the name the NumPy spelling calls them:
# the JAX code calls these under the same name and signature.
OVERRIDES = {
    # ids are checked on the host (a callback once the values exist under jit), so an id
    # out of range is an ArgumentError as in NumPy and torch, not JAX's silent clamp
    "_checked": (
        "def _check_ids(i, n, op):\n"
        "    i = numpy.asarray(i)\n"
        "    if i.dtype.kind == 'f' and i.size and not numpy.all(i == numpy.floor(i)):\n"
        "        raise ArgumentError('%s: ids must be integers, got %r' % (op, "
        "float(i[i != numpy.floor(i)].ravel()[0])))\n"
        "    if i.size and (i.min() < 0 or i.max() >= n):\n"
        "        bad = i[(i < 0) | (i >= n)].ravel()[0]\n"
        "        raise ArgumentError('%s: index %d is out of range for a dim of size %d' "
        "% (op, int(bad), n))\n\n\n"
        "def _checked(i, n, op):\n"
        "    if isinstance(i, jax.core.Tracer):\n"
        "        jax.debug.callback(_check_ids, i, n, op)\n"
        "    else:\n"
        "        _check_ids(i, n, op)\n"
        "    return jax.numpy.asarray(i).astype(jax.numpy.int64)"),
    "_classes": (
        "def _check_classes(t, n):\n"
        "    t = numpy.asarray(t)\n"
        "    if t.size and not (numpy.all(t >= 0) and numpy.all(t < n)\n"
        "                       and numpy.all(t == numpy.floor(t))):\n"
        "        bad = t[~((t >= 0) & (t < n) & (t == numpy.floor(t)))].ravel()[0]\n"
        "        raise ArgumentError('class indices must be integers in [0, %d), got %r' "
        "% (n, bad))\n\n\n"
        "def _classes(t, n):\n"
        "    if isinstance(t, jax.core.Tracer):\n"
        "        jax.debug.callback(_check_classes, t, n)\n"
        "    else:\n"
        "        _check_classes(t, n)\n"
        "    return jax.numpy.asarray(t).astype(jax.numpy.int64)"),
    "_take_add": (
        "def _take_add(g, i, axis, n, op):\n"
        "    i, g = _checked(i, n, op), jax.numpy.asarray(g)\n"
        "    rest = g.shape[axis + i.ndim:]\n"
        "    g = jax.numpy.moveaxis(g.reshape(g.shape[:axis] + (i.size,) + rest), axis, 0)\n"
        "    out = jax.numpy.zeros((n,) + g.shape[1:], dtype=g.dtype).at[i.reshape(-1)].add(g)\n"
        "    return jax.numpy.moveaxis(out, 0, axis)"),
    "_take_along": (
        "def _along_index(i, axis):\n"
        "    grid = list(numpy.indices(i.shape, sparse=True))\n"
        "    grid[axis] = i\n"
        "    return tuple(grid)\n\n\n"
        "def _take_along(x, i, axis, op):\n"
        "    return x[_along_index(_checked(i, x.shape[axis], op), axis)]\n\n\n"
        "def _put_along_add(g, i, axis, shape, op):\n"
        "    g = jax.numpy.asarray(g)\n"
        "    index = _along_index(_checked(i, shape[axis], op), axis)\n"
        "    return jax.numpy.zeros(shape, dtype=g.dtype).at[index].add(g)"),
    "_index_scatter": (
        "def _index_scatter(g, shape, index):\n"
        "    g = jax.numpy.asarray(g)\n"
        "    return jax.numpy.zeros(shape, dtype=g.dtype).at[index].set(g)"),
    "_diag_embed": (
        "def _diag_embed(x, offset, axis1, axis2, shape):\n"
        "    x = jax.numpy.asarray(x)\n"
        "    out = jax.numpy.zeros(shape, dtype=x.dtype if x.dtype.kind == 'f' else float)\n"
        "    view = jax.numpy.moveaxis(out, (axis1, axis2), (-2, -1))\n"
        "    i = numpy.arange(x.shape[-1])\n"
        "    view = view.at[..., i + max(-offset, 0), i + max(offset, 0)].set(x)\n"
        "    return jax.numpy.moveaxis(view, (-2, -1), (axis1, axis2))"),
    "_solve_triangular": (
        "def _solve_triangular(a, b, upper, left, unit):\n"
        "    batch = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])\n"
        "    a = jax.numpy.broadcast_to(a, batch + a.shape[-2:])\n"
        "    b = jax.numpy.broadcast_to(b, batch + b.shape[-2:])\n"
        "    return jax.lax.linalg.triangular_solve(a, b, left_side=left, lower=not upper, "
        "unit_diagonal=unit)"),
    "_matrix_exp": (
        "def _matrix_exp(a):\n"
        "    if a.size == 0:\n"
        "        return jax.numpy.zeros(a.shape, a.dtype)\n"
        "    return jax.scipy.linalg.expm(a)"),
    # the convolution family: XLA's convolutions, the transposes as their exact adjoints
    "_conv_pad": _CONV_PAD,
    "_conv_sizes": "",         # in _CONV_PAD
    "_conv_windows": "",       # XLA's convolutions need no windows
    "_conv": (
        "def _conv(x, w, stride, padding, dilation, groups):\n"
        "    batched = x.ndim == w.ndim\n"
        "    x = _conv_pad(x if batched else x[None], padding)\n"
        "    out = _conv_sizes(x.shape[2:], w.shape[2:], stride, dilation)\n"
        "    if not x.shape[0] * math.prod(out):\n"
        "        y = jax.numpy.zeros((x.shape[0], w.shape[0]) + out, jax.numpy.result_type(x, w))\n"
        "    else:\n"
        "        y = _lax_conv(x, w.astype(x.dtype), stride, dilation, groups)\n"
        "    return y if batched else y[0]"),
    "_conv_transpose": (
        "def _conv_transpose(x, w, stride, padding, dilation, groups):\n"
        "    nd = w.ndim - 2\n"
        "    batched = x.ndim == nd + 2\n"
        "    x = x if batched else x[None]\n"
        "    c, fg, kernel = w.shape[0], w.shape[1], w.shape[2:]\n"
        "    full = tuple((o - 1) * s + d * (k - 1) + 1\n"
        "                 for o, s, d, k in zip(x.shape[2:], stride, dilation, kernel))\n"
        "    shape = (x.shape[0], groups * fg) + full\n"
        "    if not math.prod(shape) or not x.size:\n"
        "        y = jax.numpy.zeros(shape, jax.numpy.result_type(x, w))\n"
        "    else:\n"
        "        _, pull = jax.vjp(lambda z: _lax_conv(z, w.astype(x.dtype), stride, dilation, "
        "groups), jax.numpy.zeros(shape, x.dtype))\n"
        "        y = pull(x)[0]\n"
        "    y = _conv_pad(y, [(-lo, -hi) for lo, hi in padding])\n"
        "    return y if batched else y[0]"),
    "_conv_weight": (
        "def _conv_weight(x, g, kernel, stride, padding, dilation, groups):\n"
        "    nd = len(kernel)\n"
        "    if x.ndim == nd + 1:\n"
        "        x, g = x[None], g[None]\n"
        "    x = _conv_pad(x, padding)\n"
        "    shape = (g.shape[1], x.shape[1] // groups) + tuple(kernel)\n"
        "    out = _conv_sizes(x.shape[2:], kernel, stride, dilation)\n"
        "    if not g.size or not math.prod(out):\n"
        "        return jax.numpy.zeros(shape, jax.numpy.result_type(x, g))\n"
        "    g = g[(slice(None), slice(None)) + tuple(slice(0, o) for o in out)]\n"
        "    g = jax.numpy.pad(g, [(0, 0), (0, 0)] + [(0, o - k) for o, k in "
        "zip(out, g.shape[2:])])\n"
        "    _, pull = jax.vjp(lambda w: _lax_conv(x, w, stride, dilation, groups), "
        "jax.numpy.zeros(shape, x.dtype))\n"
        "    return pull(g.astype(x.dtype))[0]"),
    "_unfold": _UNFOLD,
    "_fold": (
        _UNFOLD + "\n\n\n"
        "def _fold(x, size, kernel, stride, padding, dilation):\n"
        "    batched = x.ndim == 3\n"
        "    x = x if batched else x[None]\n"
        "    n, k = x.shape[0], math.prod(kernel)\n"
        "    c, m = x.shape[1] // k, math.prod(size)\n"
        "    ids = jax.numpy.arange(1, m + 1, dtype=jax.numpy.float64)\n"
        "    cols = _unfold(ids.reshape((1, 1) + tuple(size)), kernel, stride, padding, "
        "dilation)\n"
        "    index = jax.numpy.rint(cols[0]).astype(jax.numpy.int32)\n"
        "    y = jax.numpy.zeros((n, c, m + 1), x.dtype)\n"
        "    y = y.at[:, :, index].add(x.reshape(n, c, k, x.shape[2]))\n"
        "    y = y[:, :, 1:].reshape((n, c) + tuple(size))\n"
        "    return y if batched else y[0]"),
}
