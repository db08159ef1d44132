"""SymPy's ``ArraySymbol`` (an array of three or more axes in a formula), imported on first
use: ``sympy.tensor.array.expressions`` brings ``sympy.combinatorics`` with it, about a tenth
of ``import symgrad``, and only formulas of such arrays need it."""
import functools


@functools.lru_cache(maxsize=None)
def array_symbol():
    """The class ``sympy.tensor.array.expressions.ArraySymbol``."""
    from sympy.tensor.array.expressions import ArraySymbol
    return ArraySymbol
