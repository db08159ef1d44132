"""The PyTorch front end: torch code and nn.Modules traced into symgrad formulas.

Every torch callable in ``torchfront.dispatch.table()`` is exercised by
``test_mapping``, parametrized over the table (``-k gelu`` works): a small function using
it is traced, differentiated and compiled (NumPy and torch), and compared with the same
function run by real torch under torch.autograd (float64), value, gradients and
Hessian-vector products. A table entry without an example in ``EXAMPLES`` fails
``test_every_mapping_has_an_example``.
"""
import inspect
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from symgrad.torchfront import dispatch as tf
from symgrad.check import _concrete
from symgrad.core.shapes import DimValueError
from symgrad.torchfront.module import symbol_names
from symgrad.errors import NonScalarOutputError, ShapeError, SymgradError, UnsupportedOpError

D = torch.float64


def C(*shape, low=-1.0, high=1.0, seed=0):
    """A fixed constant torch tensor (not a symbol)."""
    g = torch.Generator().manual_seed(seed + 7 * len(shape))
    return low + (high - low) * torch.rand(shape, generator=g, dtype=D)


def P(*shape):
    return C(*shape, low=0.5, high=2.0)


def spd(n):
    a = C(n, n, seed=3)
    return a @ a.T + n * torch.eye(n, dtype=D)


class Ex:
    """``call(op, *symbols)`` with ``shapes`` for the symbols; ``domain`` draws the inputs:
    real, pos (0.5..2), unit (-0.9..0.9), prob (0.05..0.95) or spd (square matrices)."""

    def __init__(self, call, shapes, domain="real", order=2):
        self.call, self.shapes, self.domain, self.order = call, shapes, domain, order


def INT(*dims):
    """An integer input (ids, labels): drawn from [0, 3)."""
    return sg.TensorSpec(dims, dtype="int64")


X = {"x": (3, 4)}
XY = {"x": (3, 4), "y": (3, 4)}
XYZ = {"x": (3, 4), "y": (3, 4), "z": (3, 4)}
V = {"v": (4,), "w": (4,)}
SQ = {"x": (3, 3)}


def unary(domain="real"):
    return Ex(lambda op, x: op(x), X, domain)


def where_of(call):
    return Ex(lambda op, x, y: torch.where(call(op, x, y), x, 2 * y), XY)


