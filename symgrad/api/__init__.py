"""The entry points: ``grad_fn`` and ``grad`` (``grad``), the ``torch.func``-style
transforms (``transforms``) and the views every derivative object shares
(``derivative``)."""
from .derivative import DerivativeFn
from .grad import GradFn, grad, grad_fn
from .transforms import Hessian, Jacobian, hessian, hvp, jacobian, jvp, vjp

__all__ = ["DerivativeFn", "GradFn", "grad", "grad_fn", "Hessian", "Jacobian", "hessian",
           "hvp", "jacobian", "jvp", "vjp"]
