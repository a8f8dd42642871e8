"""A persistent Pallas kernel for ``h_t = tanh(h_{t-1} K + u_t)``: the loop over time inside
one kernel, forward and backward.

The XLA scan of :func:`lvf_jax.recurrences.rnn_scan` launches the body's kernels at every
step; at small widths a GPU then waits on the loop's per-step latency, not on arithmetic.
Here the whole recurrence is one Pallas program per block of the batch: ``K`` is read once
and kept for every step, and the loop over ``t`` runs inside the kernel. The batch's blocks
are independent programs (on a GPU, one thread block each). The backward pass is a second
persistent kernel that walks the steps in reverse and writes ``delta_t = dL/dz_t``; the
weight gradient ``dK = sum_t h_{t-1}^T delta_t`` is then one ``(n, T B) x (T B, n)``
product, and the input gradient is ``delta`` itself, as in
:func:`lvf_jax.recurrences.rnn_scan`.

On a GPU the kernels go through Pallas's Triton backend, which needs every array a kernel
computes with to have power-of-two sides of at least 16: the width and the batch are padded
with zeros to such sizes (exact: a zero column of ``K`` and a zero input keep a padded unit
at ``tanh(0) = 0``, and a zero row of ``K`` keeps it out of the others), and the result is
sliced back. ``K`` must fit on chip, so the padded width is at most :data:`MAX_WIDTH`.
(JAX deprecates the Triton backend from 0.11 in favour of Mosaic GPU, whose ``pallas_call``
would stage every whole operand, the ``(T, B, n)`` sequence included, in shared memory.) With
``interpret=True`` the same programs run in Pallas's interpreter on any backend, the CPU
included, where the tests compare them with the XLA scan.

:func:`lvf_jax.recurrences.rnn_scan` selects the kernel (``persistent=None``) only on a GPU
whose kind ``benchmarks/gpu.py`` measured it faster than the XLA loop at that padded width
and at the matmul precision in effect:
:func:`measured_faster`, the package's ``persistent_faster.json``, which ``python -m
experiments.gpu_kit collect`` writes from the benchmark's record. Without such a record it
selects nothing.
"""

from __future__ import annotations

import functools
import json
import os

import jax
import jax.numpy as jnp

from lvf_jax.recurrences import _common

Array = jax.Array

MIN_SIDE = 16
"""The smallest side Triton's matrix product takes; the padded width and batch block are at
least this."""

MAX_WIDTH = 128
"""The largest padded width: ``K`` in float32 is then 64 KiB. At 256 (256 KiB) Triton asks
for more shared memory than one thread block of an NVIDIA H200 has (278,528 or 294,912
bytes against 232,448; ``docs/GPU.md``)."""

MEASURED_FASTER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               "persistent_faster.json")
"""The package's record of where the kernel was measured faster (:func:`measured_faster`)."""


@functools.lru_cache(maxsize=1)
def measured_faster() -> dict[str, dict[str, frozenset[int]]]:
  """``{GPU device kind: {precision: padded widths}}`` at which the kernel was measured
  faster than the XLA loop, read once from :data:`MEASURED_FASTER` (empty until a GPU has
  measured it). ``precision`` is ``'fp32'`` (JAX's matmul precision ``'highest'``) or
  ``'tf32'`` (its default, TF32 on a GPU)."""
  with open(MEASURED_FASTER) as f:
    record = json.load(f)
  return {kind: {p: frozenset(w) for p, w in by_precision.items()}
          for kind, by_precision in record["faster"].items()}


MATMUL_PRECISIONS = {"fp32": ("highest", "float32"), "tf32": ("default", None)}
"""The benchmark's precision names and the ``jax.default_matmul_precision`` values each
stands for, the first the one ``benchmarks/gpu.py`` sets: full float32, and JAX's default
(TF32 on a GPU)."""


def current_precision():
  """The :data:`MATMUL_PRECISIONS` name of the matmul precision in effect
  (``jax.default_matmul_precision``), None for any other (not measured)."""
  value = jax.config.jax_default_matmul_precision
  return next((name for name, values in MATMUL_PRECISIONS.items() if value in values), None)


def selected(n: int, dtype) -> bool:
  """Whether a float32 recurrence of width ``n`` runs through the kernel by default: on a
  GPU whose kind :func:`measured_faster` lists at ``padded_side(n)`` for the matmul
  precision in effect."""
  device = jax.devices()[0]
  if jnp.dtype(dtype) != jnp.float32 or device.platform != "gpu":
    return False
  widths = measured_faster().get(device.device_kind, {}).get(current_precision(), ())
  return padded_side(n) in widths