EXAMPLES = {
    # pointwise
    **{f"torch.{n}": unary() for n in [
        "abs", "absolute", "neg", "negative", "exp", "expm1", "square", "sin", "cos", "tan",
        "atan", "arctan", "sinh", "cosh", "tanh", "sigmoid", "relu", "erf", "erfc", "exp2",
        "special.expit"]},
    **{f"torch.{n}": unary("pos") for n in [
        "log", "log1p", "sqrt", "rsqrt", "reciprocal", "log2", "log10"]},
    **{f"torch.{n}": unary("unit") for n in ["asin", "arcsin", "acos", "arccos"]},
    "torch.sign": Ex(lambda op, x: op(x) * x, X),
    "torch.sgn": Ex(lambda op, x: op(x) * x, X),
    "torch.logical_not": Ex(lambda op, x: torch.where(op(x > 0), x, 2 * x), X),
    "torch.isnan": Ex(lambda op, x: torch.where(op(torch.log(x)), x * x, torch.sin(x)), X),
    "torch.Tensor.isnan": Ex(lambda op, x: torch.where(op(torch.log(x)), x * x, 2 * x), X),
    "torch.add": Ex(lambda op, x, y: (op(x, y, alpha=2), op(C(3, 4), x)), XY),
    "torch.sub": Ex(lambda op, x, y: (op(x, y, alpha=0.5), op(C(3, 4), x)), XY),
    "torch.rsub": Ex(lambda op, x: op(C(3, 4), x), X),
    "torch.mul": Ex(lambda op, x, y: (op(x, y), op(C(3, 4), x)), XY),
    "torch.div": Ex(lambda op, x, y: (op(x, y), op(P(3, 4), x)), XY, "pos"),
    "torch.Tensor.__rdiv__": Ex(lambda op, x: op(P(3, 4), x), X, "pos"),
    "torch.pow": Ex(lambda op, x, y: (op(x, y), op(P(3, 4), x), op(x, 2.5)), XY, "pos"),
    "torch.Tensor.__rpow__": Ex(lambda op, x: op(P(3, 4), x), X, "pos"),
    "torch.maximum": Ex(lambda op, x, y: (op(x, y), op(C(3, 4), x)), XY),
    "torch.minimum": Ex(lambda op, x, y: (op(x, y), op(C(3, 4), x)), XY),
    "torch.hypot": Ex(lambda op, x, y: op(x, y), XY),
    "torch.lerp": Ex(lambda op, x, y, z: (op(x, y, 0.3), op(x, y, z)), XYZ),
    "torch.addcmul": Ex(lambda op, x, y, z: op(x, y, z, value=0.5), XYZ),
    "torch.addcdiv": Ex(lambda op, x, y, z: op(x, y, z, value=0.5), XYZ, "pos"),
    "torch.logit": Ex(lambda op, x: (op(x), op(x, 0.1)), X, "prob"),
    "torch.xlogy": Ex(lambda op, x, y: (op(x, y), op(x * (x > 0.8), y)), XY, "pos"),
    "torch.clamp": Ex(lambda op, x, y: (op(x, -0.5, 0.5), op(x, min=0.1), op(x, min=y),
                                        op(x, y - 1, y + 0.5)), XY),
    "torch.clamp_min": Ex(lambda op, x, y: (op(x, 0.1), op(x, y)), XY),
    "torch.clamp_max": Ex(lambda op, x, y: (op(x, 0.1), op(x, y)), XY),
    "torch.where": Ex(lambda op, x, y: (op(x > y, x, y), op(C(3, 4) > 0, x, 0.5),
                                        op(x > 0, 1.0, y)), XY),
    "torch.Tensor.where": Ex(lambda op, x, y: (op(x, x > y, y), op(x, C(3, 4) > 0, 0.5)), XY),
    "torch.Tensor.masked_fill": Ex(lambda op, x: (op(x, x > 0, 2.0),
                                                  op(x, C(3, 4) > 0, -1.0)), X),
    "torch.eq": where_of(lambda op, x, y: op(torch.sign(x), torch.sign(y))),
    "torch.ne": where_of(lambda op, x, y: op(torch.sign(x), torch.sign(y))),
    **{f"torch.{n}": where_of(lambda op, x, y: op(x, y)) for n in ["gt", "ge", "lt", "le"]},
    **{f"torch.logical_{n}": where_of(lambda op, x, y: op(x > 0, y > 0))
       for n in ["and", "or", "xor"]},
    # linear algebra
    "torch.matmul": Ex(lambda op, x, y: (op(x, y), op(C(2, 3), x), op(y, C(2))),
                       {"x": (3, 4), "y": (4, 2)}),
    "torch.Tensor.__rmatmul__": Ex(lambda op, x: op(C(4, 2), x), X),
    "torch.mm": Ex(lambda op, x, y: op(x, y), {"x": (3, 4), "y": (4, 2)}),
    "torch.mv": Ex(lambda op, x, v: op(x, v), {"x": (3, 4), "v": (4,)}),
    "torch.bmm": Ex(lambda op, a, b: op(a, b), {"a": (2, 3, 4), "b": (2, 4, 2)}),
    "torch.dot": Ex(lambda op, v, w: op(v, w), V),
    "torch.inner": Ex(lambda op, a, b, v: (op(a, b), op(b, a), op(a, v[:3]), op(v[0], b)),
                      {"a": (2, 4, 3), "b": (5, 3), "v": (4,)}),
    "torch.outer": Ex(lambda op, v, w: op(v, w), V),
    "torch.addmm": Ex(lambda op, z, x, y: op(z, x, y, beta=0.5, alpha=2),
                      {"z": (3, 2), "x": (3, 4), "y": (4, 2)}),
    "torch.addmv": Ex(lambda op, z, x, v: op(z, x, v, alpha=2),
                      {"z": (3,), "x": (3, 4), "v": (4,)}),
    "torch.baddbmm": Ex(lambda op, z, a, b: op(z, a, b, beta=2),
                        {"z": (2, 3, 2), "a": (2, 3, 4), "b": (2, 4, 2)}),
    "torch.einsum": Ex(
        lambda op, a, b, c, q, k: (
            op("ij,jk,k->i", a, b, c), op("...ij,...j", a, b[:, 0]), op("ij,ij->i", a, a),
            op("i,j->ij", c[:3], c), op("ij->", a), op("ii", a[:, :3]), op("ii->i", b[:, :4]),
            op("bhqd,bhkd->bhqk", q, k), op("ij,jk", [a, b]), op("bqd , bkd -> qbk", q[0], k[0])),
        {"a": (3, 4), "b": (4, 5), "c": (5,), "q": (2, 2, 3, 4), "k": (2, 2, 5, 4)}),
    "torch.index_select": Ex(lambda op, x, ids: (op(x, 1, torch.tensor([3, 0, 3])),
                                                 op(x, 0, torch.tensor([2])), op(x, 1, ids)),
                             {"x": (3, 4), "ids": INT(5)}),
    "torch.gather": Ex(lambda op, x, ids: (op(x, 1, torch.tensor([[0, 3], [1, 1], [2, 0]])),
                                           op(x, 0, torch.tensor([[2, 0, 1, 1]])),
                                           op(x, 1, ids)), {"x": (3, 4), "ids": INT(3, 2)}),
    "torch.take": Ex(lambda op, x, ids: (op(x, torch.tensor([[0, 11], [5, 5]])), op(x, ids)),
                     {"x": (3, 4), "ids": INT(4)}),
    "torch.take_along_dim": Ex(lambda op, x, ids: (
        op(x, torch.tensor([[0], [3], [1]]), 1), op(x, torch.tensor([7, 0])), op(x, ids, 0)),
        {"x": (3, 4), "ids": INT(2, 1)}),
    "torch.scatter_add": Ex(lambda op, x, y, ids: (
        op(x, 1, torch.tensor([[0, 0], [1, 3], [2, 2]]), y[:, :2]), op(x, 0, ids, y)),
        {"x": (3, 4), "y": (3, 4), "ids": INT(3, 4)}),
    "torch.scatter_reduce": Ex(lambda op, x, y, ids: (
        op(x, 1, ids, y, "sum"), op(x, 1, ids, y, "mean"),
        op(x, 1, ids, y, "sum", include_self=False), op(x, 1, ids, y, "mean", include_self=False)),
        {"x": (3, 4), "y": (3, 4), "ids": INT(3, 4)}),
    "torch.index_add": Ex(lambda op, x, y, ids: (op(x, 0, torch.tensor([2, 0]), y[:2], alpha=2),
                                                 op(x, 1, ids, y)),
                          {"x": (3, 4), "y": (3, 4), "ids": INT(4)}),
    "torch.Tensor.__getitem__": Ex(lambda op, x, ids: op(C(5, 4), ids) * x, {"x": (3, 4),
                                                                            "ids": INT(3)}),
    "torch.nn.functional.one_hot": Ex(lambda op, x, ids: op(ids, 4) * x, {"x": (3, 4),
                                                                         "ids": INT(3)}),
    "torch.trace": Ex(lambda op, x: op(x), SQ),
    "torch.diag": Ex(lambda op, x, v: (op(x), op(v)), {"x": (3, 3), "v": (3,)}),
    "torch.diagonal": Ex(lambda op, x: op(x), SQ),
    "torch.det": Ex(lambda op, x: op(x), SQ, "spd"),
    "torch.logdet": Ex(lambda op, x: op(x), SQ, "spd"),
    "torch.slogdet": Ex(lambda op, x: op(x).sign * op(x).logabsdet, SQ, "spd"),
    "torch.inverse": Ex(lambda op, x: op(x), SQ, "spd"),
    "torch.linalg.cholesky": Ex(lambda op, x: op(x), SQ, "spd"),
    "torch.tril": Ex(lambda op, x: (op(x), op(x, 1), op(x, diagonal=-1)), SQ),
    "torch.triu": Ex(lambda op, x: (op(x), op(x, -1), op(x, diagonal=1)), SQ),
    "torch.linalg.solve": Ex(lambda op, a, b, c: (op(a, b), op(a, c)),
                             {"a": (3, 3), "b": (3,), "c": (3, 2)}, "spd"),
    "torch.norm": Ex(lambda op, x: (op(x), op(x, 1, 1), op(x, dim=0, keepdim=True),
                                    op(x, p=3, dim=1), op(x, float("inf"), 1)), X),
    "torch.linalg.vector_norm": Ex(lambda op, x: (op(x), op(x, 3, dim=1), op(x, ord=1),
                                                  op(x, float("-inf"), 0)), X),
    "torch.linalg.norm": Ex(lambda op, x, v: (op(x), op(v), op(x, dim=1), op(v, 1)),
                            {"x": (3, 4), "v": (4,)}),
    # reductions
    "torch.sum": Ex(lambda op, x: (op(x), op(x, 1), op(x, dim=(0, 1), keepdim=True),
                                   op(x, dim=0, dtype=D)), X),
    "torch.mean": Ex(lambda op, x: (op(x), op(x, 1), op(x, dim=[0], keepdim=True)), X),
    "torch.amax": Ex(lambda op, x: (op(x), op(x, 1), op(x, dim=(0, 1), keepdim=True)), X),
    "torch.amin": Ex(lambda op, x: (op(x), op(x, 1), op(x, dim=0, keepdim=True)), X),
    "torch.logsumexp": Ex(lambda op, x: (op(x, 1), op(x, dim=(0, 1), keepdim=True)), X),
    "torch.prod": Ex(lambda op, x: (op(x), op(x, 1), op(x, dim=0, keepdim=True)), X),
    "torch.max": Ex(lambda op, x, y: (op(x), op(x, 1).values, op(x, dim=0, keepdim=True)[0],
                                      op(x, y)), XY),
    "torch.min": Ex(lambda op, x, y: (op(x), op(x, 1).values, op(x, dim=0, keepdim=True)[0],
                                      op(x, y)), XY),
    "torch.var": Ex(lambda op, x: (op(x), op(x, 1), op(x, dim=0, unbiased=False),
                                   op(x, dim=1, correction=0, keepdim=True)), X),
    "torch.std": Ex(lambda op, x: (op(x), op(x, 1), op(x, dim=0, unbiased=False),
                                   op(x, dim=1, correction=0, keepdim=True)), X),
    "torch.cumsum": Ex(lambda op, x: (op(x, 1), op(x, dim=0)), X),
    # shape
    "torch.reshape": Ex(lambda op, x: (op(x, (2, 6)), op(x, (-1,))), X),
    "torch.Tensor.view_as": Ex(lambda op, x: op(x, C(4, 3)), X),
    "torch.flatten": Ex(lambda op, y: (op(y, 1), op(y, 0, 1), op(y)), {"y": (2, 3, 4)}),
    "torch.unflatten": Ex(lambda op, x: op(x, 1, (2, 2)), X),
    "torch.squeeze": Ex(lambda op, z: (op(z), op(z, 1), op(z, 0), op(z, (1, 2))),
                        {"z": (3, 1, 4)}),
    "torch.unsqueeze": Ex(lambda op, x: (op(x, 1), op(x, -1)), X),
    "torch.flip": Ex(lambda op, y: (op(y, (0, 2)) * y, op(y, dims=[1]) * y), {"y": (2, 3, 4)}),
    "torch.Tensor.flip": Ex(lambda op, y: (op(y, 0, 2) * y, op(y, [1]) * y), {"y": (2, 3, 4)}),
    "torch.fliplr": Ex(lambda op, y: op(y) * y, {"y": (2, 3)}),
    "torch.flipud": Ex(lambda op, y: op(y) * y, {"y": (2, 3)}),
    "torch.transpose": Ex(lambda op, y, x: (op(y, 0, 2), op(x, 0, 1), op(x, -1, -2)),
                          {"y": (2, 3, 4), "x": (3, 4)}),
    "torch.t": Ex(lambda op, x, v: (op(x), op(v)), {"x": (3, 4), "v": (4,)}),
    "torch.adjoint": Ex(lambda op, y: op(y), {"y": (2, 3, 4)}),
    "torch.permute": Ex(lambda op, y: op(y, (2, 0, 1)), {"y": (2, 3, 4)}),
    "torch.movedim": Ex(lambda op, y: (op(y, 0, 2), op(y, (0, 1), (2, 0))), {"y": (2, 3, 4)}),
    "torch.Tensor.expand": Ex(lambda op, x: (op(x, 3, 4), op(x, -1, 4), op(x, (2, 3, 4))),
                              {"x": (3, 1)}),
    "torch.broadcast_to": Ex(lambda op, x: op(x, (2, 3, 4)), {"x": (3, 1)}),
    "torch.Tensor.expand_as": Ex(lambda op, x: op(x, C(3, 4)), {"x": (3, 1)}),
    "torch.broadcast_tensors": Ex(lambda op, x, v: op(x, v), {"x": (3, 1), "v": (4,)}),
    "torch.cat": Ex(lambda op, x, y: (op([x, y], dim=1), op((x, y)), op([x, C(2, 4)])), XY),
    "torch.stack": Ex(lambda op, x, y: (op([x, y], 1), op((x, C(3, 4)))), XY),
    "torch.hstack": Ex(lambda op, x, y, v, w: (op([x, y]), op([v, w])),
                       {"x": (3, 4), "y": (3, 2), "v": (4,), "w": (2,)}),
    "torch.vstack": Ex(lambda op, x, v, w: (op([x, v]), op([v, w])),
                       {"x": (3, 4), "v": (4,), "w": (4,)}),
    "torch.narrow": Ex(lambda op, x: op(x, 1, 1, 2), X),
    "torch.select": Ex(lambda op, x: (op(x, 1, 2), op(x, 0, -1)), X),
    "torch.split": Ex(lambda op, x: (op(x, 2, 1), op(x, [1, 2], 0)), X),
    "torch.chunk": Ex(lambda op, x: op(x, 2, 1), X),
    "torch.unbind": Ex(lambda op, x: op(x, 1), X),
    "torch.tile": Ex(lambda op, x: (op(x, (2, 1)), op(x, (2, 1, 2))), X),
    # conversions and creation
    "torch.Tensor.contiguous": Ex(lambda op, x: op(x) * x, X),
    "torch.detach": Ex(lambda op, x: op(x) * x, X),
    "torch.Tensor.float": Ex(lambda op, x: op(x > 0) * x, X),
    "torch.Tensor.to": Ex(lambda op, x: (op(x > 0, D) * x, op(x, "cpu"), op(x, dtype=D)), X),
    "torch.Tensor.type_as": Ex(lambda op, x: op(x > 0, x) * x, X),
    "torch.Tensor.bool": Ex(lambda op, x: torch.where(op(x > 0), x, 2 * x), X),
    "torch.zeros_like": Ex(lambda op, x: op(x) * 0 + x, X),
    "torch.ones_like": Ex(lambda op, x: op(x) * x, X),
    "torch.full_like": Ex(lambda op, x: op(x, 2.0) * x, X),
    "torch.Tensor.new_zeros": Ex(lambda op, x: op(x, (3, 4)) * 0 + x, X),
    # torch's new_empty is uninitialised memory (nan * 0 is nan): only its shape is read
    "torch.Tensor.new_empty": Ex(lambda op, x: torch.zeros_like(op(x, (3, 4))) + x, X),
    "torch.Tensor.new_ones": Ex(lambda op, x: op(x, (3, 4)) * x, X),
    "torch.Tensor.new_full": Ex(lambda op, x: op(x, (3, 4), 2.0) * x, X),
    "torch.Tensor.dim": Ex(lambda op, x: x * op(x), X),
    "torch.Tensor.numel": Ex(lambda op, x: x * op(x), X),
    "torch.Tensor.is_floating_point": Ex(lambda op, x: x * float(op(x)), X),
    "torch.Tensor.is_complex": Ex(lambda op, x: x * (1.0 + op(x)), X),
    # neural networks
    "torch.nn.functional.linear": Ex(lambda op, x, W, b, v: (op(x, W, b), op(v, W)),
                                     {"x": (3, 4), "W": (2, 4), "b": (2,), "v": (4,)}),
    "torch.nn.functional.bilinear": Ex(lambda op, x, y, W, b: op(x, y, W, b),
                                       {"x": (3, 2), "y": (3, 4), "W": (5, 2, 4), "b": (5,)}),
    **{f"torch.nn.functional.{n}": unary() for n in [
        "relu", "relu6", "selu", "silu", "mish", "softsign", "logsigmoid", "tanhshrink",
        "hardswish"]},
    # torch has no double backward for hardsigmoid
    "torch.nn.functional.hardsigmoid": Ex(lambda op, x: op(x), X, order=1),
    "torch.nn.functional.hardtanh": Ex(lambda op, x: (op(x), op(x, -0.5, 0.7)), X),
    "torch.nn.functional.prelu": Ex(lambda op, x, a, w, y: (op(x, a), op(y, w)),
                                    {"x": (3, 4), "a": (1,), "w": (4,), "y": (2, 4, 3)}),
    "torch.nn.functional.leaky_relu": Ex(lambda op, x: (op(x), op(x, 0.2)), X),
    "torch.nn.functional.elu": Ex(lambda op, x: (op(x), op(x, 0.7)), X),
    "torch.nn.functional.celu": Ex(lambda op, x: (op(x), op(x, 0.5)), X),
    "torch.nn.functional.gelu": Ex(lambda op, x: (op(x), op(x, approximate="tanh")), X),
    "torch.nn.functional.softplus": Ex(lambda op, x: (op(x), op(x, beta=2, threshold=1)), X),
    "torch.nn.functional.softshrink": Ex(lambda op, x: (op(x), op(x, 0.3)), X),
    "torch.nn.functional.hardshrink": Ex(lambda op, x: (op(x), op(x, 0.3)), X),
    "torch.softmax": Ex(lambda op, x: (op(x, 1), op(x, dim=0)), X),
    "torch.log_softmax": Ex(lambda op, x: (op(x, 1), op(x, dim=0)), X),
    "torch.nn.functional.softmin": Ex(lambda op, x: op(x, dim=1), X),
    "torch.nn.functional.normalize": Ex(lambda op, x: (op(x), op(x, p=1, dim=0)), X),
    "torch.nn.functional.cosine_similarity": Ex(lambda op, x, y: (op(x, y), op(x, y, 0)), XY),
    "torch.nn.functional.layer_norm": Ex(
        lambda op, x, W, b, y: (op(x, (4,), W, b), op(y, (3, 4)), op(x, [4], eps=0.1)),
        {"x": (3, 4), "W": (4,), "b": (4,), "y": (2, 3, 4)}),
    "torch.nn.functional.rms_norm": Ex(lambda op, x, W: (op(x, (4,), W, 1e-6), op(x, (4,))),
                                       {"x": (3, 4), "W": (4,)}),
    "torch.nn.functional.group_norm": Ex(lambda op, z, W, b: op(z, 2, W, b),
                                         {"z": (2, 4, 3), "W": (4,), "b": (4,)}),
    "torch.nn.functional.batch_norm": Ex(
        lambda op, z, W, b: (op(z, None, None, W, b, training=True),
                             op(z, C(3), P(3), W, b), op(z, C(3), P(3), eps=0.1)),
        {"z": (5, 3, 2), "W": (3,), "b": (3,)}),
    "torch.nn.functional.dropout": Ex(lambda op, x: (op(x, 0.5, training=False), op(x, 0.0)), X),
    "torch.nn.functional.alpha_dropout": Ex(lambda op, x: op(x, 0.5, training=False), X),
    "torch.nn.functional.feature_alpha_dropout": Ex(lambda op, x: op(x, 0.5, training=False),
                                                    {"x": (2, 3, 4)}),
    "torch.nn.functional.dropout1d": Ex(lambda op, x: op(x, 0.5, training=False),
                                        {"x": (2, 3, 4)}),
    "torch.nn.functional.dropout2d": Ex(lambda op, x: op(x, 0.5, training=False),
                                        {"x": (2, 3, 4, 2)}),
    "torch.nn.functional.dropout3d": Ex(lambda op, x: op(x, 0.5, training=False),
                                        {"x": (1, 2, 3, 4, 2)}),
    "torch.nn.functional.embedding": Ex(
        lambda op, W: (op(torch.tensor([[0, 2], [3, 2]]), W),
                       op(torch.tensor([1, 0, 1]), W, padding_idx=1)), {"W": (4, 3)}),
    "torch.nn.functional.cross_entropy": Ex(
        lambda op, x, y, z, v: (
            op(x, torch.tensor([0, 3, 1])), op(x, torch.softmax(y, 1)),
            op(x, torch.tensor([0, 3, 1]), reduction="sum", label_smoothing=0.1),
            op(x, torch.tensor([0, -100, 1]), weight=P(4)),
            op(x, torch.softmax(y, 1), label_smoothing=0.2, reduction="none"),
            op(z, torch.tensor([[0, 3, 2], [1, 1, 0]])), op(v, torch.tensor(2)),
            op(z, torch.softmax(z * 2, 1), label_smoothing=0.1)),
        {"x": (3, 4), "y": (3, 4), "z": (2, 4, 3), "v": (4,)}),
    "torch.nn.functional.nll_loss": Ex(
        lambda op, x: (op(torch.log_softmax(x, 1), torch.tensor([0, 3, 1])),
                       op(torch.log_softmax(x, 1), torch.tensor([2, 3, -100]), weight=P(4),
                          reduction="mean"),
                       op(x, torch.tensor([0, 3, 1]), reduction="none")), X),
    "torch.nn.functional.mse_loss": Ex(lambda op, x, y: (op(x, y), op(x, y, reduction="sum"),
                                                         op(x, C(3, 4), reduction="none")), XY),
    "torch.nn.functional.l1_loss": Ex(lambda op, x, y: (op(x, y), op(x, y, reduction="none")),
                                      XY),
    "torch.nn.functional.smooth_l1_loss": Ex(lambda op, x, y: (op(x, y), op(x, y, beta=0.5)),
                                             XY),
    "torch.nn.functional.huber_loss": Ex(lambda op, x, y: (op(x, y), op(x, y, delta=0.5)), XY),
    "torch.nn.functional.binary_cross_entropy": Ex(
        lambda op, x, y: (op(x, y), op(x, y, weight=P(4), reduction="sum")), XY, "prob"),
    "torch.nn.functional.binary_cross_entropy_with_logits": Ex(
        lambda op, x, y: (op(x, torch.sigmoid(y)), op(x, torch.sigmoid(y), pos_weight=P(4)),
                          op(x, torch.sigmoid(y), weight=P(4), reduction="none")), XY),
    "torch.nn.functional.kl_div": Ex(
        lambda op, x, y: (op(torch.log_softmax(x, 1), torch.softmax(y, 1),
                             reduction="batchmean"),
                          op(torch.log_softmax(x, 1), torch.log_softmax(y, 1), log_target=True,
                             reduction="sum")), XY),
    "torch.nn.functional.gaussian_nll_loss": Ex(
        lambda op, x, y, z: (op(x, y, torch.exp(z)), op(x, y, torch.exp(z), full=True,
                                                        reduction="sum")), XYZ),
    "torch.nn.functional.multi_head_attention_forward": Ex(
        lambda op, q, k, v, W, b, Wo, bo: (
            op(q, k, v, 4, 2, W, b, None, None, False, 0.0, Wo, bo, training=False),
            op(q, k, v, 4, 2, W, None, None, None, False, 0.5, Wo, None, training=False,
               attn_mask=C(3, 5), key_padding_mask=torch.tensor([False, False, True, False,
                                                                 False]),
               average_attn_weights=False),
            op(q[:, None], k[:, None], v[:, None], 4, 1, W, b, None, None, False, 0.0, Wo, bo,
               attn_mask=C(3, 5) > 0.8),
            op(q, k, v, 4, 2, None, b, None, None, False, 0.0, Wo, bo, training=False,
               use_separate_proj_weight=True, q_proj_weight=W[:4], k_proj_weight=W[4:8],
               v_proj_weight=W[8:])),
        {"q": (3, 4), "k": (5, 4), "v": (5, 4), "W": (12, 4), "b": (12,), "Wo": (4, 4),
         "bo": (4,)}),
    "torch.nn.functional.scaled_dot_product_attention": Ex(
        lambda op, q, k, v: (op(q, k, v), op(q, k, v, is_causal=True),
                             op(q, k, v, attn_mask=C(3, 3) > 0.2, scale=0.3),
                             op(q, k, v, attn_mask=C(3, 3)),
                             op(q, k, v, attn_mask=torch.tensor([True, False, True]) & (
                                 torch.arange(3)[:, None] > 0))),
        {"q": (2, 3, 4), "k": (2, 3, 4), "v": (2, 3, 4)}),
}

