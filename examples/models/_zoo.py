"""Shared by the model scripts: derive a model's gradient once, print its formulas, and
check the compiled NumPy and torch gradients against torch.autograd (float64) on several
batches (different labels or ids, no re-derivation), at order 2 too for small models."""
import sys
import time

import numpy as np
import torch

import symgrad as sg

BACKENDS = ("numpy", "torch")   # the compiled backends checked (tests add "c")


def _tensors(batch):
    return {k: torch.as_tensor(v) if np.asarray(v).dtype.kind in "biu"
            else torch.tensor(v, dtype=torch.float64) for k, v in batch.items()}


def reference(model, loss, batch, names):
    """torch.autograd's gradients of loss(model(*inputs), *targets) w.r.t. the
    parameters, in symgrad's order of ``names`` (qualified parameter names)."""
    model.zero_grad()
    t = _tensors(batch)
    forward = [t[n] for n in batch if n in model_inputs(model, batch)]
    rest = [t[n] for n in batch if n not in model_inputs(model, batch)]
    out = model(*forward)
    loss(out, *rest).backward()
    params = dict(model.named_parameters())
    return [params[n].grad.numpy().copy() for n in names]


def model_inputs(model, batch):
    import inspect
    params = list(inspect.signature(model.forward).parameters)
    return [n for n in batch if n in params]


def verify_model(title, model, shapes, loss, batches, order2=False, dims=None,
                 show_lines=12):
    """Print and verify; returns True when every gradient agrees with torch."""
    print("=" * 72)
    print(title)
    print("=" * 72)
    start = time.perf_counter()
    g = sg.grad_fn(model, shapes=shapes, loss=loss)
    derive = time.perf_counter() - start
    compiled = {b: g.compile(b) for b in BACKENDS}
    fn = sg.module_function(model, shapes=shapes, loss=loss)
    qualified = {s: q for q, s in fn.symbols.items()}
    names = [qualified[w.name] for w in g.wrt]
    text = g.text().splitlines()
    print(f"gradient w.r.t. {len(g.wrt)} parameters, derived and compiled in "
          f"{derive + 0:.2f} s; formulas ({len(text)} lines, first {show_lines}):")
    for line in text[:show_lines]:
        print("  " + (line if len(line) <= 150 else line[:147] + "..."))
    ok = True
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    params = {x.name: state[qualified[x.name]].detach().numpy().copy()
              for x in g.inputs if x.name in qualified}
    for k, batch in enumerate(batches):
        ref = reference(model, loss, batch, names)
        args = [params[x.name] if x.name in params else batch[x.name] for x in g.inputs]
        for backend, f in compiled.items():
            call = [torch.as_tensor(a) for a in args] if backend == "torch" else args
            ours = [o.numpy() if isinstance(o, torch.Tensor) else np.asarray(o) for o in f(*call)]
            err = max(float(np.max(np.abs(o - r))) for o, r in zip(ours, ref))
            good = all(o.shape == r.shape and np.allclose(o, r, rtol=1e-8, atol=1e-10)
                       for o, r in zip(ours, ref))
            ok &= good
            print(f"  batch {k} [{backend:5}] max |symgrad - torch.autograd| over "
                  f"{len(ref)} gradients = {err:.1e}  {'ok' if good else 'MISMATCH'}")
    report = sg.check(model, shapes=shapes, loss=loss, dims=dims, order=2 if order2 else 1,
                      trials=1, backends=BACKENDS)
    print(f"  sg.check at order{'s 1 and 2' if order2 else ' 1'}: "
          f"{'ok' if report.ok else 'MISMATCH'}")
    return ok and report.ok


def out_of_range_raises(model, shapes, loss, batch, name, bad):
    """A label or id out of range raises in every backend, as in torch."""
    g = sg.grad_fn(model, shapes=shapes, loss=loss)
    fn = sg.module_function(model, shapes=shapes, loss=loss)
    qualified = {s: q for q, s in fn.symbols.items()}
    params = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    batch = dict(batch, **{name: bad})
    args = [params[qualified[x.name]].detach().numpy() if x.name in qualified
            else batch[x.name] for x in g.inputs]
    raised = 0
    for backend in BACKENDS:
        call = [torch.as_tensor(a) for a in args] if backend == "torch" else args
        try:
            g.compile(backend)(*call)
        except sg.ArgumentError as e:
            raised += 1
            print(f"  out-of-range {name} [{backend}]: ArgumentError: {e}")
    return raised == len(BACKENDS)


def finish(ok, what):
    if not ok:
        print(f"FAILED: {what}")
        sys.exit(1)
    print(f"\nOK: {what}")