def _pallas():
  """``jax.experimental.pallas`` and its Triton backend, imported on first use (they are not
  needed elsewhere)."""
  from jax.experimental import pallas  # pylint: disable=g-import-not-at-top
  from jax.experimental.pallas import triton  # pylint: disable=g-import-not-at-top
  return pallas, triton


def padded_side(size: int) -> int:
  """The side Triton computes with for ``size``: the least power of two ``>= size`` and
  ``>= MIN_SIDE``."""
  return max(MIN_SIDE, 1 << (size - 1).bit_length())


def fits(n: int) -> bool:
  """Whether the kernel takes width ``n``: ``padded_side(n) <= MAX_WIDTH``."""
  return padded_side(n) <= MAX_WIDTH


def _forward_kernel(precision, k_ref, u_ref, h0_ref, hs_ref):
  """``hs[t] = tanh(hs[t-1] K + u[t])`` for every ``t`` of one batch block, ``K`` read
  once."""
  kernel = k_ref[...]
  steps = u_ref.shape[0]

  def body(t, h):
    z = jnp.dot(h, kernel, precision=precision, preferred_element_type=h.dtype) + u_ref[t]
    h = jnp.tanh(z)
    hs_ref[t] = h
    return h

  jax.lax.fori_loop(0, steps, body, h0_ref[...])


def _backward_kernel(precision, k_ref, hs_ref, dys_ref, dh_ref, deltas_ref, dh0_ref):
  """``delta_t = (dy_t + g_t) (1 - h_t^2)``, ``g_{t-1} = delta_t K^T``, from ``t = T - 1``
  down, ``g_{T-1}`` the final carry's cotangent; writes every ``delta_t`` and ``g_{-1}`` of
  one batch block."""
  kernel_t = k_ref[...].T
  steps = hs_ref.shape[0]

  def body(i, g):
    t = steps - 1 - i
    h = hs_ref[t]
    delta = (dys_ref[t] + g) * (1 - h * h)
    deltas_ref[t] = delta
    return jnp.dot(delta, kernel_t, precision=precision, preferred_element_type=g.dtype)

  dh0_ref[...] = jax.lax.fori_loop(0, steps, body, dh_ref[...])


def _check(kernel: Array, u: Array, h0: Array, block_batch: int) -> None:
  n = kernel.shape[-1]
  if kernel.ndim != 2 or kernel.shape[0] != n:
    raise ValueError(f"persistent_rnn_scan: argument 'kernel' must be (n, n); got shape "
                     f"{kernel.shape}.")
  if u.ndim != 3 or u.shape[-1] != n:
    raise ValueError(f"persistent_rnn_scan: argument 'u' must be (T, batch, {n}); got shape "
                     f"{u.shape}.")
  if h0.shape != u.shape[1:]:
    raise ValueError(f"persistent_rnn_scan: argument 'h0' must be (batch, {n}) = "
                     f"{u.shape[1:]}; got shape {h0.shape}.")
  if not kernel.dtype == u.dtype == h0.dtype:
    raise ValueError(f"persistent_rnn_scan: 'kernel', 'u' and 'h0' must share a dtype; got "
                     f"{kernel.dtype}, {u.dtype}, {h0.dtype}.")
  if not fits(n):
    raise ValueError(f"persistent_rnn_scan: the width {n} pads to {padded_side(n)}, above "
                     f"MAX_WIDTH = {MAX_WIDTH} (K must fit on chip); use rnn_scan.")
  if (isinstance(block_batch, bool) or not isinstance(block_batch, int)
      or block_batch != padded_side(block_batch)):
    raise ValueError(f"persistent_rnn_scan: argument 'block_batch' must be a power of two "
                     f">= {MIN_SIDE}; got {block_batch!r}.")


def _call(kernel_fn, args, block_specs, out_specs, out_shape, batch_blocks, interpret):
  """One ``pallas_call`` over the batch's blocks, through Triton on a GPU."""
  pallas, triton = _pallas()
  return pallas.pallas_call(
      kernel_fn, out_shape=out_shape, grid=(batch_blocks,), in_specs=block_specs,
      out_specs=out_specs, interpret=interpret,
      compiler_params=triton.CompilerParams(num_warps=4, num_stages=1))(*args)


