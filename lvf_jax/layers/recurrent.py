"""The library sequence layer: ``prepare`` once, project all inputs once, scan a pure step.

:class:`Recurrent` runs any cell of :mod:`lvf_jax.cells` (and any
:class:`flax.linen.RNNCellBase`, e.g. ``nn.LSTMCell``) over a sequence. For a structured
cell (one with ``prepare`` / ``project_inputs`` / ``step``) it

1. calls ``cell.project_inputs`` once on the whole ``(batch, time, features)`` input (one
   large matmul instead of ``T`` small ones),
2. calls ``cell.prepare()`` once (the ``O(n^3)`` matrix function -- ``expm``, Cayley solve,
   ``D_V``, Schur form -- is evaluated once per sequence, not once per step), and
3. runs :func:`scan_steps`, a pure ``jax.lax.scan`` of ``cell.step`` over time (time-major
   internally).

With ``fused=True`` and narrow inputs the layer can skip step 1 for the ``sigma(h K + x W +
b)`` cells and form ``x_t W`` inside the fused loop instead (``input_projection``).

Other Flax cells fall back to :func:`flax.linen.scan` of the cell itself with the same
masking semantics. :func:`scan_steps` is kept free of Flax so that a custom VJP can be
written around it.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
from flax import linen as nn
from flax.linen.recurrent import flip_sequences

from lvf_jax import recurrences
from lvf_jax.cells.base import cast_tree


Array = jax.Array
Carry = Any
StepFn = Callable[[Any, Carry, Array], tuple[Carry, Array]]


def _fallback_dtype(cell: Any, input_dtype: Any) -> Any:
  """Computation dtype of a Flax cell: its ``dtype``, else standard promotion of the input
  and parameter dtypes (made explicit so the cell runs under strict promotion)."""
  if getattr(cell, "dtype", None) is not None:
    return jnp.dtype(cell.dtype)
  with jax.numpy_dtype_promotion("standard"):
    return jnp.promote_types(input_dtype, getattr(cell, "param_dtype", jnp.float32))


def is_structured(cell: Any) -> bool:
  """Whether ``cell`` implements the ``prepare`` / ``project_inputs`` / ``step`` protocol."""
  return all(callable(getattr(cell, m, None)) for m in ("prepare", "project_inputs", "step"))


def fused_scan(cell: Any, in_loop: bool = False) -> Optional[Callable]:
  """The cell's hand-written-VJP scan (``cell.fused_scan``, see
  :meth:`lvf_jax.cells.StructuredCell.fused_scan`), or ``None`` for a cell without one."""
  method = getattr(cell, "fused_scan", None)
  return method(in_loop) if callable(method) else None


def carry_options(cell: Any, carry: Carry) -> dict[str, Any]:
  """``cell.carry_options(carry)`` (:meth:`lvf_jax.cells.StructuredCell.carry_options`: the
  carry checked against the cell, and the LSTM's / GRU's width for a carry of another
  width), ``{}`` for a cell without it."""
  method = getattr(cell, "carry_options", None)
  return method(carry) if callable(method) else {}


def _expand_to(mask: Array, leaf: Array) -> Array:
  return jnp.reshape(mask, mask.shape + (1,) * (leaf.ndim - mask.ndim))


def masked_update(mask: Optional[Array], new_carry: Carry, old_carry: Carry,
                  y: Any) -> tuple[Carry, Any]:
  """Freezes the carry and zeroes the output where ``mask`` (shape ``(*batch,)``) is False."""
  if mask is None:
    return new_carry, y
  carry = jax.tree_util.tree_map(
      lambda a, b: jnp.where(_expand_to(mask, a), a, b), new_carry, old_carry)
  y = jax.tree_util.tree_map(
      lambda a: jnp.where(_expand_to(mask, a), a, jnp.zeros_like(a)), y)
  return carry, y


def scan_steps(step: StepFn, prep: Any, carry: Carry, u: Array, *,
               mask: Optional[Array] = None, reverse: bool = False, unroll: int = 1,
               checkpoint: bool = False) -> tuple[Carry, Array]:
  """Pure scan of ``step(prep, carry, u_t)`` over the leading (time) axis of ``u``.

  Args:
    step: pure step function ``(prep, carry, u_t) -> (carry, y_t)``.
    prep: parameter pytree from ``cell.prepare()`` (closed over, not scanned).
    carry: initial carry, leaves ``(*batch, ...)``.
    u: projected inputs, time-major ``(T, *batch, k)``.
    mask: optional boolean ``(T, *batch)``; where False the carry is frozen and the output
      zeroed.
    reverse: process ``t = T-1, ..., 0`` (outputs stay aligned with ``u``).
    unroll: ``jax.lax.scan`` unroll factor.
    checkpoint: rematerialise each step in the backward pass (``jax.checkpoint``): memory
      ``O(T n)`` for the carries only, at the price of a second forward pass.

  Returns:
    ``(final_carry, ys)`` with ``ys`` time-major.
  """

  def body(c, xs):
    u_t, m_t = xs
    c_new, y = step(prep, c, u_t)
    return masked_update(m_t, c_new, c, y)

  if checkpoint:
    body = jax.checkpoint(body, prevent_cse=False)
  return jax.lax.scan(body, carry, (u, mask), reverse=reverse, unroll=unroll)


def length_mask(seq_lengths: Array, num_steps: int) -> Array:
  """Time-major boolean mask ``(T, *batch)``: ``mask[t, b] = t < seq_lengths[b]``."""
  t = jnp.arange(num_steps, dtype=jnp.int32)
  lengths = jnp.asarray(seq_lengths).astype(jnp.int32)
  return t.reshape((num_steps,) + (1,) * lengths.ndim) < lengths[None, ...]


def _time_major_inputs(inputs: Array, time_major: bool) -> Array:
  """``inputs`` with time as the leading axis (``ValueError`` below two axes)."""
  inputs = jnp.asarray(inputs)
  if inputs.ndim < 2:
    layout = "(time, *batch, features)" if time_major else "(*batch, time, features)"
    raise ValueError(f"Recurrent: inputs must have shape {layout}; got shape {inputs.shape}.")
  return inputs if time_major else jnp.moveaxis(inputs, inputs.ndim - 2, 0)


def _fallback_body(cell: nn.Module, carry: Carry, xs: tuple[Array, Optional[Array]]):
  x_t, m_t = xs
  c_new, y = cell(carry, x_t)
  return masked_update(m_t, c_new, carry, y)


INPUT_PROJECTIONS = ("hoisted", "in_loop", "auto")
# input_projection='auto' forms x_t W inside the loop when IN_LOOP_RATIO * d <= n.
IN_LOOP_RATIO = 8


class Recurrent(nn.Module):
  """Runs a cell over a sequence with one ``prepare`` and one input projection per call.

  Semantics (both for structured cells and for Flax fallback cells):

  * inputs ``(*batch, time, features)`` (or ``(time, *batch, features)`` with
    ``time_major=True``); outputs have the same layout with ``features`` replaced by the
    cell's output size;
  * ``seq_lengths`` (int ``(*batch,)``): steps ``t >= length`` are padding -- the carry is
    frozen there (the final carry is the carry after the last valid step) and the outputs
    are zeroed;
  * ``reverse=True`` processes each sequence from its last valid step to the first
    (padding stays at the end) and, with ``keep_order=True`` (the default, unlike
    ``nn.RNN``), returns the outputs aligned with the inputs; ``keep_order=False`` returns
    them in processing order, as ``nn.RNN`` does. The call signature follows ``nn.RNN``,
    so ``nn.Bidirectional(Recurrent(a), Recurrent(b))`` works;
  * ``checkpoint=True`` rematerialises each step in the backward pass;
    ``segment_length=k`` (or ``'auto'``: ``ceil(sqrt(T))``) keeps the carry only every
    ``k`` steps and recomputes each segment in the backward pass
    (:func:`lvf_jax.recurrences.segment_scan`): the states cost ``(T / k + k) B n``
    instead of ``T B n`` (long sequences);
  * ``return_sequences=False`` returns the final carry without forming the outputs (a loss
    that reads only the last state; with ``segment_length`` the memory no longer grows
    with ``T B n``);
  * ``unroll`` is passed to the scan.

  Parameters live under the name ``'cell'`` exactly as in ``nn.RNN(cell)``, so the same
  variables work in both.

  Attributes:
    cell: a structured cell (:mod:`lvf_jax.cells`) or any ``flax.linen.RNNCellBase``.
    time_major: input/output layout (default batch-major).
    return_carry: return ``(final_carry, outputs)`` instead of ``outputs``.
    reverse: process the sequence backwards.
    keep_order: with ``reverse``, return outputs aligned with the inputs (default True).
    unroll: scan unroll factor.
    checkpoint: ``jax.checkpoint`` the step (the whole fused scan with ``fused=True``).
    segment_length: ``None`` / ``0`` (no segments), ``'auto'`` or an int ``k >= 1``:
      segment-wise rematerialisation (structured cells only; fused or not). Same outputs
      and gradients (tested).
    return_sequences: ``False``: return the final carry only (no outputs formed).
    fused: run the cell with its hand-written-VJP scan (:mod:`lvf_jax.recurrences`, named
      by the cell's ``fused_scan``; one large weight-gradient product after the backward
      sweep instead of one small product per step) when one covers it: the ``sigma(h K +
      u + b)`` cells (:class:`~lvf_jax.cells.base.KernelCell`, tanh RNNs), the
      AntisymmetricRNN cells and the LSTM / GRU / GORU / NC-GRU; other cells (LSTM / GRU
      with non-default gate functions, Flax's own cells) use the plain scan. Same outputs
      and gradients (tested). Reverse mode only (``jax.grad``, ``jax.vjp``); for forward
      mode (``jax.jvp``, ``jax.jacfwd``, ``jax.hessian``) use ``fused=False``.
    input_projection: where the fused scan gets ``x_t W``: ``'hoisted'`` (one large
      product over the whole sequence before the loop), ``'in_loop'`` (one small product
      per step inside the loop, the weight gradient still one large product after it:
      saves writing and re-reading the ``(T, B, n)`` projected sequence, a gain when the
      input width ``d`` is much smaller than ``n``) or ``'auto'`` (in the loop when
      ``IN_LOOP_RATIO * d <= n``, ``n`` the state width (the carry's last axis);
      ``benchmarks/input_projection.py`` measures the two forms). The loop form covers the
      cells of :func:`lvf_jax.recurrences.rnn_scan` (``KernelCell`` subclasses, tanh RNNs)
      and the LSTM, GRU, GORU and NC-GRU; for the AntisymmetricRNN cells, Flax's own cells
      and with ``fused=False``, ``'auto'`` hoists and ``'in_loop'``
      raises ``ValueError``. Same outputs and gradients (tested).
  """

  cell: nn.Module
  time_major: bool = False
  return_carry: bool = False
  reverse: bool = False
  keep_order: bool = True
  unroll: int = 1
  checkpoint: bool = False
  fused: bool = False
  input_projection: str = "auto"
  segment_length: Any = None
  return_sequences: bool = True

  @nn.compact
  def __call__(self, inputs: Array, *, initial_carry: Optional[Carry] = None,
               seq_lengths: Optional[Array] = None, return_carry: Optional[bool] = None,
               reverse: Optional[bool] = None, time_major: Optional[bool] = None,
               keep_order: Optional[bool] = None, init_key: Optional[Any] = None,
               return_sequences: Optional[bool] = None):
    """Applies the cell over the time axis.

    Args:
      inputs: ``(*batch, time, features)`` (or time-major).
      initial_carry: optional initial carry (default ``cell.initialize_carry``).
      seq_lengths: optional int array ``(*batch,)`` of valid lengths.
      return_carry, reverse, time_major, keep_order, return_sequences: override the
        attributes.
      init_key: PRNG key for ``cell.initialize_carry`` (default ``jax.random.key(0)``).

    Returns:
      ``outputs`` or ``(final_carry, outputs)``; with ``return_sequences=False``
      ``final_carry`` (or ``(final_carry, None)`` with ``return_carry``).
    """
    return_carry = self.return_carry if return_carry is None else return_carry
    reverse = self.reverse if reverse is None else reverse
    time_major = self.time_major if time_major is None else time_major
    keep_order = self.keep_order if keep_order is None else keep_order
    return_sequences = self.return_sequences if return_sequences is None else return_sequences
    x_tm = _time_major_inputs(inputs, time_major)
    num_steps, batch_shape = x_tm.shape[0], x_tm.shape[1:-1]
    mask = None
    if seq_lengths is not None:
      seq_lengths = recurrences.check_seq_lengths("Recurrent", seq_lengths, batch_shape,
                                                  num_steps)
      mask = length_mask(seq_lengths, num_steps)
    if initial_carry is None:
      key = jax.random.key(0) if init_key is None else init_key
      initial_carry = self.cell.initialize_carry(key, batch_shape + x_tm.shape[-1:])
    # Under a mesh with Explicit axes the carry is typed with the batch sharding of x.
    initial_carry = recurrences.shard_batch_like(initial_carry, x_tm)
    segment = recurrences.check_segment_length("Recurrent", self.segment_length, num_steps)
    if is_structured(self.cell):
      carry, ys = self._scan_structured(x_tm, initial_carry, mask, segment, reverse,
                                        return_sequences)
    else:
      carry, ys = self._scan_flax(x_tm, initial_carry, mask, segment, reverse)
    if not return_sequences:
      return (carry, None) if return_carry else carry
    if reverse and not keep_order:  # processing order, padding kept at the end
      ys = jax.tree_util.tree_map(
          lambda a: flip_sequences(a, seq_lengths, num_batch_dims=len(batch_shape),
                                   time_major=True), ys)
    if not time_major:
      ys = jax.tree_util.tree_map(lambda a: jnp.moveaxis(a, 0, a.ndim - 2), ys)
    return (carry, ys) if return_carry else ys

  def _scan_structured(self, x_tm, carry, mask, segment, reverse, return_sequences):
    """An lvf_jax cell: ``prepare`` once, then its fused scan or the plain scan of
    ``cell.step`` (in segments with ``segment_length``). Returns ``(carry, ys)``."""
    options = carry_options(self.cell, carry)
    in_loop = self._in_loop_scan(x_tm, carry, options)  # validates input_projection
    if in_loop is not None:  # the raw inputs: the fused scan forms x_t W + b itself
      scan, weights = in_loop
      dtype = weights[0].dtype
      u = x_tm.astype(dtype)
    else:
      u = self.cell.project_inputs(x_tm, **options)  # an array or a tuple (gated cells)
      dtype = jax.tree_util.tree_leaves(u)[0].dtype
      scan = fused_scan(self.cell) if self.fused else None
      weights = None
    prep = self.cell.prepare(dtype=dtype, **options)
    run = self._runner(scan, reverse, checkpoint_whole=segment is None)
    carry = cast_tree(carry, dtype)
    try:
      if segment is None:
        return run(prep, carry, u, weights, mask)
      return recurrences.segment_scan(
          lambda c, xs: run(prep, c, xs[0], weights, xs[1]), carry, (u, mask),
          segment_length=segment, reverse=reverse, outputs=return_sequences)
    except TypeError as e:
      if scan is None or "forward-mode" not in str(e):
        raise
      raise TypeError(
          f"Recurrent(fused=True): the fused scan of {type(self.cell).__name__} has a "
          f"hand-written reverse-mode gradient (jax.custom_vjp): jax.grad, jax.vjp and "
          f"jax.jacrev work, forward mode (jax.jvp, jax.jacfwd, jax.hessian) does not. "
          f"Use Recurrent(..., fused=False) (the same function, differentiable in both "
          f"modes) for forward mode.") from e

  def _runner(self, scan, reverse: bool, checkpoint_whole: bool):
    """``run(prep, carry, u, input_weights, mask) -> (carry, ys)``: the fused ``scan`` (None:
    the plain scan of ``cell.step``)."""
    if scan is None:
      def run(p, c, u_, ws, m):
        del ws  # the plain scan's inputs are always projected before the loop
        return scan_steps(self.cell.step, p, c, u_, mask=m, reverse=reverse,
                          unroll=self.unroll, checkpoint=self.checkpoint)
      return run

    def run(p, c, u_, ws, m):
      kw = {} if ws is None else {"input_weights": ws}
      return scan(p, c, u_, mask=m, reverse=reverse, unroll=self.unroll, **kw)
    return jax.checkpoint(run) if self.checkpoint and checkpoint_whole else run

  def _scan_flax(self, x_tm, carry, mask, segment, reverse):
    """A Flax cell (``nn.RNNCellBase``): ``nn.scan`` of the cell over time."""
    if segment is not None:
      raise ValueError(
          f"Recurrent: argument 'segment_length' needs a cell of lvf_jax.cells (one with "
          f"prepare / project_inputs / step); got {type(self.cell).__name__}. Use "
          f"checkpoint=True for Flax's own cells.")
    self._in_loop_scan(x_tm, carry, carry_options(self.cell, carry))  # validates the options
    dtype = _fallback_dtype(self.cell, x_tm.dtype)
    body = nn.checkpoint(_fallback_body, prevent_cse=False) if self.checkpoint else \
        _fallback_body
    scan = nn.scan(body, variable_broadcast="params", split_rngs={"params": False},
                   in_axes=0, out_axes=0, reverse=reverse, unroll=self.unroll)
    return scan(self.cell, cast_tree(carry, dtype), (x_tm.astype(dtype), mask))

  def _in_loop_scan(self, x_tm: Array, carry: Carry, options: dict):
    """``(scan, (W, b))`` when ``input_projection`` puts ``x_t W`` inside the fused loop for
    this cell and input, else None (the input is projected before the loop). ``'auto'``
    compares the input width with the state width (the last axis of the carry)."""
    mode = self.input_projection
    if not isinstance(mode, str) or mode not in INPUT_PROJECTIONS:
      raise ValueError(f"Recurrent: argument 'input_projection' must be one of "
                       f"{list(INPUT_PROJECTIONS)}; got {mode!r}.")
    if mode == "hoisted":
      return None
    scan = None
    if self.fused and is_structured(self.cell):
      scan = fused_scan(self.cell, in_loop=True)
    if scan is None:
      if mode == "auto":
        return None
      raise ValueError(
          f"Recurrent: input_projection='in_loop' needs fused=True and a cell whose fused "
          f"scan forms x_t W in its loop (the KernelCell subclasses, the tanh RNNs, LSTM, "
          f"GRU, GORU, NC-GRU); got fused={self.fused} and {type(self.cell).__name__}. Use "
          f"'hoisted' or 'auto'.")
    width = jax.tree_util.tree_leaves(carry)[0].shape[-1]
    if mode == "auto" and IN_LOOP_RATIO * x_tm.shape[-1] > width:
      return None
    return scan, self.cell.input_weights(x_tm, **options)
