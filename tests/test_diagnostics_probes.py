"""Linear read-out probes and the linear memory curve (Jaeger 2002)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import diagnostics
import tolerances as tol


def _numpy_r2(h, y, n_fit, lam):
  """Ridge with intercept via NumPy least squares on the augmented system."""
  x_mean, y_mean = h[:n_fit].mean(0), y[:n_fit].mean(0)
  x = h[:n_fit] - x_mean
  a = np.vstack([x, np.sqrt(lam) * np.eye(h.shape[1])])
  b = np.concatenate([y[:n_fit] - y_mean, np.zeros((h.shape[1],) + y.shape[1:])])
  w = np.linalg.lstsq(a, b, rcond=None)[0]
  pred = (h[n_fit:] - x_mean) @ w + y_mean
  return 1 - ((pred - y[n_fit:]) ** 2).mean(0) / y[n_fit:].var(0)


def test_probe_matches_numpy_ridge(x64):
  rng = np.random.default_rng(0)
  h = rng.normal(size=(300, 7))
  y = np.c_[h @ rng.normal(size=7) + 0.5 * rng.normal(size=300), rng.normal(size=300)]
  ridge = 0.3
  got = np.asarray(diagnostics.linear_probe_r2(jnp.asarray(h), jnp.asarray(y), ridge=ridge,
                                               train_fraction=0.6))
  n_fit = 180
  x = h[:n_fit] - h[:n_fit].mean(0)
  lam = ridge * np.trace(x.T @ x) / 7
  # float64 normal equations (180-term Gram sums, cond = 1.5) against lstsq of the augmented
  # system: an independent algorithm
  np.testing.assert_allclose(got, _numpy_r2(h, y, n_fit, lam), rtol=tol.F64_CONDITIONED["rtol"],
                             atol=tol.F64["atol"])
  assert got[0] > 0.5 and got[1] < 0.05  # a linear target is read, noise is not


def test_memory_curve_of_a_delay_line_is_one_up_to_its_length_and_zero_after():
  # A shift register of n units holds exactly the last n inputs (Jaeger 2002, Sec. 3: the
  # capacity bound n is attained).
  rng = np.random.default_rng(1)
  n, t = 6, 20
  signal = rng.uniform(size=(2000, t)).astype(np.float32)
  states = signal[:, ::-1][:, :n]  # h_T = (u_T, u_{T-1}, ..., u_{T-n+1})
  m = np.asarray(diagnostics.linear_memory_curve(states, signal, max_lag=12))
  assert m.shape == (12,) and m.dtype == np.float32
  # float32 fit from 1000-term Gram sums (cond 1.2): R^2 falls short of 1 by the square of
  # the fit's relative error, and by (ridge = 1e-6)^2 for the shrinkage
  np.testing.assert_allclose(m[:n], 1.0, atol=tol.F32_LONG["atol"])
  assert np.all(m[n:] < 0.02)
  assert abs(m.sum() - n) < 0.1


def test_memory_curve_of_a_linear_orthogonal_network_is_bounded_by_n():
  rng = np.random.default_rng(2)
  n, t, batch = 8, 60, 4000
  q, _ = np.linalg.qr(rng.normal(size=(n, n)))
  u = rng.normal(size=n)
  signal = rng.normal(size=(batch, t))
  h = np.zeros((batch, n))
  for s in range(t):  # h_t = Q h_{t-1} + u x_t, a Python loop over time
    h = h @ q.T + signal[:, s:s + 1] * u
  m = np.asarray(diagnostics.linear_memory_curve(jnp.asarray(h, jnp.float32),
                                                 jnp.asarray(signal, jnp.float32)))
  assert m.shape == (t,)
  assert m.sum() <= n + 0.5  # the linear capacity bound
  assert m.sum() > 2.0  # and the orthogonal map does keep something


def test_probe_is_jit_safe_and_keeps_dtype():
  h = jax.random.normal(jax.random.key(0), (64, 5), jnp.float32)
  y = h[:, 0] * 2.0 + 1.0
  r2 = jax.jit(diagnostics.linear_probe_r2)(h, y)
  assert r2.shape == () and r2.dtype == jnp.float32
  assert float(r2) > 0.999


@pytest.mark.parametrize("call,match", [
    (lambda: diagnostics.linear_probe_r2(jnp.zeros((10,)), jnp.zeros((10,))), "'states'"),
    (lambda: diagnostics.linear_probe_r2(jnp.zeros((10, 3)), jnp.zeros((9,))), "batch = 10"),
    (lambda: diagnostics.linear_probe_r2(jnp.zeros((10, 3)), jnp.zeros((10,)),
                                         train_fraction=1.0), "'train_fraction'"),
    (lambda: diagnostics.linear_probe_r2(jnp.zeros((3, 3)), jnp.zeros((3,))), "at least 2"),
    (lambda: diagnostics.linear_memory_curve(jnp.zeros((10, 3)), jnp.zeros((10,))),
     "'signal'"),
    (lambda: diagnostics.linear_memory_curve(jnp.zeros((10, 3)), jnp.zeros((10, 4)),
                                             max_lag=5), "'max_lag'"),
])
def test_errors_name_the_argument(call, match):
  with pytest.raises(ValueError, match=match):
    call()
