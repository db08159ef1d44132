"""Reductions over groups given when tracing: torch.segment_reduce (segments along an
axis by lengths or offsets) and F.embedding_bag (bags of embedding rows, by offsets or
the rows of a 2-d input), on ``writes.reduce_into``: each element is sent to the flat
place of its group's result, so the gradient of max/min shares ties evenly and prod's is
exact at zeros.
"""
import numpy

from ..core import ops as sgo
from ..core.build import const
from ..core.shapes import fmt_shape, normalize_axis
from ..errors import ParameterError, ShapeError
from . import writes
from .dispatch import reject, torch_op, unsupported

_EMPTY = {"sum": 0.0, "prod": 1.0, "max": float("-inf"), "min": float("inf"),
          "mean": float("nan")}
_AS_SCATTER = {"sum": "sum", "prod": "prod", "max": "amax", "min": "amin", "mean": "sum"}


def _offsets(name, lengths, offsets, lead, size):
    """Offsets of shape lead + (segments + 1,) from lengths or offsets."""
    if (lengths is None) == (offsets is None):
        raise ParameterError(f"{name}: give exactly one of lengths and offsets")
    if lengths is not None:
        lengths = writes.const_index(name, lengths, "lengths")
        starts = numpy.zeros(lengths.shape[:-1] + (1,), dtype=numpy.int64)
        table = numpy.concatenate([starts, numpy.cumsum(lengths, axis=-1)], axis=-1)
    else:
        table = writes.const_index(name, offsets, "offsets")
    if table.shape[:-1] != tuple(lead) or (table.size and (table.max() > size or
                                                           (numpy.diff(table) < 0).any())):
        raise ShapeError(f"{name}: lengths/offsets of shape {fmt_shape(table.shape)} do not "
                         f"cut an axis of size {size} under leading dims {fmt_shape(lead)}")
    return table


@torch_op("torch.segment_reduce")
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    name = "torch.segment_reduce"
    if indices is not None:
        raise unsupported(name, (data,), why="indices= is not implemented by torch either; "
                          "give lengths or offsets")
    if reduce not in _EMPTY:
        raise ParameterError(f"{name}: reduce must be one of {sorted(_EMPTY)}, got {reduce!r}")
    shape = writes.concrete(name, data, "data")
    axis = normalize_axis(axis, len(shape), name)
    lead, size, tail = shape[:axis], shape[axis], shape[axis + 1:]
    table = _offsets(name, lengths, offsets, lead, size)
    segments = table.shape[-1] - 1
    inner = int(numpy.prod(tail, dtype=int))
    starts = table.reshape(-1, segments + 1)
    seg = numpy.stack([numpy.searchsorted(row, numpy.arange(size), side="right") - 1
                       for row in starts]) if starts.shape[0] else \
        numpy.zeros((0, size), dtype=numpy.int64)
    keep = (seg >= 0) & (seg < segments) & (numpy.arange(size) < starts[:, -1:])
    batch = numpy.arange(starts.shape[0])[:, None]
    dest = ((batch * segments + seg)[..., None] * inner + numpy.arange(inner))
    source = numpy.arange(dest.size).reshape(dest.shape)
    keep = numpy.broadcast_to(keep[..., None], dest.shape)
    out_shape = tuple(lead) + (segments,) + tuple(tail)
    fill = _EMPTY[reduce] if initial is None else float(initial)
    base = const(fill, out_shape)
    src = sgo.take(writes.flat(data), source[keep], axis=0)
    pos = dest[keep]
    out = writes.reduce_into(name, base, src, pos, _AS_SCATTER[reduce],
                             include_self=initial is not None)
    if reduce == "mean":
        counts = numpy.bincount(pos, minlength=int(numpy.prod(out_shape, dtype=int)))
        counts = counts.reshape(out_shape).astype(float)
        out = sgo.where(counts > 0, out / numpy.maximum(counts, 1.0), out)
    return out


@torch_op("F.embedding_bag")
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Each bag's rows of ``weight`` summed (times per_sample_weights), averaged or
    maxed; an empty bag gives zeros and ``padding_idx`` rows are left out, as torch."""
    name = "torch.nn.functional.embedding_bag"
    reject(name, max_norm=max_norm, scale_grad_by_freq=scale_grad_by_freq)
    if mode not in ("sum", "mean", "max"):
        raise ParameterError(f"{name}: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise ParameterError(f"{name}: per_sample_weights needs mode='sum', got {mode!r}")
    rows, width = writes.concrete(name, weight, "weight")
    ids = writes.const_index(name, input)
    if ids.ndim == 2:
        if offsets is not None:
            raise ShapeError(f"{name}: a 2-d input is its own bags; offsets must be None")
        bag = numpy.repeat(numpy.arange(ids.shape[0]), ids.shape[1])
        bags = ids.shape[0]
    elif ids.ndim == 1:
        if offsets is None:
            raise ShapeError(f"{name}: a 1-d input needs offsets")
        starts = writes.const_index(name, offsets, "offsets").reshape(-1)
        bags = len(starts) - 1 if include_last_offset else len(starts)
        ends = numpy.append(starts[1:], len(ids))[:bags] if not include_last_offset \
            else starts[1:]
        bag = numpy.searchsorted(starts[:bags], numpy.arange(len(ids)), side="right") - 1
        if bags:
            bag = numpy.where(numpy.arange(len(ids)) < ends[-1], bag, -1)
    else:
        raise ShapeError(f"{name}: input must be 1-d or 2-d, got {fmt_shape(ids.shape)}")
    ids = writes.checked(name, ids.reshape(-1), rows, "id")
    keep = bag >= 0
    if padding_idx is not None:
        keep &= ids != (padding_idx % rows)
    picked = sgo.take(weight, ids[keep], axis=0)
    if per_sample_weights is not None:
        psw = sgo.take(writes.flat(per_sample_weights), numpy.flatnonzero(keep), axis=0)
        picked = picked * sgo.reshape(psw, (-1, 1))
    pos = (bag[keep][:, None] * width + numpy.arange(width)).reshape(-1)
    base = const(0.0, (bags, width))
    reduce = {"sum": "sum", "mean": "mean", "max": "amax"}[mode]
    return writes.reduce_into(name, base, picked, pos, reduce, include_self=False)
