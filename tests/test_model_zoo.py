"""The model zoo (examples/models/): each script derives its model's gradient once and
checks the compiled NumPy and torch (and C) gradients against torch.autograd (float64) on two
batches with different labels or ids, order 2 on the small ones, sg.check, printed
formulas, and (for models fed ids or labels) that an out-of-range id raises in both
backends. Running ``main()`` here is running the example."""
import importlib.util
import sys
from pathlib import Path

import pytest

from backend_support import require_backend

MODELS = Path(__file__).resolve().parent.parent / "examples" / "models"
SCRIPTS = sorted(p for p in MODELS.glob("*.py") if not p.name.startswith("_"))


def load(path):
    sys.path.insert(0, str(MODELS))
    try:
        spec = importlib.util.spec_from_file_location(f"zoo_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(MODELS))


def test_the_zoo_has_the_models_of_the_issue():
    names = {p.stem for p in SCRIPTS}
    assert {"lstm_lm", "gru_classifier", "cell_loop", "transformer_encoder"} <= names


# compile("c") on every model; the unrolled recurrences and the larger conv nets (long C
# sources, 10-30 s of compiling each) only with -m slow
SLOW_NATIVE = {"cell_loop", "conv1d_net", "gru_classifier", "lstm_lm", "resnet_block"}
CASES = [pytest.param(p, ("numpy", "torch"), id=p.stem) for p in SCRIPTS] + [
    pytest.param(p, ("c",), id=f"{p.stem}-c",
                 marks=[pytest.mark.slow] if p.stem in SLOW_NATIVE else [])
    for p in SCRIPTS]


@pytest.mark.parametrize("script, backends", CASES)
def test_model(script, backends, capsys, monkeypatch):
    for backend in backends:
        require_backend(backend)
    module = load(script)
    monkeypatch.setattr(sys.modules["_zoo"], "BACKENDS", backends)
    assert module.main()
    out = capsys.readouterr().out
    assert "dL/d" in out and "MISMATCH" not in out


# open: LeNet's jax gradients differ from torch.autograd's by ~1e-9 absolute (the zoo
# compares at atol 1e-10; sg.check at order 1 agrees), not yet explained
KNOWN = {("lenet", "jax"): "jax gradient off by ~1e-9 absolute, not yet explained"}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax"])
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_model_on(script, backend, capsys, monkeypatch):
    if (script.stem, backend) in KNOWN:
        pytest.xfail(KNOWN[script.stem, backend])
    """The same example, its gradient compiled for ``backend`` alone (slow: XLA compiles
    the unrolled recurrent models for minutes)."""
    pytest.importorskip(backend)
    module = load(script)
    monkeypatch.setattr(sys.modules["_zoo"], "BACKENDS", (backend,))
    assert module.main()
    out = capsys.readouterr().out
    assert "dL/d" in out and "MISMATCH" not in out and f"[{backend}" in out