from conv_examples import examples as _conv_examples  # noqa: E402  (convolution family)
EXAMPLES.update(_conv_examples(Ex, C))


# recurrent layers (symgrad/torchfront/recurrent.py; tests/test_recurrent.py has the modules)
RNN_SHAPES = {"x": (3, 2, 2), "h": (1, 2, 3), "c": (1, 2, 3), "Wi": (12, 2), "Wh": (12, 3),
              "bi": (12,), "bh": (12,)}
EXAMPLES.update({
    "torch.lstm": Ex(lambda op, x, h, c, Wi, Wh, bi, bh: (
        op(x, (h, c), [Wi, Wh, bi, bh], True, 1, 0.0, False, False, False),
        op(x.transpose(0, 1), (h, c), [Wi, Wh], False, 1, 0.0, False, False, True)),
        RNN_SHAPES),
    "torch.gru": Ex(lambda op, x, h, c, Wi, Wh, bi, bh: (
        op(x, h, [Wi[:9], Wh[:9], bi[:9], bh[:9]], True, 1, 0.0, False, False, False),
        op(x, torch.cat([h, c]), [Wi[:9], Wh[:9], Wi[3:], Wh[3:]], False, 1, 0.0, False,
           True, False)), RNN_SHAPES),
    **{f"torch.rnn_{n}": Ex(lambda op, x, h, c, Wi, Wh, bi, bh: op(
        x, torch.cat([h, c]), [Wi[:3], Wh[:3], bi[:3], bh[:3], Wh[3:6], Wh[6:9],
                               bi[3:6], bh[3:6]], True, 2, 0.0, False, False, False),
        RNN_SHAPES) for n in ("tanh", "relu")},
    "torch.lstm_cell": Ex(lambda op, x, h, c, Wi, Wh, bi, bh: (
        op(x[0], (h[0], c[0]), Wi, Wh, bi, bh), op(x[1], (h[0], c[0]), Wi, Wh)), RNN_SHAPES),
    "torch.gru_cell": Ex(lambda op, x, h, c, Wi, Wh, bi, bh: op(
        x[0], h[0], Wi[:9], Wh[:9], bi[:9], bh[:9]), RNN_SHAPES),
    **{f"torch.rnn_{n}_cell": Ex(lambda op, x, h, c, Wi, Wh, bi, bh: op(
        x[0], h[0], Wi[:3], Wh[:3], bi[:3]), RNN_SHAPES) for n in ("tanh", "relu")},
    "torch._pack_padded_sequence": Ex(lambda op, x: (
        op(x, torch.tensor([3, 1]), False)[0], op(x.transpose(0, 1), torch.tensor([2, 2]),
                                                  True)[0]), {"x": (3, 2, 4)}),
})

