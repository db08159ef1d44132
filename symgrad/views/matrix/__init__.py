"""Gradients in textbook matrix notation: ``Aᵀ (A x − b)``, ``𝟙 bᵀ``, ``X diag(v)``,
``[x > 0] ∘ g``, ``X⁻ᵀ``: terms (``algebra``) read from the graph (``reader``) and
rendered as Unicode text or LaTeX (``render``)."""
from .render import render  # noqa: F401
