"""Examples of the nn-family mappings (torchfront/losses.py, ctc.py, native_norm.py,
activation_internals.py) for test_torch_frontend's table test: ``call(op, *symbols)``,
shapes, input domain and order (1 where torch has no second derivative)."""
import torch

D = torch.float64
SIGN = torch.tensor([[1.0, -1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, 1.0], [1.0, 1.0, -1.0, 1.0]],
                    dtype=D)
TARGET = torch.tensor([[0.5, 1.5, 2.5, 0.2], [3.0, 0.1, 1.2, 2.2], [0.7, 4.0, 0.3, 1.1]], dtype=D)
CLS = torch.tensor([2, 0, 3])
LABELS = torch.tensor([[3, 0, -1, 1], [1, 2, 2, -1], [-1, 0, 1, 2]])
MASK = torch.tensor([[True, False, True, True], [False, True, True, False],
                     [True, True, False, True]])
X = {"x": (3, 4)}
XY = {"x": (3, 4), "y": (3, 4)}
XYZ = {"x": (3, 4), "y": (3, 4), "z": (3, 4)}
RUNNING = (torch.tensor([0.1, -0.2, 0.3], dtype=D), torch.tensor([0.9, 1.2, 0.7], dtype=D))


def _stats(out):
    return tuple(out)[:3]


EXAMPLES = {
    "torch.nn.functional.soft_margin_loss": (lambda op, x: (
        op(x, SIGN), op(x, SIGN, reduction="none"), op(x[0, 0], SIGN[0, 0])), X, "real"),
    "torch.nn.functional.margin_ranking_loss": (lambda op, x, y: (
        op(x, y, SIGN, 0.5), op(x, y, SIGN, reduction="none")), XY, "real"),
    "torch.nn.functional.hinge_embedding_loss": (lambda op, x: (
        op(x, SIGN), op(x, SIGN, 0.5, reduction="sum")), X, "real"),
    "torch.nn.functional.cosine_embedding_loss": (lambda op, x, y: (
        op(x, y, SIGN[:, 0]), op(x[0], y[0], SIGN[0, 0], 0.3, reduction="none")), XY, "real"),
    "torch.nn.functional.poisson_nll_loss": (lambda op, x: (
        op(x, TARGET), op(x, TARGET, full=True, reduction="none"),
        op(x * x + 0.5, TARGET, log_input=False, full=True, eps=1e-3)), X, "real"),
    "torch.pairwise_distance": (lambda op, x, y: (
        op(x, y), op(x, y, 1.5, keepdim=True), op(x, y, -1.0), op(x[0], y[0], 3.0)), XY, "real"),
    "torch.nn.functional.triplet_margin_loss": (lambda op, x, y, z: (
        op(x, y, z, 2.0), op(x, y, z, 2.0, swap=True, reduction="none"), op(x, y, z, 3.0, 1)),
        XYZ, "real"),
    "torch.nn.functional.triplet_margin_with_distance_loss": (lambda op, x, y, z: (
        op(x, y, z, margin=2.0), op(x, y, z, distance_function=lambda a, b: (a - b).abs().sum(1),
                                    margin=3.0, swap=True, reduction="none")), XYZ, "real"),
    "torch.nn.functional.multilabel_soft_margin_loss": (lambda op, x: (
        op(x, MASK.double()), op(x, MASK.double(), TARGET[0], reduction="none")), X, "real"),
    "torch.nn.functional.multi_margin_loss": (lambda op, x: (
        op(x, CLS), op(x, CLS, 2, 0.5, TARGET[0], reduction="none"), op(x[0], CLS[:1])),
        X, "real", 1),
    "torch.nn.functional.multilabel_margin_loss": (lambda op, x: (
        op(x, LABELS), op(x, LABELS, reduction="none"), op(x[0], LABELS[0])), X, "real", 1),
    "torch.nn.functional.linear_cross_entropy": (lambda op, x, y: (
        op(x, y, CLS), op(x[0], y, CLS[0], linear_bias=y[:, 0], label_smoothing=0.1)),
        {"x": (3, 4), "y": (5, 4)}, "real"),
    "torch.nn.functional.glu": (lambda op, x: (op(x), op(x[:2], 0)), X, "real"),
    "torch.nn.functional.rrelu": (lambda op, x: (op(x), op(x, 0.1, 0.3, False)), X, "real"),
    "torch.nn.functional.ctc_loss": (lambda op, x: (
        op(x.log_softmax(2), torch.tensor([[1, 2], [2, 2]]), [3, 3], [2, 2]),
        op(x, torch.tensor([1, 3, 3]), [3, 2], [1, 2], reduction="sum", zero_infinity=True)),
        {"x": (3, 2, 4)}, "real", 1),
    "torch.native_layer_norm": (lambda op, x, y: (
        op(x, (4,), y[0], y[1], 1e-3), op(x, (3, 4), None, None, 1e-3)), XY, "real"),
    "torch.native_group_norm": (lambda op, x, y: op(
        x.reshape(3, 4, 1), y[0], y[1], 3, 4, 1, 2, 1e-3), XY, "real"),
    "torch.native_batch_norm": (lambda op, x, y: (
        _stats(op(x.reshape(4, 3), y[0, :3], y[1, :3], None, None, True, 0.1, 1e-3)),
        op(x, y[2, :3], y[0, :3], *RUNNING, False, 0.1, 1e-3)[0].transpose(0, 1)),
        {"x": (4, 3), "y": (3, 4)}, "real"),
    "torch._native_batch_norm_legit": (lambda op, x, y: (
        _stats(op(x, y[0, :3], None, True, 0.1, 1e-3)),
        op(x, None, None, *RUNNING, False, 0.1, 1e-3)[0]), {"x": (4, 3), "y": (3, 4)}, "real"),
    "torch.ops.aten._batch_norm_with_update": (lambda op, x, y: _stats(op(
        x, y[0, :3], y[1, :3], torch.zeros(3, dtype=D), torch.ones(3, dtype=D), 0.1, 1e-3)),
        {"x": (4, 3), "y": (3, 4)}, "real"),
    "torch.ops.aten._softmax_backward_data": (lambda op, x, y: (
        op(x, torch.softmax(y, 0), 0, D)), XY, "real"),
    "torch.ops.aten._safe_softmax": (lambda op, x: (
        op(x, 1), op(x.masked_fill(~MASK, float("-inf")), 0),
        op(x.masked_fill(torch.arange(3)[:, None] == 1, float("-inf")), 1)), X, "real"),
    "torch.ops.aten.native_dropout_backward": (lambda op, x: (
        op(x, MASK, 2.0), op(x, ~MASK, 0.5)), X, "real"),
}
