"""PyTorch's OpInfo database as symgrad's conformance suite (issue 15).

One test per OpInfo variant and order: the variant is walked over all of torch's own
samples (``opinfo.classify``) and its class must be the one the committed report
``docs/conformance.md`` states, and never ``crash`` or ``wrong``. A refusal passes (it
is counted in the report); a change of class, better or worse, means regenerating the
report:

    python -m tests.conformance.opinfo --report docs/conformance.md
"""
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("expecttest")

from . import opinfo  # noqa: E402

REPORT = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
COMMITTED = opinfo.read_report(REPORT)
VARIANTS = {opinfo.variant_name(o): o for o in opinfo.variants()}


def test_the_report_lists_every_variant_once():
    assert sorted(COMMITTED) == sorted(VARIANTS)


# The variants whose walk takes more than ten seconds (max pooling in one to three dims and
# its backward on torch's many large samples, 3-d grid sampling): about a third of the
# walk's time, run with ``-m slow``; their ops stay in the default run through the rule
# table (tests/rule_specs.py) and the fuzzer.
SLOW_VARIANTS = {"grid_sampler_3d", "nn.functional.max_pool1d", "nn.functional.max_pool2d",
                 "nn.functional.max_pool3d", "max_pool2d_with_indices_backward"}


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] * (n in SLOW_VARIANTS))
                                  for n in sorted(VARIANTS)])
def test_variant_has_its_reported_class(name, order):
    with np.errstate(all="ignore"):
        kind, detail = opinfo.classify(VARIANTS[name], order)
    assert kind not in ("crash", "wrong"), f"{name} at order {order}: {kind}: {detail}"
    assert kind == COMMITTED[name][order], (
        f"{name} at order {order} is now {kind!r} ({detail}); the report says "
        f"{COMMITTED[name][order]!r}: regenerate docs/conformance.md")


def test_the_report_meets_the_bar():
    """Issue 15's floor: 85% of the variants pass at order 1, 75% of those with a torch
    double backward at order 2, and nothing crashes or is wrong (each row is checked by
    the test above)."""
    for order, floor in ((1, 0.85), (2, 0.75)):
        classes = [row[order] for row in COMMITTED.values()]
        judged = [c for c in classes if c != "n/a"]
        assert not {"crash", "wrong"} & set(classes)
        assert classes.count("pass") / len(judged) >= floor, (order, classes.count("pass"))
