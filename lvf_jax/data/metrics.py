"""Losses / metrics for the benchmark tasks (JAX, jit/vmap/grad-safe)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from lvf_jax import _validation


def _bernoulli_nll(log_p: jax.Array, log_not_p: jax.Array, targets: jax.Array) -> jax.Array:
  """``-sum_88 [y log p + (1-y) log(1-p)]`` of every frame from ``log p`` and ``log(1-p)``."""
  y = targets.astype(log_p.dtype)
  return -jnp.sum(y * log_p + (1.0 - y) * log_not_p, axis=-1)


def _frame_nll(logits: jax.Array, targets: jax.Array) -> jax.Array:
  """:func:`_bernoulli_nll` with ``p = sigmoid(logits)``, computed stably from logits."""
  return _bernoulli_nll(jax.nn.log_sigmoid(logits), jax.nn.log_sigmoid(-logits), targets)


def _mean_over_frames(frame_nll: jax.Array, mask: jax.Array) -> jax.Array:
  """Mean of ``frame_nll`` over the frames with ``mask == 1`` (0 when there are none)."""
  m = mask.astype(frame_nll.dtype)
  return jnp.sum(frame_nll * m) / jnp.maximum(jnp.sum(m), 1.0)


def music_nll(logits: jax.Array, targets: jax.Array, mask: jax.Array) -> jax.Array:
  """Frame-level NLL of polyphonic music (Boulanger-Lewandowski et al. 2012).

  ``loss = -sum_t sum_88 [y log p + (1-y) log(1-p)] / (number of predicted frames)`` with
  ``p = sigmoid(logits)``, computed stably from logits. Padded frames (``mask == 0``)
  contribute neither to the sum nor to the frame count. Over a split this weights every
  frame equally (:func:`music_nll_per_sequence` weights every sequence equally).

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
  return _mean_over_frames(_frame_nll(logits, targets), mask)


def music_nll_per_sequence(logits: jax.Array, targets: jax.Array,
                           mask: jax.Array) -> jax.Array:
  """Frame-level NLL of each sequence of a batch: :func:`music_nll` of every row alone.

  ``nll_b = -sum_t sum_88 [y log p + (1-y) log(1-p)] / (predicted frames of sequence b)``.
  The mean of ``nll_b`` over a split weights every piece equally, while :func:`music_nll`
  over the split weights every frame equally (long pieces count more); Boulanger-Lewandowski
  et al. 2012 define the per-frame NLL without saying which average a split reports, and
  Azencot et al. 2021 (arXiv:2102.09589, Fig. 3) compare models piece by piece.

  Args:
    logits: (batch, T, 88) pre-sigmoid outputs predicting ``targets = roll[1:]``.
    targets: (batch, T, 88) binary targets.
    mask: (batch, T) 1 for real frames, 0 for padding.

  Returns:
    (batch,) NLL per frame of each sequence, in logits' dtype; 0 for a row without frames.
  """
  if logits.ndim != 3 or logits.shape[:-1] != mask.shape or logits.shape != targets.shape:
    raise ValueError(f"music_nll_per_sequence: need logits/targets (batch, T, K) and mask "
                     f"(batch, T); got {logits.shape}, {targets.shape}, {mask.shape}.")
  m = mask.astype(logits.dtype)
  return (jnp.sum(_frame_nll(logits, targets) * m, axis=-1)
          / jnp.maximum(jnp.sum(m, axis=-1), 1.0))


def music_nll_from_probs(probs: jax.Array, targets: jax.Array, mask: jax.Array,
                         eps: float = 1e-7) -> jax.Array:
  """Same as :func:`music_nll` given probabilities (clipped to [eps, 1 - eps])."""
  if probs.shape[:-1] != mask.shape or probs.shape != targets.shape:
    raise ValueError(f"music_nll_from_probs: need probs/targets (..., T, K) and mask (..., T);"
                     f" got {probs.shape}, {targets.shape}, {mask.shape}.")
  p = jnp.clip(probs, eps, 1.0 - eps)
  return _mean_over_frames(_bernoulli_nll(jnp.log(p), jnp.log1p(-p), targets), mask)


def masked_mse(pred: jax.Array, target: jax.Array, mask: jax.Array,
               per: str = "element") -> jax.Array:
  """Masked MSE for next-frame speech prediction.

  Args:
    pred, target: (..., T, F).
    mask: (..., T).
    per: 'element' averages over valid frames and features; 'frame' sums the squared error
      over F and averages over valid frames.
  """
  _validation.check_same_shape("masked_mse", ("pred", "target"), pred, target)
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
