"""Segment-wise rematerialisation of a scan: the carry every ``k`` steps, not every state.

A fused scan (:func:`~lvf_jax.recurrences.rnn_scan` and the others of this package) keeps
its states ``H`` (``T B n`` numbers) between the forward and the backward pass, and the
plain ``jax.checkpoint`` of the whole scan keeps nothing but recomputes the whole forward
pass *inside* the backward pass, where it stores ``H`` again: either way the peak memory
grows as ``T B n``. :func:`segment_scan` splits the time axis into segments of ``k`` steps
and runs an outer ``lax.scan`` over them whose body -- one segment of the inner scan -- is
wrapped in ``jax.checkpoint``: the forward pass keeps only the carry at each segment
boundary (``T / k`` carries); the backward pass re-runs one segment from its first carry
(``k`` states, the inner scan's own residuals) and then that segment's backward pass.
With ``k = sqrt(T)`` (:func:`auto_segment_length`) the states cost ``2 sqrt(T) B n``
instead of ``T B n``, for one extra forward pass (Chen et al. 2016, "Training Deep Nets
with Sublinear Memory Cost", arXiv:1604.06174; Gruslys et al. 2016,
arXiv:1606.03401, for recurrent networks).

With ``outputs=False`` the per-step outputs are not formed at all (a loss that reads only
the final carry, e.g. the adding task's): the memory is then the inputs, ``T / k``
boundary carries and one segment. A loss that reads every step's output keeps those
outputs (``T B n``) and their cotangents whatever the scan does.

The weight gradients of a segment stay one large product over its ``k B`` rows (the fused
scans' backward pass); the outer scan sums them over the segments.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Optional, Union

import jax
import jax.numpy as jnp

Array = jax.Array
SegmentFn = Callable[[Any, Any], tuple[Any, Any]]

__all__ = ["auto_segment_length", "check_segment_length", "segment_scan"]


def auto_segment_length(num_steps: int) -> int:
  """``ceil(sqrt(T))``: the segment length that minimises boundaries plus one segment."""
  return max(1, math.isqrt(max(int(num_steps) - 1, 0)) + 1)


def check_segment_length(fn: str, segment_length: Any, num_steps: int) -> Optional[int]:
  """``segment_length`` as an int in ``[1, T]`` (``'auto'``: :func:`auto_segment_length`;
  ``None`` or ``0``: no segments, returns None); raises ``ValueError`` naming ``fn``."""
  if segment_length is None or (isinstance(segment_length, numbers.Integral)
                                and not isinstance(segment_length, bool)
                                and segment_length == 0):
    return None
  if isinstance(segment_length, str) and segment_length == "auto":
    return auto_segment_length(num_steps)
  if (isinstance(segment_length, bool) or not isinstance(segment_length, numbers.Integral)
      or segment_length < 0):
    raise ValueError(f"{fn}: argument 'segment_length' must be None, 0 (no segments), "
                     f"'auto' (ceil(sqrt(T))) or an int >= 1; got {segment_length!r}.")
  return min(int(segment_length), int(num_steps))


def _time_slice(tree: Any, start: int, stop: int) -> Any:
  return jax.tree_util.tree_map(lambda a: a[start:stop], tree)


def _split_segments(tree: Any, num_segments: int, length: int) -> Any:
  return jax.tree_util.tree_map(
      lambda a: a[:num_segments * length].reshape((num_segments, length) + a.shape[1:]),
      tree)


def _merge_segments(tree: Any) -> Any:
  return jax.tree_util.tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), tree)


def segment_scan(run: SegmentFn, carry: Any, xs: Any, *, segment_length: Union[int, str],
                 reverse: bool = False, outputs: bool = True) -> tuple[Any, Any]:
  """``run`` over consecutive time segments of ``xs``, rematerialised segment by segment.

  Equal (outputs and gradients) to ``run(carry, xs)`` for any ``run`` that scans its
  segment in order (``reverse=False``: ``t = 0, 1, ...``) or in reverse order
  (``reverse=True``, with ``run`` itself scanning its segment backwards), such as the fused
  scans of this package with the same ``reverse``.

  Args:
    run: ``run(carry, xs_segment) -> (carry, ys_segment)``, time-major, pure (it may close
      over arrays: their gradients are summed over the segments).
    carry: initial carry (any pytree).
    xs: pytree of time-major arrays ``(T, ...)`` (``None`` leaves allowed, e.g. no mask).
    segment_length: steps per segment ``k`` (an int >= 1, or ``'auto'`` for
      ``ceil(sqrt(T))``). When ``k`` does not divide ``T`` the last ``T mod k`` steps run
      as one shorter segment.
    reverse: the time direction of ``run``: segments are then visited from the last.
    outputs: ``False``: return ``(final_carry, None)`` without forming the per-step outputs.

  Returns:
    ``(final_carry, ys)``, ``ys`` time-major ``(T, ...)`` (or None).
  """
  leaves = jax.tree_util.tree_leaves(xs)
  if not leaves:
    raise ValueError("segment_scan: argument 'xs' must hold at least one array.")
  num_steps = leaves[0].shape[0]
  k = check_segment_length("segment_scan", segment_length, num_steps)
  if k is None:
    raise ValueError(f"segment_scan: argument 'segment_length' must be 'auto' or an int >= 1; "
                     f"got {segment_length!r}.")
  num_segments, rest = divmod(num_steps, k)

  def body(c, x):
    c, ys = run(c, x)
    return c, (ys if outputs else None)

  body = jax.checkpoint(body, prevent_cse=False)
  main = _split_segments(xs, num_segments, k)
  tail = _time_slice(xs, num_segments * k, num_steps) if rest else None
  ys_tail = None
  if reverse and rest:  # the last steps are processed first
    carry, ys_tail = body(carry, tail)
  carry, ys_main = jax.lax.scan(body, carry, main, reverse=reverse)
  if not reverse and rest:
    carry, ys_tail = body(carry, tail)
  if not outputs:
    return carry, None
  ys = _merge_segments(ys_main)
  if rest:
    ys = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b], axis=0), ys, ys_tail)
  return carry, ys