# pooling, interpolation and normalisation (torchfront/pool.py, norm.py)
from torch_examples_pool import EXAMPLES as _POOL_EXAMPLES  # noqa: E402
EXAMPLES.update({k: Ex(*v) for k, v in _POOL_EXAMPLES.items()})
from torch_examples_linalg import EXAMPLES as _LINALG_EXAMPLES  # noqa: E402  (issue 15)
EXAMPLES.update({k: Ex(*v) for k, v in _LINALG_EXAMPLES.items()})

# nn losses, native norms, ATen softmax/dropout internals (torchfront/losses.py, ctc.py, ...)
from nn_examples import EXAMPLES as _NN_EXAMPLES  # noqa: E402
EXAMPLES.update({k: Ex(*v) for k, v in _NN_EXAMPLES.items()})

# writes at a constant index, grouped reductions (torchfront/scatter.py, segment.py)
from scatter_examples import EXAMPLES as _SCATTER_EXAMPLES  # noqa: E402
EXAMPLES.update({k: Ex(*v) for k, v in _SCATTER_EXAMPLES.items()})
from shape_examples import EXAMPLES as _SHAPE_EXAMPLES  # noqa: E402  (shape family)
EXAMPLES.update({k: Ex(*v) for k, v in _SHAPE_EXAMPLES.items()})
from torch_examples_unpool import EXAMPLES as _UNPOOL_EXAMPLES  # noqa: E402
EXAMPLES.update({k: Ex(*v) for k, v in _UNPOOL_EXAMPLES.items()})

# matrix decompositions (issue 15: decomp); eigen- and singular vectors squared: their signs
# are LAPACK's, which differ between NumPy's and torch's
EXAMPLES.update({
    "torch.linalg.eigh": Ex(lambda op, x: (op(x)[0], op(x)[1] ** 2, op(x, UPLO="U")[1] ** 2),
                            SQ, "spd"),
    "torch.linalg.eigvalsh": Ex(lambda op, x: op(x), SQ, "spd"),
    "torch.linalg.svd": Ex(lambda op, x: (op(x, full_matrices=False)[0] ** 2, op(x)[1],
                                          op(x, full_matrices=False)[2] ** 2), {"x": (4, 3)}),
    "torch.svd": Ex(lambda op, x: (op(x)[0] ** 2, op(x)[1], op(x)[2] ** 2), {"x": (3, 4)}),
    "torch.linalg.svdvals": Ex(lambda op, x: op(x), {"x": (3, 4)}),
    "torch.linalg.qr": Ex(lambda op, x: tuple(op(x)) + (op(x, "complete")[1],), {"x": (3, 4)}),
    "torch.qr": Ex(lambda op, x: tuple(op(x)), {"x": (3, 4)}),
    "torch.cholesky": Ex(lambda op, x: (op(x), op(x, upper=True)), SQ, "spd"),
    "torch.linalg.cholesky_ex": Ex(lambda op, x: op(x).L, SQ, "spd"),
    "torch.cholesky_inverse": Ex(lambda op, x: op(torch.linalg.cholesky(x)), SQ, "spd"),
    "torch.cholesky_solve": Ex(lambda op, x, b: op(b, torch.linalg.cholesky(x)),
                               {"x": (3, 3), "b": (3, 2)}, "spd"),
    "torch.linalg.solve_triangular": Ex(
        lambda op, a, b: (op(a, b, upper=True), op(a, b.mT, upper=False, left=False)),
        {"a": (3, 3), "b": (3, 2)}, "spd"),
    "torch.triangular_solve": Ex(lambda op, b, a: op(b, a).solution,
                                 {"b": (3, 2), "a": (3, 3)}, "spd"),
    "torch.linalg.matrix_exp": Ex(lambda op, x: op(x), SQ),
    "torch.matrix_exp": Ex(lambda op, x: op(x), SQ),
    "torch.linalg.householder_product": Ex(lambda op, a, t: op(a, t), {"a": (4, 3), "t": (3,)}),
    "torch.orgqr": Ex(lambda op, a, t: op(a, t), {"a": (4, 3), "t": (3,)}),
    "torch.ormqr": Ex(lambda op, a, t, c: op(a, t, c), {"a": (3, 3), "t": (3,), "c": (3, 2)}),
    "torch.linalg.matrix_norm": Ex(lambda op, x: (op(x), op(x, "nuc"), op(x, 2), op(x, -1),
                                                  op(x, float("inf"), keepdim=True)),
                                   {"x": (3, 4)}),
    "torch.linalg.cond": Ex(lambda op, x: op(x), SQ, "spd"),
})

# elementwise tails: special functions, rounding, lower precision (torchfront/special.py)
from torch_examples_elem import EXAMPLES as _ELEM_EXAMPLES  # noqa: E402
EXAMPLES.update({k: Ex(*v) for k, v in _ELEM_EXAMPLES.items()})

# boolean reductions and validity checks, as torch.distributions' argument validation runs
# them (torchfront/distributions.py); a check of traced values passes while tracing
EXAMPLES.update({
    "torch.all": Ex(lambda op, x: torch.where(op(x > 0, dim=1, keepdim=True), x, 2 * x)
                    + torch.where(op(x > -5), x, 0 * x), X),
    "torch.any": Ex(lambda op, x: torch.where(op(x > 0, 0), x, 2 * x), X),
    "torch.Tensor.all": Ex(lambda op, x: torch.where(op(x > 0, -1, True), x, 2 * x), X),
    "torch.Tensor.any": Ex(lambda op, x: torch.where(op(x > 1, dim=1), x.T, 3 * x.T).T, X),
    "torch.Tensor.long": Ex(lambda op, x, ids: torch.gather(x, 1, op(ids)),
                            {"x": (3, 4), "ids": INT(3, 2)}),
    "torch.Tensor.int": Ex(lambda op, x, ids: torch.gather(x, 1, op(ids).long()),
                           {"x": (3, 4), "ids": INT(3, 2)}),
    "torch._is_all_true": Ex(lambda op, x: x * 2 if op(x == x) else x, X),
    "torch._is_any_true": Ex(lambda op, x: x * 2 if op(x == x) else x, X),
})


def _registry_examples():
    """An elementwise op that maps a torch name needs no example of its own: it is
    exercised on real inputs (an op with a restricted domain gets an example above)."""
    for name, handler in tf.table().items():
        op = getattr(handler, "op", None)
        if op is None or not op.pointwise or any(n in EXAMPLES for n in op.torch_names):
            continue
        if op.arity == 1:
            EXAMPLES[name] = Ex(lambda op, x: op(x), X)
        elif op.arity == 2:
            EXAMPLES[name] = Ex(lambda op, x, y: (op(x, y), op(x, y[0]), op(x[0], y)), XY)


_registry_examples()

# sg.Tensor defines these methods itself, with semantics that differ from torch's for some
# arguments; graph.py is not the front end's to change (reported).
KNOWN_METHOD_GAPS = {}  # torch methods whose sg.Tensor spelling still means something else


def _canonical():
    """Names mapped by one handler, or onto one op, share an example."""
    first = {}
    for name, handler in tf.table().items():
        first.setdefault(getattr(handler, "op", handler), name)
    return {name: first[getattr(handler, "op", handler)] for name, handler in tf.table().items()}


CANONICAL = _canonical()


def example_for(name):
    return EXAMPLES.get(name) or EXAMPLES[CANONICAL[name]]


def adapter(name):
    """How user code reaches ``name``: a function call, or a method call on the first
    argument (dunders are called as functions, so a torch tensor on the left dispatches)."""
    prefix, _, attr = name.rpartition(".")
    if prefix == "torch.Tensor" and not attr.startswith("__"):
        return lambda self, *args, **kwargs: getattr(self, attr)(*args, **kwargs)
    return tf.resolve(name)


def weights(shape):
    n = int(np.prod(shape)) if shape else 1
    return torch.linspace(-1.0, 2.0, n, dtype=D).reshape(tuple(shape)) if shape else 1.3


def scalar(out):
    """A weighted sum (so transposed or permuted results cannot pass) of every part."""
    if isinstance(out, (tuple, list)):
        total = 0.0
        for k, part in enumerate(out):
            if part is not None:
                total = total + (k + 1) * scalar(part)
        return total
    return (out * weights(tuple(out.shape))).sum()


