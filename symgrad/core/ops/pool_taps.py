"""The arithmetic of pooling and interpolation along one spatial axis, as plain NumPy: which
input positions each output position reads ("taps") and with what weight, exactly as
torch's kernels compute them. The ops in ``pool`` use these functions in Python (shapes,
per-element forms) and paste their source into generated code (``SOURCES``), so the
compiled code and the views share one definition.

Kinds and their ``args`` (per-axis tuples indexed by axis ``i``):

* ``"avg"``: (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override);
* ``"max"``: (kernel, stride, padding, dilation, ceil_mode);
* ``"adaptive_avg"``, ``"adaptive_max"``: (output_size,), windows
  [floor(o n / m), ceil((o + 1) n / m));
* ``"nearest"``, ``"nearest-exact"``, ``"linear"``, ``"cubic"``: (out, align_corners,
  scales), where ``out[i]`` is the output size (an int) or a scale factor (a float:
  floor(n · factor)), and ``scales`` (None or per-axis floats) what torch's kernel uses
  for the source coordinate in place of n / m.
* ``"linear_aa"``, ``"cubic_aa"``: the same args; antialiased (torch's antialias=True):
  when shrinking, the triangle / Keys cubic (A = -0.5) filter is widened by the scale and
  every output's weights are normalised to sum to 1.
"""
import math

import numpy
from ..sources import function_source