def _specs(steps: int, block: int, n: int):
  """Block specs of ``K`` (whole), a time-major sequence and a state (one batch block)."""
  pallas, _ = _pallas()
  return (pallas.BlockSpec((n, n), lambda b: (0, 0)),
          pallas.BlockSpec((steps, block, n), lambda b: (0, b, 0)),
          pallas.BlockSpec((block, n), lambda b: (b, 0)))


def _scan_fwd(kernel, u, h0, block, precision, interpret):
  k_spec, seq_spec, state_spec = _specs(u.shape[0], block, kernel.shape[0])
  hs = _call(functools.partial(_forward_kernel, precision), (kernel, u, h0),
             [k_spec, seq_spec, state_spec], seq_spec,
             jax.ShapeDtypeStruct(u.shape, u.dtype), u.shape[1] // block, interpret)
  return (hs[-1], hs), (kernel, h0, hs)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def _scan(kernel, u, h0, block, precision, interpret):
  return _scan_fwd(kernel, u, h0, block, precision, interpret)[0]


def _scan_bwd(block, precision, interpret, res, cotangents):
  kernel, h0, hs = res
  dh_last, dys = cotangents
  k_spec, seq_spec, state_spec = _specs(hs.shape[0], block, kernel.shape[0])
  deltas, dh0 = _call(
      functools.partial(_backward_kernel, precision), (kernel, hs, dys, dh_last),
      [k_spec, seq_spec, seq_spec, state_spec], (seq_spec, state_spec),
      (jax.ShapeDtypeStruct(hs.shape, hs.dtype), jax.ShapeDtypeStruct(h0.shape, h0.dtype)),
      hs.shape[1] // block, interpret)
  dkernel = _common.big_matmul_tn(_common.prev_states(h0, hs, reverse=False), deltas)
  return dkernel, deltas, dh0


_scan.defvjp(_scan_fwd, _scan_bwd)


def _pad_to(x: Array, shape: tuple[int, ...]) -> Array:
  """``x`` with zeros after its entries up to ``shape`` (``x`` itself when it has it)."""
  if x.shape == shape:
    return x
  return jnp.pad(x, [(0, s - d) for d, s in zip(x.shape, shape, strict=True)])


def persistent_rnn_scan(kernel: Array, u: Array, h0: Array, *, block_batch: int = MIN_SIDE,
                        precision=None, interpret: bool = False) -> tuple[Array, Array]:
  """``h_t = tanh(h_{t-1} K + u_t)`` over time in one persistent Pallas kernel.

  The function of :func:`lvf_jax.recurrences.rnn_scan` with ``activation='tanh'``, no bias,
  mask or input kernel (row form, ``K = M^T``), and its reverse-mode derivative (a second
  persistent kernel; ``dK`` as one large product). The width is padded to
  :func:`padded_side` and the batch to a multiple of the block (see the module's
  docstring); the results are those of the unpadded recurrence.

  Args:
    kernel: recurrent kernel ``K``, ``(n, n)``; ``padded_side(n) <= MAX_WIDTH``.
    u: projected inputs, time-major ``(T, batch, n)``.
    h0: initial state ``(batch, n)``.
    block_batch: batch rows per program (a power of two ``>= MIN_SIDE``; a smaller batch
      takes one program of ``padded_side(batch)`` rows).
    precision: the step's matrix-product precision (``jax.lax.Precision``), as in
      :func:`jax.numpy.dot`; ``None`` follows ``jax.default_matmul_precision``.
    interpret: run the kernels in Pallas's interpreter (any backend, the CPU included).

  Returns:
    ``(h_T, hs)``: the last state and every state ``(T, batch, n)``.

  Raises:
    ValueError: for shapes or dtypes that do not fit, a width above ``MAX_WIDTH``, or a
      ``block_batch`` that is not a power of two ``>= MIN_SIDE`` (argument and value named).
  """
  _check(kernel, u, h0, block_batch)
  steps, batch, n = u.shape
  width = padded_side(n)
  block = min(block_batch, padded_side(batch))
  rows = -(-batch // block) * block
  h_last, hs = _scan(_pad_to(kernel, (width, width)), _pad_to(u, (steps, rows, width)),
                     _pad_to(h0, (rows, width)), block, precision, interpret)
  return h_last[:batch, :n], hs[:, :batch, :n]
