"""Initialisers: Flax signature, structure, distributions."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from lvf_jax import geometry as g
import tolerances as tol

KEY = jax.random.PRNGKey(0)


def superdiagonal_values(a):
  n = a.shape[0]
  return np.array([a[2 * i, 2 * i + 1] for i in range(n // 2)])


@pytest.mark.parametrize("n", [6, 7])
def test_henaff_structure_and_range(n):
  a = np.asarray(g.henaff()(KEY, (n, n)))
  np.testing.assert_allclose(a, -a.T)
  s = superdiagonal_values(a)
  mask = np.zeros((n, n), bool)
  for i in range(n // 2):
    mask[2 * i, 2 * i + 1] = mask[2 * i + 1, 2 * i] = True
  assert np.all(a[~mask] == 0)
  assert np.all(np.abs(s) <= np.pi)
  big = superdiagonal_values(np.asarray(g.henaff()(KEY, (2000, 2000))))
  assert abs(big.mean()) < 0.15 and abs(big.std() - np.pi / np.sqrt(3)) < 0.1  # U(-pi, pi)


def test_cayley_init_values():
  s = superdiagonal_values(np.asarray(g.cayley_init()(KEY, (1000, 1000))))
  u = 2 * np.arctan(-s)  # s = -tan(u/2), u ~ U(0, pi/2)
  assert np.all(s <= 0) and u.min() >= 0 and u.max() <= np.pi / 2 + 1e-6
  assert abs(u.mean() - np.pi / 4) < 0.06


def test_haar_orthogonal_det_and_uniformity():
  qs = jax.vmap(lambda k: g.haar_orthogonal()(k, (4, 4)))(jax.random.split(KEY, 400))
  # float32 QR of 4 x 4, det of its float32 rounding
  assert float(jnp.max(jax.vmap(g.orthogonality_error)(qs))) < tol.F32["atol"]
  np.testing.assert_allclose(np.linalg.det(np.asarray(qs, np.float64)), np.ones(400),
                             atol=tol.F32["atol"])
  # Haar: every entry has mean 0 (an un-sign-fixed QR gives Q_11 < 0 always).
  assert np.abs(np.asarray(qs).mean(axis=0)).max() < 0.12
  # E[Q_ij^2] = 1/n
  assert abs(float(jnp.mean(qs**2)) - 0.25) < 0.02


@pytest.mark.parametrize("n", [5, 8])
def test_haar_skew_is_log_of_haar_orthogonal(n, x64):
  k = jax.random.PRNGKey(n)
  a = g.haar_skew()(k, (n, n), jnp.float64)
  np.testing.assert_allclose(a, -a.T, atol=tol.F64["atol"])  # (L - L^T) / 2: exactly skew
  # the eigh-based log against SciPy's Pade exponential
  np.testing.assert_allclose(scipy.linalg.expm(np.asarray(a)),
                             np.asarray(g.haar_orthogonal()(k, (n, n), jnp.float64)),
                             atol=tol.F64_CONDITIONED["atol"])
  # principal branch: eigen-angles in [-pi, pi]
  assert np.max(np.abs(np.linalg.eigvals(np.asarray(a)).imag)) <= (
      np.pi + tol.F64_CONDITIONED["atol"])


def test_haar_skew_float32_round_trip():
  a = g.haar_skew()(KEY, (32, 32))
  assert a.dtype == jnp.float32
  q = g.haar_orthogonal()(KEY, (32, 32))
  # float32 QR, eigh and expm of 32 x 32 (F32_LONG's chain); the log's t / sin t amplifies the
  # error of Q's largest eigen-angle t by 1 / sin t (21 for this draw: t = 3.09)
  t_max = np.abs(np.angle(np.linalg.eigvals(np.asarray(q, np.float64)))).max()
  np.testing.assert_allclose(g.expm(a), q, atol=tol.F32_LONG["atol"] / np.sin(t_max))


def test_orthogonal_log_of_rotation():
  t = 0.7
  r = jnp.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]], jnp.float32)
  np.testing.assert_allclose(g.orthogonal_log(r), [[0, -t, 0], [t, 0, 0], [0, 0, 0]],
                             atol=tol.F32["atol"])  # float32 eigh of 3 x 3, arccos at t = 0.7


def test_orthogonal_log_stays_bounded_at_an_angle_next_to_pi():
  """An eigen-angle within float32 rounding of pi: ``1 - cos^2`` rounds to zero while the
  skew part keeps its rounding error, and ``t / sin t`` read off the cosine sent the log to
  1e27 at n = 512 (a Haar draw); read off the skew part, every plane's log has norm ``t``."""
  n = 16
  rng = np.random.default_rng(0)
  angles = np.concatenate([[np.pi - 1e-7], rng.uniform(-3, 3, n // 2 - 1)])
  blocks = scipy.linalg.block_diag(*[[[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]
                                     for a in angles])
  basis = np.linalg.qr(rng.standard_normal((n, n)))[0]
  q = jnp.asarray(basis @ blocks @ basis.T, jnp.float32)
  a = np.asarray(g.orthogonal_log(q), np.float64)
  # the plane at pi has no unique logarithm and its rounding picks a direction: the log is
  # bounded (t <= pi on each of the two planes rounding can mix), skew, and expm of it is a
  # rotation
  assert np.all(np.isfinite(a)) and np.linalg.norm(a, 2) <= 2 * np.pi
  np.testing.assert_allclose(a, -a.T, atol=tol.F32["atol"])  # (L - L^T) / 2: exactly skew


@pytest.mark.parametrize("n", [2, 3, 64])
def test_doubly_stochastic_alg2(n):
  v = np.asarray(g.doubly_stochastic()(KEY, (n, n)), np.float64)
  assert np.all(v >= 0) and np.all(np.diag(v) == 0)
  # Sinkhorn stops at float32's floor: the normalising sums of n <= 64 terms
  np.testing.assert_allclose(v.sum(0), np.ones(n), atol=tol.F32["atol"])
  np.testing.assert_allclose(v.sum(1), np.ones(n), atol=tol.F32["atol"])


def test_sinkhorn_reaches_1e8_in_float64(x64):
  m = jax.random.uniform(KEY, (50, 50), jnp.float64)
  v = np.asarray(g.sinkhorn(m, tol=1e-8))
  # rows: the stopping tolerance 1e-8; columns, just normalised: float64 sums of 50 terms
  assert np.abs(v.sum(1) - 1).max() <= 1e-8 and np.abs(v.sum(0) - 1).max() <= tol.F64["atol"]
  # the stopping test looks at row sums after the column step: a single sweep is not enough
  one = np.asarray(g.sinkhorn(m, tol=1e-8, max_iter=1))
  assert np.abs(one.sum(1) - 1).max() > 1e-8


@pytest.mark.parametrize("factory", [g.henaff, g.cayley_init, g.haar_orthogonal, g.haar_skew,
                                     g.doubly_stochastic])
def test_flax_signature_and_dtype(factory):
  class M(nn.Module):
    @nn.compact
    def __call__(self):
      return self.param("w", factory(), (6, 6), jnp.bfloat16)

  w = M().init_with_output(KEY)[0]
  assert w.shape == (6, 6) and w.dtype == jnp.bfloat16
  out = jax.jit(lambda k: factory()(k, (6, 6)))(KEY)
  assert out.dtype == jnp.float32
  # fused or op by op: QR, det, eigh and arccos of 6 x 6 in float32, F32's chain
  np.testing.assert_allclose(out, factory()(KEY, (6, 6)), atol=tol.F32["atol"])


def test_nnrnn_and_misc_inits():
  theta = np.asarray(g.uniform_angle()(KEY, (1000,)))
  assert theta.min() >= 0 and theta.max() <= 2 * np.pi and abs(theta.mean() - np.pi) < 0.2
  b = np.asarray(g.modrelu_bias()(KEY, (1000,)))
  assert np.abs(b).max() <= 0.01
  w = np.asarray(g.scaled_normal(2.0)(KEY, (400, 400)))
  assert abs(w.std() - 2.0 / 20.0) < 0.005


def test_modrelu_real_and_complex():
  z = np.linspace(-2, 2, 41).astype(np.float32)
  b = np.float32(-0.5)
  want = np.sign(z) * np.maximum(np.abs(z) + b, 0)
  np.testing.assert_allclose(g.modrelu(jnp.asarray(z), jnp.asarray(b)), want,
                             atol=tol.F32_SHORT["atol"])  # one rounding: |z| + b
  zc = (z + 1j * z[::-1]).astype(np.complex64)
  mag = np.abs(zc)
  want_c = np.where(mag > 0, zc / np.where(mag > 0, mag, 1) * np.maximum(mag + b, 0), 0)
  # |z| (4 roundings), + b, z / |z| and the rescale: 7 roundings, past F32_SHORT's 4
  np.testing.assert_allclose(g.modrelu(jnp.asarray(zc), jnp.asarray(b)), want_c,
                             atol=tol.F32["atol"])
  grad = jax.grad(lambda x: jnp.sum(g.modrelu(x, jnp.float32(0.1))))(jnp.asarray(z))
  assert np.all(np.isfinite(np.asarray(grad)))


def test_centered_over_units_removes_each_rows_mean():
  base = nn.initializers.lecun_normal()
  w = g.centered_over_units(base)(KEY, (3, 16))
  ref = np.asarray(base(KEY, (3, 16)), np.float64)
  # float32 means and sums of 16 terms
  np.testing.assert_allclose(w, ref - ref.mean(axis=1, keepdims=True), atol=tol.F32["atol"])
  np.testing.assert_allclose(np.asarray(w).sum(axis=1), 0.0, atol=tol.F32["atol"])
  assert g.centered_over_units(base)(KEY, (2, 4), jnp.bfloat16).dtype == jnp.bfloat16
  with pytest.raises(ValueError, match="centered_over_units.*at least one axis"):
    g.centered_over_units(base)(KEY, ())


def test_column_blocks_draws_each_block_with_its_own_initialiser():
  w = np.asarray(g.column_blocks(nn.initializers.zeros_init(), nn.initializers.ones_init(),
                                 nn.initializers.lecun_normal())(KEY, (5, 12)))
  np.testing.assert_array_equal(w[:, :4], 0.0)
  np.testing.assert_array_equal(w[:, 4:8], 1.0)
  # lecun_normal sees its block's own (5, 4): the fan-in 5 of every block, not of (5, 12)
  third = np.asarray(nn.initializers.lecun_normal()(jax.random.split(KEY, 3)[2], (5, 4)))
  np.testing.assert_array_equal(w[:, 8:], third)
  assert g.column_blocks(nn.initializers.ones_init())(KEY, (2, 3), jnp.bfloat16).dtype == \
      jnp.bfloat16
  with pytest.raises(ValueError, match="column_blocks: argument 'shape' must be a last axis"):
    g.column_blocks(nn.initializers.ones_init(), nn.initializers.ones_init())(KEY, (2, 3))
  with pytest.raises(ValueError, match="at least one initialiser"):
    g.column_blocks()
