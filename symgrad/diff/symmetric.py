"""Derivatives with respect to symmetric inputs (``sg.TensorSpec(..., symmetric=True)``).

A symmetric matrix X varies only along symmetric directions V = Vᵀ, so of the gradients G'
with ⟨G', V⟩ = ⟨G, V⟩ for every such V (G the gradient that treats the n² entries of X as
independent), one is symmetric: sym(G) = (G + Gᵀ)/2. It is the gradient on the space of
symmetric matrices with the Frobenius inner product, the one torch.autograd gives for
f((X + Xᵀ)/2), and the one torch's backward of ``linalg.eigh`` and ``cholesky`` returns.

The reverse sweep treats X as any leaf (its transpose is already X, by the simplifier) and
symmetrises X's gradient once, at the end; forward mode symmetrises a tangent once, at
the start. Both are graph nodes, (G + Gᵀ)/2, that the simplifier folds to G when G is
symmetric by construction (X⁻¹, x xᵀ, c I, an earlier symmetrisation), so the Hessian,
Jacobian and every view and backend see them with no special case.
"""
import sympy

from ..core.build import as_tensor, const, is_symmetric_leaf, make
from ..core.graph import Tensor


def symmetrize(g: Tensor) -> Tensor:
    """(g + gᵀ)/2 over the last two axes of ``g``; g itself when symmetric by construction.
    A transposed g is added to its transpose's input first, so sym(Aᵀ) reads (A + Aᵀ)/2."""
    g = as_tensor(g, "symmetrize")
    rank = len(g.shape)
    axes = tuple(range(rank - 2)) + (rank - 1, rank - 2)
    gt = make("transpose", (g,), (("axes", axes),))
    if gt is g:
        return g
    pair = (gt, g) if g.op == "transpose" else (g, gt)
    return make("mul", (const(sympy.Rational(1, 2)), make("add", pair)))


def symmetrized(sources, values):
    """``values`` (gradients or tangents of ``sources``, None where zero) with the one of a
    symmetric input symmetrised."""
    return [symmetrize(v) if v is not None and is_symmetric_leaf(s) else v
            for s, v in zip(sources, values)]
