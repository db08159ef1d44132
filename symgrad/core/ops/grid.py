"""The ops under torch's grid sampling (F.grid_sample, torch.grid_sampler_2d/3d), which
the torch front end (``torchfront.grid``) writes as a sum over the corners of each grid
point's cell: ``weight(grid) * grid_gather(x, cell)``.

* ``grid_cell(c)``: the cell a coordinate falls in, ``floor(c)`` (``mode="nearest"``:
  the nearest integer, half to even, as torch's nearbyint). Piecewise constant, so no
  gradient flows through it: the gradient w.r.t. the grid comes from the weights alone,
  as torch's does.
* ``grid_gather(x, cell)``: x of shape (*lead, C, *spatial) read at the integer
  coordinates ``cell`` (*lead, *out, d), whose last axis lists them x first (the last
  spatial axis), as torch's grid does. A coordinate outside the input reads 0
  (``padding="zeros"``), the edge (``"border"``) or its mirror image (``"reflection"``,
  about the edge pixels' centres with ``align_corners``, else their outer edges). Linear in
  x, piecewise constant in cell.
* ``grid_scatter(g, cell)``: its transpose, g added at the cells into zeros of spatial
  size ``sizes``; the gradient of each is the other.

Derivatives: rules/grid.yaml.
"""
import numpy
import sympy

from ...errors import ParameterError, ShapeError
from ..build import apply
from ..opdef import defop
from ..shapes import dims_match, fmt_shape
from . import batching
from .functions import AsFloat

PADDINGS = ("zeros", "border", "reflection")

_FOLD = '''def _grid_fold(i, n, padding, align):
    """Integer coordinates along an axis of size n, folded back in by the padding mode;
    with "zeros", the mask of those inside."""
    if padding == "zeros":
        return i, (i >= 0) & (i < n)
    if padding == "reflection":
        lo2, hi2 = (0, 2 * (n - 1)) if align else (-1, 2 * n - 1)
        if lo2 == hi2:
            i = numpy.zeros_like(i)
        else:
            low, span = lo2 / 2, (hi2 - lo2) / 2
            a = numpy.abs(i - low)
            extra, flips = numpy.fmod(a, span), numpy.floor(a / span)
            i = numpy.where(flips % 2 == 0, extra + low, span - extra + low)
    return numpy.clip(i, 0, n - 1), None'''
_FLAT = '''def _grid_flat(cell, sizes, padding, align):
    """(flat spatial index, mask or None) of each cell, the cell's last axis x first."""
    d = len(sizes)
    flat, mask, stride = 0, None, 1
    for k in range(d):
        n = int(sizes[d - 1 - k])
        i, ok = _grid_fold(numpy.asarray(cell[..., k], dtype=float), n, padding, align)
        if ok is not None:
            mask = ok if mask is None else mask & ok
            i = numpy.where(ok, i, 0)
        flat = flat + i.astype(numpy.int64) * stride
        stride *= n
    return flat, mask'''
_GATHER = '''def _grid_gather(x, cell, padding, align):
    d = cell.shape[-1]
    sizes = x.shape[x.ndim - d:]
    flat, mask = _grid_flat(cell, sizes, padding, align)
    lead = flat.shape[:flat.ndim - d]
    points = int(numpy.prod(flat.shape[len(lead):], dtype=numpy.int64))
    rows = flat.reshape(lead + (1, points))
    x = x.reshape(x.shape[:x.ndim - d] + (int(numpy.prod(sizes, dtype=numpy.int64)),))
    out = numpy.take_along_axis(x, rows, -1)
    if mask is not None:
        out = out * mask.reshape(rows.shape)
    return out.reshape(x.shape[:-1] + flat.shape[len(lead):])'''
