"""The persistent Pallas kernel of ``h_t = tanh(h_{t-1} K + u_t)`` in Pallas's interpret mode
on the CPU: against a NumPy float64 loop of the recurrence and against the XLA scan
(outputs and gradients)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import recurrences
import tolerances as tol

T, B, N = 7, 3, 8


def _inputs(seed=0):
  rng = np.random.default_rng(seed)
  return (0.4 * rng.normal(size=(N, N)), rng.normal(size=(T, B, N)),
          0.3 * rng.normal(size=(B, N)))


def _tol(scale: float) -> float:
  """Float32 rounding of ``T`` steps of ``N``-term products (each step's error propagates
  through at most ``T`` further products of norm about one here)."""
  return tol.recurrence(T, N, scale)


def _numpy_loop(k, u, h0):
  h, hs = h0, []
  for t in range(u.shape[0]):
    h = np.tanh(h @ k + u[t])
    hs.append(h)
  return h, np.stack(hs)


def test_forward_matches_numpy_loop():
  k, u, h0 = _inputs()
  h_last, hs = recurrences.persistent_rnn_scan(
      *(jnp.asarray(a, jnp.float32) for a in (k, u, h0)), interpret=True)
  want_last, want = _numpy_loop(k, u, h0)
  # rtol=0: the recurrence bound is absolute, at the scale of tanh's outputs (1)
  np.testing.assert_allclose(np.asarray(hs), want, rtol=0, atol=_tol(1.0))
  np.testing.assert_allclose(np.asarray(h_last), want_last, rtol=0,  # absolute, as above
                             atol=_tol(1.0))


def _loss(scan):
  def loss(k, u, h0):
    h_last, hs = scan(k, u, h0)
    return jnp.sum(jnp.sin(3.0 * hs)) + jnp.sum(h_last ** 2)
  return loss


def test_gradients_match_the_xla_scan():
  args = tuple(jnp.asarray(a, jnp.float32) for a in _inputs(1))
  persistent = _loss(lambda k, u, h0: recurrences.persistent_rnn_scan(k, u, h0,
                                                                      interpret=True))
  xla = _loss(lambda k, u, h0: recurrences.rnn_scan(k, u, h0, activation="tanh"))
  got = jax.jit(jax.grad(persistent, argnums=(0, 1, 2)))(*args)
  want = jax.grad(xla, argnums=(0, 1, 2))(*args)
  for g, w in zip(got, want, strict=True):
    scale = float(jnp.max(jnp.abs(w)))
    # rtol=0: the recurrence bound is absolute, at the gradient's largest entry
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=0, atol=_tol(scale))
    assert scale > 0.1  # every argument receives a gradient


def test_gradient_matches_finite_differences_in_float64():
  """In float64 (interpret mode), a central difference of the loss along a random direction
  agrees with the kernel's gradient to the difference's truncation error."""
  k, u, h0 = _inputs(2)
  with jax.enable_x64(True):
    args = tuple(jnp.asarray(a, jnp.float64) for a in (k, u, h0))
    loss = _loss(lambda k, u, h0: recurrences.persistent_rnn_scan(k, u, h0, interpret=True))
    grads = jax.grad(loss, argnums=(0, 1, 2))(*args)
    rng = np.random.default_rng(3)
    dirs = tuple(jnp.asarray(rng.normal(size=a.shape)) for a in args)
    step = 1e-5
    plus = loss(*(a + step * d for a, d in zip(args, dirs)))
    minus = loss(*(a - step * d for a, d in zip(args, dirs)))
    numeric = float((plus - minus) / (2 * step))
    analytic = float(sum(jnp.sum(g * d) for g, d in zip(grads, dirs)))
  # step 1e-5: truncation step^2 |f'''| / 6 = 2.4e-7 (this loss's third directional
  # derivative is 1.4e4), rounding u |f| / step ~ 1e-10; 1e-6 |f'| (f' = -85) holds both
  assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(analytic))


@pytest.mark.parametrize("shapes,match", [
    (((N, N + 1), (T, B, N), (B, N)), "'kernel' must be"),
    (((N, N), (T, N), (B, N)), "'u' must be"),
    (((N, N), (T, B, N), (B + 1, N)), "'h0' must be"),
])
def test_bad_shapes_raise(shapes, match):
  arrays = [jnp.zeros(s, jnp.float32) for s in shapes]
  with pytest.raises(ValueError, match=match):
    recurrences.persistent_rnn_scan(*arrays, interpret=True)
