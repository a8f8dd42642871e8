"""Shared set-up of the layer tests: small sizes, cell factory, the Python-loop reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import cells
import tolerances

N, M, B, T = 6, 3, 3, 7

ALL_CELLS = sorted(cells.CELLS)
CELL_KW = {"lvf": dict(integrator="midpoint", tau=0.8),
           "ncgru": dict(orthogonal_reset=True)}


def slow_unless(fast, values, *rest):
  """pytest parameters ``(value, *rest)`` for each of ``values``, marked slow unless the
  value is in ``fast``."""
  return [pytest.param(v, *rest, marks=() if v in fast else pytest.mark.slow) for v in values]


def make(name, **kw):
  return cells.make_cell(name, N, **{**CELL_KW.get(name, {}), **kw})


def data(key=0, batch=B, steps=T):
  return jax.random.normal(jax.random.key(key), (batch, steps, M))


def init_params(module, x, seed=1):
  return jax.jit(module.init)(jax.random.key(seed), x)["params"]


def python_loop(cell, variables, x, carry, reverse=False):
  """Reference: the cell's own ``__call__`` applied step by step in Python."""
  ys = [None] * x.shape[1]
  order = range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])
  for t in order:
    carry, ys[t] = cell.apply(variables, carry, x[:, t])
  return carry, jnp.stack(ys, axis=1)


def close(a, b, tol=tolerances.F32["rtol"]):
  """Every leaf of ``a`` equals ``b`` to ``rtol = atol = tol`` (default: float32 rounding of
  the short chains these tests compare, :data:`tolerances.F32`)."""
  jax.tree_util.tree_map(lambda u, v: np.testing.assert_allclose(u, v, rtol=tol, atol=tol), a, b)


def close_grads(a, b, terms):
  """Every leaf of ``a`` equals ``b`` to the float32 rounding of gradients through a scan
  that sum ``terms`` (``B T`` times the widest product) terms, in another order
  (:func:`tolerances.grad`), atol at the scale of ``b``'s leaf."""
  rtol, atol = tolerances.grad(terms).values()

  def one(u, v):
    u, v = np.asarray(u), np.asarray(v)
    np.testing.assert_allclose(u, v, rtol=rtol, atol=atol * (float(np.max(np.abs(v))) or 1.0))

  jax.tree_util.tree_map(one, a, b)


def reference_scan(step, kernel, u, h0, *, reverse=False, unroll=1, mask=None):
  """Plain ``lax.scan`` of ``step(kernel, h, u_t) -> h`` (the autodiff baseline of the fused
  scans), with their masking: frozen carry and zero output where ``mask`` is False."""

  def body(h, xs):
    u_t, m_t = xs
    h_new = step(kernel, h, u_t)
    if m_t is not None:
      h_new = jnp.where(m_t[..., None], h_new, h)
    return h_new, h_new

  h_last, hs = jax.lax.scan(body, h0, (u, mask), reverse=reverse, unroll=unroll)
  if mask is not None:
    hs = jnp.where(mask[..., None], hs, jnp.zeros((), hs.dtype))
  return h_last, hs
