"""Examples of the constant-index writes and grouped reductions (torchfront/scatter.py,
segment.py) for test_torch_frontend's table test: ``call(op, *symbols)``, shapes, input
domain and order, one per torch name. Repeated ids are deliberate (the last write wins in
value, every write gets its place's gradient, ties and products follow torch).
segment_reduce and embedding_bag's per_sample_weights have no second derivative in torch,
so they are compared at order 1."""
import torch

T = torch.tensor
XY = {"x": (3, 4), "y": (3, 4)}
IDX = T([[0, 2, 2, 1], [1, 1, 0, 0], [2, 0, 2, 2]])


def _bags(op, w, p):
    ids = T([1, 4, 1, 0, 2, 3, 3])
    return (op(ids, w, T([0, 3, 3]), mode="sum", per_sample_weights=p),
            op(ids, w, T([0, 2, 7]), mode="max", include_last_offset=True),
            op(ids.reshape(1, 7), w, mode="mean", padding_idx=3))


EXAMPLES = {
    "torch.scatter": ((lambda op, x, y: (
        op(x, 1, IDX, y), op(x, 0, T([[2, 0], [2, 1]]), y[:2, :2]),
        op(x, -1, IDX[:, :2], 1.5))), XY, "real"),
    "torch.scatter_reduce": ((lambda op, x, y: tuple(
        op(x, 1, IDX, y, r, include_self=s) for r in ("prod", "amax", "amin", "mean")
        for s in (True, False))), XY, "real"),
    "torch.index_copy": ((lambda op, x, y: (op(x, 1, T([3, 0]), y[:, :2]),
                                            op(x, 0, T([1]), y[:1]))), XY, "real"),
    "torch.index_fill": ((lambda op, x, y: (op(x, 1, T([3, 0, 3]), 2.5),
                                            op(x, 0, T([2]), y[0, 0]))), XY, "real"),
    "torch.index_reduce": ((lambda op, x, y: tuple(
        op(x, 1, T([3, 0, 3, 3]), y, r, include_self=s) for r in ("prod", "amax", "amin",
                                                                   "mean")
        for s in (True, False))), XY, "real"),
    "torch.index_put": ((lambda op, x, y: (
        op(x, (T([0, 2, 0]), T([1, 3, 1])), y[0, :3]),
        op(x, (T([2, 0]),), y[:2], accumulate=True),
        op(x, (T([True, False, True]),), y[1]))), XY, "real"),
    "torch.put": ((lambda op, x, y: (op(x, T([0, -1, 5, 5]), y[0]),
                                     op(x, T([[1, 1], [11, 2]]), y[:2, :2], True))),
                  XY, "real"),
    "torch.masked_select": ((lambda op, x, y: (op(x, T([True, False, True, True])),
                                               op(y, T([[True], [False], [True]])))),
                            XY, "real"),
    "torch.masked_scatter": ((lambda op, x, y: op(x, T([[True, False, True, True]]), y)),
                             XY, "real"),
    "torch._unsafe_masked_index": ((lambda op, x, y: op(
        x, T([[True, False], [True, True]]), [T([[0], [5]]), T([[3, 1]])], 0.5) * y[0, 0]),
        XY, "real"),
    "torch._unsafe_masked_index_put_accumulate": ((lambda op, x, y: op(
        x, T([[True, False], [True, True]]), [T([[0], [-7]]), T([[3, 1]])], y[:2, :2])),
        XY, "real"),
    "torch.segment_reduce": ((lambda op, x, y: tuple(
        op(x, r, lengths=T([1, 0, 2]), initial=i) for r in ("sum", "mean", "max", "min",
                                                            "prod") for i in (None, 0.5))
        + (op(y, "max", offsets=T([[0, 2, 4], [1, 1, 3], [0, 0, 0]]), axis=1),)),
        XY, "real", 1),
    "torch.nn.functional.embedding_bag": ((lambda op, w, p: _bags(op, w, p)),
                                          {"w": (5, 3), "p": (7,)}, "real", 1),
}
