"""Activations of the orthogonal-RNN literature."""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def modrelu(z: Array, b: Array) -> Array:
  """modReLU (Arjovsky et al. 2016): ``sign(z) relu(|z| + b)``; complex ``z/|z| relu(|z| + b)``.

  With ``b`` near 0 it is the identity on ``|z| > -b``, which is what lets orthogonal
  RNNs carry memory (copy task). ``b`` broadcasts against the feature axis.
  """
  b = jnp.broadcast_to(jnp.asarray(b), z.shape)
  if jnp.iscomplexobj(z):
    mag = jnp.abs(z)
    safe = jnp.where(mag > 0, mag, 1)
    scale = jnp.maximum(mag + b, 0) / safe
    return jnp.where(mag > 0, z * scale.astype(z.dtype), 0)
  return jnp.sign(z) * jnp.maximum(jnp.abs(z) + b, 0)


def pair_sum(x: Array) -> Array:
  """``x_k + x_{k+n}`` at both positions ``k`` and ``n + k`` of a last axis of length ``2n``
  (e.g. ``|z_k|^2`` from ``z * z`` for ``z = [Re | Im]``).

  A roll, elementwise on the flat layout, so XLA makes one loop fusion with its neighbours
  (no ``(..., 2, n)`` view, reduction over its size-2 axis or strided indexing)."""
  return x + jnp.roll(x, x.shape[-1] // 2, axis=-1)


def modrelu_split(z: Array, b: Array) -> Array:
  """Complex modReLU ``z/|z| relu(|z| + b)`` of a complex vector carried as real
  ``[Re z | Im z]`` along the last axis (length ``2n``; ``b`` has ``n`` entries).

  Same values as :func:`modrelu` on the complex ``z``; ``z = 0`` maps to 0 with a finite
  (zero) gradient.
  """
  n = z.shape[-1] // 2
  if z.shape[-1] != 2 * n:
    raise ValueError(
        f"modrelu_split: the last axis of 'z' must have even length [Re | Im]; got shape "
        f"{z.shape}.")
  mag2 = pair_sum(z * z)  # |z_k|^2 at k and n + k
  b = jnp.broadcast_to(jnp.asarray(b).astype(z.dtype), z.shape[:-1] + (n,))
  b2 = jnp.concatenate([b, b], axis=-1)
  nonzero = mag2 > 0
  mag = jnp.sqrt(jnp.where(nonzero, mag2, jnp.ones_like(mag2)))
  scale = jnp.where(nonzero, jnp.maximum(mag + b2, 0) / mag, jnp.zeros_like(mag))
  return z * scale
