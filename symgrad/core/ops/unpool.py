"""Pooling's integer indices and the maps that use them, over the trailing spatial axes
(every leading axis is a batch axis, as in ``pool``):

* ``max_pool_index(x)``: where each window of a max pool has its maximum, as torch's
  ``return_indices=True`` gives it (the flat index into the input's spatial dims; the
  first maximum, the last nan). An integer result: it carries no gradient.
* ``max_unpool(x, index)``: zeros of spatial size ``sizes`` with x written at the flat
  indices (torch's F.max_unpool1d/2d/3d). Where two elements name the same place one of
  them is kept (torch does not say which); the gradient is torch's either way: each
  element of x gets the output's gradient at its index.
* ``unpool_add(g, index)``: the same with repeated indices accumulating (torch's
  max_pool*_with_indices_backward), and ``unpool_gather(h, index)``, h read at the
  indices: the transposes of each other, so every order of derivative reads as these ops.

The index is an operand (an integer tensor, or the integer-valued constant torch passed);
every index is checked at call time against the spatial size, as torch does.
Derivatives: rules/unpool.yaml.
"""
import numpy
import sympy

from ...errors import ParameterError, ShapeError
from ..build import apply
from ..opdef import FUNCTIONS, defop
from ..shapes import as_dim, dims_match, fmt_shape
from . import batching
from .functions import AsFloat
from .pool import (_first_max, _matrix as _pool_matrix, _latex as _pool_latex,
                   _max_params, _max_shape, _needs, _text as _pool_text, _windows)
from .pool_taps import HELPERS as POOL_HELPERS

_FLAT = '''def _unpool_rows(index, sizes, lead, op):
    space = 1
    for n in sizes:
        space *= int(n)
    i = numpy.asarray(index)
    if i.dtype.kind not in "iu":
        if i.size and not numpy.all(i == numpy.floor(i)):
            raise ArgumentError("%s: indices must be integers" % op)
        i = i.astype(numpy.int64)
    if i.size and (i.min() < 0 or i.max() >= space):
        bad = i[(i < 0) | (i >= space)].ravel()[0]
        raise ArgumentError("%s: index %d is out of range for an output of spatial size %s"
                            % (op, int(bad), tuple(int(n) for n in sizes)))
    inner = i.shape[len(i.shape) - len(sizes):]
    return numpy.broadcast_to(i, lead + inner).reshape(
        lead + (int(numpy.prod(inner, dtype=numpy.int64)),)), space'''
_UNPOOL = '''def _unpool(x, index, sizes, add, op):
    d = len(sizes)
    lead = tuple(numpy.shape(index)[:numpy.ndim(index) - d])
    rows, space = _unpool_rows(index, sizes, lead, op)
    x = numpy.broadcast_to(numpy.asarray(x, dtype=float), numpy.shape(index)).reshape(rows.shape)
    out = numpy.zeros(lead + (space,))
    if add:
        flat = rows + (numpy.arange(rows.size // max(rows.shape[-1], 1)) * space).reshape(
            lead + (1,))
        out = numpy.bincount(flat.ravel(), weights=x.ravel(),
                             minlength=out.size).astype(float, copy=False).reshape(out.shape)
    else:
        numpy.put_along_axis(out, rows, x, -1)
    return out.reshape(lead + tuple(int(n) for n in sizes))'''
_GATHER = '''def _unpool_gather(h, index, sizes, op):
    d = len(sizes)
    lead = tuple(numpy.shape(index)[:numpy.ndim(index) - d])
    rows, space = _unpool_rows(index, sizes, lead, op)
    h = numpy.broadcast_to(numpy.asarray(h, dtype=float), lead + tuple(int(n) for n in sizes))
    return numpy.take_along_axis(h.reshape(lead + (space,)), rows, -1).reshape(
        numpy.shape(index))'''
_FLAT_T = '''def _unpool_rows(index, sizes, lead, op):
    space = math.prod(int(n) for n in sizes)
    i = torch.as_tensor(index)
    checks = i.device.type != 'meta' and not torch.compiler.is_compiling()
    if i.is_floating_point() and checks:
        if i.numel() and not bool((i == torch.floor(i)).all()):
            raise ArgumentError("%s: indices must be integers" % op)
    i = i.long()
    if checks and i.numel() and bool(((i < 0) | (i >= space)).any()):
        bad = i[(i < 0) | (i >= space)].reshape(-1)[0]
        raise ArgumentError("%s: index %d is out of range for an output of spatial size %s"
                            % (op, int(bad), tuple(int(n) for n in sizes)))
    inner = tuple(i.shape[i.dim() - len(sizes):])
    return i.expand(lead + inner).reshape(lead + (math.prod(inner),)), space'''
_UNPOOL_T = '''def _unpool(x, index, sizes, add, op):
    d = len(sizes)
    lead = tuple(torch.as_tensor(index).shape)[:torch.as_tensor(index).dim() - d]
    rows, space = _unpool_rows(index, sizes, lead, op)
    x = _as_float_t(x)
    x = x.expand(tuple(torch.as_tensor(index).shape)).reshape(rows.shape)
    out = torch.zeros(lead + (space,), dtype=x.dtype, device=x.device)
    out = out.scatter_add(-1, rows, x) if add else out.scatter(-1, rows, x)
    return out.reshape(lead + tuple(int(n) for n in sizes))'''