_SCATTER = '''def _grid_scatter(g, cell, sizes, padding, align):
    d = cell.shape[-1]
    sizes = tuple(int(n) for n in sizes)
    flat, mask = _grid_flat(cell, sizes, padding, align)
    lead = flat.shape[:flat.ndim - d]
    space = int(numpy.prod(sizes))
    g = numpy.asarray(g, dtype=float)
    g = numpy.broadcast_to(g, g.shape[:g.ndim - d] + flat.shape[len(lead):])
    c = g.shape[len(lead)]
    points = int(numpy.prod(flat.shape[len(lead):], dtype=numpy.int64))
    g = g.reshape(lead + (c, points))
    if mask is not None:
        g = g * mask.reshape(lead + (1, points))
    base = numpy.arange(int(numpy.prod(lead + (c,))), dtype=numpy.int64).reshape(lead + (c, 1))
    index = base * space + flat.reshape(lead + (1, points))
    out = numpy.bincount(index.ravel(), weights=numpy.broadcast_to(g, index.shape).ravel(),
                         minlength=base.size * space).astype(float, copy=False)
    return out.reshape(lead + (c,) + sizes)'''
_FOLD_T = '''def _grid_fold(i, n, padding, align):
    if padding == "zeros":
        return i, (i >= 0) & (i < n)
    if padding == "reflection":
        lo2, hi2 = (0, 2 * (n - 1)) if align else (-1, 2 * n - 1)
        if lo2 == hi2:
            i = torch.zeros_like(i)
        else:
            low, span = lo2 / 2, (hi2 - lo2) / 2
            a = torch.abs(i - low)
            extra, flips = torch.fmod(a, span), torch.floor(a / span)
            i = torch.where(flips % 2 == 0, extra + low, span - extra + low)
    return torch.clamp(i, 0, n - 1), None'''
_FLAT_T = '''def _grid_flat(cell, sizes, padding, align):
    d = len(sizes)
    cell = torch.as_tensor(cell, dtype=torch.float64)
    flat, mask, stride = 0, None, 1
    for k in range(d):
        n = int(sizes[d - 1 - k])
        i, ok = _grid_fold(cell[..., k], n, padding, align)
        if ok is not None:
            mask = ok if mask is None else mask & ok
            i = torch.where(ok, i, 0.0)
        flat = flat + i.long() * stride
        stride *= n
    return flat, mask'''
_GATHER_T = '''def _grid_gather(x, cell, padding, align):
    d = cell.shape[-1]
    sizes = tuple(x.shape[x.dim() - d:])
    flat, mask = _grid_flat(cell, sizes, padding, align)
    lead = tuple(flat.shape[:flat.dim() - d])
    x = _as_float_t(x)
    c = x.shape[len(lead)]
    points = math.prod(flat.shape[len(lead):])
    rows = flat.reshape(lead + (1, points)).expand(lead + (c, points))
    out = torch.gather(x.reshape(lead + (c, math.prod(sizes))), -1, rows)
    if mask is not None:
        out = out * mask.reshape(lead + (1, points))
    return out.reshape(lead + (c,) + tuple(flat.shape[len(lead):]))'''
_SCATTER_T = '''def _grid_scatter(g, cell, sizes, padding, align):
    d = cell.shape[-1]
    sizes = tuple(int(n) for n in sizes)
    flat, mask = _grid_flat(cell, sizes, padding, align)
    lead = tuple(flat.shape[:flat.dim() - d])
    g = _as_float_t(g)
    g = g.expand(tuple(g.shape[:g.dim() - d]) + tuple(flat.shape[len(lead):]))
    c = g.shape[len(lead)]
    points = math.prod(flat.shape[len(lead):])
    g = g.reshape(lead + (c, points))
    if mask is not None:
        g = g * mask.reshape(lead + (1, points))
    rows = flat.reshape(lead + (1, points)).expand(lead + (c, points))
    out = torch.zeros(lead + (c, math.prod(sizes)), dtype=g.dtype, device=g.device)
    return out.scatter_add(-1, rows, g).reshape(lead + (c,) + sizes)'''
