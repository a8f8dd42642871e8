"""Activations of the orthogonal-RNN literature."""

from __future__ import annotations

import jax.numpy as jnp

Array = jnp.ndarray


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
