"""The AntisymmetricRNN's Euler recurrences with a hand-written VJP.

Chang, Chen, Haber and Chi 2019 (arXiv:1902.09689), row form:

* :func:`euler_scan` -- ``h_t = h_{t-1} + eps tanh(h_{t-1} K + u_t)`` (eq 12, with ``K =
  (W - W^T - gamma I)^T``);
* :func:`gated_euler_scan` -- ``h_t = h_{t-1} + eps sigmoid(a_t + u^z_t) * tanh(a_t +
  u^h_t)``, ``a_t = h_{t-1} K`` (eq 13).

The derivative is not a function of the outputs here, so the forward pass keeps its
activations -- in the buffers of the projected inputs, which it overwrites step by step
(the caller's array is not modified: XLA copies it first where it is used after the call)
-- and the backward pass writes the input cotangents over the activations. Wrap the layer
in ``checkpoint=True`` when memory is short.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Optional

import jax
import jax.numpy as jnp

from lvf_jax.recurrences._common import (big_matmul_tn, check_unroll, finish,
                                         flatten_batch_inputs, last_carry, mask_select,
                                         next_index, next_steps, processing_ends, step_indices,
                                         step_slice, step_update, valid_cotangent)

Array = jax.Array

__all__ = ["euler_scan", "gated_euler_scan"]


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5, 6, 7))
def _euler_core(kernel, u, h0, mask, eps, reverse, unroll, gated):
  hs, _ = _euler_forward(kernel, u, h0, mask, eps, reverse, unroll, gated)
  return last_carry(h0, hs, reverse), hs


def _euler_acts(a, u_t, gated):
  """``tanh`` (and the ``sigmoid`` gate) of the pre-activations ``a + u_t``.

  ``u_t`` is ``u^h_t`` or, gated, the pair ``(u^h_t, u^z_t)``.
  """
  if gated:
    return jnp.tanh(a + u_t[0]), jax.nn.sigmoid(a + u_t[1])
  return jnp.tanh(a + u_t), None


def _gated_pre_cotangents(e, tau, s):
  """Cotangents of the two pre-activations of eq (13) given ``e = eps dh_t`` and the
  activations ``tau = tanh(.)``, ``s = sigmoid(.)`` (``h_t = h_{t-1} + eps s tau``)."""
  return e * s * (1.0 - tau * tau), e * tau * (s * (1.0 - s))


def _euler_fwd(kernel, u, h0, mask, eps, reverse, unroll, gated):
  hs, acts = _euler_forward(kernel, u, h0, mask, eps, reverse, unroll, gated)
  return (last_carry(h0, hs, reverse), hs), (kernel, h0, mask, hs, acts)


# The Euler scans keep their activations in the buffers of the
# projected inputs (each forward step overwrites u_t, which it has just read, with tanh --
# and the gated scan u^z_t with the sigmoid) and the backward pass writes the input
# cotangents over the activations (each step reads the activations of the NEXT step to
# process from the buffer it has just written, so no buffer is read after a write to it):
# a training step keeps no more (T, B, n) arrays than the tanh floor's (the gated layer five
# instead of eight, the plain one four instead of five), and XLA:CPU maps (and faults in)
# fewer fresh pages per call. Where the caller still needs ``u`` after the call, XLA copies
# it first. Fewer XLA:CPU thunks per step (what a step costs at batch 10): the steps are
# unsigned (no negative-index wrap per slice), the forward step reads its activations back
# from the buffers it has just written (each activation then has one consumer and is
# computed inside the fusion that stores it), and the backward carry is g = c + dy_t (adding
# the next step's dy in the same fusion as the recurrent product).


def _as_parts(u, gated: bool) -> tuple[Array, ...]:
  """The loop's input buffers: ``(u_h, u_z)`` for the gated scan, ``(u,)`` otherwise."""
  return tuple(u) if gated else (u,)


def _euler_forward(kernel, u, h0, mask, eps, reverse, unroll, gated):
  """Forward loop of eq (12) (or, gated, eq (13)); returns ``hs`` and the activations,
  ``(tanh,)`` or ``(tanh, sigmoid)``, in the buffers of ``u`` (or ``(u_h, u_z)``)."""
  def body(carry, xs):
    h, bufs = carry
    t, m_t = xs
    u_t = tuple(step_slice(b, t) for b in bufs)
    acts = _euler_acts(jnp.dot(h, kernel), u_t if gated else u_t[0], gated)
    bufs = tuple(step_update(b, t, a) for b, a in zip(bufs, acts))
    # read back from the buffers, not the activations: each then has one consumer
    tau = step_slice(bufs[0], t)
    h_new = h + eps * (step_slice(bufs[1], t) * tau if gated else tau)
    if m_t is not None:
      h_new = mask_select(m_t, h_new, h)
    return (h_new, bufs), h_new

  parts = _as_parts(u, gated)
  (_, acts), hs = jax.lax.scan(body, (h0, parts), (step_indices(parts[0].shape[0]), mask),
                               reverse=reverse, unroll=unroll)
  return hs, acts


