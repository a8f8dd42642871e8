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
