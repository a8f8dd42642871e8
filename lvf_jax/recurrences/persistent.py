"""A persistent Pallas kernel for ``h_t = tanh(h_{t-1} K + u_t)``: the loop over time inside
one kernel, forward and backward.

The XLA scan of :func:`lvf_jax.recurrences.rnn_scan` launches the body's kernels at every
step; at small widths a GPU then waits on the loop's per-step latency, not on arithmetic.
Here the whole recurrence is one Pallas program: ``K`` is read once and kept for every step,
and the loop over ``t`` runs inside the kernel. The backward pass is a second persistent
kernel that walks the steps in reverse and writes ``delta_t = dL/dz_t``; the weight gradient
``dK = sum_t h_{t-1}^T delta_t`` is then one ``(n, T B) x (T B, n)`` product, and the input
gradient is ``delta`` itself, as in :func:`lvf_jax.recurrences.rnn_scan`.

The kernels run on any backend that lowers Pallas (GPU) and, with ``interpret=True``, on the
CPU, where the tests compare them with the XLA scan. Nothing selects them by default.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from lvf_jax.recurrences import _common

Array = jax.Array


def _pallas():
  """``jax.experimental.pallas``, imported on first use (it is not needed elsewhere)."""
  from jax.experimental import pallas  # pylint: disable=g-import-not-at-top
  return pallas


def _forward_kernel(k_ref, u_ref, h0_ref, hs_ref):
  """``hs[t] = tanh(hs[t-1] K + u[t])`` for every ``t``, ``K`` read once."""
  kernel = k_ref[...]
  steps = u_ref.shape[0]

  def body(t, h):
    h = jnp.tanh(jnp.dot(h, kernel, preferred_element_type=h.dtype) + u_ref[t])
    hs_ref[t] = h
    return h

  jax.lax.fori_loop(0, steps, body, h0_ref[...])


def _backward_kernel(k_ref, hs_ref, dys_ref, dh_ref, deltas_ref, dh0_ref):
  """``delta_t = (dy_t + g_t) (1 - h_t^2)``, ``g_{t-1} = delta_t K^T``, from ``t = T - 1``
  down, ``g_{T-1}`` the final carry's cotangent; writes every ``delta_t`` and ``g_{-1}``."""
  kernel_t = k_ref[...].T
  steps = hs_ref.shape[0]

  def body(i, g):
    t = steps - 1 - i
    h = hs_ref[t]
    delta = (dys_ref[t] + g) * (1 - h * h)
    deltas_ref[t] = delta
    return jnp.dot(delta, kernel_t, preferred_element_type=g.dtype)

  dh0_ref[...] = jax.lax.fori_loop(0, steps, body, dh_ref[...])


def _check(kernel: Array, u: Array, h0: Array) -> None:
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


def _scan_fwd(kernel, u, h0, interpret):
  hs = _pallas().pallas_call(_forward_kernel, out_shape=jax.ShapeDtypeStruct(u.shape, u.dtype),
                             interpret=interpret)(kernel, u, h0)
  return (hs[-1], hs), (kernel, h0, hs)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _scan(kernel, u, h0, interpret):
  return _scan_fwd(kernel, u, h0, interpret)[0]


def _scan_bwd(interpret, res, cotangents):
  kernel, h0, hs = res
  dh_last, dys = cotangents
  deltas, dh0 = _pallas().pallas_call(
      _backward_kernel,
      out_shape=(jax.ShapeDtypeStruct(hs.shape, hs.dtype),
                 jax.ShapeDtypeStruct(h0.shape, h0.dtype)),
      interpret=interpret)(kernel, hs, dys, dh_last)
  dkernel = _common.big_matmul_tn(_common.prev_states(h0, hs, reverse=False), deltas)
  return dkernel, deltas, dh0


_scan.defvjp(_scan_fwd, _scan_bwd)


def persistent_rnn_scan(kernel: Array, u: Array, h0: Array, *,
                        interpret: bool = False) -> tuple[Array, Array]:
  """``h_t = tanh(h_{t-1} K + u_t)`` over time in one persistent Pallas kernel.

  The function of :func:`lvf_jax.recurrences.rnn_scan` with ``activation='tanh'``, no bias,
  mask or input kernel (row form, ``K = M^T``), and its reverse-mode derivative (a second
  persistent kernel; ``dK`` as one large product).

  Args:
    kernel: recurrent kernel ``K``, ``(n, n)``.
    u: projected inputs, time-major ``(T, batch, n)``.
    h0: initial state ``(batch, n)``.
    interpret: run the kernels in Pallas's interpreter (any backend, the CPU included).

  Returns:
    ``(h_T, hs)``: the last state and every state ``(T, batch, n)``.

  Raises:
    ValueError: for shapes or dtypes that do not fit (argument and shape named).
  """
  _check(kernel, u, h0)
  return _scan(kernel, u, h0, interpret)