def _euler_bwd(eps, reverse, unroll, gated, res, cts):
  kernel, h0, mask, hs, acts = res
  dh_last, dhs = cts
  kernel_t = kernel.T
  num_steps = hs.shape[0]
  first, last = processing_ends(num_steps, reverse)

  def body(carry, xs):
    g, act_t, bufs = carry  # g = dL/dh_t (the carry's cotangent plus dy_t)
    t, m_t = xs
    e = eps * valid_cotangent(m_t, g)
    d = _gated_pre_cotangents(e, *act_t) if gated else (e * (1.0 - act_t[0] * act_t[0]),)
    bufs = tuple(step_update(b, t, v) for b, v in zip(bufs, d))
    at_last, nxt = next_index(t, last, reverse)
    dy_next = jnp.where(at_last, jnp.zeros((), g.dtype), step_slice(dhs, nxt))
    da = step_slice(bufs[0], t)
    if gated:
      da = da + step_slice(bufs[1], t)
    # d h_{t-1} = g (identity path; also the frozen carry of a padded step) + da K^T
    return (g + jnp.dot(da, kernel_t) + dy_next, tuple(step_slice(b, nxt) for b in bufs),
            bufs), None

  init = (dh_last + dhs[first], tuple(a[first] for a in acts), acts)
  (dh0, _, du), _ = jax.lax.scan(body, init, (step_indices(num_steps), mask),
                                 reverse=not reverse, unroll=unroll)
  da_all = du[0] + du[1] if gated else du[0]
  # dK = sum_t h_{t-1}^T da_t = H^T S + h0^T da_first, S = da one step back (gated: the
  # shift is computed in the same fusion as da = du_h + du_z; no shifted copy of H).
  # (``last`` is the step whose previous state is h0.)
  d_kernel = big_matmul_tn(hs, next_steps(da_all, reverse)) + big_matmul_tn(h0, da_all[last])
  return d_kernel, (du if gated else du[0]), dh0, None


_euler_core.defvjp(_euler_fwd, _euler_bwd)


def _euler_api(fn, kernel, u, h0, *, epsilon, reverse, unroll, mask, seq_lengths, gated):
  unroll = check_unroll(fn, unroll)
  if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) \
      or not math.isfinite(float(epsilon)) or float(epsilon) <= 0:
    raise ValueError(f"{fn}: argument 'epsilon' must be a finite number > 0; got {epsilon!r}.")
  # gated: two (T, B, n) arrays for the loop bodies
  kernel, u2, h02, _, mask2, batch_shape, _, _ = flatten_batch_inputs(
      fn, kernel, u, h0, None, mask, seq_lengths, 2 if gated else 1, split=gated)
  h_last, hs = _euler_core(kernel, u2, h02, mask2, float(epsilon), bool(reverse), unroll,
                           gated)
  return finish(h_last, hs, mask2, batch_shape)


def euler_scan(kernel: Array, u: Array, h0: Array, *, epsilon: float,
               reverse: bool = False, unroll: int = 1, mask: Optional[Array] = None,
               seq_lengths: Optional[Array] = None) -> tuple[Array, Array]:
  """``h_t = h_{t-1} + eps tanh(h_{t-1} K + u_t)`` (AntisymmetricRNN eq 12, row form).

  Args:
    kernel: ``K = (W - W^T - gamma I)^T``, ``(n, n)``.
    u: ``x_t V + b``, time-major ``(T, *batch, n)``.
    h0: initial carry ``(*batch, n)``.
    epsilon: step size ``eps > 0`` (a Python number).
    reverse, unroll, mask, seq_lengths: as in :func:`rnn_scan`.

  Returns:
    ``(h_final, hs)``, ``hs`` time-major ``(T, *batch, n)``.
  """
  return _euler_api("euler_scan", kernel, u, h0, epsilon=epsilon,
                    reverse=reverse, unroll=unroll, mask=mask, seq_lengths=seq_lengths,
                    gated=False)


def gated_euler_scan(kernel: Array, u: Array, h0: Array, *, epsilon: float,
                     reverse: bool = False, unroll: int = 1,
                     mask: Optional[Array] = None,
                     seq_lengths: Optional[Array] = None) -> tuple[Array, Array]:
  """Gated AntisymmetricRNN (eq 13, row form), one shared kernel ``K``::

      a_t = h_{t-1} K
      h_t = h_{t-1} + eps sigmoid(a_t + u^z_t) * tanh(a_t + u^h_t)

  Args:
    kernel: ``(n, n)``.
    u: the pair ``(x_t V_h + b_h, x_t V_z + b_z)`` of time-major ``(T, *batch, n)``
      arrays (what :meth:`~lvf_jax.cells.GatedAntisymmetricRNNCell.project_inputs`
      returns), or one ``(T, *batch, 2 n)`` array ``[u_h | u_z]`` (split here, which
      copies the sequence; projecting the halves separately avoids that copy).
    h0: ``(*batch, n)``.
    epsilon, reverse, unroll, mask, seq_lengths: as in :func:`euler_scan` (both
      activations are written over the two projected inputs).

  Returns:
    ``(h_final, hs)``, ``hs`` time-major ``(T, *batch, n)``.
  """
  return _euler_api("gated_euler_scan", kernel, u, h0, epsilon=epsilon,
                    reverse=reverse, unroll=unroll, mask=mask, seq_lengths=seq_lengths,
                    gated=True)