def traced_function(call, op, names):
    def f(*args):
        return scalar(call(op, *args))
    f.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    f.__name__ = "f"
    return f


def sampler(domain):
    def sample(name, shape, rng):
        if name.startswith("ids"):
            return rng.integers(0, 3, shape)
        if domain == "pos":
            return rng.uniform(0.5, 2.0, shape)
        if domain == "unit":
            return rng.uniform(-0.9, 0.9, shape)
        if domain == "prob":
            return rng.uniform(0.05, 0.95, shape)
        if domain == "spd" and len(shape) == 2 and shape[0] == shape[1]:
            a = rng.standard_normal(shape)
            return a @ a.T + shape[0] * np.eye(shape[0])
        return rng.standard_normal(shape)
    return sample


def verify(f, shapes, domain="real", order=2, trials=2, dims=None, equal_nan=False, **kw):
    """sg.check (gradients and Hessian-vector products vs torch.autograd) and the value;
    ``equal_nan`` for examples that reach nan/inf on purpose (nan_to_num)."""
    report = sg.check(f, shapes=shapes, sample=sampler(domain), order=order, trials=trials,
                      dims=dims, equal_nan=equal_nan, **kw)
    assert report.ok
    g = sg.grad_fn(f, shapes=shapes, **kw)
    rng = np.random.default_rng(1)
    args = [sampler(domain)(x.name, _concrete(x.shape, report.dims), rng) for x in g.inputs]
    value, _ = g.compile("numpy", with_value=True)(*args)
    reference = f(*[torch.as_tensor(a) if np.asarray(a).dtype.kind == "i"
                    else torch.tensor(a, dtype=D) for a in args])
    np.testing.assert_allclose(value, reference.detach().numpy(), rtol=1e-9, atol=1e-11)
    return report


@pytest.mark.parametrize("name", sorted(tf.table()))
def test_mapping(name):
    if name in KNOWN_METHOD_GAPS:
        pytest.xfail(KNOWN_METHOD_GAPS[name])
    assert tf.resolve(name) is not None, f"{name} does not exist in this torch"
    ex = example_for(name)
    f = traced_function(ex.call, adapter(name), list(ex.shapes))
    verify(f, ex.shapes, ex.domain, ex.order, equal_nan=name.endswith("nan_to_num"))


@pytest.mark.parametrize("name", sorted(KNOWN_METHOD_GAPS))
def test_known_method_gaps_still_differ(name):
    """Strict: when graph.py's method gains torch's semantics, move it out of the gaps."""
    ex = example_for(name)
    f = traced_function(ex.call, adapter(name), list(ex.shapes))
    with pytest.raises(Exception):
        verify(f, ex.shapes, ex.domain, order=1, trials=1)


def test_every_mapping_has_an_example():
    missing = sorted({CANONICAL[n] for n in tf.table()
                      if n not in EXAMPLES and CANONICAL[n] not in EXAMPLES})
    assert not missing, f"add EXAMPLES for {missing}"
    stale = sorted(set(EXAMPLES) - set(tf.table()))
    assert not stale, f"EXAMPLES for unmapped names {stale}"


@pytest.mark.parametrize("name", sorted(tf.TENSOR_PROPERTIES))
def test_tensor_property(name):
    x = sg.symbol("x", (3, 4))
    t = torch.randn(3, 4, dtype=D)
    ours, theirs = getattr(x, name), getattr(t, name)
    if isinstance(theirs, torch.Tensor):
        assert ours.shape == tuple(theirs.shape)
        verify(traced_function(lambda op, x: getattr(x, name) * x.sum(), None, ["x"]),
               {"x": (3, 4)})
    else:
        assert ours == theirs or (name == "requires_grad" and ours is True)


# ----- the same function written with sg ops and with torch ops --------------------------

def mlp_sg(W, x, b, V):
    h = sg.tanh(W @ x + b)
    return sg.sum(sg.log_softmax(V @ h, 0) * sg.softmax(V @ h, 0))


def mlp_torch(W, x, b, V):
    h = torch.tanh(W @ x + b)
    return (F.log_softmax(V @ h, dim=0) * torch.softmax(V @ h, dim=-1)).sum()


MLP_SHAPES = {"W": ("m", "n"), "x": ("n",), "b": ("m",), "V": ("k", "m")}


def test_sg_and_torch_spellings_give_the_same_formulas():
    a = sg.grad_fn(mlp_sg, shapes=MLP_SHAPES)
    b = sg.grad_fn(mlp_torch, shapes=MLP_SHAPES)
    assert a.formulas == b.formulas
    assert a.value == b.value
    assert str(a).replace("mlp_sg", "f") == str(b).replace("mlp_torch", "f")
    verify(mlp_torch, MLP_SHAPES)


def test_sg_and_torch_layer_norm_agree():
    def ln_sg(x, w):
        mu = sg.mean(x, axis=-1, keepdims=True)
        return sg.sum((x - mu) / sg.sqrt(sg.var(x, -1, correction=0, keepdims=True) + 1e-5)
                      * w * x)

    def ln_torch(x, w):
        return (F.layer_norm(x, (4,), w) * x).sum()

    shapes = {"x": (3, 4), "w": (4,)}
    assert sg.grad_fn(ln_sg, shapes=shapes).formulas == \
        sg.grad_fn(ln_torch, shapes=shapes).formulas
    verify(ln_torch, shapes)


def test_torch_function_with_symbolic_dims_compiles_for_any_size():
    def attention(q, k, v):
        return (torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1) @ v).sum()

    shapes = {"q": ("T", "d"), "k": ("S", "d"), "v": ("S", "e")}
    verify(attention, shapes, dims={"T": 2, "S": 3, "d": 4, "e": 5})
    verify(attention, shapes, dims={"T": 5, "S": 1, "d": 2, "e": 3})


# ----- modules -------------------------------------------------------------------------

class CustomModule(nn.Module):
    """Seed 000."""

    def __init__(self, n, r, m):
        super().__init__()
        self.a = nn.Parameter(torch.randn(r, n))
        self.b = nn.Parameter(torch.randn(m, r))
        self.c = nn.Parameter(torch.randn(m))

    def forward(self, x):
        return self.b @ self.a @ x + self.c


SEED_SHAPES = {"a": ("r", "n"), "b": ("m", "r"), "c": ("m",), "x": ("n",)}


def test_seed_module_with_symbolic_sizes():
    module = CustomModule(n=2, r=1, m=3)
    g = sg.grad_fn(module, shapes=SEED_SHAPES, loss=torch.sum)
    assert [x.name for x in g.inputs] == ["a", "b", "c", "x"]
    assert [x.name for x in g.wrt] == ["a", "b", "c"]
    assert [tuple(map(str, x.shape)) for x in g.wrt] == [("r", "n"), ("m", "r"), ("m",)]
    text = str(g)
    assert "dL/da = bᵀ 𝟙 xᵀ" in text and "dL/dc = 𝟙" in text
    for dims in ({"n": 2, "r": 1, "m": 3}, {"n": 5, "r": 3, "m": 2}):
        report = sg.check(module, shapes=SEED_SHAPES, loss=torch.sum, dims=dims)
        assert report.ok and report.wrt == ["a", "b", "c"]
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal(2))
    fn = sg.module_function(module, shapes=SEED_SHAPES, loss=torch.sum)
    grads = g.compile("torch")(*[a.double() for a in fn.arguments(x)])
    m64 = CustomModule(2, 1, 3).double()
    m64.load_state_dict(module.state_dict())
    torch.autograd.backward(m64(x).sum())
    for ours, p in zip(grads, (m64.a, m64.b, m64.c)):
        torch.testing.assert_close(ours, p.grad)


def test_module_gradients_wrt_inputs_and_qualified_names():
    module = CustomModule(2, 1, 3)
    g = sg.grad_fn(module, shapes=SEED_SHAPES, loss=torch.sum, wrt=("x", "a"))
    assert [x.name for x in g.wrt] == ["x", "a"]
    sg.check(module, shapes=SEED_SHAPES, loss=torch.sum, wrt=("x", "a"))


def test_sequential_mlp_with_mse_loss():
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    shapes = {"input": ("N", 3)}
    g = sg.grad_fn(mlp, shapes=shapes, loss=F.mse_loss)
    assert [x.name for x in g.inputs] == ["W0", "b0", "W2", "b2", "input", "target"]
    assert [x.name for x in g.wrt] == ["W0", "b0", "W2", "b2"]
    assert tuple(map(str, g.inputs[-1].shape)) == ("N", "2")
    for n in (1, 4):
        assert sg.check(mlp, shapes=shapes, loss=F.mse_loss, dims={"N": n}).ok
    assert sg.check(mlp, shapes=shapes, loss=nn.MSELoss(reduction="sum")).ok


def test_sequential_mlp_symbolic_widths():
    mlp = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 1))
    shapes = {"0.weight": ("h", "d"), "b0": ("h",), "W2": (1, "h"), "input": ("d",)}
    g = sg.grad_fn(mlp, shapes=shapes, loss=torch.sum)
    assert tuple(map(str, g.inputs[0].shape)) == ("h", "d")
    assert sg.check(mlp, shapes=shapes, loss=torch.sum, dims={"h": 4, "d": 2}).ok


