"""Small array helpers that are explicit about broadcasting (strict rank promotion)."""

from __future__ import annotations

from typing import Callable

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


def idempotent_on_buffer(fn: Callable[[Array], Array], x: Array) -> Array:
  """``fn(x)`` for an idempotent ``fn`` (``fn(fn(x)) == fn(x)``), with ``x`` stored in
  memory before ``fn`` reads it.

  XLA fuses a chain of elementwise producers into each of its consumers. A consumer that
  reads its operand at two positions per element (``x - x^T``) then evaluates the whole
  chain twice per element, reading every input of the chain with a column stride, and
  once more for every other consumer. Here ``fn`` is the body of a loop whose trip count
  XLA cannot know (1, or 2 where the first entry of ``x`` is NaN, which ``fn``'s
  idempotence makes the same), so ``x`` enters the loop as one buffer and ``fn`` reads
  only that. (``jax.lax.optimization_barrier`` does not do this on CPU: XLA removes it
  before fusion.) The loop has no reverse-mode derivative: call this in a ``custom_vjp``
  backward rule. Leading batch axes and ``jax.vmap`` are supported.
  """
  corner = x[..., :1, :1]
  trips = 1 + jnp.any(corner != corner).astype(jnp.int32)
  return jax.lax.fori_loop(0, trips, lambda _, y: fn(y), x)
