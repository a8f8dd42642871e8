"""The one measurement of a cell's matrix function (``prepare``) shared by the benchmarks.

``cells.py --explain`` and ``flax_idioms.py`` time a cell's ``prepare`` alone, forward and
backward, under ``sum(sin(prep) * w)`` with a fixed random ``w``: a cotangent that depends on
the forward values and has no structure, as a loss's does. A linear objective lets XLA drop
the forward output, and ``0.5 ||prep||^2`` hands the backward pass the output itself: both
measured the nnRNN's ``expm`` and Schur form 1.5x cheaper than the same ``prepare`` costs
inside the model.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def prepare_step(cell: Any, params: Any, dtype: Any, inner: int = 1):
  """``(fn, params)``: ``fn`` runs ``inner`` dependent forward and backward passes of
  ``cell.prepare`` in one jitted call (a ``fori_loop`` for ``inner > 1``); the parameters
  move by ``1e-9`` of their gradient, so they stay where they are (``expm``'s cost depends
  on them)."""
  prep = cell.apply({"params": params}, method=lambda c: c.prepare(dtype=dtype))
  leaves = jax.tree_util.tree_leaves(prep)
  weights = [jax.random.normal(jax.random.key(i), jnp.shape(a), a.dtype)
             for i, a in enumerate(leaves)]

  def loss(p):
    out = jax.tree_util.tree_leaves(
        cell.apply({"params": p}, method=lambda c: c.prepare(dtype=dtype)))
    return sum(jnp.sum(jnp.sin(a) * w) for a, w in zip(out, weights))

  def update(p):
    return jax.tree_util.tree_map(lambda a, g: a - 1e-9 * g, p, jax.grad(loss)(p))

  if inner == 1:
    return jax.jit(update), params
  return jax.jit(lambda p: jax.lax.fori_loop(0, inner, lambda _, q: update(q), p)), params
