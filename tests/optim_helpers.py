"""Shared helpers of the optax-transform tests."""

import functools

import jax
import jax.numpy as jnp

from lvf_jax import geometry as g


def standard(f):
  """Traces/runs ``f`` under standard dtype promotion (optax's Adam needs it)."""

  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    with jax.numpy_dtype_promotion("standard"):
      return f(*args, **kwargs)

  return wrapped


def orthogonal_start(n, rho, seed=0, dtype=jnp.float32):
  """A scaled-Cayley orthogonal matrix from a Cayley-initialised skew generator."""
  return g.scaled_cayley(g.cayley_init()(jax.random.key(seed), (n, n), dtype), rho)
