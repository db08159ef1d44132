"""Type aliases of the public API, for annotations only (nothing here runs at trace time).

They name what users pass: a ``Dim`` is an int, a name or a SymPy expression of names; a
``ShapeLike`` is a sequence of dims (a ``TensorSpec`` is one); ``TensorLike`` is what an
op accepts: a symbolic ``Tensor`` or anything NumPy reads as an array (numbers, arrays,
torch tensors, which have ``__array__``). ``Wrt`` selects inputs by name or position.
"""
from typing import TYPE_CHECKING, Any, Mapping, Sequence, Union

import numpy.typing
import sympy

if TYPE_CHECKING:
    from .graph import Tensor

Dim = Union[int, str, sympy.Expr]
ShapeLike = Union[Sequence[Dim], Dim]
Shapes = Mapping[str, ShapeLike]
TensorLike = Union["Tensor", numpy.typing.ArrayLike]
Wrt = Union[int, str, Sequence[Union[int, str]], None]
Axis = Union[int, Sequence[int], None]         # None: every axis
IntTuple = Union[int, Sequence[int]]           # one per spatial dim, or one for all
# What an op returns: a Tensor on symbolic operands; on numbers and arrays the array
# library's own result (a NumPy array or scalar, a torch tensor: torch is optional, so
# that half is Any).
Result = Union["Tensor", Any]

__all__ = ["Axis", "Dim", "IntTuple", "Result", "ShapeLike", "Shapes", "TensorLike", "Wrt"]
