"""The margin, embedding, triplet and Poisson losses, pairwise_distance, glu, rrelu,
linear_cross_entropy, the native normalisation kernels with their statistics and the ATen
softmax/dropout internals (torchfront/losses.py, activation_internals.py, native_norm.py,
vector_norm.py) against torch.autograd in float64 at orders 1 and 2 (both backends through
``sg.check``), and their refusals."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import symgrad as sg
from symgrad.errors import ParameterError, ShapeError

D = torch.float64
gen = torch.Generator().manual_seed(3)
SIGN = torch.tensor([1.0, -1.0, -1.0, 1.0], dtype=D)
CLS = torch.tensor([2, 0, 4, 1])
LABELS = torch.tensor([[3, 0, -1, 1, 2], [1, 4, 2, 0, -1], [2, 2, -1, 0, 0], [-1, 0, 1, 2, 3]])
W5 = torch.tensor([0.5, 1.5, 1.0, 2.0, 0.7], dtype=D)
POS = torch.rand(4, 5, generator=gen, dtype=D) * 3
MASK = torch.rand(4, 5, generator=gen) > 0.4


def cubes(y):
    return (y * y * y).sum()


def check(f, shapes, order=2):
    report = sg.check(f, shapes=shapes, order=order, trials=2)
    assert report.ok


FIRST_ORDER_ONLY = {"multi_margin", "multi_margin_p2_weight", "multi_margin_vector",
                    "multilabel_margin", "multilabel_margin_sum"}  # torch has no 2nd derivative


X45 = {"x": (4, 5)}
XY45 = {"x": (4, 5), "y": (4, 5)}
XYZ45 = {"x": (4, 5), "y": (4, 5), "z": (4, 5)}

FUNCTIONS = {
    "soft_margin": (lambda x: cubes(F.soft_margin_loss(x, torch.sign(POS - 1.5),
                                                       reduction="none")), X45),
    "soft_margin_mean": (lambda x: F.soft_margin_loss(x, torch.sign(POS - 1.5)) ** 2, X45),
    "margin_ranking": (lambda x, y: cubes(F.margin_ranking_loss(x, y, torch.sign(POS - 1.5),
                                                               margin=0.3, reduction="none")),
                       XY45),
    "hinge_embedding": (lambda x: F.hinge_embedding_loss(x, torch.sign(POS - 1.5), 0.8) ** 2,
                        X45),
    "cosine_embedding": (lambda x, y: cubes(F.cosine_embedding_loss(x, y, SIGN, margin=-0.2,
                                                                   reduction="none")), XY45),
    "poisson_log": (lambda x: cubes(F.poisson_nll_loss(x, POS, full=True, reduction="none")),
                    X45),
    "poisson_full": (lambda x: F.poisson_nll_loss(x * x + 0.5, POS, log_input=False,
                                                  full=True) ** 2, X45),
    "pairwise_distance": (lambda x, y: cubes(F.pairwise_distance(x, y)), XY45),
    "pairwise_distance_p3": (lambda x, y: cubes(F.pairwise_distance(x, y, p=3.0, keepdim=True)),
                             XY45),
    "pairwise_distance_p_neg": (lambda x, y: cubes(F.pairwise_distance(x, y, p=-1.5)), XY45),
    "normalize_p_neg": (lambda x: cubes(F.normalize(x, p=-1.0, dim=1)), X45),
    "normalize_p0": (lambda x: cubes(F.normalize(x, p=0.0, dim=0)), X45),
    "triplet": (lambda x, y, z: F.triplet_margin_loss(x, y, z, margin=2.0) ** 2, XYZ45),
    "triplet_swap": (lambda x, y, z: cubes(F.triplet_margin_loss(x, y, z, margin=2.0, swap=True,
                                                                 reduction="none")), XYZ45),
    "triplet_distance_fn": (lambda x, y, z: F.triplet_margin_with_distance_loss(
        x, y, z, distance_function=lambda a, b: 1 - F.cosine_similarity(a, b), margin=1.5,
        swap=True) ** 2, XYZ45),
    "multilabel_soft_margin": (lambda x: F.multilabel_soft_margin_loss(x, MASK.double(), W5)
                               ** 2, X45),
    "multi_margin": (lambda x: F.multi_margin_loss(x, CLS) ** 2, X45),
    "multi_margin_p2_weight": (lambda x: cubes(F.multi_margin_loss(
        x, CLS, p=2, margin=1.5, weight=W5, reduction="none")), X45),
    "multi_margin_vector": (lambda x: F.multi_margin_loss(x, CLS[:1]) ** 2, {"x": (5,)}),
    "multilabel_margin": (lambda x: cubes(F.multilabel_margin_loss(x, LABELS,
                                                                   reduction="none")), X45),
    "multilabel_margin_sum": (lambda x: F.multilabel_margin_loss(x, LABELS, reduction="sum")
                              ** 2, X45),
    "linear_cross_entropy": (lambda x, w: F.linear_cross_entropy(x, w, CLS[:3] % 2) ** 2,
                             {"x": (3, 4), "w": (2, 4)}),
    "linear_cross_entropy_kdim": (lambda x, w, b: F.linear_cross_entropy(
        x, w, torch.tensor([[0, 1], [1, 1], [0, 0]]), linear_bias=b, reduction="sum") ** 2,
        {"x": (3, 4), "w": (2, 2, 4), "b": (2, 2)}),
    "glu": (lambda x: cubes(F.glu(x, 1)), {"x": (3, 4, 2)}),
    "glu_last": (lambda x: cubes(F.glu(x)), {"x": (3, 6)}),
    "rrelu_eval": (lambda x: cubes(F.rrelu(x, 0.1, 0.4)), X45),
    "dropout_p1_train": (lambda x: cubes(F.dropout(x, 1.0, True) + x), X45),
    "native_layer_norm": (lambda x, w, b: sum(cubes(t) for t in torch.native_layer_norm(
        x, (5,), w, b, 1e-3)), {"x": (4, 5), "w": (5,), "b": (5,)}),
    "native_group_norm": (lambda x, w: sum(cubes(t) for t in torch.native_group_norm(
        x, w, None, 2, 4, 3, 2, 1e-3)), {"x": (2, 4, 3), "w": (4,)}),
    "native_batch_norm_train": (lambda x, w, b: sum(cubes(t) for t in torch.native_batch_norm(
        x, w, b, None, None, True, 0.1, 1e-3)), {"x": (4, 3, 2), "w": (3,), "b": (3,)}),
    "native_batch_norm_eval": (lambda x, w: cubes(torch._native_batch_norm_legit(
        x, w, None, POS[0, :3].clone(), POS[1, :3].clone() + 0.1, False, 0.1, 1e-3)[0]),
        {"x": (4, 3, 2), "w": (3,)}),
    "batch_norm_with_update": (lambda x, w: sum(cubes(t) for t in torch.ops.aten.
                                                _batch_norm_with_update(x, w, None,
                                                                        torch.zeros(3, dtype=D),
                                                                        torch.ones(3, dtype=D),
                                                                        0.1, 1e-3)[:3]),
                               {"x": (4, 3), "w": (3,)}),
    "softmax_backward_data": (lambda x, y: cubes(torch.ops.aten._softmax_backward_data(
        x, torch.softmax(y, 1), 1, D)), XY45),
    "safe_softmax": (lambda x: cubes(torch.ops.aten._safe_softmax(
        x.masked_fill(torch.arange(5) > 2, float("-inf")), 1)), X45),
    "safe_softmax_dead_row": (lambda x: cubes(torch.ops.aten._safe_softmax(
        x.masked_fill(torch.arange(4)[:, None] == 1, float("-inf")), 1)), X45),
    "native_dropout_backward": (lambda x: cubes(torch.ops.aten.native_dropout_backward(
        x, MASK, 2.0)), X45),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_against_torch(name):
    f, shapes = FUNCTIONS[name]
    check(f, shapes, 1 if name in FIRST_ORDER_ONLY else 2)


@pytest.mark.parametrize("call", [
    lambda x: F.rrelu(x, training=True),
    lambda x: F.dropout(x, 0.3, True),
    lambda x: F.alpha_dropout(x, 0.3, True),
])
def test_random_in_training_mode_is_refused(call):
    with pytest.raises(sg.UnsupportedOpError, match="random"):
        sg.grad_fn(lambda x: call(x).sum(), shapes={"x": (3, 4)})


def test_bad_arguments():
    with pytest.raises(ParameterError, match="dropout probability"):
        sg.grad_fn(lambda x: F.dropout(x, 1.5).sum(), shapes={"x": (3,)})
    with pytest.raises(ShapeError, match="even"):
        sg.grad_fn(lambda x: F.glu(x, 1).sum(), shapes={"x": (3, 5)})
    with pytest.raises(ParameterError, match="p == 1 and p == 2"):
        sg.grad_fn(lambda x: F.multi_margin_loss(x, CLS, p=3), shapes={"x": (4, 5)})
    with pytest.raises(sg.UnsupportedOpError, match="constant"):
        sg.grad_fn(lambda x, t: F.multi_margin_loss(x, t), shapes={"x": (4, 5), "t": (4,)})


def test_gradient_reads_as_ops():
    g = sg.grad_fn(lambda x, y: F.margin_ranking_loss(x, y, SIGN, margin=0.5),
                   shapes={"x": (4,), "y": (4,)})
    assert "[0.5 𝟙 − (SIGN ∘ (x − y)) ≥ 0]" in str(g)   # the hinge is active
    assert g.latex() and g.program()
    assert "symgrad" not in g.source("torch")


LOGP = {"x": (6, 3, 4)}
CTC_TARGETS = torch.tensor([[1, 2, 2], [3, 1, 0], [2, 3, 1]])


def _ctc(x, *args, **kw):
    return F.ctc_loss(x.log_softmax(-1), *args, **kw)


@pytest.mark.parametrize("f, shapes", [
    (lambda x: _ctc(x, CTC_TARGETS, [6, 5, 4], [3, 2, 3]) ** 2, LOGP),
    (lambda x: cubes(F.ctc_loss(x, CTC_TARGETS, torch.tensor([6, 6, 3]), torch.tensor([3, 1, 2]),
                                reduction="none")), LOGP),
    (lambda x: F.ctc_loss(x, torch.tensor([1, 2, 2, 3, 3, 1]), [6, 6, 6], [3, 0, 3], blank=3,
                          reduction="sum"), LOGP),
    (lambda x: F.ctc_loss(x, CTC_TARGETS, [6, 1, 6], [3, 2, 3], zero_infinity=True), LOGP),
    (lambda x: cubes(F.ctc_loss(x, torch.tensor([2, 1]), [5], [2], reduction="none")),
     {"x": (5, 4)}),
], ids=["mean_log_softmax", "none_raw", "concatenated_sum", "zero_infinity", "unbatched"])
def test_ctc_loss_against_torch(f, shapes):
    check(f, shapes, order=1)   # torch's CTC backward has no derivative of its own


def test_ctc_loss_impossible_alignment_is_refused():
    with pytest.raises(sg.UnsupportedOpError, match="zero_infinity=True"):
        sg.grad_fn(lambda x: F.ctc_loss(x, CTC_TARGETS, [6, 1, 6], [3, 2, 3]), shapes=LOGP)


def test_multi_head_attention_bias_kv_zero_attn_static_kv():
    g = torch.Generator().manual_seed(0)
    E, H, L, S, B = 4, 2, 3, 5, 2
    W, bi = torch.randn(3 * E, E, dtype=D, generator=g), torch.randn(3 * E, dtype=D, generator=g)
    Wo, bo = torch.randn(E, E, dtype=D, generator=g), torch.randn(E, dtype=D, generator=g)
    am = torch.randn(L, S, dtype=D, generator=g)
    kpm = torch.rand(B, S, generator=g) > 0.7
    kpm[:, 0] = False
    sk = torch.randn(B * H, S, E // H, dtype=D, generator=g)

    def biased(q, k, v, bk, bv):
        o, w = F.multi_head_attention_forward(q, k, v, E, H, W, bi, bk, bv, True, 0.0, Wo, bo,
                                              training=False, attn_mask=am,
                                              key_padding_mask=kpm.double() * -1e9)
        return cubes(o) + (w ** 2).sum()

    def static(q, k, v, sv):
        o, w = F.multi_head_attention_forward(q, k, v, E, H, W, bi, None, None, True, 0.0, Wo,
                                              bo, training=False, static_k=sk, static_v=sv)
        return cubes(o) + (w ** 2).sum()

    qkv = {"q": (L, B, E), "k": (S, B, E), "v": (S, B, E)}
    check(biased, {**qkv, "bk": (1, 1, E), "bv": (1, 1, E)})
    check(static, {**qkv, "sv": (B * H, S, E // H)})


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss", "cross_entropy_weighted"])
@pytest.mark.parametrize("labels", [[1, 1, 1], [1, 0, 2]])
def test_every_target_ignored_gives_nan_and_zero_gradients_as_torch(loss, labels):
    """The mean over kept targets: with none kept, torch's loss is nan (0/0) and its
    gradients are zeros, not nan."""
    weight = torch.tensor([0.5, 2.0, 1.0], dtype=torch.float64)
    fn = {"cross_entropy": lambda z, t: F.cross_entropy(z, t, ignore_index=1),
          "nll_loss": lambda z, t: F.nll_loss(F.log_softmax(z, 1), t, ignore_index=1),
          "cross_entropy_weighted": lambda z, t: F.cross_entropy(z, t, weight=weight,
                                                                 ignore_index=1)}[loss]
    z = np.random.default_rng(0).standard_normal((3, 3))
    t = np.array(labels)
    zt = torch.tensor(z, requires_grad=True)
    value = fn(zt, torch.tensor(t))
    (want,) = torch.autograd.grad(value, zt)
    g = sg.grad_fn(fn, shapes={"z": ("B", 3), "t": sg.TensorSpec(("B",), dtype="int64")},
                   wrt="z")
    for backend in ("numpy", "torch"):
        args = (z, t) if backend == "numpy" else (torch.tensor(z), torch.tensor(t))
        got_value, (got,) = g.compile(backend, with_value=True)(*args)
        np.testing.assert_allclose(float(got_value), value.item(), equal_nan=True)
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-12, atol=1e-15)


def test_kept_targets_of_zero_class_weight_give_torchs_nan():
    """Not an ignored batch: torch's 0/0 is nan in the loss and the kept rows' gradients
    (its ignored rows get 0, symgrad's nan too)."""
    weight = torch.tensor([0.0, 2.0, 0.0], dtype=torch.float64)

    def fn(z, t):
        return F.cross_entropy(z, t, weight=weight, ignore_index=1)
    z, t = np.random.default_rng(0).standard_normal((3, 3)), np.array([0, 2, 1])
    zt = torch.tensor(z, requires_grad=True)
    (want,) = torch.autograd.grad(fn(zt, torch.tensor(t)), zt)
    g = sg.grad_fn(fn, shapes={"z": ("B", 3), "t": sg.TensorSpec(("B",), dtype="int64")},
                   wrt="z")
    value, (got,) = g.compile("numpy", with_value=True)(z, t)
    assert np.isnan(value)
    assert np.isnan(want.numpy()).any() and not np.isnan(want.numpy()).all()
    np.testing.assert_allclose(got, want.numpy(), equal_nan=True)


@pytest.mark.parametrize("case", ["ignored", "zero weight"])
def test_constant_targets_with_nothing_to_average_are_torchs(case):
    """Targets captured as constants take another path than traced ids: there every
    ignored batch and every zero total weight divided by 0 (nan everywhere)."""
    if case == "ignored":
        def fn(z):
            return F.cross_entropy(z, torch.full((4,), -100))
    else:
        weight = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0], dtype=torch.float64)

        def fn(z):
            return F.nll_loss(z.log_softmax(-1), torch.tensor([-100, -100, 1, 2]),
                              weight=weight)
    z = np.random.default_rng(1).standard_normal((4, 5))
    zt = torch.tensor(z, requires_grad=True)
    (want,) = torch.autograd.grad(fn(zt), zt)
    value, (got,) = sg.grad_fn(fn, shapes={"z": (4, 5)}).compile("numpy", with_value=True)(z)
    assert np.isnan(value) and np.isnan(fn(zt).item())
    np.testing.assert_allclose(got, want.numpy(), equal_nan=True)
