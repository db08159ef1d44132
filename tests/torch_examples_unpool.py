"""Examples of the pooling-index, unpooling, grid sampling, padding and antialiasing
mappings (torchfront/unpool.py, grid.py, pool.py) for test_torch_frontend's table test
(``call(op, *symbols)``, shapes, input domain), one per handler."""
import torch
import torch.nn.functional as F

X2 = {"x": (2, 3, 6, 6)}
SAMPLES2 = torch.rand(2, 3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
SAMPLES3 = torch.rand(1, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
GRID2 = {"x": (2, 2, 4, 5), "grid": (2, 3, 2, 2)}
GRID3 = {"x": (1, 2, 3, 4, 2), "grid": (1, 2, 2, 2, 3)}


def _first(out):
    return out[0] if isinstance(out, tuple) else out


EXAMPLES = {
    "torch.nn.functional.max_unpool1d": ((lambda op, x: op(
        *F.max_pool1d(x, 2, return_indices=True), 2)), {"x": (2, 3, 8)}, "real"),
    "torch.nn.functional.max_unpool2d": ((lambda op, x: (op(
        *F.max_pool2d(x, 3, 2, 1, return_indices=True), 3, 2, 1, output_size=(6, 6)), op(
        *F.max_pool2d(x[0], 2, return_indices=True), 2))), X2, "real"),
    "torch.nn.functional.max_unpool3d": ((lambda op, x: op(
        *F.max_pool3d(x, 2, return_indices=True), 2)), {"x": (1, 2, 4, 4, 2)}, "real"),
    "torch.ops.aten.max_pool2d_with_indices_backward": ((lambda op, g, x: op(
        g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, F.max_pool2d(x, 2, return_indices=True)[1])),
        {"g": (2, 3, 3, 3), "x": (2, 3, 6, 6)}, "real"),
    "torch.ops.aten.max_pool3d_with_indices_backward": ((lambda op, g, x: op(
        g, x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False,
        F.max_pool3d(x, 2, return_indices=True)[1])),
        {"g": (1, 2, 2, 2, 1), "x": (1, 2, 4, 4, 2)}, "real"),
    "torch.constant_pad_nd": ((lambda op, x: (op(x, (1, -1, 2, 0), 0.5), op(x, (2, 2)))),
                              X2, "real"),
    "torch.nn.functional.fractional_max_pool2d": ((lambda op, x: (op(
        x, 2, output_size=(4, 3), _random_samples=SAMPLES2), _first(op(
            x, (3, 2), output_ratio=(0.5, 0.5), return_indices=True,
            _random_samples=SAMPLES2)))), X2, "real"),
    "torch.nn.functional.fractional_max_pool2d_with_indices": ((lambda op, x: op(
        x, 2, output_size=(4, 3), _random_samples=SAMPLES2)[0]), X2, "real"),
    "torch.nn.functional.fractional_max_pool3d": ((lambda op, x: op(
        x, 2, output_size=(3, 2, 2), _random_samples=SAMPLES3)), {"x": (1, 2, 5, 4, 5)},
        "real"),
    "torch.nn.functional.fractional_max_pool3d_with_indices": ((lambda op, x: op(
        x, 2, output_size=(3, 2, 2), _random_samples=SAMPLES3)[0]), {"x": (1, 2, 5, 4, 5)},
        "real"),
    "torch.nn.functional.grid_sample": ((lambda op, x, grid: (
        op(x, grid, align_corners=False), op(x, grid, "bicubic", "reflection", True),
        op(x, grid, "nearest", "border", False))), GRID2, "unit"),
    "torch.grid_sampler": ((lambda op, x, grid: op(x, grid, 0, 1, True)), GRID2, "unit"),
    "torch.grid_sampler_2d": ((lambda op, x, grid: op(x, grid, 2, 0, False)), GRID2, "unit"),
    "torch.grid_sampler_3d": ((lambda op, x, grid: op(x, grid, 0, 2, False)), GRID3, "unit"),
    "torch.ops.aten._upsample_bilinear2d_aa": ((lambda op, x: op(x, [4, 3], False, None)),
                                               X2, "real"),
}