class Attention(nn.Module):
    """A small causal self-attention block written the way nanoGPT writes it."""

    def __init__(self, d, heads):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(8, 8)).bool())

    def forward(self, x):
        T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(T, self.heads, C // self.heads).transpose(0, 1) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(0, 1).contiguous().view(T, C))


def test_attention_block():
    block = Attention(4, 2)
    shapes = {"x": (3, 4)}
    g = sg.grad_fn(block, shapes=shapes, loss=lambda y: (y * y).mean())
    assert [x.name for x in g.wrt] == ["W_qkv", "b_qkv", "W_proj", "b_proj"]
    assert sg.check(block, shapes=shapes, loss=lambda y: (y * y).mean()).ok


def attention_loss(out):
    return (out[0] ** 2).sum() + (out[1] * weights(tuple(out[1].shape))).sum()


def test_multihead_attention_module():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    shapes = {"query": (3, 4), "key": (5, 4), "value": (5, 4)}
    g = sg.grad_fn(mha, shapes=shapes, loss=attention_loss)
    assert [x.name for x in g.wrt] == ["in_proj_weight", "in_proj_bias", "W_out_proj",
                                       "b_out_proj"]
    assert sg.check(mha, shapes=shapes, loss=attention_loss).ok
    mha = nn.MultiheadAttention(4, 2, batch_first=True, kdim=3, vdim=2)
    shapes = {"query": (2, 3, 4), "key": (2, 5, 3), "value": (2, 5, 2)}
    assert sg.check(mha, shapes=shapes, loss=attention_loss).ok


def test_transformer_encoder_layer_with_symbolic_batch_and_length():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=4, nhead=2, dim_feedforward=8,
                                       batch_first=True, norm_first=True,
                                       activation="gelu").eval()
    shapes = {"src": ("B", "T", 4)}
    g = sg.grad_fn(layer, shapes=shapes, loss=lambda y: (y ** 3).sum())
    assert len(g.wrt) == 12 and tuple(map(str, g.inputs[-1].shape)) == ("B", "T", "4")
    # torch's fused attention (need_weights=False) has no double backward: order 1
    for dims in ({"B": 2, "T": 3}, {"B": 1, "T": 5}):
        assert sg.check(layer, shapes=shapes, loss=lambda y: (y ** 3).sum(), order=1,
                        dims=dims).ok


def test_multihead_attention_module_with_masks():
    """nn.MultiheadAttention passes query.dtype on to torch: a symbolic Tensor's dtype is
    torch.float64."""
    mha = nn.MultiheadAttention(4, 2)

    def loss(out):
        return out[0].sum()

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.att = mha

        def forward(self, x):
            return self.att(x, x, x, key_padding_mask=torch.tensor([False, True, False]))

    sg.check(Masked(), shapes={"x": (3, 4)}, loss=loss)


@pytest.mark.parametrize("padded", [False, True])
def test_multihead_attention_add_zero_attn_with_symbolic_batch(padded):
    """add_zero_attn appends a zero key and value per batch row and head (and a mask
    column allowing it): zeros of a symbolic batch."""
    torch.manual_seed(0)

    class ZeroAttn(nn.Module):
        def __init__(self):
            super().__init__()
            self.att = nn.MultiheadAttention(4, 2, batch_first=True, add_zero_attn=True)

        def forward(self, q, k, pad):
            return self.att(q, k, k, key_padding_mask=pad if padded else None)[0]

    m = ZeroAttn().double().eval()
    loss = lambda out: (out ** 2).sum()  # noqa: E731
    fn = sg.module_function(m, shapes={"q": ("B", 2, 4), "k": ("B", 3, 4),
                                       "pad": sg.TensorSpec(("B", 3), dtype="bool")},
                            loss=loss)
    g = sg.grad_fn(fn)
    for batch in (1, 3):
        q, k = torch.randn(batch, 2, 4, dtype=D), torch.randn(batch, 3, 4, dtype=D)
        pad = torch.zeros(batch, 3, dtype=torch.bool)
        pad[0, 1:] = True
        _agrees_with_autograd(m, g, fn, loss, q, k, pad)


def test_layer_norm_module():
    torch.manual_seed(0)
    ln = nn.LayerNorm(4)
    with torch.no_grad():
        ln.weight.mul_(1.5)
        ln.bias.add_(0.3)
    g = sg.grad_fn(ln, shapes={"input": ("N", 4)}, loss=lambda y: (y * y * y).sum())
    assert [x.name for x in g.wrt] == ["W", "b"]
    assert sg.check(ln, shapes={"input": ("N", 4)}, loss=lambda y: (y * y * y).sum(),
                    wrt=("W", "b", "input")).ok
    assert sg.check(nn.LayerNorm((3, 4), elementwise_affine=False),
                    shapes={"input": (2, 3, 4)}, loss=lambda y: (y.exp()).sum()).ok


def squares(y):
    return (y * y * weights(tuple(y.shape))).sum()


MODULE_ZOO = {
    "batchnorm-train": (lambda: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.GELU()),
                        {"input": (5, 3)}),
    "batchnorm-eval": (lambda: nn.Sequential(nn.BatchNorm2d(2), nn.SiLU()).eval(),
                       {"input": (3, 2, 2, 2)}),
    "activations": (lambda: nn.Sequential(
        nn.Flatten(), nn.Linear(6, 4), nn.ReLU(inplace=True), nn.Dropout(0.2), nn.Identity(),
        nn.LeakyReLU(0.1), nn.ELU(), nn.Mish(), nn.Hardswish(), nn.Softplus(beta=2),
        nn.PReLU(), nn.Unflatten(1, (2, 2)), nn.Softmax(dim=-1)).eval(), {"input": (3, 2, 3)}),
    "groupnorm": (lambda: nn.GroupNorm(2, 4), {"input": (3, 4, 5)}),
    "rmsnorm": (lambda: nn.RMSNorm(4), {"x": (3, 4)}),
    "bilinear": (lambda: nn.Bilinear(2, 3, 4), {"input1": (5, 2), "input2": (5, 3)}),
    "log-softmax": (lambda: nn.Sequential(nn.Linear(3, 4), nn.LogSoftmax(-1)),
                    {"input": (5, 3)}),
}


@pytest.mark.parametrize("name", sorted(MODULE_ZOO))
def test_module_zoo(name):
    torch.manual_seed(0)
    make, shapes = MODULE_ZOO[name]
    assert sg.check(make(), shapes=shapes, loss=squares).ok


def test_loss_modules_and_class_index_targets():
    model = nn.Linear(3, 4)
    g = sg.grad_fn(model, shapes={"input": (5, 3)}, loss=nn.CrossEntropyLoss())
    assert [x.name for x in g.inputs][-1] == "target"
    assert sg.check(model, shapes={"input": (5, 3)}, loss=nn.CrossEntropyLoss()).ok
    labels = torch.tensor([0, 1, 3, 2, 1])
    assert sg.check(model, shapes={"input": (5, 3)},
                    loss=lambda out: F.cross_entropy(out, labels)).ok


def test_float_ids_are_refused_with_what_to_declare():
    with pytest.raises(UnsupportedOpError, match="indices must be integers"):
        sg.grad_fn(nn.Embedding(5, 3), shapes={"input": (2,)}, loss=torch.sum)


