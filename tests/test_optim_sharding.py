"""lvf_jax.optim transforms with parameters sharded over 4 CPU devices (tests/conftest.py sets
XLA_FLAGS=--xla_force_host_platform_device_count=4 before importing jax)."""


import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from lvf_jax import geometry as g
from lvf_jax import optim
from optim_helpers import orthogonal_start, standard
import tolerances as tol

RHO = 3


def w0(n, rho=RHO, seed=0):
  return orthogonal_start(n, rho, seed)


# ------------------------------------------------------------------ sharding

def _sharded_params(mesh):
  return {
      "rows": {"orthogonal": jax.device_put(w0(n=16), NamedSharding(mesh, P("x", None)))},
      "stack": {"orthogonal_c": jax.device_put(jnp.stack([w0(n=16, seed=1)] * 2),
                                               NamedSharding(mesh, P(None, None, "x")))},
  }


SHARDED = {
    "neumann_cayley": lambda: optim.neumann_cayley(optax.sgd(1e-2), RHO, reset_every=2),
    "multiplicative": lambda: optim.multiplicative_cayley(1e-2, reorthonormalize_every=2),
    "make_optimizer_scornn": lambda: optim.make_optimizer(
        {"orthogonal_method": "scornn", "rho": RHO, "clip_norm": 1.0}),
}


def _random_like(tree, seed):
  leaves, treedef = jax.tree.flatten(tree)
  return treedef.unflatten([
      jax.random.normal(jax.random.key(seed + i), x.shape, x.dtype) for i, x in enumerate(leaves)])


@pytest.mark.parametrize("name", sorted(SHARDED))
def test_sharded_explicit_mesh_state_sharding_matches(name):
  """Parameters sharded over 4 CPU devices (explicit axes, jax's default for make_mesh):
  jit(init) and jit(update) give the same state shardings, updates keep the parameters'
  sharding, and the numbers equal the unsharded run."""
  assert jax.device_count() >= 4
  mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
  params = _sharded_params(mesh)
  tx = SHARDED[name]()
  s0 = jax.jit(tx.init)(params)
  grads = jax.tree.map(lambda x, p: jax.device_put(x, p.sharding),
                       _random_like(params, 0), params)
  update = jax.jit(standard(tx.update))
  u1, s1 = update(grads, s0, params)
  u2, s2 = update(grads, s1, params)
  for a, b, c in zip(jax.tree.leaves(s0), jax.tree.leaves(s1), jax.tree.leaves(s2)):
    assert a.sharding.is_equivalent_to(b.sharding, a.ndim), (a.sharding, b.sharding)
    assert b.sharding.is_equivalent_to(c.sharding, b.ndim)
  for u, p in zip(jax.tree.leaves(u2), jax.tree.leaves(params)):
    assert u.sharding.is_equivalent_to(p.sharding, p.ndim)
  plain = jax.tree.map(np.asarray, params)
  grads_plain = jax.tree.map(np.asarray, grads)
  ref_update = jax.jit(standard(tx.update))
  _, r1 = ref_update(grads_plain, jax.jit(tx.init)(plain), plain)
  v2, _ = ref_update(grads_plain, r1, plain)
  for a, b in zip(jax.tree.leaves(u2), jax.tree.leaves(v2)):
    # sharded sums in another order: 2 updates of 16 x 16 solves and products, F32's chain
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=tol.F32["atol"])


@pytest.mark.parametrize("name", ["neumann_cayley", "multiplicative"])
def test_sharded_auto_mesh_with_init_shardings(name):
  """Auto (GSPMD) axes: the usual recipe -- jit(update) with out_shardings taken from
  jit(init) -- runs, and the state sharding is then the same on every update."""
  mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
  params = _sharded_params(mesh)
  tx = SHARDED[name]()
  s0 = jax.jit(tx.init)(params)
  state_sharding = jax.tree.map(lambda x: x.sharding, s0)
  update_sharding = jax.tree.map(lambda x: x.sharding, params)
  update = jax.jit(standard(tx.update), out_shardings=(update_sharding, state_sharding))
  grads = _random_like(params, 0)
  u, s1 = update(grads, s0, params)
  u, s2 = update(grads, s1, params)
  for a, b in zip(jax.tree.leaves(s0), jax.tree.leaves(s2)):
    assert a.sharding.is_equivalent_to(b.sharding, a.ndim)
  new = optax.apply_updates(params, u)
  for w in jax.tree.leaves(new):
    # 2 updates of 16 x 16 solves and products, reset or re-orthonormalised every 2
    assert float(jnp.max(g.orthogonality_error(w))) < tol.F32["atol"]
