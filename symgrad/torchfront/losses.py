"""torch's margin, embedding and distance losses on symbolic Tensors (soft margin, margin
ranking, hinge and cosine embedding, multi-class and multi-label margins, triplet
losses, Poisson NLL, linear_cross_entropy) and the distance they use, pairwise_distance.

Each is a composition of sg ops following torch's own definition (ATen's Loss.cpp and
torch/nn/functional.py), so its gradient is the exact derivative of that composition:
``clamp_min(…, 0)`` where torch clamps, ``where`` on the targets where torch selects by
them. Class-index targets must be constants (torch tensors), as for cross_entropy.
"""
import math

import numpy

from ..core import ops as sgo
from ..errors import ParameterError, ShapeError
from ..core.shapes import fmt_shape
from .dispatch import legacy_reduction, rank_of, reduce_loss, shape_of, torch_op
from .functional import _indices, cross_entropy, linear
from .pointwise import clamp
from .vector_norm import vector_norm


def _hinge(x):
    """max(x, 0) with torch's clamp_min gradient (1 where x >= 0)."""
    return clamp(x, min=0.0)


@torch_op("F.soft_margin_loss")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x))."""
    name = "torch.nn.functional.soft_margin_loss"
    loss = sgo.softplus(-(target * input))
    return reduce_loss(loss, legacy_reduction(name, reduction, size_average, reduce), name)


@torch_op("F.margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -y (x1 - x2) + margin)."""
    name = "torch.nn.functional.margin_ranking_loss"
    loss = _hinge(-target * (input1 - input2) + margin)
    return reduce_loss(loss, legacy_reduction(name, reduction, size_average, reduce), name)


@torch_op("F.hinge_embedding_loss")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """max(0, margin - x) where y != 1, plus x where y != -1 (torch's exact rule, which
    for y in {1, -1} picks one term)."""
    name = "torch.nn.functional.hinge_embedding_loss"
    loss = sgo.where(sgo.ne(target, 1), _hinge(margin - input), 0.0) + \
        sgo.where(sgo.ne(target, -1), input, 0.0)
    return reduce_loss(loss, legacy_reduction(name, reduction, size_average, reduce), name)


@torch_op("F.cosine_embedding_loss")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None,
                          reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where y == 1, max(0, cos - margin) where y == -1, with torch's
    cos = x1·x2 / sqrt((|x1|² + 1e-12)(|x2|² + 1e-12)) over the last dim."""
    name = "torch.nn.functional.cosine_embedding_loss"
    dim = rank_of(input1) - 1
    eps = 1e-12
    dot = sgo.sum(input1 * input2, axis=dim)
    mag = (sgo.sum(input1 * input1, axis=dim) + eps) * (sgo.sum(input2 * input2, axis=dim) + eps)
    cos = dot / sgo.sqrt(mag)
    loss = sgo.where(sgo.eq(target, 1), 1 - cos, 0.0) + \
        sgo.where(sgo.eq(target, -1), _hinge(cos - margin), 0.0)
    return reduce_loss(loss, legacy_reduction(name, reduction, size_average, reduce), name)


@torch_op("F.poisson_nll_loss")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """exp(x) - y x (log_input) or x - y log(x + eps); ``full`` adds Stirling's
    y log y - y + log(2πy)/2 where y > 1."""
    name = "torch.nn.functional.poisson_nll_loss"
    reduction = legacy_reduction(name, reduction, size_average, reduce)
    if log_input:
        loss = sgo.exp(input) - target * input
    else:
        loss = input - target * sgo.log(input + eps)
    if full:
        big = sgo.gt(target, 1)
        y = sgo.where(big, target, 2.0)   # Stirling's term is only read where y > 1
        stirling = y * sgo.log(y) - y + 0.5 * sgo.log(2 * math.pi * y)
        loss = loss + sgo.where(big, stirling, 0.0)
    return reduce_loss(loss, reduction, name)


@torch_op("torch.pairwise_distance", "F.pairwise_distance")
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """‖x1 - x2 + eps‖_p over the last dim of the broadcast operands."""
    dim = max(rank_of(x1), rank_of(x2)) - 1
    diff = x1 - x2 + eps
    if dim < 0:
        return vector_norm(diff, p, None, False, "torch.pairwise_distance")
    return vector_norm(diff, p, dim, keepdim, "torch.pairwise_distance")


def _triplet(name, anchor, positive, negative, distance, margin, swap, reduction):
    ranks = {rank_of(anchor), rank_of(positive), rank_of(negative)}
    if len(ranks) != 1:
        raise ShapeError(f"{name}: anchor, positive and negative must have the same rank, got "
                         f"shapes {fmt_shape(shape_of(anchor))}, "
                         f"{fmt_shape(shape_of(positive))}, {fmt_shape(shape_of(negative))}")
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = sgo.minimum(d_neg, distance(positive, negative))
    return reduce_loss(_hinge(margin + d_pos - d_neg), reduction, name)


@torch_op("F.triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)), d the pairwise p-distance; with ``swap`` d(a, n)
    is min(d(a, n), d(p, n))."""
    name = "torch.nn.functional.triplet_margin_loss"
    return _triplet(name, anchor, positive, negative,
                    lambda a, b: pairwise_distance(a, b, p, eps), margin, swap,
                    legacy_reduction(name, reduction, size_average, reduce))


