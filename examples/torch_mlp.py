"""An ordinary PyTorch model, ``nn.Sequential(Linear, Tanh, Linear)`` with an MSE loss, as
gradient formulas with a symbolic batch size N.

The parameters ``0.weight``, ``0.bias``, ``2.weight``, ``2.bias`` become the symbols W0,
b0, W2, b2; the forward's argument ``input`` and the loss's ``target`` are symbols too.
The compiled gradient is checked against ``loss.backward()`` on the model itself and
with ``sg.check`` (orders 1 and 2). Exits non-zero on any mismatch.

    python examples/torch_mlp.py
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from _verify import finish

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2)).double()
shapes = {"input": ("N", 3)}
g = sg.grad_fn(model, shapes=shapes, loss=F.mse_loss)
fn = sg.module_function(model, shapes=shapes, loss=F.mse_loss)

print("model:", model)
print("symbols:", ", ".join(f"{q} -> {s}" for q, s in fn.symbols.items()),
      "| inputs:", ", ".join(fn.inputs + fn.loss_args), "\n")
print(g)
print("\nstraight-line program:\n" + g.program())

ok = True
for batch in (1, 16):
    x = torch.randn(batch, 3, dtype=torch.float64)
    y = torch.randn(batch, 2, dtype=torch.float64)
    model.zero_grad()
    F.mse_loss(model(x), y).backward()
    grads = g.compile("torch")(*fn.arguments(x, y))
    for (q, p), ours in zip(model.named_parameters(), grads):
        good = torch.allclose(ours, p.grad, rtol=1e-10, atol=1e-12)
        ok &= good
        print(f"N={batch:<3} d/d{fn.symbols[q]:<3} ({q}) shape {tuple(ours.shape)}  "
              f"max |symgrad - torch| = {float((ours - p.grad).abs().max()):.1e}  "
              f"{'ok' if good else 'MISMATCH'}")
    numpy_grads = g.compile("numpy")(*fn.arguments(x, y, backend="numpy"))
    ok &= all(np.allclose(a, b.numpy(), rtol=1e-10, atol=1e-12)
              for a, b in zip(numpy_grads, grads))

report = sg.check(model, shapes=shapes, loss=F.mse_loss, dims={"N": 5})
print("\n" + str(report))
finish(ok and report.ok, "nn.Sequential MLP gradients match torch.autograd")
