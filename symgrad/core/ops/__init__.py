"""The ops, one module per family; each op is one ``defop`` (see ``core.opdef``).

The package also holds every public function of the families by name (``ops.exp``,
``ops.matmul``, ``ops.stack``): the namespace the rest of symgrad writes sg code in.
"""
from ..opdef import FUNCTIONS as _FUNCTIONS
from . import conv, fractional, gather, grid, im2col, indexing  # noqa: F401  (register)
from . import layout, linalg, nn, pointwise, pool, reductions, scans  # noqa: F401  (register)
from . import shape, sorting, unpool  # noqa: F401  (register)

globals().update(_FUNCTIONS)
