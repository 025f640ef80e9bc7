"""Denoising tasks: shapes, orthonormal bases, unit centres, the sphere's radius, seeding, warping, validation."""

from __future__ import annotations

import numpy as np
import pytest

from geoprobe.denoise.tasks import make_task, make_warp, random_basis, sample
from geoprobe.errors import GeoprobeError


@pytest.mark.parametrize("name", ["linear", "mixture", "sphere"])
def test_shapes_and_seeding(name):
    t = make_task(name, n=10, d=3, k=4, context_length=30)
    a = sample(t, 5, np.random.default_rng(1))
    b = sample(t, 5, np.random.default_rng(1))
    c = sample(t, 5, np.random.default_rng(2))
    assert a.context.shape == (5, 30, 10) and a.clean.shape == (5, 10) and a.noisy.shape == (5, 10)
    assert np.array_equal(a.context, b.context) and np.array_equal(a.noisy, b.noisy)
    assert not np.allclose(a.context, c.context)
    assert sample(t, 5, np.random.default_rng(1), L=7).context.shape == (5, 7, 10)


def test_linear_tokens_live_in_an_orthonormal_subspace():
    t = make_task("linear", n=12, d=4, context_length=50)
    p = sample(t, 6, np.random.default_rng(0))
    U = p.basis
    assert np.allclose(np.einsum("bnd,bne->bde", U, U), np.eye(4), atol=1e-12)
    P = U @ U.transpose(0, 2, 1)
    assert np.allclose(np.einsum("bij,blj->bli", P, p.context), p.context, atol=1e-10)
    # coordinate variance σ0² = 2 (within 10 % on 300 draws per prompt)
    big = sample(t, 4, np.random.default_rng(3), L=3000)
    coords = np.einsum("bnd,bln->bld", big.basis, big.context)
    assert abs(coords.var() - 2.0) < 0.1
    # the noise has variance σZ² = 1 per coordinate
    many = sample(t, 4000, np.random.default_rng(4), L=10)
    assert abs(np.var(many.noisy - many.clean) - 1.0) < 0.03


def test_mixture_centres_unit_and_sphere_radius():
    m = sample(make_task("mixture", n=8, k=5, context_length=20), 7, np.random.default_rng(0))
    assert np.allclose(np.linalg.norm(m.centres, axis=1), 1.0)
    s = sample(make_task("sphere", n=8, d=3, radius=2.5, context_length=20), 7, np.random.default_rng(0))
    assert np.allclose(np.linalg.norm(s.context, axis=-1), 2.5)
    assert np.allclose(np.linalg.norm(s.clean, axis=-1), 2.5)


def test_random_basis_is_uniform_enough():
    U = random_basis(np.random.default_rng(0), 4000, 6, 2)
    P = U @ U.transpose(0, 2, 1)
    assert np.allclose(P.mean(0), 2 / 6 * np.eye(6), atol=0.02)  # E[P] = (d/n) I for a uniform subspace


def test_warp_applies_to_every_token_and_noise_is_added_before():
    A = make_warp(6, seed=0, condition=3.0)
    assert np.isclose(np.linalg.cond(A), 3.0)
    t = make_task("linear", n=6, d=2, context_length=9)
    plain = sample(t, 3, np.random.default_rng(5))
    warped = sample(t, 3, np.random.default_rng(5), warp=A)
    assert np.allclose(warped.context, plain.context @ A.T)
    assert np.allclose(warped.noisy - warped.clean, (plain.noisy - plain.clean) @ A.T)


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(name="linear", d=8, context_length=8), "pass --context-length 9"),
        (dict(name="sphere", d=5, n=4), "--dim"),
        (dict(name="linear", noise_var=0.0), "--noise-var"),
        (dict(name="mixture", signal_var=-1.0), "--signal-var"),
        (dict(name="mixture", k=0), "--clusters"),
        (dict(name="sphere", radius=0.0), "--radius"),
        (dict(name="circle"), "--task"),
    ],
)
def test_bad_values_are_one_line_errors(kw, needle):
    with pytest.raises(GeoprobeError) as e:
        make_task(**kw)
    assert needle in str(e.value) and "\n" not in str(e.value)