_AS_FLOAT_T = '''def _as_float_t(v):
    return v if isinstance(v, torch.Tensor) else torch.as_tensor(v, dtype=torch.float64)'''
_NUMPY = {"_grid_fold": _FOLD, "_grid_flat": _FLAT, "_grid_gather": _GATHER,
          "_grid_scatter": _SCATTER}
_TORCH = {"_as_float_t": _AS_FLOAT_T, "_grid_fold": _FOLD_T, "_grid_flat": _FLAT_T,
          "_grid_gather": _GATHER_T,
          "_grid_scatter": _SCATTER_T}


# ----- grid_cell -----------------------------------------------------------------------------

def _cell_params(op, shapes, mode="floor"):
    if mode not in ("floor", "nearest"):
        raise ParameterError(f"{op}: mode must be 'floor' or 'nearest', got {mode!r}")
    return (("mode", mode),)


def _cell_elements(ctx, c):
    """floor, or nearest: floor(c + 1/2) (half to even only where c is a number)."""
    def one(v):
        v = sympy.sympify(v)
        if ctx.attrs["mode"] == "floor":
            return sympy.floor(v)
        if v.is_number:
            return sympy.Integer(round(float(v)))
        return sympy.floor(v + sympy.S.Half)
    return numpy.vectorize(one, otypes=[object])(c) if numpy.ndim(c) else one(c)


def _cell_batch(node, ins, size):
    (c, _), = ins
    return grid_cell(c, node.attrs["mode"])


@defop("grid_cell", ("c",), params=_cell_params, shape=lambda op, shapes, attrs: shapes[0],
       differentiable=False, sympy_params=("mode",), fresh=True,
       elements=_cell_elements, batch=_cell_batch,
       text=lambda c, mode: (f"grid_cell({c})" if mode.value == "floor"
                             else f"grid_cell({c}, mode='nearest')"),
       latex=lambda c, mode: (rf"\left\lfloor {c} \right\rfloor" if mode.value == "floor"
                              else rf"\operatorname{{rint}}\left({c}\right)"),
       numpy=lambda c, mode: f"numpy.{'floor' if mode.value == 'floor' else 'rint'}({c})",
       torch=lambda c, mode: (f"torch.{'floor' if mode.value == 'floor' else 'round'}"
                              f"(torch.as_tensor({c}, dtype=torch.float64))"),
       matrix=lambda m, node, c: m.fn("grid_cell", c, data=None if node.attrs["mode"] == "floor"
                                      else "mode='nearest'"))
def grid_cell(c, mode="floor"):
    """floor(c), or with ``mode="nearest"`` the nearest integer (half to even): the cell
    of a grid coordinate. Piecewise constant: it carries no gradient."""
    return apply("grid_cell", c, mode=mode)


# ----- grid_gather, grid_scatter ---------------------------------------------------------------

def _check_padding(op, padding, align_corners):
    if padding not in PADDINGS:
        raise ParameterError(f"{op}: padding must be one of {PADDINGS}, got {padding!r}")
    return (("padding", padding), ("align_corners", bool(align_corners)))


def _gather_params(op, shapes, sizes=None, padding="zeros", align_corners=False):
    x, cell = shapes
    d = _rank(op, cell)
    sizes = tuple(x[len(x) - d:]) if sizes is None else tuple(sizes)
    if len(sizes) != d or not all(dims_match(p, q) for p, q in zip(sizes, x[len(x) - d:])):
        raise ShapeError(f"{op}: sizes {sizes} must be the input's spatial sizes, the last {d} "
                         f"of {fmt_shape(x)}")
    return (("sizes", sizes),) + _check_padding(op, padding, align_corners)


def _rank(op, cell):
    d = cell[-1] if cell else None
    if not isinstance(d, int) or d not in (1, 2, 3) or len(cell) < d + 1:
        raise ShapeError(f"{op}: the cells of shape {fmt_shape(cell)} must end in an axis of "
                         "1 to 3 coordinates, after the output's spatial axes")
    return d