_GATHER_T = '''def _unpool_gather(h, index, sizes, op):
    d = len(sizes)
    shape = tuple(torch.as_tensor(index).shape)
    lead = shape[:len(shape) - d]
    rows, space = _unpool_rows(index, sizes, lead, op)
    h = _as_float_t(h).expand(lead + tuple(int(n) for n in sizes))
    return torch.gather(h.reshape(lead + (space,)), -1, rows).reshape(shape)'''


def _int_kind(op, inputs):
    return "int"


# ----- max_pool_index -----------------------------------------------------------------------

def _index_elements(ctx, x):
    windows, d = _windows(ctx, x.shape)
    sp = x.shape[x.ndim - d:]
    out = numpy.empty(ctx.shape, dtype=object)
    for lead in numpy.ndindex(*x.shape[:x.ndim - d]):
        for o, cells in windows.items():
            hits = _first_max([x[lead + c] for c in cells])
            out[lead + o] = sympy.Add(*[hit * int(numpy.ravel_multi_index(c, sp))
                                        for c, hit in zip(cells, hits)])
    return out


def _index_batch(node, ins, size):
    (x, b), = ins
    return max_pool_index(batching.unbatched(x, b, size), node.attrs["kind"],
                          node.attrs["args"])


@defop("max_pool_index", ("x",), jax="host", params=_max_params, shape=_max_shape, kind=_int_kind,
       differentiable=False, sympy_params=("kind", "args"), matrix=_pool_matrix("_indices"),
       text=_pool_text("_indices", ("x",)), latex=_pool_latex("_indices", ("x",)),
       numpy=lambda x, kind, args: (f"_max_where({x}, {kind.value!r}, {args.value!r})[1]",
                                    {n: POOL_HELPERS[n] for n in _needs()}),
       torch=lambda x, kind, args: (f"_max_where_t({x}, {kind.value!r}, {args.value!r})[1]",
                                    {n: POOL_HELPERS[n] for n in _needs("_max_where_t")}),
       elements=_index_elements, batch=_index_batch)
def max_pool_index(x, kind, args):
    """The flat spatial index of each window's maximum (torch's return_indices=True)."""
    return apply("max_pool_index", x, kind=kind, args=args)


# ----- max_unpool, unpool_add, unpool_gather -------------------------------------------------

def _unpool_params(op, shapes, sizes):
    if not isinstance(sizes, (tuple, list)) or not 1 <= len(sizes) <= 3:
        raise ParameterError(f"{op}: sizes must be 1 to 3 spatial sizes, got {sizes!r}")
    sizes = tuple(as_dim(n) for n in sizes)
    x, index = shapes
    d = len(sizes)
    if len(index) < d:
        raise ShapeError(f"{op}: indices of shape {fmt_shape(index)} have fewer than {d} "
                         "spatial dims")
    return (("sizes", sizes),)


def _same_as_index(op, x, index):
    if len(x) and (len(x) != len(index) or not all(dims_match(p, q) for p, q in zip(x, index))):
        raise ShapeError(f"{op}: the input of shape {fmt_shape(x)} and the indices of shape "
                         f"{fmt_shape(index)} must have the same shape")


def _unpool_shape(op, shapes, attrs):
    x, index = shapes
    _same_as_index(op, x, index)
    d = len(attrs["sizes"])
    return tuple(index[:len(index) - d]) + tuple(attrs["sizes"])


def _gather_shape(op, shapes, attrs):
    h, index = shapes
    d = len(attrs["sizes"])
    lead = tuple(index[:len(index) - d])
    want = lead + tuple(attrs["sizes"])
    if len(h) and (len(h) != len(want) or not all(dims_match(p, q) for p, q in zip(h, want))):
        raise ShapeError(f"{op}: the input of shape {fmt_shape(h)} must have the shape "
                         f"{fmt_shape(want)} the indices {fmt_shape(index)} point into")
    return tuple(index)


def _flat_positions(ctx, index):
    d = len(ctx.attrs["sizes"])
    sizes = tuple(ctx.size(n) for n in ctx.attrs["sizes"])
    lead = index.shape[:index.ndim - d]
    return d, sizes, lead


def _scatter_elements(last_wins):
    def elements(ctx, x, index):
        d, sizes, lead = _flat_positions(ctx, index)
        x = numpy.broadcast_to(x, index.shape)
        out = numpy.full(ctx.shape, sympy.S.Zero, dtype=object)
        space = int(numpy.prod(sizes))
        for b in numpy.ndindex(*lead):
            ids = [sympy.sympify(v) for v in index[b].ravel()]
            vals = list(x[b].ravel())
            for j in range(space):
                terms = []
                for k, (i, v) in enumerate(zip(ids, vals)):
                    cond = sympy.Eq(i, j)
                    if last_wins:
                        cond = sympy.And(cond, *[sympy.Ne(ids[r], j)
                                                 for r in range(k + 1, len(ids))])
                    terms.append(AsFloat(cond) * v)
                out[b + numpy.unravel_index(j, sizes)] = sympy.Add(*terms)
        return out
    return elements


