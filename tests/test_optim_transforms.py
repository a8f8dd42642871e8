"""lvf_jax.optim transforms under jit, optax.inject_hyperparams, jax.eval_shape and optax.chain,
and their errors for bad input (sharding: test_optim_sharding.py)."""


import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lvf_jax import geometry as g
from lvf_jax import optim
from optim_helpers import orthogonal_start
import tolerances as tol

N, RHO = 12, 3


def w0(n=N, rho=RHO, seed=0, dtype=jnp.float32):
  return orthogonal_start(n, rho, seed, dtype)


# ------------------------------------------------------------------ jit / inject / eval_shape

def test_inject_hyperparams_and_traced_values():
  """rho, order, reset_every, threshold and learning rates can be injected (traced) and
  changed in the state; the result equals the transform built with those values."""
  make = optax.inject_hyperparams(optim.neumann_cayley)
  tx = make(optax.sgd(1e-2), rho=RHO, order=1, reset_every=0, threshold=0.9)
  p = w0()
  s = tx.init(p)
  s.hyperparams["order"] = jnp.asarray(3)
  s.hyperparams["reset_every"] = jnp.asarray(2)
  ref = optim.neumann_cayley(optax.sgd(1e-2), RHO, order=3, reset_every=2, threshold=0.9)
  rs = ref.init(p)
  update, ref_update = jax.jit(tx.update), jax.jit(ref.update)
  q = p
  for k in range(4):
    grad = jax.random.normal(jax.random.key(k), p.shape)
    u, s = update(grad, s, p)
    v, rs = ref_update(grad, rs, q)
    p, q = p + u, q + v
    # traced or static hyperparameters: 4 updates of order 3's 5 products of N terms (240)
    np.testing.assert_allclose(np.asarray(p), np.asarray(q), atol=tol.F32["atol"])
  assert int(s.inner_state.num_resets) == 2

  mult = optax.inject_hyperparams(optim.multiplicative_cayley)(learning_rate=0.1)
  s = mult.init(p)
  s.hyperparams["learning_rate"] = jnp.asarray(0.0)
  u, s = jax.jit(mult.update)(jnp.ones_like(p), s, p)
  np.testing.assert_allclose(np.asarray(u), 0.0, atol=tol.F32_SHORT["atol"])  # rate 0: exactly 0

  sco = optax.inject_hyperparams(optim.scornn)(optax.inject_hyperparams(optax.sgd)(0.1), RHO)
  s = sco.init(p)
  u, s = jax.jit(sco.update)(jnp.ones_like(p), s, p)
  assert float(g.orthogonality_error(p + u)) < tol.F32["atol"]  # one solve of N x N


@pytest.mark.parametrize("make", [
    lambda: optim.scornn(optax.rmsprop(1e-3), RHO),
    lambda: optim.neumann_cayley(optax.sgd(1e-3), RHO),
    lambda: optim.multiplicative_cayley(1e-3, reorthonormalize_every=5),
    lambda: optim.reorthonormalize(3),
    lambda: optim.make_optimizer({"orthogonal_method": "neumann_cayley", "rho": RHO}),
])
def test_eval_shape_init_and_jit_update(make):
  tx = make()
  params = {"a": {"orthogonal": w0()}, "b": {"orthogonal_x": jnp.stack([w0(seed=2)] * 2)}}
  shapes = jax.eval_shape(tx.init, params)
  state = jax.jit(tx.init)(params)
  assert jax.tree.structure(shapes) == jax.tree.structure(state)
  for sd, x in zip(jax.tree.leaves(shapes), jax.tree.leaves(state)):
    assert sd.shape == x.shape and sd.dtype == x.dtype
  grads = jax.tree.map(jnp.ones_like, params)
  u, state2 = jax.jit(tx.update)(grads, state, params)
  assert jax.tree.structure(state2) == jax.tree.structure(state)
  for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(state2)):
    assert a.shape == b.shape and a.dtype == b.dtype
  assert jax.tree.all(jax.tree.map(lambda x, y: x.shape == y.shape, u, params))


