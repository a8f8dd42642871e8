"""Neumann-series inverse update (NC-GRU eqs 16-18) and its exact-reset safeguard."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import geometry as g
import tolerances as tol


def setup(n=16, seed=0):
  rng = np.random.default_rng(seed)
  m = rng.standard_normal((n, n))
  a = (m - m.T) / np.sqrt(n)
  e = rng.standard_normal((n, n))
  direction = (e - e.T) / np.linalg.norm(e - e.T, 2)
  return a, direction


@pytest.mark.parametrize("order", [1, 2, 3])
def test_error_matches_series_remainder(order, x64):
  # Exact remainder: (I - X)^{-1} - sum_{i<=p} X^i = X^{p+1} (I - X)^{-1}, X = Ainv dA.
  a, direction = setup()
  inv = np.linalg.inv(np.eye(16) + a)
  for scale in (1e-1, 1e-2):
    delta = scale * direction
    approx = np.asarray(g.neumann_inverse_update(jnp.asarray(inv), jnp.asarray(delta), order))
    exact = np.linalg.inv(np.eye(16) + a - delta)
    x = inv @ delta
    remainder = np.linalg.matrix_power(x, order + 1) @ np.linalg.inv(np.eye(16) - x) @ inv
    # float64 inverses and products of 16 x 16, F64's chain
    np.testing.assert_allclose(approx - exact, -remainder, atol=tol.F64["atol"])


@pytest.mark.parametrize("order", [1, 2, 3])
def test_error_shrinks_like_power_order_plus_one(order, x64):
  a, direction = setup(seed=1)
  inv = np.linalg.inv(np.eye(16) + a)
  scales = np.array([0.2, 0.1, 0.05, 0.025])
  errors, norms = [], []
  for s in scales:
    delta = s * direction
    approx = np.asarray(g.neumann_inverse_update(jnp.asarray(inv), jnp.asarray(delta), order))
    exact = np.linalg.inv(np.eye(16) + a - delta)
    errors.append(np.linalg.norm(approx - exact, 2))
    norms.append(np.linalg.norm(inv @ delta, 2))
  slope = np.polyfit(np.log(norms), np.log(errors), 1)[0]
  assert abs(slope - (order + 1)) < 0.15, slope
  # and the bound ||err|| <= ||X||^{p+1} / (1 - ||X||) ||Ainv||
  for e, x in zip(errors, norms):
    # float64 inverse and 2-norms against the exact bound
    assert e <= x ** (order + 1) / (1 - x) * np.linalg.norm(inv, 2) * (
        1 + tol.F64_CONDITIONED["rtol"])


def test_float32_order2_tracks_exact_inverse_with_resets():
  a, direction = setup(n=12, seed=2)
  a, direction = a.astype(np.float32), direction.astype(np.float32)
  rng = np.random.default_rng(3)
  inv = g.cayley_inverse(jnp.asarray(a))
  a_cur = jnp.asarray(a)
  step_fn = jax.jit(lambda a_, i_, d_, r_: g.neumann_inverse_step(a_, i_, d_, order=2,
                                                                 force_reset=r_))
  exact = jax.jit(g.cayley_inverse)
  worst = 0.0
  for k in range(60):
    e = rng.standard_normal((12, 12)).astype(np.float32)
    delta = jnp.asarray(2e-3 * (e - e.T))  # ||Ainv dA|| ~ 2e-2
    a_cur = a_cur - delta
    step = step_fn(a_cur, inv, delta, jnp.asarray(k % 20 == 19))
    inv = step.inverse
    worst = max(worst, float(jnp.abs(inv - exact(a_cur)).max()))
  # truncation, not rounding: order 2 leaves ||X||^3 <= (2e-2)^3 = 8e-6 per update (||Ainv|| <= 1
  # for skew A), added in random directions over the 19 updates between resets: sqrt(19) 8e-6 =
  # 3.5e-5; their float32 rounding (19 x 3 products of 12 terms) is F32_LONG's chain
  assert worst < 1e-4
  w = g.scaling_diagonal(12, 3)[None, :] * (inv @ (jnp.eye(12) - a_cur))
  # W = Ainv (I - A) D: the remainder's Ainv (I - A) is orthogonal (Cayley), so W^T W - I is at
  # most twice the bound above, 7e-5
  assert float(g.orthogonality_error(w)) < 1e-4


def test_validity_check_triggers_reset():
  a, direction = setup(n=8, seed=4)
  a32 = jnp.asarray(a.astype(np.float32))
  inv = g.cayley_inverse(a32)
  big = jnp.asarray((3.0 * direction).astype(np.float32))  # ||Ainv dA|| > 1: series diverges
  step = g.neumann_inverse_step(a32 - big, inv, big, order=2, threshold=0.5)
  assert bool(step.reset) and float(step.norm) >= 0.5
  np.testing.assert_allclose(step.inverse, g.cayley_inverse(a32 - big), atol=tol.F32["atol"])
  small = jnp.asarray((1e-3 * direction).astype(np.float32))
  step = g.neumann_inverse_step(a32 - small, inv, small, order=2)
  assert not bool(step.reset)
  forced = g.neumann_inverse_step(a32 - small, inv, small, order=2, force_reset=True)
  assert bool(forced.reset)
  # Frobenius norm bounds the paper's spectral-norm condition from above.
  x = np.asarray(inv @ small, np.float64)
  assert float(step.norm) >= np.linalg.norm(x, 2) * (1 - tol.F32["rtol"])  # float32 ||X||_F


def test_neumann_step_is_jittable():
  a, direction = setup(n=6, seed=5)
  a32, d32 = jnp.asarray(a.astype(np.float32)), jnp.asarray((1e-2 * direction).astype(np.float32))
  inv = g.cayley_inverse(a32)
  f = jax.jit(lambda a_, i_, d_, r_: g.neumann_inverse_step(a_, i_, d_, force_reset=r_))
  out = f(a32 - d32, inv, d32, jnp.asarray(False))
  # jitted or op by op: products and an LU solve of 6 x 6, F32's chain
  np.testing.assert_allclose(out.inverse, g.neumann_inverse_update(inv, d32), atol=tol.F32["atol"])
  out = f(a32 - d32, inv, d32, jnp.asarray(True))
  np.testing.assert_allclose(out.inverse, g.cayley_inverse(a32 - d32), atol=tol.F32["atol"])
