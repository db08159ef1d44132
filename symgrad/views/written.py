"""Small formulas written out: a gradient or Hessian of concrete shape that reads through
index and scatter calls (functions of the coordinates q[0], q[1], q[2] of a small vector,
as physics writes them) is the small explicit vector or matrix of its entries, each a
scalar formula of the inputs' elements (``MatrixElement``: q[0])."""
import sympy
from sympy.matrices.expressions import MatrixExpr
from .arrays import array_symbol

from .forms import OpCall
from .rewrite import tidy_scalar


SMALL = 16      # elements: a formula of concrete shape this small may be written out


def explicit_small(e, indexing):
    """A formula of a concrete shape of at most ``SMALL`` elements that reads through
    index and scatter calls (ops named in ``indexing``) and no other call (a pendulum's
    energy in the coordinates q[0], q[1], q[2]),
    written out element by element: the vector [9.81 q[2] sin(q[0]), ...] or the matrix
    of its entries, in terms of the inputs' elements q[i]. None when it does not apply."""
    if not isinstance(e, MatrixExpr) or isinstance(e, sympy.MatrixBase):
        return None
    if not _concrete(e.shape) or int(e.shape[0]) * int(e.shape[1]) > SMALL:
        return None
    calls = {t.op for t in sympy.preorder_traversal(e) if isinstance(t, OpCall)
             and not t.display}
    if not calls or not calls <= set(indexing):
        return None
    leaves = e.atoms(sympy.MatrixSymbol)
    if not all(_concrete(m.shape) for m in leaves) or e.has(array_symbol()):
        return None
    from .verify import computed
    try:
        out = computed(e.xreplace({m: m.as_explicit() for m in leaves}))
    except Exception:  # noqa: BLE001 - no explicit form: the formula stays as it is
        return None
    if not isinstance(out, sympy.MatrixBase) or out.has(OpCall):
        return None
    return sympy.ImmutableMatrix(out.rows, out.cols,
                                 [tidy_scalar(sympy.expand(t) if t.is_Add else t)
                                  for t in out])


def _concrete(shape):
    return all(sympy.sympify(d).is_Integer for d in shape)