class TinyLM(nn.Module):
    """Token ids in, logits out: the ids and the labels are constants, not symbols."""

    def __init__(self, vocab=6, d=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        return self.head(self.ln(self.tok(idx)))


def test_constant_arguments_token_ids_and_labels():
    torch.manual_seed(0)
    lm = TinyLM()
    fn = sg.module_function(
        lm, loss=lambda logits, labels: F.cross_entropy(logits, labels),
        constants={"idx": torch.tensor([1, 4, 2, 0]), "labels": torch.tensor([4, 2, 0, 5])})
    assert fn.names == ["W_tok", "W_ln", "b_ln", "W_head"] and fn.inputs == []
    g = sg.grad_fn(fn)
    assert [x.name for x in g.wrt] == ["W_tok", "W_ln", "b_ln", "W_head"]
    assert sg.check(fn).ok
    lm.zero_grad()
    F.cross_entropy(lm.double()(torch.tensor([1, 4, 2, 0])), torch.tensor([4, 2, 0, 5])).backward()
    for ours, p in zip(g.compile("torch")(*fn.arguments()), lm.parameters()):
        torch.testing.assert_close(ours, p.grad)
    with pytest.raises(SymgradError, match="not arguments"):
        sg.module_function(lm, constants={"tokens": torch.tensor([1])})


class Norms(nn.Module):
    """Buffers, a tied weight, a frozen parameter and nested names."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(3, 3)
        self.dec = nn.Linear(3, 3)
        self.dec.weight = self.enc.weight
        self.scale = nn.Parameter(torch.tensor(2.0), requires_grad=False)
        self.register_buffer("shift", torch.linspace(-1, 1, 3))
        self.register_buffer("steps", torch.tensor(3))

    def forward(self, x, y=None):
        h = torch.tanh(self.enc(x) + self.shift) * self.scale
        return self.dec(h) * self.steps + (0 if y is None else y)


def test_buffers_tied_and_frozen_parameters():
    m = Norms()
    fn = sg.module_function(m, shapes={"x": (3,)}, loss=torch.sum)
    assert fn.symbols == {"scale": "scale", "enc.weight": "W_enc", "enc.bias": "b_enc",
                          "dec.bias": "b_dec", "shift": "shift"}
    assert fn.names == ["scale", "W_enc", "b_enc", "b_dec", "shift", "x"]
    assert fn.wrt == ("W_enc", "b_enc", "b_dec")
    assert sg.check(m, shapes={"x": (3,)}, loss=torch.sum).ok
    assert sg.check(m, shapes={"x": (3,), "y": (3,)}, loss=torch.sum,
                    wrt=("W_enc", "scale", "shift", "y")).ok
    assert m.enc.weight is m.dec.weight and isinstance(m.enc.weight, nn.Parameter)


def test_symbol_names():
    names = symbol_names(["0.weight", "0.bias", "layers.2.weight",
                                            "norm.weight", "a", "weight", "1.0.bias"])
    assert names == {"0.weight": "W0", "0.bias": "b0", "layers.2.weight": "W_layers_2",
                     "norm.weight": "W_norm", "a": "a", "weight": "W", "1.0.bias": "b_1_0"}
    clash = symbol_names(["W", "weight"])
    assert clash == {"W": "W", "weight": "weight"}
    assert symbol_names(["x"], reserved=["x"]) == {"x": "x_"}


def test_module_state_restored_after_an_error():
    m = CustomModule(2, 1, 3)
    before = dict(m.named_parameters())
    with pytest.raises(ShapeError):
        sg.grad_fn(m, shapes={"x": (5,)}, loss=torch.sum)
    assert all(p is before[q] for q, p in m.named_parameters())


def test_spec_one_liner_binds_input_dims_to_the_modules_sizes():
    """grad_fn(module, shapes={"x": ("n",)}, loss=torch.sum) with a module of
    concrete sizes: n meets a's second dim (2) in a @ x and takes its size."""
    m = CustomModule(2, 1, 3)
    g = sg.grad_fn(m, shapes={"x": ("n",)}, loss=torch.sum)
    assert [x.shape for x in g.inputs] == [(1, 2), (3, 1), (3,), (2,)]
    assert "dL/da = bᵀ 𝟙 xᵀ" in str(g)
    assert sg.check(m, shapes={"x": ("n",)}, loss=torch.sum).ok
    with pytest.raises(ShapeError, match="matmul"):   # n cannot be 2 and 4 at once
        sg.grad_fn(lambda_module_two_inputs(), shapes={"x": ("n",), "y": ("n",)},
                   loss=torch.sum)


def lambda_module_two_inputs():
    class TwoInputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.A = torch.nn.Parameter(torch.randn(3, 2, dtype=torch.float64))
            self.B = torch.nn.Parameter(torch.randn(3, 4, dtype=torch.float64))

        def forward(self, x, y):
            return self.A @ x + self.B @ y
    return TwoInputs()


def test_module_shape_error_explains_concrete_parameter_shapes():
    with pytest.raises(ShapeError, match=r"(?s)matmul.*concrete shapes \(a: \(1, 2\), b: "
                                         r"\(3, 1\), c: \(3,\)\)"):
        sg.grad_fn(CustomModule(2, 1, 3), shapes={"x": (5,)}, loss=torch.sum)


def test_module_errors():
    m = CustomModule(2, 1, 3)
    with pytest.raises(NonScalarOutputError, match="loss="):
        sg.grad_fn(m, shapes={"x": (2,)})
    with pytest.raises(SymgradError, match="shape of CustomModule.forward's argument 'x'"):
        sg.grad_fn(m, loss=torch.sum)
    with pytest.raises(ShapeError, match="does not fit"):
        sg.grad_fn(m, shapes={"a": ("r",), "x": (2,)}, loss=torch.sum)
    with pytest.raises(ShapeError, match="does not fit"):
        sg.grad_fn(m, shapes={"a": (5, "n"), "x": ("n",)}, loss=torch.sum)
    with pytest.raises(SymgradError, match="known names: a, b, c, x"):
        sg.grad_fn(m, shapes={"weight": (1, 2), "x": (2,)}, loss=torch.sum)
    with pytest.raises(ShapeError, match="matmul"):
        sg.grad_fn(m, shapes={"x": (5,)}, loss=torch.sum)


def _agrees_with_autograd(module, g, fn, loss, *inputs):
    """The compiled gradient of ``module`` (traced as ``fn``) equals torch.autograd's on
    the real module at ``inputs`` (float64), wrt its trainable parameters."""
    module.zero_grad()
    loss(module(*inputs)).backward()
    grads = g.compile("torch")(*fn.arguments(*inputs))
    for ours, p in zip(grads, [p for p in module.parameters() if p.requires_grad]):
        torch.testing.assert_close(ours, p.grad)


class ZeroState(nn.Module):
    """A hand-written RNN loop whose state is torch.zeros(x.shape[0], H)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.RNNCell(3, 4)

    def forward(self, x):
        h = torch.zeros(x.shape[0], 4, dtype=x.dtype)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return h


class LearnedPositions(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(7, 4), nn.Embedding(10, 4)

    def forward(self, ids):
        return self.tok(ids) + self.pos(torch.arange(ids.shape[1]))


def test_module_forward_with_factories_of_symbolic_dims():
    """torch.zeros(x.shape[0], H) and torch.arange(ids.shape[1]) in a module's forward
    with symbolic dims: every run of forward (also the one that binds the inputs' dims to
    the parameters' sizes) has the factories that take symbolic sizes."""
    torch.manual_seed(0)
    loss = lambda out: (out ** 3).mean()  # noqa: E731
    net = ZeroState().double()
    fn = sg.module_function(net, shapes={"x": ("B", 5, 3)}, loss=loss)
    g = sg.grad_fn(fn)
    for batch in (1, 3):
        _agrees_with_autograd(net, g, fn, loss, torch.randn(batch, 5, 3, dtype=D))
    pos = LearnedPositions().double()
    fn = sg.module_function(pos, shapes={"ids": INT("B", "T")}, loss=loss)
    g = sg.grad_fn(fn)
    assert [x.name for x in g.wrt] == ["W_tok", "W_pos"]
    for batch, length in ((2, 3), (1, 6)):
        _agrees_with_autograd(pos, g, fn, loss, torch.randint(0, 7, (batch, length)))


def test_padding_mask_with_a_target_of_the_output_shape():
    """A loss with a target whose shape is left to default: finding the output's shape
    runs forward as the trace does (torch's boolean-mask conversion out of place)."""
    torch.manual_seed(0)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(4, 2, 6, batch_first=True), 1,
                enable_nested_tensor=False)

        def forward(self, x, pad):
            return self.enc(x, src_key_padding_mask=pad)

    m = Encoder().double().eval()
    loss = F.mse_loss
    fn = sg.module_function(
        m, shapes={"x": ("B", 3, 4), "pad": sg.TensorSpec(("B", 3), dtype="bool")}, loss=loss)
    assert tuple(map(str, fn.shapes["target"])) == ("B", "3", "4")
    g = sg.grad_fn(fn)
    x, target = torch.randn(2, 3, 4, dtype=D), torch.randn(2, 3, 4, dtype=D)
    pad = torch.tensor([[False, False, True], [False, False, False]])
    m.zero_grad()
    loss(m(x, pad), target).backward()
    grads = g.compile("torch")(*fn.arguments(x, pad, target))
    for ours, p in zip(grads, m.parameters()):
        torch.testing.assert_close(ours, p.grad)


def test_shape_error_notes_concrete_parameters_only_where_they_clash():
    """The note on the parameters' concrete shapes is for an error where a parameter's
    size meets a dim it does not fit; not for a symbolic sequence length or unbind."""
    class Recurrent(nn.Module):
        def __init__(self):
            super().__init__()
            self.r = nn.GRU(2, 3, batch_first=True)

        def forward(self, x):
            return self.r(x)[0]

    class Unbound(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 3)

        def forward(self, x):
            return sum(self.lin(t) for t in x.unbind(1))

    class Looped(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 3)

        def forward(self, x):
            return sum(self.lin(x[:, t]) for t in range(x.shape[1]))

    for module, what in ((Recurrent(), "sequence length"), (Unbound(), "unbind"),
                         (Looped(), r"range\(\).*\[T is a dim of x: \(B, T, 2\)\]")):
        with pytest.raises(ShapeError, match=what) as caught:
            sg.grad_fn(module.double(), shapes={"x": ("B", "T", 2)}, loss=torch.sum)
        assert "note:" not in str(caught.value)
    assert isinstance(caught.value, DimValueError) and caught.value.dims == ["T"]
    with pytest.raises(ShapeError, match=r"(?s)matmul.*concrete shapes \(W: \(5, 3\), b: "):
        sg.grad_fn(nn.Linear(3, 5), shapes={"input": ("N", 4)}, loss=torch.sum)


def test_plain_function_with_loss():
    def f(W, x):
        return torch.tanh(W @ x)

    g = sg.grad_fn(f, shapes={"W": (2, 3), "x": (3,)}, loss=torch.sum)
    assert g.name == "L"
    assert sg.check(f, shapes={"W": (2, 3), "x": (3,)}, loss=torch.sum).ok


def test_check_reference_is_real_torch_not_the_trace(monkeypatch):
    """A wrong mapping is caught: the reference never goes through the front end."""
    monkeypatch.setitem(tf.by_callable(), F.linear,
                        ("torch.nn.functional.linear", lambda input, weight, bias=None:
                         sg.matmul(input, sg.transpose(weight))))
    mlp = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
    report = sg.check(mlp, shapes={"input": (3,)}, loss=torch.sum, raise_on_mismatch=False)
    assert not report.ok and any("d/db0" in f for f in report.failures)
    monkeypatch.setitem(tf.by_callable(), torch.tanh,
                        ("torch.tanh", lambda input, *, out=None: sg.sin(input)))
    with pytest.raises(sg.CheckError):
        sg.check(lambda x: torch.tanh(x).sum(), shapes={"x": (3,)})


# ----- errors --------------------------------------------------------------------------

def test_unsupported_torch_function_names_it_and_shows_the_escape_hatch():
    def f(x):
        return torch.fft.fft(x).real.sum()

    with pytest.raises(UnsupportedOpError) as info:
        sg.grad_fn(f, shapes={"x": (4,)})
    message = str(info.value)
    assert "torch.fft.fft" in message and "(4,)" in message
    assert "class MyOp(sg.Function)" in message and "MyOp.apply(x)" in message
    assert "symgrad.torchfront.supported()" in message


def test_unsupported_method_and_in_place_ops():
    x = sg.symbol("x", (2, 3))
    with pytest.raises(UnsupportedOpError, match="torch.Tensor.histc"):
        x.histc()
    with pytest.raises(UnsupportedOpError, match="in place"):
        x.add_(1)
    assert not hasattr(x, "histc") and not hasattr(x, "no_such_method")
    with pytest.raises(AttributeError):
        x.no_such_method


def test_unsupported_arguments_are_named():
    x = sg.symbol("x", (2, 3))
    with pytest.raises(UnsupportedOpError, match="out="):
        torch.div(x, 2, rounding_mode="floor", out=torch.empty(2, 3))
    with pytest.raises(UnsupportedOpError, match="torch.Tensor.add.*not understood"):
        x.add(1, foo=2)
    with pytest.raises(UnsupportedOpError, match="eval"):
        F.dropout(x, 0.5)
    with pytest.raises(UnsupportedOpError, match="dtype torch.int64"):
        torch.sum(x, dtype=torch.int64)


def test_torch_on_numbers_computes_and_on_symbols_traces():
    t = torch.linspace(-1, 1, 3, dtype=D)
    x = sg.symbol("x", (3,))
    assert isinstance(torch.tanh(t), torch.Tensor) and isinstance(F.gelu(t), torch.Tensor)
    assert isinstance(torch.tanh(x), sg.Tensor) and isinstance(t + x, sg.Tensor)
    torch.testing.assert_close(sg.tanh(t), torch.tanh(t))
    assert (t * x).op == "mul" and (t @ x).op == "matmul"


def test_binding_dims_is_limited_to_shape_constraints():
    """Only a constraint that would fail binds a dim: x[:2] of x: ("n",) asks whether 2 is
    the whole axis, which must not make n = 2."""
    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.randn(3, dtype=torch.float64))

        def forward(self, x):
            return x[:2].sum() * self.a

    g = sg.grad_fn(Head(), shapes={"x": ("n",)}, loss=torch.sum)
    assert [str(x.shape) for x in g.inputs] == ["(3,)", "(n,)"]
    assert sg.check(Head(), shapes={"x": ("n",)}, loss=torch.sum, dims={"n": 5}).ok


