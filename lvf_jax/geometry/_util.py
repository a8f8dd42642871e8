"""Small array helpers that are explicit about broadcasting (strict rank promotion)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def eye_like(a: Array) -> Array:
  """Identity with the shape ``(..., n, n)`` and dtype of ``a``."""
  return jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)


def diag_embed(d: Array) -> Array:
  """``(..., n) -> (..., n, n)`` diagonal matrices."""
  n = d.shape[-1]
  eye = jnp.broadcast_to(jnp.eye(n, dtype=d.dtype), d.shape + (n,))
  return d[..., :, None] * eye


def scale_columns(m: Array, d: Array) -> Array:
  """``M @ diag(d)`` for ``M`` of shape ``(..., n, n)`` and ``d`` of shape ``(n,)``."""
  return m * jnp.broadcast_to(d, m.shape)


def stored(x: Array) -> Array:
  """``x``, stored in memory on a CPU: an identity that XLA:CPU cannot fuse through.

  XLA fuses a chain of elementwise producers into each of its consumers. A consumer that
  reads its operand at two positions per element (``x - x^T``) then evaluates the whole
  chain twice per element, reading every input of the chain with a column stride, and
  once more for every other consumer. Here ``x`` enters a loop as one buffer, and every
  consumer reads only that: the loop's body is an identity XLA cannot remove (NaN stays
  NaN), and its trip count one XLA cannot know (1, or 2 where the first entry of ``x`` is
  NaN; the same result). (``jax.lax.optimization_barrier`` does not do this on CPU: XLA
  removes it before fusion.) On other platforms ``x`` is returned as it is
  (``jax.lax.platform_dependent``): on a GPU the loop made ``expm_taylor``'s gradient
  slower (``docs/GPU.md``, "The stored barrier"). The loop has no reverse-mode derivative:
  call this in a ``custom_vjp`` backward rule. Leading batch axes and ``jax.vmap`` are
  supported.
  """
  return jax.lax.platform_dependent(x, cpu=_stored_loop, default=lambda y: y)


def _stored_loop(x: Array) -> Array:
  """The CPU's :func:`stored`: ``x`` through a loop XLA cannot remove."""
  corner = x[..., :1, :1]
  trips = 1 + jnp.any(corner != corner).astype(jnp.int32)

  def keep(_, y):  # the identity, as an operation XLA cannot remove
    return jnp.where(jnp.isnan(y), jnp.asarray(jnp.nan, y.dtype), y)

  return jax.lax.fori_loop(0, trips, keep, x)
