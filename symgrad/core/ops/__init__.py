"""The ops, one module per family; each op is one ``defop`` (see ``core.opdef``).

The package also holds every public function of the families by name (``ops.exp``,
``ops.matmul``, ``ops.stack``): the namespace the rest of symgrad writes sg code in.
"""
from ..opdef import FUNCTIONS as _FUNCTIONS
from . import conv, decomp, fractional, gather, grid, im2col  # noqa: F401  (register)
from . import indexing, layout, linalg, nn, norms, pointwise, pool  # noqa: F401  (register)
from . import reductions, rounding, scans, shape, sorting, special  # noqa: F401  (register)
from . import unpool  # noqa: F401  (register)

globals().update(_FUNCTIONS)
