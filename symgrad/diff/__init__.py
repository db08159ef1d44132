"""Sweep: what a derivative is. The rule table loaded from ``rules/``, reverse and forward
mode over the traced DAG, batching for Jacobians, custom ops (``sg.Function``) and the
backward graph behind ``x.grad_fn``."""
from . import backward_view, function  # noqa: F401  (fill core's grad_fn slots; the custom op)
