"""lvf_jax.diagnostics against the equations: the Fisher memory curve (nnRNN SM B eq. 7)
by a NumPy loop, the delay line's closed form (Ganguli et al. 2008), and the argument checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import diagnostics


def np_fmc(theta, steps, terms=400):
  """eq. 7 written out: C = sum_k Theta^k (Theta^k)^T, J(k) = u^T (Theta^k)^T C^-1 Theta^k u."""
  n = theta.shape[0]
  c, p = np.zeros((n, n)), np.eye(n)
  for _ in range(terms):
    c += p @ p.T
    p = theta @ p
  u = np.eye(n)[0]
  out, v = [], u
  for _ in range(steps):
    out.append(v @ np.linalg.solve(c, v))
    v = theta @ v
  return np.array(out)


def test_fmc_matches_numpy_loop_of_eq7(x64):
  rng = np.random.RandomState(0)
  q, _ = np.linalg.qr(rng.normal(size=(12, 12)))
  theta = 0.6 * q + 0.1 * np.tril(rng.normal(size=(12, 12)), -1)
  got = diagnostics.fisher_memory_curve(jnp.asarray(theta), 30, doublings=10)
  np.testing.assert_allclose(got, np_fmc(theta, 30, terms=1024), rtol=1e-9, atol=1e-12)
  total = diagnostics.fisher_memory_total(jnp.asarray(theta), 30, doublings=10)
  np.testing.assert_allclose(total, np_fmc(theta, 30, terms=1024).sum(), rtol=1e-9)


@pytest.mark.parametrize("alpha", [0.9, 1.0, 1.1])
def test_delay_line_has_the_closed_form_of_ganguli_et_al(alpha, x64):
  """sqrt(alpha) on the sub-diagonal: J(k) = alpha^k (alpha - 1) / (alpha^(k+1) - 1) for
  k < n (1 / (k + 1) at alpha = 1), then 0 (the chain is nilpotent)."""
  n = 20
  theta = diagnostics.schur_chain(n, np.sqrt(alpha), dtype=jnp.float64)
  got = np.asarray(diagnostics.fisher_memory_curve(theta, n + 5))
  k = np.arange(n)
  want = 1.0 / (k + 1) if alpha == 1.0 else alpha ** k * (alpha - 1) / (alpha ** (k + 1) - 1)
  np.testing.assert_allclose(got[:n], want, rtol=1e-10)
  np.testing.assert_allclose(got[n:], 0.0, atol=1e-12)


def test_schur_chain_structure_and_dtype():
  t = diagnostics.schur_chain(5, 1.5, 0.25, 0.5)
  assert t.dtype == jnp.float32 and t.shape == (5, 5)
  want = np.tril(np.full((5, 5), 0.25), -2) + np.diag(np.full(4, 1.5), -1) + 0.5 * np.eye(5)
  np.testing.assert_array_equal(np.asarray(t), want.astype(np.float32))


def test_jit_vmap_and_dtype():
  thetas = jnp.stack([diagnostics.schur_chain(6, a, 0.1, 0.2) for a in (0.5, 0.8)])
  f = jax.jit(jax.vmap(lambda t: diagnostics.fisher_memory_curve(t, 8)))
  out = f(thetas)
  assert out.shape == (2, 8) and out.dtype == jnp.float32
  for i in range(2):
    np.testing.assert_allclose(out[i], diagnostics.fisher_memory_curve(thetas[i], 8),
                               rtol=1e-5)
  assert np.all(np.asarray(out) >= -1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda: diagnostics.fisher_memory_curve(jnp.zeros((3, 4)), 5), "'theta'"),
    (lambda: diagnostics.fisher_memory_curve(jnp.eye(3), 0), "'steps'"),
    (lambda: diagnostics.fisher_memory_curve(jnp.eye(3), 2, jnp.ones(4)), "'source'"),
    (lambda: diagnostics.noise_covariance(jnp.eye(3), "some"), "'source'"),
    (lambda: diagnostics.noise_covariance(jnp.eye(3), doublings=0), "'doublings'"),
    (lambda: diagnostics.schur_chain(0, 1.0), "'n'"),
])
def test_errors_name_the_argument(call, match):
  with pytest.raises(ValueError, match=match):
    call()