def test_chain_after_clipping_and_dtype_preserved(x64):
  """Composes after other transforms in optax.chain; float64 and float32 are preserved."""
  for dtype in (jnp.float32, jnp.float64):
    tx = optax.chain(optax.clip_by_global_norm(1.0), optim.scornn(optax.sgd(0.1), RHO))
    p = w0(dtype=dtype)
    s = tx.init(p)
    u, s = jax.jit(tx.update)(100.0 * jnp.ones_like(p), s, p)
    assert u.dtype == dtype and s[1].skew.dtype == dtype
    # Clipping happened before: same as scoRNN on the clipped gradient.
    ref = optim.scornn(optax.sgd(0.1), RHO)
    v, _ = jax.jit(ref.update)(jnp.ones_like(p) / N, ref.init(p), p)
    # the clip's global norm sums N^2 = 144 squares: F32's chain
    np.testing.assert_allclose(np.asarray(u), np.asarray(v), atol=tol.F32["atol"])


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("make,name", [
    (lambda: optim.scornn(optax.sgd(0.1), RHO), "scornn"),
    (lambda: optim.neumann_cayley(optax.sgd(0.1), RHO), "neumann_cayley"),
    (lambda: optim.multiplicative_cayley(0.1), "multiplicative_cayley"),
    (lambda: optim.reorthonormalize(2), "reorthonormalize"),
])
def test_bad_input_errors(make, name):
  tx = make()
  with pytest.raises(ValueError, match=rf"{name}: every leaf of 'params' must be a square"):
    tx.init({"orthogonal": jnp.ones((3, 4))})
  with pytest.raises(ValueError, match=rf"{name}: every leaf .*\['b'\] has shape \(5,\)"):
    tx.init({"orthogonal": w0(), "b": jnp.ones((5,))})
  p = w0()
  s = tx.init(p)
  with pytest.raises(ValueError, match=rf"{name}: update\(\) requires 'params'"):
    tx.update(jnp.ones_like(p), s)
  with pytest.raises(ValueError, match=rf"{name}: every leaf of 'params' must be a square"):
    tx.update(jnp.ones((3, 4)), s, jnp.ones((3, 4)))


def test_bad_hyperparameter_errors():
  with pytest.raises(ValueError, match=r"scornn: argument 'rho' .* in \[0, n=12\]; got rho=13"):
    optim.scornn(optax.sgd(0.1), 13).init(w0())
  with pytest.raises(ValueError, match=r"neumann_cayley: argument 'rho' must be an int >= 0"):
    optim.neumann_cayley(optax.sgd(0.1), -1)
  with pytest.raises(ValueError, match=r"scornn: argument 'rho' must be an int"):
    optim.scornn(optax.sgd(0.1), 2.5)
  with pytest.raises(ValueError, match=r"scornn: argument 'inner' must be an optax"):
    optim.scornn(0.1, 2)
  with pytest.raises(ValueError, match=r"neumann_cayley: argument 'order' must be one of"):
    optim.neumann_cayley(optax.sgd(0.1), 2, order=4)
  with pytest.raises(ValueError, match=r"neumann_cayley: argument 'threshold' must lie in"):
    optim.neumann_cayley(optax.sgd(0.1), 2, threshold=1.5)
  with pytest.raises(ValueError, match=r"neumann_cayley: argument 'reset_every'"):
    optim.neumann_cayley(optax.sgd(0.1), 2, reset_every=-3)
  with pytest.raises(ValueError, match=r"multiplicative_cayley: argument 'learning_rate'"):
    optim.multiplicative_cayley(-1.0)
  with pytest.raises(ValueError, match=r"multiplicative_cayley: argument 'method'"):
    optim.multiplicative_cayley(0.1, method="svd")
  with pytest.raises(ValueError, match=r"reorthonormalize: argument 'every'"):
    optim.reorthonormalize(0)
  with pytest.raises(ValueError, match=r"orthonormalize: argument 'w' must be a square"):
    optim.orthonormalize(jnp.ones((2, 3)))
