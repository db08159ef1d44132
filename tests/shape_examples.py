"""Examples of the shape-family mappings (views, splits, diagonals, scatters, strided
reads, finite differences) for test_torch_frontend's table test: ``call(op, *symbols)``,
shapes, input domain, one per torch name. Each call uses the op's less common arguments
(offsets, negative dims, keyword forms) so the general case is what is compared."""
import torch

X = {"x": (3, 4)}
X3 = {"x": (2, 3, 4)}
XS = {"x": (3, 4), "s": (3,)}
V = {"v": (5,)}


def _ids(*values):
    return torch.tensor(values)


def _f(*values):
    return torch.tensor(values, dtype=torch.float64)


EXAMPLES = {
    "torch.view_copy": ((lambda op, x: op(x, (4, 3))), X, "real"),
    "torch.expand_copy": ((lambda op, x: op(x[:, :1], (2, 3, 4))), X, "real"),
    "torch.alias_copy": ((lambda op, x: op(x) * x), X, "real"),
    "torch.unsqueeze_copy": ((lambda op, x: op(x, -1)), X, "real"),
    "torch.narrow_copy": ((lambda op, x: op(x, -1, 1, 2)), X, "real"),
    "torch.ravel": ((lambda op, x: op(x)), X3, "real"),
    "torch.split_with_sizes": ((lambda op, x: op(x, [1, 0, 3], -1)), X, "real"),
    "torch.unsafe_split": ((lambda op, x: op(x, 3, 1)), X, "real"),
    "torch.unsafe_chunk": ((lambda op, x: op(x, 2, 0)), X, "real"),
    "torch.tensor_split": ((lambda op, x: (op(x, 3, 1), op(x, [1, -1], 0), op(x, _ids(1, 3), 1))),
                           X, "real"),
    "torch.hsplit": ((lambda op, x: op(x, 2)), X, "real"),
    "torch.vsplit": ((lambda op, x: op(x, [1])), X, "real"),
    "torch.dsplit": ((lambda op, x: op(x, [1, 3])), X3, "real"),
    "torch.atleast_1d": ((lambda op, x: op(x[0, 0], x)), X, "real"),
    "torch._C._VariableFunctions.atleast_1d": ((lambda op, x: op((x[0, 0], x))), X, "real"),
    "torch._C._VariableFunctions.meshgrid": ((lambda op, x: op((x[0], x[1, :3]), indexing="ij")),
                                             X, "real"),
    "torch.atleast_2d": ((lambda op, x: op(x[0])), X, "real"),
    "torch.atleast_3d": ((lambda op, x: op([x[0, 0], x[0], x])), X, "real"),
    "torch.column_stack": ((lambda op, x: op([x[0], x[1], x.T])), X, "real"),
    "torch.dstack": ((lambda op, x: op([x, x * x])), X, "real"),
    "torch.meshgrid": ((lambda op, x: op(x[0], x[1, :3], indexing="xy")), X, "real"),
    "torch.cartesian_prod": ((lambda op, x: op(x[0, :2], x[1], x[2, :3])), X, "real"),
    "torch.roll": ((lambda op, x: (op(x, (1, -2), (0, 1)), op(x, 5))), X, "real"),
    "torch.rot90": ((lambda op, x: (op(x, 1, (1, 2)), op(x, -1, (2, 0)), op(x, 2))), X3,
                    "real"),
    "torch.fft.fftshift": ((lambda op, x: op(x, dim=-1)), X3, "real"),
    "torch.fft.ifftshift": ((lambda op, x: op(x)), X3, "real"),
    "torch.nn.functional.channel_shuffle": ((lambda op, x: op(x.reshape(1, 6, 2, 2), 3)), X3,
                                            "real"),
    "torch.Tensor.sum_to_size": ((lambda op, x: op(x, 3, 1) + 0 * x[:, :1]), X3, "real"),
    "torch.diag_embed": ((lambda op, x: op(x, -1, 0, 2)), X, "real"),
    "torch.diagflat": ((lambda op, x: op(x, 2)), X, "real"),
    "torch.linalg.diagonal": ((lambda op, x: op(x, offset=1, dim1=0, dim2=-1)), X3, "real"),
    "torch.diagonal_scatter": ((lambda op, x, s: op(x, s, 1)), XS, "real"),
    "torch.select_scatter": ((lambda op, x, s: op(x, s, 1, -2)), XS, "real"),
    "torch.slice_scatter": ((lambda op, x, s: op(x, s.reshape(3, 1) * s[:2], 1, 1, None, 2)),
                            XS, "real"),
    "torch.ops.aten.slice.Tensor": ((lambda op, x: op(x, 1, -3, None, 2)), X, "real"),
    "torch.as_strided": ((lambda op, x: op(x, (2, 2), (1, 3), 2)), X, "real"),
    # torch's gradient for the input is wrong (its OpInfo marks test_fn_grad an expected
    # failure): the input here is a constant; tests/test_shape_views.py checks that gradient
    "torch.as_strided_scatter": ((lambda op, x, s: op(_f(*range(12)).reshape(3, 4),
                                                      s[:2].reshape(2, 1), (2, 1), (4, 1), 1)
                                  * x[:, :1]), XS, "real"),
    "torch.Tensor.unfold": ((lambda op, x: op(x, 1, 2, 1)), X3, "real"),
    "torch.repeat_interleave": ((lambda op, x: (op(x, 2), op(x, _ids(1, 0, 2), 0))), X,
                                "real"),
    "torch.combinations": ((lambda op, v: (op(v), op(v[:3], 3, True))), V, "real"),
    "torch.block_diag": ((lambda op, x: op(x, x[0], x[0, 0], x[:0])), X, "real"),
    "torch.diff": ((lambda op, x: (op(x, 2, 0, x[:1]), op(x, append=x[:, :2]))), X, "real"),
    "torch.gradient": ((lambda op, x: (op(x, spacing=[_f(0., 1., 2.5),
                                                      _f(0., 1., 3., 4.)],
                                          edge_order=2), op(x, spacing=2.0, dim=1))),
                       X, "real"),
    "torch.trapezoid": ((lambda op, x: (op(x), op(x, x[0] * x[0]), op(x, dx=0.3, dim=0))),
                        X, "real"),
    "torch.trapz": ((lambda op, x: op(x, _f(0., 1., 3., 4.))), X, "real"),
    "torch.cumulative_trapezoid": ((lambda op, x: (op(x, dim=0), op(x, x * x))), X, "real"),
    "torch.linalg.vander": ((lambda op, x: op(x, N=4)), X, "real"),
}