@torch_op("F.triplet_margin_with_distance_loss")
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """The triplet loss with any distance: ``distance_function`` runs on the symbolic
    Tensors (its torch calls are traced), pairwise_distance by default."""
    name = "torch.nn.functional.triplet_margin_with_distance_loss"
    if margin <= 0:
        raise ParameterError(f"{name}: margin must be greater than 0, got {margin}")
    distance = distance_function if distance_function is not None else pairwise_distance
    return _triplet(name, anchor, positive, negative, distance, margin, swap, reduction)


@torch_op("F.multilabel_soft_margin_loss")
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y log σ(x) + (1 - y) log σ(-x)), weighted, averaged over the classes (last dim)."""
    name = "torch.nn.functional.multilabel_soft_margin_loss"
    reduction = legacy_reduction(name, reduction, size_average, reduce)
    loss = target * sgo.softplus(-input) + (1 - target) * sgo.softplus(input)
    if weight is not None:
        loss = loss * weight
    dim = rank_of(input) - 1
    loss = sgo.sum(loss, axis=dim) / shape_of(input)[dim] if dim >= 0 else loss
    return reduce_loss(loss, reduction, name)


def _class_rows(name, input):
    """The input as (N, C) rows, and whether it had no batch dim (torch reads a 0-d input
    as one class, a vector as one sample)."""
    rank = rank_of(input)
    if rank > 2:
        raise ShapeError(f"{name}: expects an input (C,) or (N, C), got shape "
                         f"{fmt_shape(shape_of(input))}")
    if rank < 2:
        return sgo.reshape(input, (1, -1)), True
    return input, False


def _classes(name, shape):
    if not isinstance(shape[-1], int):
        raise ShapeError(f"{name}: the number of classes is symbolic ({shape[-1]}); give it a "
                         "concrete size")
    return shape[-1]


def _unbatched(loss, single, reduction):
    return sgo.reshape(loss, ()) if single and reduction == "none" else loss


@torch_op("F.multi_margin_loss")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Σ_{j≠y} max(0, margin - x_y + x_j)^p / C per sample, weighted by weight[y]."""
    name = "torch.nn.functional.multi_margin_loss"
    reduction = legacy_reduction(name, reduction, size_average, reduce)
    if p not in (1, 2):
        raise ParameterError(f"{name}: only p == 1 and p == 2 are supported, got {p!r}")
    rows, single = _class_rows(name, input)
    classes = _classes(name, shape_of(rows))
    y = _indices(name, target).reshape(-1)
    hot = (y[:, None] == numpy.arange(classes)).astype(float)
    picked = sgo.sum(rows * hot, axis=1, keepdims=True)
    terms = _hinge(margin - picked + rows)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * sgo.unsqueeze(sgo.sum(weight * hot, axis=1), 1)
    loss = sgo.sum(terms * (1 - hot), axis=1) / classes
    return reduce_loss(_unbatched(loss, single, reduction), reduction, name)


@torch_op("F.multilabel_margin_loss")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Σ_{j in targets} Σ_{k not in targets} max(0, 1 - (x_j - x_k)) / C per sample; a
    sample's targets are the entries of its target row before the first -1."""
    name = "torch.nn.functional.multilabel_margin_loss"
    reduction = legacy_reduction(name, reduction, size_average, reduce)
    rows, single = _class_rows(name, input)
    classes = _classes(name, shape_of(rows))
    ids = _indices(name, target).reshape(-1, classes) if classes else \
        numpy.zeros((shape_of(rows)[0], 0), int)
    pairs = numpy.zeros((ids.shape[0], classes, classes))
    for i, row in enumerate(ids):
        ends = numpy.flatnonzero(row < 0)
        picked = row[:ends[0] if len(ends) else classes]
        is_target = numpy.zeros(classes, bool)
        is_target[picked] = True
        for j in picked:   # a repeated target counts as often as it is listed, as in torch
            pairs[i, j] += ~is_target
    margins = _hinge(1 - sgo.unsqueeze(rows, 2) + sgo.unsqueeze(rows, 1))
    loss = sgo.sum(margins * pairs, axis=(1, 2)) / max(classes, 1)
    return reduce_loss(_unbatched(loss, single, reduction), reduction, name)


@torch_op("F.linear_cross_entropy")
def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """cross_entropy(linear(x, W), target): torch's reference path. ``options`` (the
    chunked evaluation) computes the same loss, so it does not change the formula."""
    name = "torch.nn.functional.linear_cross_entropy"
    shape = shape_of(linear_weight)
    if rank_of(linear_weight) < 2 or rank_of(input) not in (1, 2):
        raise ShapeError(f"{name}: expects input (in,) or (N, in) and linear_weight "
                         f"(C, ..., in), got {fmt_shape(shape_of(input))} and {fmt_shape(shape)}")
    out_features = tuple(shape[1:-1])
    logits_shape = tuple(shape_of(input)[:-1]) + (shape[0],) + out_features
    if out_features:
        linear_weight = sgo.reshape(linear_weight, (-1, shape[-1]))
        if linear_bias is not None:
            linear_bias = sgo.reshape(linear_bias, (-1,))
    logits = sgo.reshape(linear(input, linear_weight, linear_bias), logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)
