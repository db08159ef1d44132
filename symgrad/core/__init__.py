"""Trace: what a traced program is. The graph of ``Tensor`` nodes, shapes and dims, the
op registry (one ``OpDef`` per op) with the ops by family, and local simplification."""
from . import ops  # noqa: F401  (registers every op)