def _gather_shape(op, shapes, attrs):
    x, cell = shapes
    d = _rank(op, cell)
    lead = tuple(cell[:len(cell) - d - 1])
    if len(x) != len(lead) + 1 + d or not all(dims_match(p, q) for p, q in zip(x, lead)):
        raise ShapeError(f"{op}: the input of shape {fmt_shape(x)} must be (*lead, C, "
                         f"*{d} spatial) with the leading dims of the cells {fmt_shape(cell)}")
    return lead + (x[len(lead)],) + tuple(cell[len(lead):len(cell) - 1])


def _scatter_params(op, shapes, sizes, padding="zeros", align_corners=False):
    return (("sizes", tuple(sizes)),) + _check_padding(op, padding, align_corners)


def _scatter_shape(op, shapes, attrs):
    g, cell = shapes
    d = _rank(op, cell)
    if len(attrs["sizes"]) != d:
        raise ShapeError(f"{op}: {d} coordinates need {d} spatial sizes, got "
                         f"{attrs['sizes']}")
    lead = tuple(cell[:len(cell) - d - 1])
    return lead + (g[len(lead)],) + tuple(attrs["sizes"])


def _fold_sym(i, n, padding, align):
    if padding == "zeros":
        return i
    if padding == "reflection":
        lo2, hi2 = (0, 2 * (n - 1)) if align else (-1, 2 * n - 1)
        if lo2 == hi2:
            i = sympy.S.Zero
        else:
            low, span = sympy.Rational(lo2, 2), sympy.Rational(hi2 - lo2, 2)
            # the code's reflection as a triangle wave of period 2 span (no Piecewise)
            i = low + span - sympy.Abs(sympy.Mod(i - low, 2 * span) - span)
    return sympy.Min(sympy.Max(i, 0), n - 1)


def _hits(ctx, cell_row, sizes):
    """{flat position: Iverson bracket} of one cell's coordinates."""
    d = len(sizes)
    a = ctx.attrs
    per_axis = []
    for k in range(d):
        n = sizes[d - 1 - k]
        i = sympy.floor(_fold_sym(sympy.sympify(cell_row[k]), n, a["padding"],
                                  a["align_corners"]))   # as the code's integer cast
        per_axis.append([AsFloat(sympy.Eq(i, p)) for p in range(n)])
    hits = {}
    for pos in numpy.ndindex(*sizes):
        term = sympy.S.One
        for k in range(d):
            term = term * per_axis[k][pos[d - 1 - k]]
        hits[pos] = term
    return hits


def _gather_elements(ctx, x, cell):
    d = cell.shape[-1]
    sizes = x.shape[x.ndim - d:]
    lead = cell.shape[:cell.ndim - d - 1]
    out = numpy.empty(ctx.shape, dtype=object)
    for p in numpy.ndindex(*cell.shape[:-1]):
        b, o = p[:len(lead)], p[len(lead):]
        hits = _hits(ctx, cell[p], sizes)
        for ch in range(x.shape[len(lead)]):
            out[b + (ch,) + o] = sympy.Add(*[h * x[b + (ch,) + pos] for pos, h in hits.items()])
    return out


def _scatter_elements(ctx, g, cell):
    d = cell.shape[-1]
    sizes = tuple(ctx.size(n) for n in ctx.attrs["sizes"])
    lead = cell.shape[:cell.ndim - d - 1]
    out = numpy.full(ctx.shape, sympy.S.Zero, dtype=object)
    g = numpy.broadcast_to(g, ctx.shape[:len(lead) + 1] + cell.shape[len(lead):-1])
    for p in numpy.ndindex(*cell.shape[:-1]):
        b, o = p[:len(lead)], p[len(lead):]
        for pos, h in _hits(ctx, cell[p], sizes).items():
            for ch in range(ctx.shape[len(lead)]):
                out[b + (ch,) + pos] = out[b + (ch,) + pos] + h * g[b + (ch,) + o]
    return out


