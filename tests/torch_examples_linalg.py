"""Examples of the linear-algebra and distance mappings (torchfront/products.py,
distances.py) for test_torch_frontend's table test: ``call(op, *symbols)``, shapes, input
domain and the order checked (1 for cdist and pdist: torch has no second derivative of
them), one per torch name."""
import torch

SQ = {"x": (3, 3)}
AB = {"a": (4, 3), "b": (4, 3)}


def _well_conditioned(x):
    return x @ x.mT + 6 * torch.eye(x.shape[-1], dtype=x.dtype)


EXAMPLES = {
    "torch.addbmm": ((lambda op, m, a, b: (op(m, a, b), op(m, a, b, beta=0.5, alpha=2.0))),
                     {"m": (2, 4), "a": (3, 2, 5), "b": (3, 5, 4)}, "real", 2),
    "torch.addr": ((lambda op, m, u, v: (op(m, u, v), op(m, u, v, beta=0.5, alpha=2.0))),
                   {"m": (3, 2), "u": (3,), "v": (2,)}, "real", 2),
    "torch.cdist": ((lambda op, a, b: (op(a, b), op(a, b, p=1.5), op(a[:2], b, p=1.0))),
                    {"a": (3, 2), "b": (4, 2)}, "real", 1),
    "torch.corrcoef": ((lambda op, x: op(x)), {"x": (3, 5)}, "real", 2),
    "torch.cov": ((lambda op, x, w: (op(x), op(x, correction=0, aweights=w.exp()))),
                  {"x": (3, 5), "w": (5,)}, "real", 2),
    "torch.cross": ((lambda op, a, b: op(a, b, dim=1)), AB, "real", 2),
    "torch.linalg.cross": ((lambda op, a, b: (op(a, b), op(a, b[:1]))), AB, "real", 2),
    "torch.dist": ((lambda op, a, b: (op(a, b), op(a, b[0], 3))), AB, "real", 2),
    "torch.kron": ((lambda op, a, b: op(a, b)), {"a": (2, 3), "b": (3,)}, "real", 2),
    "torch.linalg.inv_ex": ((lambda op, x: op(x)[0]), SQ, "spd", 2),
    "torch.linalg.matrix_power": ((lambda op, x: (op(x, 3), op(x, -2), op(x, 0) * x)), SQ,
                                  "spd", 2),
    "torch.linalg.multi_dot": ((lambda op, a, b, c: op([a, b, c])),
                               {"a": (3,), "b": (3, 4), "c": (4, 2)}, "real", 2),
    "torch.linalg.solve_ex": ((lambda op, x, b: (op(x, b)[0], op(x, b.unsqueeze(-1))[0])),
                              {"x": (3, 3), "b": (3,)}, "spd", 2),
    "torch.linalg.tensorinv": ((lambda op, x: op(_well_conditioned(x).reshape(2, 3, 6), ind=2)),
                               {"x": (6, 6)}, "real", 2),
    "torch.linalg.tensorsolve": ((lambda op, x, b: op(_well_conditioned(x).reshape(2, 3, 6), b)),
                                 {"x": (6, 6), "b": (2, 3)}, "real", 2),
    "torch.linalg.vecdot": ((lambda op, a, b: (op(a, b), op(a, b, dim=0))), AB, "real", 2),
    "torch.nn.functional.pdist": ((lambda op, x: (op(x), op(x, p=1.5))), {"x": (4, 3)},
                                  "real", 1),
    "torch.renorm": ((lambda op, x: (op(x, 2, 0, 1.0), op(x, 1, 1, 0.5))), {"x": (3, 4)},
                     "real", 2),
    "torch.tensordot": ((lambda op, a, b: (op(a, b, dims=([1], [0])), op(a, b, dims=1))),
                        {"a": (2, 3), "b": (3, 4)}, "real", 2),
}
