"""torch.distributions traced with argument validation on (torch's default): log_prob and
entropy of traced parameters, checked against torch.autograd at orders 1 and 2 by
sg.check, whose torch run validates every sample as torch does."""
import numpy as np
import pytest
import torch

import symgrad as sg

D = torch.distributions
INT = sg.TensorSpec((4,), "int64")


@pytest.fixture(autouse=True)
def validation_on():
    """Validation is on, as by default; the test fails if a trace turned it off."""
    before = D.Distribution._validate_args
    D.Distribution.set_default_validate_args(True)
    yield
    assert D.Distribution._validate_args is True
    D.Distribution.set_default_validate_args(before)


def positive(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def lower_cholesky(rng, shape):
    L = np.tril(rng.standard_normal(shape), -1)
    return L + np.diag(rng.uniform(0.5, 1.5, shape[-1]))


def sampler(**kinds):
    """sample= for sg.check: inputs named in ``kinds`` drawn by their function, the
    others standard normal."""
    def sample(name, shape, rng):
        draw = kinds.get(name)
        value = draw(rng, shape) if draw else rng.standard_normal(shape)
        return value if shape else float(value)
    return sample


def unit(rng, shape):
    return rng.uniform(0.1, 0.9, shape)


def counts(rng, shape):
    return rng.integers(0, 5, shape).astype(float)


def bits(rng, shape):
    return rng.integers(0, 2, shape).astype(float)


def labels(rng, shape):
    return rng.integers(0, 3, shape)


CASES = {
    "normal_log_prob": (lambda mu, s, x: D.Normal(mu, s).log_prob(x).sum(),
                        {"mu": (3,), "s": (3,), "x": (3,)}, {"s": positive}, None),
    "normal_entropy": (lambda mu, s: D.Normal(mu, s).entropy().sum(),
                       {"mu": (3,), "s": (3,)}, {"s": positive}, None),
    "normal_symbolic_dims": (lambda mu, s, x: D.Normal(mu, s).log_prob(x).mean(),
                             {"mu": ("n",), "s": ("n",), "x": ("b", "n")}, {"s": positive},
                             None),
    "bernoulli_logits": (lambda l, x: D.Bernoulli(logits=l).log_prob(x).sum(),
                         {"l": (3,), "x": (3,)}, {"x": bits}, ("l",)),
    "bernoulli_probs": (lambda p, x: D.Bernoulli(probs=p).log_prob(x).sum(),
                        {"p": (3,), "x": (3,)}, {"p": unit, "x": bits}, ("p",)),
    "bernoulli_entropy": (lambda l: D.Bernoulli(logits=l).entropy().sum(), {"l": (3,)},
                          {}, None),
    "categorical_logits": (lambda l, k: D.Categorical(logits=l).log_prob(k).sum(),
                           {"l": (4, 3), "k": INT}, {"k": labels}, None),
    "categorical_probs": (lambda p, k: D.Categorical(probs=p / p.sum(-1, keepdim=True))
                          .log_prob(k).sum(), {"p": (4, 3), "k": INT},
                          {"p": positive, "k": labels}, None),
    "categorical_entropy": (lambda l: D.Categorical(logits=l).entropy().sum(),
                            {"l": (4, 3)}, {}, None),
    "mvn_log_prob": (lambda mu, L, x: D.MultivariateNormal(mu, scale_tril=L).log_prob(x),
                     {"mu": (3,), "L": (3, 3), "x": (3,)}, {"L": lower_cholesky}, None),
    "mvn_entropy": (lambda mu, L: D.MultivariateNormal(mu, scale_tril=L).entropy(),
                    {"mu": (3,), "L": (3, 3)}, {"L": lower_cholesky}, None),
    "gamma_log_prob": (lambda a, b, x: D.Gamma(a, b).log_prob(x).sum(),
                       {"a": (3,), "b": (3,), "x": (3,)},
                       {"a": positive, "b": positive, "x": positive}, None),
    "gamma_entropy": (lambda a, b: D.Gamma(a, b).entropy().sum(), {"a": (3,), "b": (3,)},
                      {"a": positive, "b": positive}, None),
    "beta_log_prob": (lambda a, b, x: D.Beta(a, b).log_prob(x).sum(),
                      {"a": (3,), "b": (3,), "x": (3,)},
                      {"a": positive, "b": positive, "x": unit}, None),
    "beta_entropy": (lambda a, b: D.Beta(a, b).entropy().sum(), {"a": (3,), "b": (3,)},
                     {"a": positive, "b": positive}, None),
    "laplace_log_prob": (lambda m, b, x: D.Laplace(m, b).log_prob(x).sum(),
                         {"m": (3,), "b": (3,), "x": (3,)}, {"b": positive}, None),
    "laplace_entropy": (lambda m, b: D.Laplace(m, b).entropy().sum(), {"m": (3,), "b": (3,)},
                        {"b": positive}, None),
    "poisson_log_prob": (lambda r, x: D.Poisson(r).log_prob(x).sum(),
                         {"r": (3,), "x": (3,)}, {"r": positive, "x": counts}, ("r",)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_traces_with_validation_and_matches_torch(case):
    f, shapes, kinds, wrt = CASES[case]
    report = sg.check(f, shapes=shapes, wrt=wrt, order=2, sample=sampler(**kinds))
    assert report.ok and report.order == 2


def test_formula_reads_as_the_density():
    g = sg.grad_fn(lambda l, x: D.Bernoulli(logits=l).log_prob(x).sum(),
                   shapes={"l": (3,), "x": (3,)}, wrt="l")
    assert str(g) == "df/dl = x − σ(l)    [shape (3,)]"


def test_constant_invalid_parameter_fails_as_in_torch():
    with pytest.raises(ValueError, match="scale .* to satisfy the constraint GreaterThan"):
        sg.grad_fn(lambda mu, x: D.Normal(mu, torch.tensor(-1.0)).log_prob(x).sum(),
                   shapes={"mu": (3,), "x": (3,)})


def test_constant_value_outside_the_support_fails_as_in_torch():
    with pytest.raises(ValueError, match="within the support"):
        sg.grad_fn(lambda mu: D.Gamma(torch.tensor(2.0), mu.exp())
                   .log_prob(torch.tensor(-1.0) + 0 * mu).sum(), shapes={"mu": (3,)})


def test_value_shape_is_validated_with_symbolic_dims():
    with pytest.raises(ValueError, match="not broadcastable"):
        sg.grad_fn(lambda mu, x: D.Normal(mu, 1.0).log_prob(x).sum(),
                   shapes={"mu": ("n",), "x": ("m",)})


def test_torch_is_restored_after_tracing():
    original = D.Distribution.__dict__["_validate_sample"]
    sg.grad_fn(lambda mu, x: D.Normal(mu, 1.0).log_prob(x).sum(),
               shapes={"mu": (3,), "x": (3,)})
    assert D.Distribution.__dict__["_validate_sample"] is original
    with pytest.raises(ValueError):
        D.Normal(torch.zeros(3), -torch.ones(3))


def test_float_long_is_refused_clearly():
    with pytest.raises(sg.UnsupportedOpError, match="dtype='int64'"):
        sg.grad_fn(lambda l, k: D.Categorical(logits=l).log_prob(k).sum(),
                   shapes={"l": (4, 3), "k": (4,)})