# sorting, selection, scans and statistics (symgrad/torchfront/sorting.py, statistics.py;
# tests/test_sorting.py has ties, NaNs and the indices)
def _read_index(op, x):
    return torch.gather(x, 1, op(x, 1, keepdim=True))


EXAMPLES.update({
    "torch.sort": Ex(lambda op, x: op(x, 1, descending=True)[0], X),
    "torch.msort": Ex(lambda op, x: op(x), X),
    "torch.argsort": Ex(lambda op, x: torch.gather(x, 1, op(x, 1)), X),
    "torch.topk": Ex(lambda op, x: op(x, 2, 1)[0], X),
    "torch.kthvalue": Ex(lambda op, x: op(x, 2, 1)[0], X),
    "torch.median": Ex(lambda op, x: op(x, 1)[0] * op(x), X),
    "torch.nanmedian": Ex(lambda op, x: op(x, 0)[0] * op(x), X),
    "torch.mode": Ex(lambda op, x: op(x, 1)[0], X),
    "torch.cummax": Ex(lambda op, x: op(x, 1)[0], X),
    "torch.cummin": Ex(lambda op, x: op(x, 0)[0], X),
    "torch.argmax": Ex(_read_index, X),
    "torch.argmin": Ex(_read_index, X),
    "torch.cumprod": Ex(lambda op, x: op(x, 1), X),
    "torch.logcumsumexp": Ex(lambda op, x: op(x, 0), X),
    "torch.aminmax": Ex(lambda op, x: op(x, dim=1)[0] * op(x, dim=1)[1], X),
    "torch.var_mean": Ex(lambda op, x: op(x, 1)[0] * op(x, 1)[1], X),
    "torch.std_mean": Ex(lambda op, x: op(x, 0)[0] * op(x, 0)[1], X),
    "torch.nansum": Ex(lambda op, x: op(x, 1), X),
    "torch.nanmean": Ex(lambda op, x: op(x, 0), X),
    "torch.quantile": Ex(lambda op, x: op(x, 0.3, dim=1), X),
    "torch.nanquantile": Ex(lambda op, x: op(x, 0.7, dim=0), X),
})


def test_tracing_and_checking_a_module_in_training_mode_leave_its_buffers_alone():
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                              torch.nn.Linear(4, 1))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    mse = lambda out: (out ** 2).mean()  # noqa: E731
    assert sg.check(net, shapes={"input": ("B", 3)}, loss=mse, order=1, dims={"B": 5}).ok
    sg.grad_fn(net, shapes={"input": ("B", 3)}, loss=mse)
    after = net.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


@pytest.mark.parametrize("bounds", ["min", "max", "both", "crossed", "equal", "nan"])
def test_clamp_with_tensor_bounds_at_ties_matches_autograd(bounds):
    """A tensor bound gets the gradient only where it clamps (x == min is x's), with
    torch's values and gradients at crossed and equal bounds and nan."""
    x = np.array([1.0, 2.0, 3.0, -1.0, 5.0])
    lo = np.array([1.0, 3.0, 0.0, -1.0, 6.0])
    hi = {"crossed": lo - 1.0, "equal": lo.copy()}.get(
        bounds, np.array([2.0, 4.0, 3.0, 0.0, 7.0]))
    if bounds == "nan":
        x[0], lo[1], hi[2] = np.nan, np.nan, np.nan
    kw = {"min": {"min": 1}, "max": {"max": 2}}.get(bounds, {"min": 1, "max": 2})

    def f(x, lo, hi):
        args = (lo, hi)
        return (torch.clamp(x, **{k: args[i - 1] for k, i in kw.items()}) * torch.arange(
            1.0, 6.0, dtype=x.dtype)).sum()
    ts = [torch.tensor(a, requires_grad=True) for a in (x, lo, hi)]
    value = f(*ts)
    want = torch.autograd.grad(value, ts, allow_unused=True, materialize_grads=True)
    g = sg.grad_fn(f, shapes={"x": (5,), "lo": (5,), "hi": (5,)})
    for backend in ("numpy", "torch"):
        args = (x, lo, hi) if backend == "numpy" else [torch.tensor(a) for a in (x, lo, hi)]
        got_value, grads = g.compile(backend, with_value=True)(*args)
        np.testing.assert_array_equal(float(got_value), value.item())
        for got, w in zip(grads, want):
            np.testing.assert_array_equal(np.asarray(got), w.numpy())


def test_augmented_assignment_on_a_view_is_refused_not_rebound():
    """torch's `row = y[0]; row *= 2` writes through to y; a rebinding would silently
    compute another function. On a value that is not a view it is y = y * 2."""
    def through_view(x):
        y = x.clone()
        row = y[0]
        row *= 2
        return (y ** 2).sum()
    with pytest.raises(sg.UnsupportedOpError, match=r"\*= on index"):
        sg.grad_fn(through_view, shapes={"x": (3, 4)})

    def plain(x):
        y = x * 1.0
        y *= 2
        y += x
        return (y ** 2).sum()
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    (want,) = torch.autograd.grad(plain(x), x)
    (got,) = sg.grad_fn(plain, shapes={"x": (3,)}).compile("torch")(x.detach())
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("call", ["x.sum(dim=())", "x.sum([])", "x.mean(dim=())",
                                  "x.amax(dim=())", "x.amin(dim=[])",
                                  "x.flatten().sum(dim=tuple(range(1, 1)))"])
def test_method_reductions_over_no_dims_reduce_every_dim_as_torch(call):
    def f(x):
        return eval(call, {"x": x}) ** 2   # noqa: S307 - the test's own expressions
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    (want,) = torch.autograd.grad(f(x), x)
    (got,) = sg.grad_fn(f, shapes={"x": (2, 3, 4)}).compile("torch")(x.detach())
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("chol", [lambda A: torch.linalg.cholesky(A, upper=True),
                                  lambda A: torch.cholesky(A, upper=True),
                                  lambda A: torch.linalg.cholesky_ex(A, upper=True)[0]])
def test_upper_cholesky_reads_the_upper_triangle_as_torch(chol):
    """LAPACK's uplo='U': an input stored in its upper triangle only (triu(M))."""
    M = np.array([[4.0, 2.0, 0.4], [2.0, 3.0, 0.5], [0.4, 0.5, 2.0]])
    weights = torch.arange(1.0, 10.0, dtype=torch.float64).reshape(3, 3)

    def f(A):
        return (chol(A) * weights).sum()
    x = torch.tensor(np.triu(M), requires_grad=True)
    value = f(x)
    (want,) = torch.autograd.grad(value, x)
    got_value, (got,) = sg.grad_fn(f, shapes={"A": (3, 3)}).compile(
        "numpy", with_value=True)(np.triu(M))
    assert got_value == pytest.approx(value.item(), rel=1e-13)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-13)


def test_einsum_sublist_form_as_torch():
    def f(x, y):
        return (torch.einsum(x, [0, 1], y, [1, 2], [0, 2]) ** 2).sum() \
            + torch.einsum(x, [Ellipsis, 1], y, [1, 2]).sum()
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    want = torch.autograd.grad(f(x, y), (x, y))
    got = sg.grad_fn(f, shapes={"x": (3, 4), "y": (4, 5)}).compile("torch")(x.detach(), y.detach())
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("call", [
    "x.sum(dtype=torch.float64)", "x.sum(1, dtype=torch.float64).sum()",
    "x.mean(dim=1, dtype=torch.float64).sum()", "x.prod(dtype=torch.float64)",
    "x.softmax(dim=-1, dtype=torch.float64).pow(2).sum()",
    "x.softmax(1, torch.float64).pow(2).sum()",
    "x.log_softmax(-1, dtype=torch.float64).sum()", "(x.unsqueeze(dim=1) ** 2).sum()",
    "(x.transpose(dim0=0, dim1=2).cumsum(0) ** 2).sum()"])
def test_tensor_methods_take_torchs_keywords(call):
    """Methods spelled alike in NumPy and torch take torch's keywords and positions too
    (they raised Python's TypeError)."""
    def f(x):
        return eval(call, {"x": x, "torch": torch})   # noqa: S307 - the test's own code
    x = (torch.rand(2, 3, 4, dtype=torch.float64) + 0.5).requires_grad_()
    (want,) = torch.autograd.grad(f(x), x)
    (got,) = sg.grad_fn(f, shapes={"x": (2, 3, 4)}).compile("torch")(x.detach())
    torch.testing.assert_close(got, want)


def test_the_modulo_operator_is_torchs_remainder():
    def f(x, y):
        return (x % y).sum() + (x % 2.0).sum() + (x.detach() % y).sum()
    x = torch.tensor([3.5, -2.5, 4.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([2.0, 2.0, -3.0], dtype=torch.float64, requires_grad=True)
    want = torch.autograd.grad(f(x, y), (x, y))
    got = sg.grad_fn(f, shapes={"x": (3,), "y": (3,)}).compile("numpy")(
        x.detach().numpy(), y.detach().numpy())
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy())