def _batch(node, ins, size):
    (v, bv), (c, bc) = ins
    v, c = batching.unbatched(v, bv, size), batching.unbatched(c, bc, size)
    a = node.attrs
    if node.op == "grid_gather":
        return grid_gather(v, c, a["sizes"], a["padding"], a["align_corners"])
    return grid_scatter(v, c, a["sizes"], a["padding"], a["align_corners"])


def _options(padding, align_corners):
    opts = [] if padding.value == "zeros" else [f"padding={padding.value!r}"]
    return opts + (["align_corners=True"] if align_corners.value else [])


def _text(name, first):
    def form(cell, padding, align_corners, sizes=None, **f):
        parts = [f"{f[first]}", f"{cell}"] + ([f"sizes={sizes}"] if name == "grid_scatter" else [])
        return f"{name}({', '.join(parts + _options(padding, align_corners))})"
    return form


def _latex(name, first):
    shown = name.replace("_", r"\_")
    return lambda cell, padding, align_corners, sizes=None, **f: (
        rf"\operatorname{{{shown}}}\left({f[first]}, {cell}\right)")


def _matrix(name):
    def form(m, node, *terms):
        a = node.attrs
        opts = ([f"sizes={tuple(a['sizes'])!r}"] if name == "grid_scatter" else []) + (
            [] if a["padding"] == "zeros" else [f"padding={a['padding']!r}"]) + (
            ["align_corners=True"] if a["align_corners"] else [])
        return m.fn(name, *terms, data=", ".join(opts))
    return form


@defop("grid_gather", ("x", "cell"), jax="host", params=_gather_params, shape=_gather_shape,
       sympy_params=("sizes", "padding", "align_corners"), fresh=True,
       text=_text("grid_gather", "x"), latex=_latex("grid_gather", "x"),
       matrix=_matrix("grid_gather"),
       numpy=lambda x, cell, sizes, padding, align_corners: (
           f"_grid_gather({x}, {cell}, {padding}, {align_corners})", _NUMPY),
       torch=lambda x, cell, sizes, padding, align_corners: (
           f"_grid_gather({x}, {cell}, {padding}, {align_corners})", _TORCH),
       elements=_gather_elements, batch=_batch)
def grid_gather(x, cell, sizes=None, padding="zeros", align_corners=False):
    """x (*lead, C, *spatial) read at the integer coordinates ``cell`` (*lead, *out, d;
    x first), outside positions per ``padding``: (*lead, C, *out). ``sizes``: x's spatial
    sizes (its gradient's), taken from x when not given."""
    return apply("grid_gather", x, cell, sizes=sizes, padding=padding,
                 align_corners=align_corners)


@defop("grid_scatter", ("g", "cell"), jax="host", params=_scatter_params, shape=_scatter_shape,
       sympy_params=("sizes", "padding", "align_corners"), fresh=True,
       text=_text("grid_scatter", "g"), latex=_latex("grid_scatter", "g"),
       matrix=_matrix("grid_scatter"),
       numpy=lambda g, cell, sizes, padding, align_corners: (
           f"_grid_scatter({g}, {cell}, {sizes}, {padding}, {align_corners})", _NUMPY),
       torch=lambda g, cell, sizes, padding, align_corners: (
           f"_grid_scatter({g}, {cell}, {sizes}, {padding}, {align_corners})", _TORCH),
       elements=_scatter_elements, batch=_batch)
def grid_scatter(g, cell, sizes, padding="zeros", align_corners=False):
    """The transpose of ``grid_gather`` into spatial size ``sizes``: g added at the cells."""
    return apply("grid_scatter", g, cell, sizes=tuple(sizes), padding=padding,
                 align_corners=align_corners)
