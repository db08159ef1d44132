"""Shared by the examples: compare symgrad's compiled gradients with torch.autograd."""
import sys

import numpy as np
import torch

import symgrad as sg


def compare(g, f, args, rtol=1e-9, atol=1e-11):
    """Run both compiled backends of ``g`` on ``args`` and compare every gradient with
    torch.autograd of ``f`` (the same function run on float64 tensors). Returns True when
    all agree; prints one line per gradient."""
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    ref = torch.autograd.grad(f(*tensors), [tensors[[x.name for x in g.inputs].index(w.name)]
                                            for w in g.wrt])
    ok = True
    for backend in ("numpy", "torch"):
        fn = g.compile(backend)
        call = args if backend == "numpy" else [torch.tensor(a, dtype=torch.float64) for a in args]
        for w, ours, r in zip(g.wrt, fn(*call), ref):
            ours = ours.numpy() if isinstance(ours, torch.Tensor) else np.asarray(ours)
            err = float(np.max(np.abs(ours - r.numpy()))) if ours.shape == tuple(r.shape) else np.inf
            good = ours.shape == tuple(r.shape) and np.allclose(ours, r.numpy(), rtol=rtol, atol=atol)
            ok &= good
            print(f"  d/d{w.name:<4} [{backend:5}] shape {str(tuple(r.shape)):<10} "
                  f"max |symgrad - torch| = {err:.1e}  {'ok' if good else 'MISMATCH'}")
    return ok


def finish(ok, what):
    if not ok:
        print(f"FAILED: {what}")
        sys.exit(1)
    print(f"\nOK: {what}")
