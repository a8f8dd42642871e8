"""Losses / metrics for the benchmark tasks (JAX, jit/vmap/grad-safe)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def _check_same_shape(fn, **arrays):
  shapes = {k: tuple(v.shape) for k, v in arrays.items()}
  if len(set(shapes.values())) != 1:
    raise ValueError(f"{fn}: arguments must share one shape; got {shapes}.")


def music_nll(logits: jax.Array, targets: jax.Array, mask: jax.Array) -> jax.Array:
  """Frame-level NLL of polyphonic music (Boulanger-Lewandowski et al. 2012).

  ``loss = -sum_t sum_88 [y log p + (1-y) log(1-p)] / (number of predicted frames)`` with
  ``p = sigmoid(logits)`` (Boulanger-Lewandowski et al. 2012), computed stably from logits. Padded
  frames
  (``mask == 0``) contribute neither to the sum nor to the frame count.

  Args:
    logits: (..., T, 88) pre-sigmoid outputs predicting ``targets = roll[1:]``.
    targets: (..., T, 88) binary targets.
    mask: (..., T) 1 for real frames, 0 for padding.

  Returns:
    scalar NLL per frame, in logits' dtype.
  """
  if logits.shape[:-1] != mask.shape or logits.shape != targets.shape:
    raise ValueError(f"music_nll: need logits/targets (..., T, K) and mask (..., T); got "
                     f"{logits.shape}, {targets.shape}, {mask.shape}.")
  y = targets.astype(logits.dtype)
  ll = y * jax.nn.log_sigmoid(logits) + (1.0 - y) * jax.nn.log_sigmoid(-logits)
  m = mask.astype(logits.dtype)
  total = -jnp.sum(jnp.sum(ll, axis=-1) * m)
  return total / jnp.maximum(jnp.sum(m), 1.0)


def music_nll_from_probs(probs: jax.Array, targets: jax.Array, mask: jax.Array,
                         eps: float = 1e-7) -> jax.Array:
  """Same as :func:`music_nll` given probabilities (clipped to [eps, 1 - eps])."""
  if probs.shape[:-1] != mask.shape or probs.shape != targets.shape:
    raise ValueError(f"music_nll_from_probs: need probs/targets (..., T, K) and mask (..., T);"
                     f" got {probs.shape}, {targets.shape}, {mask.shape}.")
  p = jnp.clip(probs, eps, 1.0 - eps)
  y = targets.astype(probs.dtype)
  ll = y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p)
  m = mask.astype(probs.dtype)
  return -jnp.sum(jnp.sum(ll, axis=-1) * m) / jnp.maximum(jnp.sum(m), 1.0)


def masked_mse(pred: jax.Array, target: jax.Array, mask: jax.Array,
               per: str = "element") -> jax.Array:
  """Masked MSE for next-frame speech prediction.

  Args:
    pred, target: (..., T, F).
    mask: (..., T).
    per: 'element' averages over valid frames and features; 'frame' sums the squared error
      over F and averages over valid frames.
  """
  _check_same_shape("masked_mse", pred=pred, target=target)
  if pred.shape[:-1] != mask.shape:
    raise ValueError(f"masked_mse: mask must have shape {pred.shape[:-1]}; got {mask.shape}.")
  if per not in ("element", "frame"):
    raise ValueError(f"masked_mse: argument 'per' must be 'element' or 'frame'; got {per!r}.")
  m = mask.astype(pred.dtype)
  se = jnp.sum(jnp.square(pred - target.astype(pred.dtype)), axis=-1) * m
  denom = jnp.sum(m) * (pred.shape[-1] if per == "element" else 1)
  return jnp.sum(se) / jnp.maximum(denom, 1.0)


def masked_cross_entropy(logits: jax.Array, labels: jax.Array, mask: jax.Array) -> jax.Array:
  """Mean token cross-entropy (nats) over ``mask == 1`` (for PTB; BPC = CE / ln 2)."""
  if logits.shape[:-1] != labels.shape or labels.shape != mask.shape:
    raise ValueError(f"masked_cross_entropy: need logits (..., V), labels and mask (...); got "
                     f"{logits.shape}, {labels.shape}, {mask.shape}.")
  logp = jax.nn.log_softmax(logits, axis=-1)
  nll = -jnp.take_along_axis(logp, labels[..., None].astype(jnp.int32), axis=-1)[..., 0]
  m = mask.astype(logits.dtype)
  return jnp.sum(nll * m) / jnp.maximum(jnp.sum(m), 1.0)


def bits_per_character(ce_nats):
  """BPC = cross-entropy in nats / ln 2."""
  return ce_nats / math.log(2.0)


def perplexity(ce_nats):
  """Perplexity = exp(cross-entropy in nats)."""
  return jnp.exp(ce_nats)
