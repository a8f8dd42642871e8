"""``h_t = sigma(h_{t-1} K + u_t, b)`` with a hand-written VJP: the scan of the kernel cells.

The forward pass is the plain recurrence of expRNN eq 3 (Lezcano-Casado and Martinez-Rubio
2019, arXiv:1901.08428), scoRNN eq 5 (Helfrich et al. 2018, arXiv:1707.09520), nnRNN eq 4
(Kerg et al. 2019, arXiv:1905.12080) and lvfRNN eq 5 / 16 (Azencot et al. 2021,
arXiv:2102.09589), in row form (``K = M^T``); the design of the backward pass is in
:mod:`lvf_jax.recurrences`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from lvf_jax import _validation
from lvf_jax.recurrences import persistent as _persistent
from lvf_jax.recurrences._common import (act_fwd, act_grad_from_output, big_matmul_tn,
                                         check_unroll, dot_rows,
                                         explicitly_sharded, finish, flatten_batch_inputs,
                                         last_carry, mask_select, modrelu_bias_cotangent,
                                         modrelu_split_vjp, next_index, next_steps,
                                         padded_carry_cotangent, prev_states,
                                         processing_ends, replicated, step_indices, step_slice,
                                         step_update)

Array = jax.Array

ACTIVATIONS = ("tanh", "modrelu", "identity", "relu", "modrelu_split")

__all__ = ["ACTIVATIONS", "rnn_scan"]


@functools.partial(jax.custom_vjp, nondiff_argnums=(6, 7, 8, 9))
def _rnn_core(kernel, w_in, u, h0, bias, mask, activation, reverse, unroll, operator):
  hs = _rnn_forward(kernel, w_in, u, h0, bias, mask, activation, reverse, unroll, operator)
  return last_carry(h0, hs, reverse), hs


def _recur(operator, kernel, h):
  """``h K``: the dense product, or the structured ``operator(kernel, h)``."""
  return jnp.dot(h, kernel) if operator is None else operator(kernel, h)


def _rnn_forward(kernel, w_in, u, h0, bias, mask, activation, reverse, unroll, operator):
  def body(h, xs):
    u_t, m_t = xs
    if w_in is not None:  # in-loop input projection (small input width)
      u_t = jnp.dot(u_t, w_in)
    h_new = act_fwd(activation, _recur(operator, kernel, h) + u_t, bias)
    if m_t is not None:
      h_new = mask_select(m_t, h_new, h)
    return h_new, h_new

  _, hs = jax.lax.scan(body, h0, (u, mask), reverse=reverse, unroll=unroll)
  return hs


def _rnn_fwd(kernel, w_in, u, h0, bias, mask, activation, reverse, unroll, operator):
  hs = _rnn_forward(kernel, w_in, u, h0, bias, mask, activation, reverse, unroll, operator)
  x = None if w_in is None else u
  return (last_carry(h0, hs, reverse), hs), (kernel, w_in, x, h0, bias, mask, hs)


def _rnn_bwd(activation, reverse, unroll, operator, res, cts):
  kernel, w_in, x, h0, bias, mask, hs = res
  dh_last, dhs = cts
  has_bias = bias is not None
  # modReLU's bias gradient is sum dz * sign(h), not sum dz: accumulate it in the loop,
  # where h_t and dz_t are already in registers (saves a pass over two T B n arrays).
  acc_bias = has_bias and activation in ("modrelu", "modrelu_split")
  # With the projection inside the loop nobody needs dZ aligned with u: emit only the
  # shifted sequence S and shift the (narrow) inputs instead.
  emit_aligned = w_in is None
  num_steps = hs.shape[0]
  first, last = processing_ends(num_steps, reverse)
  body = _backward_body(activation, bias, acc_bias, emit_aligned, last, reverse,
                        _transposed_step(kernel, operator, h0))
  db0 = jnp.zeros(bias.shape, hs.dtype) if acc_bias else None
  init = (dh_last + dhs[first], db0, jnp.zeros_like(dh_last), dhs)
  (dh0, db, dz_first, shifted), dz = jax.lax.scan(
      body, init, (step_indices(num_steps), hs, mask), reverse=not reverse, unroll=unroll)
  d_kernel = _kernel_cotangent(kernel, operator, h0, hs, shifted, dz_first)
  d_bias = None
  if has_bias:
    d_bias = db if acc_bias else _sum_rows(shifted) + jnp.sum(dz_first, axis=0)
  if emit_aligned:  # hoisted projection: du = dZ (the one new sequence of the loop)
    return d_kernel, None, dz, dh0, d_bias, None
  d_w_in, d_x = _input_cotangents(x, w_in, shifted, dz_first, reverse)
  return d_kernel, d_w_in, d_x, dh0, d_bias, None


def _transposed_step(kernel: Array, operator, h0: Array):
  """``g -> g K^T``, or the transpose of the linear ``h -> operator(kernel, h)``."""
  if operator is None:
    kernel_t = kernel.T
    return lambda g: jnp.dot(g, kernel_t)
  back_t = jax.linear_transpose(lambda h: operator(kernel, h), h0)
  return lambda g: back_t(g)[0]


def _backward_body(activation, bias, acc_bias: bool, emit_aligned: bool, last, reverse: bool,
                   back):
  """The backward loop's step.

  It writes ``S_t = dz_{t+1}`` (``dz_{t-1}`` when reversed; zero for the first step it
  processes) over ``dy_t`` in the output cotangents' buffer, right after reading ``dy_t``,
  and reads the next step's ``dy`` from the buffer it has just written (reading ``dy_t``
  before the write would make XLA copy the whole buffer at every step): ``dK = H^T S +
  h0^T dz_last`` needs no shifted copy of ``H``, and the sequence-long cotangents need no
  buffer of their own; with the hoisted projection the loop also emits the aligned ``dZ``,
  the input cotangent (the backward pass's one new sequence).
  """
  has_bias = bias is not None
  split = has_bias and activation == "modrelu_split"

  def body(carry, xs):
    g, db, dz_prev, buf = carry  # g = dL/dh_t (the carry's cotangent plus dy_t)
    t, h_t, m_t = xs
    if split:  # complex modReLU: a 2 x 2 Jacobian per unit, bias cotangent alongside
      gm = g if m_t is None else mask_select(m_t, g, jnp.zeros((), g.dtype))
      dz, db_t = modrelu_split_vjp(h_t, gm, bias)
      db = db + db_t
    else:
      d = act_grad_from_output(activation, h_t, has_bias)
      dz = g if d is None else g * d
      if m_t is not None:
        dz = mask_select(m_t, dz, jnp.zeros((), dz.dtype))
      if acc_bias:
        db = db + modrelu_bias_cotangent(dz, h_t)
    buf = step_update(buf, t, dz_prev)
    at_last, nxt = next_index(t, last, reverse)
    dy_next = jnp.where(at_last, jnp.zeros((), g.dtype), step_slice(buf, nxt))
    c_new = back(dz) + dy_next
    if m_t is not None:
      # The carry of a padded step is the old carry: its cotangent flows straight through.
      c_new = c_new + padded_carry_cotangent(m_t, g)
    return (c_new, db, dz, buf), (dz if emit_aligned else None)

  return body


def _kernel_cotangent(kernel, operator, h0, hs, shifted, dz_first) -> Array:
  """``dK = H^T S + h0^T dz_first`` as one large product (with an operator: the sum over
  all ``T B`` rows of its parameter cotangent, at once; an explicitly sharded batch is
  gathered for it first)."""
  if operator is None:
    return big_matmul_tn(hs, shifted) + big_matmul_tn(h0, dz_first)
  hs, shifted, h0, dz_first = map(replicated, (hs, shifted, h0, dz_first))
  rows = lambda a: a.reshape((-1, a.shape[-1]))  # noqa: E731
  h_all = jnp.concatenate([rows(hs), h0])
  g_all = jnp.concatenate([rows(shifted), dz_first])
  return jax.vjp(lambda k: operator(k, h_all), kernel)[1](g_all)[0]


def _input_cotangents(x, w_in, shifted, dz_first, reverse: bool) -> tuple[Array, Array]:
  """``(dW_in, dX)`` of the projection inside the loop: ``sum_t x_t^T dz_t = X_next^T S +
  x_first^T dz_first`` with ``X_next[t] = x_{t+1}`` (``x_{t-1}`` when reversed; zero past the
  end), a cheap ``(T, B, d)`` shift; ``dX = dZ W^T`` formed from ``S`` and shifted back
  (evaluated only if ``x`` is differentiated)."""
  x_next, x_first = next_steps(x, reverse), x[-1 if reverse else 0]
  d_w_in = big_matmul_tn(x_next, shifted) + big_matmul_tn(x_first, dz_first)
  dx_shifted = dot_rows(shifted, w_in.T)
  return d_w_in, prev_states(jnp.dot(dz_first, w_in.T), dx_shifted, reverse)


def _sum_rows(a: Array) -> Array:
  """``sum_{t, b} a[t, b]`` as a ``(T B,) x (T B, n)`` product, which reads the in-place
  cotangent buffer once (XLA:CPU's reduction of that buffer touches fresh pages at every
  call)."""
  if explicitly_sharded(a):
    return jnp.sum(a, axis=tuple(range(a.ndim - 1)))
  a2 = a.reshape((-1, a.shape[-1]))
  return jnp.dot(jnp.ones((a2.shape[0],), a.dtype), a2)


_rnn_core.defvjp(_rnn_fwd, _rnn_bwd)


def _persistent_unfit(activation, input_kernel, operator, mask, seq_lengths, reverse,
                      h0) -> Optional[str]:
  """What keeps these options off the persistent kernel (``None``: nothing)."""
  if activation != "tanh":
    return f"activation='tanh'; got {activation!r}"
  for name, value in (("input_kernel", input_kernel), ("operator", operator), ("mask", mask),
                      ("seq_lengths", seq_lengths)):
    if value is not None:
      return f"no '{name}'"
  if reverse:
    return "reverse=False"
  if jnp.ndim(h0) != 2:
    return f"one batch axis (h0 of shape (batch, n)); got h0 of shape {jnp.shape(h0)}"
  width = jnp.shape(h0)[-1]
  if not _persistent.fits(width):
    return (f"a width that pads to at most MAX_WIDTH = {_persistent.MAX_WIDTH}; got {width}")
  return None


def _runs_persistent(fn, persistent, activation, input_kernel, operator, mask, seq_lengths,
                     reverse, h0, u) -> bool:
  """``rnn_scan``'s choice of the persistent kernel (its ``persistent`` argument)."""
  if persistent is not None and not isinstance(persistent, bool):
    raise ValueError(f"{fn}: argument 'persistent' must be None, True or False; got "
                     f"{persistent!r}.")
  unfit = _persistent_unfit(activation, input_kernel, operator, mask, seq_lengths, reverse,
                            h0)
  if persistent and unfit:
    raise ValueError(f"{fn}: persistent=True needs {unfit}.")
  if persistent is None:
    return not unfit and _persistent.selected(jnp.shape(h0)[-1], jnp.result_type(u))
  return persistent


def _persistent_call(kernel, u, h0, bias):
  """``rnn_scan``'s tanh recurrence through the persistent kernel, ``b`` added to ``u``."""
  u = jnp.asarray(u)
  if bias is not None:
    u = u + jnp.asarray(bias, u.dtype)[None, None, :]
  return _persistent.persistent_rnn_scan(
      jnp.asarray(kernel, u.dtype), u, jnp.asarray(h0, u.dtype),
      interpret=jax.default_backend() != "gpu")


def rnn_scan(kernel: Array, u: Array, h0: Array, bias: Optional[Array] = None, *,
             activation: str = "tanh", input_kernel: Optional[Array] = None,
             reverse: bool = False, unroll: int = 1,
             mask: Optional[Array] = None,
             seq_lengths: Optional[Array] = None,
             operator: Optional[Callable[[Any, Array], Array]] = None,
             persistent: Optional[bool] = None) -> tuple[Array, Array]:
  """``h_t = sigma(h_{t-1} K + u_t, b)`` over time with the fused backward pass.

  The forward pass is the plain recurrence of expRNN eq 3 / scoRNN eq 5 / lvfRNN eq 5
  (row form, ``K = M^T``); the backward pass propagates only the state cotangent and forms
  ``dK = sum_t h_{t-1}^T dz_t`` as one ``(n, T B) x (T B, n)`` product (module docstring).

  Args:
    kernel: recurrent kernel ``K`` in row form, ``(n, n)``.
    u: projected inputs, time-major ``(T, *batch, n)`` (``x_t W`` plus any input bias).
    h0: initial carry ``(*batch, n)``.
    bias: optional ``(n,)``: inside the activation (``tanh(z + b)``, modReLU's ``b``);
      ``(n / 2,)`` for ``'modrelu_split'``.
    activation: ``'tanh'``, ``'modrelu'``, ``'identity'``, ``'relu'`` or
      ``'modrelu_split'`` (the complex modReLU of a state carried as ``[Re h | Im h]``:
      uRNN, complex EURNN). Both modReLUs without a bias are the identity.
    input_kernel: optional ``W (d, n)``. If given, ``u`` is the raw input ``(T, *batch,
      d)`` and ``u_t W`` is computed inside the loop; ``dW = X^T dZ`` and ``dX = dZ W^T``
      are still one large product each. Use it when ``d`` is much smaller than ``n``
      (tokens, pixels): it saves writing and re-reading the ``(T, B, n)`` projected
      sequence. Otherwise hoist the projection (``u = x W``, the default).
    reverse: process ``t = T-1, ..., 0`` (outputs stay aligned with ``u``).
    unroll: ``lax.scan`` unroll factor of both loops.
    mask: optional bool ``(T, *batch)``: where False the carry is frozen, the output zero.
    seq_lengths: optional int ``(*batch,)``, alternative to ``mask`` (``t < length``).
    operator: optional structured recurrence: ``kernel`` is then any pytree of parameters
      and ``operator(kernel, h)`` (``h`` of shape ``(B, n)``, linear in ``h``) stands for
      ``h K``, e.g. the EUNN's rotation layers (``O(L n)`` instead of ``O(n^2)`` a row).
      The backward loop applies its transpose (``jax.linear_transpose``); the parameters'
      cotangent is one vector-Jacobian product of ``operator`` over all ``T B`` rows after
      the loop, as ``dK`` is one product. Pass a module-level function (it is a static
      argument).
    persistent: run the recurrence as one persistent Pallas kernel
      (:func:`lvf_jax.recurrences.persistent_rnn_scan`, in Pallas's interpreter off a GPU);
      it takes ``activation='tanh'``, a dense kernel, projected inputs, one batch axis and
      no mask or ``reverse``. ``None`` (default) selects it where those hold and
      :func:`lvf_jax.recurrences.persistent.selected` says it was measured faster on this
      GPU; ``False`` keeps the XLA loop.

  Returns:
    ``(h_final, hs)`` with ``hs`` time-major ``(T, *batch, n)``. Floating arguments are
    cast to ``u.dtype``.
  """
  fn = "rnn_scan"
  _validation.check_choice(fn, "activation", activation, ACTIVATIONS)
  unroll = check_unroll(fn, unroll)
  if _runs_persistent(fn, persistent, activation, input_kernel, operator, mask, seq_lengths,
                      reverse, h0, u):
    return _persistent_call(kernel, u, h0, bias)
  params = kernel
  if operator is not None:
    if not callable(operator):
      raise ValueError(f"{fn}: argument 'operator' must be a function (params, h) -> h K; "
                       f"got {type(operator).__name__}.")
    n_state = jnp.shape(h0)[-1]
    kernel = jax.ShapeDtypeStruct((n_state, n_state), jnp.result_type(u))
  split_bias = None
  if activation == "modrelu_split" and bias is not None:  # one bias per complex unit
    n = (kernel.shape if operator is not None else jnp.shape(kernel))[-1]
    split_bias, bias = jnp.asarray(bias), None
    if n % 2 or split_bias.shape != (n // 2,):
      raise ValueError(
          f"{fn}: with activation='modrelu_split' the kernel acts on [Re h | Im h] (even "
          f"size 2m) and argument 'bias' must have shape (m,); got kernel {tuple(kernel.shape)} "
          f"and bias {split_bias.shape}.")
  kernel, u2, h02, bias, mask2, batch_shape, w_in, _ = flatten_batch_inputs(
      fn, kernel, u, h0, bias, mask, seq_lengths, 1, input_kernel=input_kernel)
  if split_bias is not None:
    bias = split_bias.astype(u2.dtype)
  if operator is not None:  # the operator's parameters, floating leaves in u's dtype
    kernel = jax.tree_util.tree_map(
        lambda a: a.astype(u2.dtype) if jnp.issubdtype(jnp.result_type(a), jnp.floating)
        else a, params)
  h_last, hs = _rnn_core(kernel, w_in, u2, h02, bias, mask2, activation, bool(reverse),
                         unroll, operator)
  return finish(h_last, hs, mask2, batch_shape)