def _window_out(n, k, s, p, dl, ceil):
    """torch's pooling_output_shape; works on SymPy dims too (// is floor)."""
    m = (n + 2 * p - dl * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (m - 1) * s >= n + p:
        m = m - 1
    return m


def _out_size(kind, n, i, args):
    """The output size of axis ``i`` (input size ``n``)."""
    if kind in ("avg", "max"):
        dl = args[3][i] if kind == "max" else 1
        ceil = args[4] if kind == "max" else args[3]
        return _window_out(n, args[0][i], args[1][i], args[2][i], dl, ceil)
    if kind in ("adaptive_avg", "adaptive_max"):
        return args[0][i]
    out = args[0][i]
    return out if isinstance(out, int) else int(math.floor(n * out))


def _cubic(t):
    """Keys' cubic convolution weights of the 4 taps at offset t, A = -0.75 (torch)."""
    a = -0.75

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return numpy.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


def _aa_taps(kind, n, m, align, scale):
    """torch's _compute_indices_min_size_weights_aa for one axis."""
    if align:
        r = (n - 1) / (m - 1) if m > 1 else 0.0
    else:
        r = 1.0 / scale if scale else n / m
    support = (1.0 if kind == "linear_aa" else 2.0) * (r if r >= 1.0 else 1.0)
    width = int(math.ceil(support)) * 2 + 1
    center = r * (numpy.arange(m) + 0.5)
    xmin = numpy.maximum((center - support + 0.5).astype(numpy.int64), 0)
    xsize = numpy.clip(numpy.minimum((center + support + 0.5).astype(numpy.int64), n) - xmin,
                       0, width)
    j = numpy.arange(width)
    idx = xmin[:, None] + j[None, :]
    valid = j[None, :] < xsize[:, None]
    x = numpy.abs((idx - center[:, None] + 0.5) * (1.0 / r if r >= 1.0 else 1.0))
    if kind == "linear_aa":
        w = numpy.maximum(1.0 - x, 0.0)
    else:
        a = -0.5
        w = numpy.where(x < 1.0, ((a + 2) * x - (a + 3)) * x * x + 1,
                        numpy.where(x < 2.0, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))
    w = numpy.where(valid, w, 0.0)
    total = w.sum(axis=-1, keepdims=True)
    w = numpy.where(total != 0.0, w / numpy.where(total != 0.0, total, 1.0), w)
    return idx, w, valid


def _taps(kind, n, i, args):
    """(index (m, K) ints in [0, n), weight (m, K), valid (m, K) bools) of axis ``i``."""
    m = _out_size(kind, n, i, args)
    o = numpy.arange(m)
    if kind in ("avg", "max"):
        k, s, p = args[0][i], args[1][i], args[2][i]
        dl = args[3][i] if kind == "max" else 1
        start = o * s - p
        idx = start[:, None] + numpy.arange(k)[None, :] * dl
        valid = (idx >= 0) & (idx < n)
        weight = valid.astype(numpy.float64)
        if kind == "avg":
            if args[5] is not None:
                if i == 0:
                    weight = weight / args[5]
            elif args[4]:
                weight = weight / (numpy.minimum(start + k, n + p) - start)[:, None]
            else:
                weight = weight / (numpy.minimum(start + k, n) - numpy.maximum(start, 0))[:, None]
    elif kind in ("adaptive_avg", "adaptive_max"):
        start = (o * n) // m
        end = -((-(o + 1) * n) // m)
        width = max(int((end - start).max()), 1) if m else 1
        idx = start[:, None] + numpy.arange(width)[None, :]
        valid = idx < end[:, None]
        weight = valid / (end - start)[:, None]
    elif kind in ("nearest", "nearest-exact"):
        scale = args[2][i] if args[2] is not None else None
        f = numpy.float32(1.0 / scale) if scale else numpy.float32(n) / numpy.float32(m)
        if kind == "nearest":
            src = numpy.floor(o.astype(numpy.float32) * f)
        else:
            src = numpy.floor(((o + 0.5) * numpy.float64(f)).astype(numpy.float32))
        idx = numpy.minimum(src.astype(numpy.int64), n - 1)[:, None]
        valid = numpy.ones(idx.shape, dtype=bool)
        weight = numpy.ones(idx.shape)
    elif kind in ("linear_aa", "cubic_aa"):
        idx, weight, valid = _aa_taps(kind, n, m, args[1],
                                      args[2][i] if args[2] is not None else None)
    else:
        align, scale = args[1], args[2][i] if args[2] is not None else None
        if align:
            r = (n - 1) / (m - 1) if m > 1 else 0.0
            real = r * o
        else:
            r = 1.0 / scale if scale else n / m
            real = r * (o + 0.5) - 0.5
            if kind == "linear":
                real = numpy.maximum(real, 0.0)
        if kind == "linear" and m == n:   # torch's linear kernels copy an axis kept at size n
            real = o.astype(numpy.float64)
        i0 = numpy.minimum(numpy.floor(real).astype(numpy.int64), n - 1)
        t = numpy.clip(real - i0, 0.0, 1.0)
        if kind == "linear":
            idx = numpy.stack([i0, i0 + (i0 < n - 1)], axis=-1)
            weight = numpy.stack([1.0 - t, t], axis=-1)
        else:
            idx = i0[:, None] - 1 + numpy.arange(4)[None, :]
            weight = _cubic(t)
        valid = numpy.ones(idx.shape, dtype=bool)
    return numpy.clip(idx, 0, max(n - 1, 0)), weight, valid


def _transposed(idx, weight, valid, n):
    """The taps of the transposed matrix: for every input position, the outputs that read
    it and their weights, padded to the largest count with taps marked invalid."""
    m, k = idx.shape
    fi, fw = idx.ravel(), weight.ravel()
    fo = numpy.repeat(numpy.arange(m), k)
    keep = valid.ravel()
    fi, fo, fw = fi[keep], fo[keep], fw[keep]
    order = numpy.argsort(fi, kind="stable")
    fi, fo, fw = fi[order], fo[order], fw[order]
    counts = numpy.bincount(fi, minlength=n)
    width = max(int(counts.max()) if counts.size else 0, 1)
    pos = numpy.arange(fi.size) - numpy.repeat(numpy.cumsum(counts) - counts, counts)
    tidx = numpy.zeros((n, width), dtype=numpy.int64)
    tw = numpy.zeros((n, width))
    tvalid = numpy.zeros((n, width), dtype=bool)
    tidx[fi, pos] = fo
    tw[fi, pos] = fw
    tvalid[fi, pos] = True
    return tidx, tw, tvalid


def _max_where(x, kind, args):
    """(values, index): the maximum of each window of x's trailing axes and the flat
    spatial index of the one torch picks (the first maximum; the last nan if any)."""
    d = len(args[0])
    lead, sp = x.shape[:x.ndim - d], x.shape[x.ndim - d:]
    flat, valid, outs, widths = 0, True, [], []
    stride = int(numpy.prod(sp[1:], dtype=numpy.int64)) if d > 1 else 1
    for i in range(d):
        idx, _, ok = _taps(kind, sp[i], i, args)
        shape = [1] * (2 * d)
        shape[i], shape[d + i] = idx.shape
        flat = flat + (idx * stride).reshape(shape)
        valid = valid & ok.reshape(shape)
        outs.append(idx.shape[0])
        widths.append(idx.shape[1])
        if i + 1 < d:
            stride //= sp[i + 1]
    k = int(numpy.prod(widths, dtype=numpy.int64))
    flat = numpy.broadcast_to(flat, tuple(outs) + tuple(widths)).reshape(tuple(outs) + (k,))
    valid = numpy.broadcast_to(valid, tuple(outs) + tuple(widths)).reshape(flat.shape)
    space = int(numpy.prod(sp, dtype=numpy.int64))
    w = numpy.where(valid, x.reshape(lead + (space,))[..., flat], -numpy.inf)
    values = w.max(axis=-1)
    nan = numpy.isnan(w)
    pos = numpy.argmax((w == values[..., None]) & valid, axis=-1)
    pos = numpy.where(nan.any(axis=-1), k - 1 - numpy.argmax(nan[..., ::-1], axis=-1), pos)
    index = numpy.take_along_axis(numpy.broadcast_to(flat, w.shape), pos[..., None], -1)[..., 0]
    return values, index


SOURCES = {f.__name__: function_source(f)
           for f in (_window_out, _out_size, _cubic, _aa_taps, _taps, _transposed, _max_where)}

# ----- what generated code calls: the functions above and the ops' drivers -------------------
HELPERS = dict(SOURCES)
HELPERS["_along"] = '''def _along(x, axis, idx, w, valid):
    """x with axis replaced by sum_k w[o, k] x[idx[o, k]] for each output position o,
    over the valid taps only (a padded position is not read: no 0 * inf)."""
    t = numpy.moveaxis(x, axis, -1)[..., idx]
    if not valid.all():
        t = numpy.where(valid, t, 0.0)
    return numpy.moveaxis(numpy.einsum("...ok,ok->...o", t, w), -1, axis)'''
HELPERS["_resample"] = '''def _resample(x, kind, args):
    d = len(args[0])
    for i in range(d):
        axis = x.ndim - d + i
        idx, w, ok = _taps(kind, x.shape[axis], i, args)
        x = _along(x, axis, idx, w, ok)
    return x'''
HELPERS["_resample_backward"] = '''def _resample_backward(g, kind, sizes, args):
    d = len(sizes)
    for i in range(d):
        tidx, tw, tok = _transposed(*_taps(kind, int(sizes[i]), i, args), int(sizes[i]))
        g = _along(g, g.ndim - d + i, tidx, tw, tok)
    return g'''
HELPERS["_max_pool_backward"] = '''def _max_pool_backward(g, x, kind, args):
    _, index = _max_where(x, kind, args)
    d = len(args[0])
    space = int(numpy.prod(x.shape[x.ndim - d:], dtype=numpy.int64))
    rows = index.reshape(int(numpy.prod(index.shape[:index.ndim - d], dtype=numpy.int64)),
                         int(numpy.prod(index.shape[index.ndim - d:], dtype=numpy.int64)))
    flat = (numpy.arange(rows.shape[0])[:, None] * space + rows).ravel()
    g = numpy.broadcast_to(g, index.shape).ravel()
    out = numpy.bincount(flat, weights=g, minlength=rows.shape[0] * space)
    return out.astype(numpy.result_type(g, x), copy=False).reshape(x.shape)'''
HELPERS["_max_pool_gather"] = '''def _max_pool_gather(h, x, kind, args):
    _, index = _max_where(x, kind, args)
    d = len(args[0])
    space = int(numpy.prod(x.shape[x.ndim - d:], dtype=numpy.int64))
    outs = int(numpy.prod(index.shape[index.ndim - d:], dtype=numpy.int64))
    h = numpy.broadcast_to(h, x.shape).reshape(x.shape[:x.ndim - d] + (space,))
    rows = index.reshape(index.shape[:index.ndim - d] + (outs,))
    return numpy.take_along_axis(h, rows, -1).reshape(index.shape)'''

# torch: the forward passes are torch's own functions, on (batch, channel, *spatial) with
# the leading axes folded into the batch; the transposes use the same taps.
HELPERS["_along_t"] = '''def _along_t(x, axis, idx, w, valid):
    idx = torch.as_tensor(idx, device=x.device)
    w = torch.as_tensor(w, dtype=x.dtype, device=x.device)
    t = torch.movedim(x, axis, -1)[..., idx]
    if not valid.all():
        t = torch.where(torch.as_tensor(valid, device=x.device), t, 0.0)
    return torch.movedim(torch.einsum("...ok,ok->...o", t, w), -1, axis)'''
HELPERS["_folded_t"] = '''def _folded_t(x, d):
    lead = tuple(x.shape[:x.ndim - d])
    return x.reshape((math.prod(lead), 1) + tuple(x.shape[x.ndim - d:])), lead'''
HELPERS["_resample_t"] = '''def _resample_t(x, kind, args):
    F = torch.nn.functional
    d = len(args[0])
    if kind == "avg" and d == 1 and args[5] is not None:
        for i in range(d):
            idx, w, ok = _taps(kind, x.shape[x.ndim - d + i], i, args)
            x = _along_t(x, x.ndim - d + i, idx, w, ok)
        return x
    x4, lead = _folded_t(x, d)
    if kind == "avg":
        k, s, p, ceil, include, divisor = args
        if d == 1:
            y = F.avg_pool1d(x4, k, s, p, ceil, include)
        else:
            y = (F.avg_pool2d, F.avg_pool3d)[d - 2](x4, k, s, p, ceil, include, divisor)
    elif kind == "adaptive_avg":
        y = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[d - 1](x4, args[0])
    else:
        out, align, scales = args
        aa = kind.endswith("_aa")
        kind_ = kind[:-3] if aa else kind
        mode = {"linear": ("linear", "bilinear", "trilinear")[d - 1], "cubic": "bicubic"}.get(kind_, kind_)
        align = align if kind_ in ("linear", "cubic") else None
        if scales is not None:
            y = F.interpolate(x4, scale_factor=scales, mode=mode, align_corners=align,
                              recompute_scale_factor=False, antialias=aa)
        else:
            size = tuple(_out_size(kind, x.shape[x.ndim - d + i], i, args) for i in range(d))
            y = F.interpolate(x4, size=size, mode=mode, align_corners=align, antialias=aa)
    return y.reshape(lead + tuple(y.shape[2:]))'''
HELPERS["_resample_backward_t"] = '''def _resample_backward_t(g, kind, sizes, args):
    d = len(sizes)
    if kind == "avg" and d in (2, 3) and g.numel() and all(int(n) for n in sizes):
        k, s, p, ceil, include, divisor = args   # torch's own average-pool backward
        lead = tuple(g.shape[:g.ndim - d])
        g4 = g.reshape((math.prod(lead), 1) + tuple(g.shape[g.ndim - d:]))
        like = g4.new_zeros(()).expand((g4.shape[0], 1) + tuple(int(n) for n in sizes))
        fn = (torch.ops.aten.avg_pool2d_backward, torch.ops.aten.avg_pool3d_backward)[d - 2]
        out = fn(g4, like, k, s, p, ceil, include, divisor)
        return out.reshape(lead + tuple(int(n) for n in sizes))
    for i in range(d):
        tidx, tw, tok = _transposed(*_taps(kind, int(sizes[i]), i, args), int(sizes[i]))
        g = _along_t(g, g.ndim - d + i, tidx, tw, tok)
    return g'''
HELPERS["_max_where_t"] = '''import torch.utils.weak
_MAX_WHERE = torch.utils.weak.WeakIdKeyDictionary()


def _max_where_t(x, kind, args):
    """(values, flat spatial index of each window's argmax), by torch's own pooling; kept
    with ``x`` (while it lives and is not written to) for the backward op of the same
    call, which would otherwise pool again."""
    key = (kind, repr(args), x._version)
    hit = _MAX_WHERE.get(x)
    if hit is not None and hit[0] == key:
        return hit[1]
    out = _max_where_uncached_t(x, kind, args)
    _MAX_WHERE[x] = (key, out)
    return out


def _max_where_uncached_t(x, kind, args):
    F = torch.nn.functional
    d = len(args[0])
    lead = tuple(x.shape[:x.ndim - d])
    x3 = x.reshape((math.prod(lead), 1) + tuple(x.shape[x.ndim - d:]))
    if kind == "max":
        k, s, p, dl, ceil = args
        fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[d - 1]
        y, i = fn(x3, k, s, p, dl, ceil_mode=ceil, return_indices=True)
    else:
        fn = (F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)[d - 1]
        y, i = fn(x3, args[0], return_indices=True)
    return y.reshape(lead + tuple(y.shape[2:])), i.reshape(lead + tuple(i.shape[2:]))'''
HELPERS["_max_pool_t"] = '''def _max_pool_t(x, kind, args):
    return _max_where_t(x, kind, args)[0]'''
HELPERS["_max_pool_backward_t"] = '''def _max_pool_backward_t(g, x, kind, args):
    _, index = _max_where_t(x, kind, args)
    d = len(args[0])
    rows = index.reshape(math.prod(index.shape[:index.ndim - d]),
                         math.prod(index.shape[index.ndim - d:]))
    g = torch.broadcast_to(g, index.shape).reshape(rows.shape)
    out = torch.zeros((rows.shape[0], math.prod(x.shape[x.ndim - d:])), dtype=g.dtype,
                      device=g.device)
    return out.scatter_add_(1, rows, g).reshape(x.shape)'''
HELPERS["_max_pool_gather_t"] = '''def _max_pool_gather_t(h, x, kind, args):
    _, index = _max_where_t(x, kind, args)
    d = len(args[0])
    h = torch.broadcast_to(h, x.shape).reshape(
        tuple(x.shape[:x.ndim - d]) + (math.prod(x.shape[x.ndim - d:]),))
    rows = index.reshape(tuple(index.shape[:index.ndim - d]) +
                         (math.prod(index.shape[index.ndim - d:]),))
    return torch.gather(h, -1, rows).reshape(index.shape)'''