def _gather_elements(ctx, h, index):
    d, sizes, lead = _flat_positions(ctx, index)
    h = numpy.broadcast_to(h, tuple(lead) + sizes)
    out = numpy.empty(index.shape, dtype=object)
    space = int(numpy.prod(sizes))
    for p in numpy.ndindex(*index.shape):
        b = p[:len(lead)]
        flat = h[b].ravel()
        i = sympy.sympify(index[p])
        out[p] = flat[int(i)] if i.is_Integer else sympy.Add(
            *[AsFloat(sympy.Eq(i, j)) * flat[j] for j in range(space)])
    return out


def _unpool_batch(node, ins, size):
    ops = {"max_unpool": max_unpool, "unpool_add": unpool_add, "unpool_gather": unpool_gather}
    (x, bx), (i, bi) = ins
    return ops[node.op](batching.unbatched(x, bx, size), batching.unbatched(i, bi, size),
                        node.attrs["sizes"])


_AS_FLOAT_T = '''def _as_float_t(v):
    return v if isinstance(v, torch.Tensor) else torch.as_tensor(v, dtype=torch.float64)'''
_NUMPY = {"_unpool_rows": _FLAT, "_unpool": _UNPOOL, "_unpool_gather": _GATHER}
_TORCH = {"_as_float_t": _AS_FLOAT_T, "_unpool_rows": _FLAT_T, "_unpool": _UNPOOL_T,
          "_unpool_gather": _GATHER_T}


def _text(name, first):
    return lambda sizes, index, **f: f"{name}({f[first]}, {index}, sizes={sizes})"


def _latex(name, first):
    shown = name.replace("_", r"\_")
    return lambda sizes, index, **f: (rf"\operatorname{{{shown}}}\left({f[first]}, "
                                      rf"{index}\right)")


def _matrix(name):
    def form(m, node, *terms):
        sizes = node.attrs["sizes"]
        return m.fn(name, *terms, data=f"sizes={tuple(sizes)!r}")
    return form


def _unpool_def(name, add, doc):
    first = "g" if add else "x"

    def form(target):
        helpers = _NUMPY if target == "numpy" else _TORCH
        return lambda sizes, index, **f: (
            f"_unpool({f[first]}, {index}, {sizes}, {add}, {name!r})", helpers)

    @defop(name, (first, "index"), params=_unpool_params, shape=_unpool_shape, fresh=True, jax="host",
           sympy_params=("sizes",), text=_text(name, first), latex=_latex(name, first),
           matrix=_matrix(name),
           numpy=form("numpy"), torch=form("torch"),
           elements=_scatter_elements(not add), batch=_unpool_batch)
    def fn(x, index, sizes):
        return apply(name, x, index, sizes=tuple(sizes))
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


max_unpool = _unpool_def("max_unpool", False, """Zeros of spatial size ``sizes`` with x
    written at the flat spatial indices ``index`` (x's shape): torch's F.max_unpool.""")
unpool_add = _unpool_def("unpool_add", True, """Zeros of spatial size ``sizes`` with g added
    at the flat spatial indices ``index`` (repeats accumulate): max_pool's backward.""")


@defop("unpool_gather", ("h", "index"), jax="host", params=_unpool_params, shape=_gather_shape,
       sympy_params=("sizes",), text=_text("unpool_gather", "h"),
       matrix=_matrix("unpool_gather"),
       latex=_latex("unpool_gather", "h"),
       numpy=lambda sizes, index, h: (f"_unpool_gather({h}, {index}, {sizes}, "
                                      "'unpool_gather')", _NUMPY),
       torch=lambda sizes, index, h: (f"_unpool_gather({h}, {index}, {sizes}, "
                                      "'unpool_gather')", _TORCH),
       elements=_gather_elements, batch=_unpool_batch)
def unpool_gather(h, index, sizes):
    """h (spatial size ``sizes``) read at the flat spatial indices ``index``."""
    return apply("unpool_gather", h, index, sizes=tuple(sizes))


def _define_public(d):
    from .pool import _ints, window_args

    def windowed(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        return max_pool_index(x, "max", window_args(f"max_pool{d}d_indices", "max", d,
                                                    kernel_size, stride, padding, dilation,
                                                    ceil_mode))

    def adaptive(x, output_size):
        return max_pool_index(x, "adaptive_max", (_ints(f"adaptive_max_pool{d}d_indices",
                                                        "output_size", output_size, d),))
    for name, fn in ((f"max_pool{d}d_indices", windowed),
                     (f"adaptive_max_pool{d}d_indices", adaptive)):
        fn.__name__ = name
        FUNCTIONS[name] = fn


for _d in (1, 2, 3):
    _define_public(_d)
