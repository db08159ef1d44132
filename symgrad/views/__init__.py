"""Print: what a human reads. Text and LaTeX printers of the formula objects, matrix
notation, per-element formulas (``explicit``), the straight-line program, and the
backward graph (``print_graph``, ``to_dot``)."""
from . import text  # noqa: F401  (fills core's slot for printing formulas)
