"""Differential fuzzing of symgrad against torch.autograd.

``programs`` generates random well-typed programs over the whole rule table, reusing the
op vocabulary, torch references and input samplers of ``tests/rule_specs.py``; ``runner``
derives their gradients with symgrad and compares the compiled NumPy and torch code with
torch.autograd at orders 1 and 2 (``sg.check``). ``test_fuzz.py`` runs a small fixed-seed
subset in the normal suite; ``python -m tests.fuzz --programs 10000`` runs a long campaign
and reports counts.
"""
import sys
from pathlib import Path

# rule_specs lives in tests/, which pytest puts on sys.path; `python -m tests.fuzz` does not
_TESTS = str(Path(__file__).resolve().parent.parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
