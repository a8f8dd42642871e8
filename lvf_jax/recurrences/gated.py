"""LSTM, GRU, GORU and NC-GRU recurrences with a hand-written VJP.

Same design as :func:`lvf_jax.recurrences.rnn_scan`: the forward ``lax.scan`` does one
``(B, n) x (n, k n)`` product per step (the ``k`` recurrent kernels concatenated) and stores
the gate activations; the backward ``lax.scan`` propagates only the state cotangents (one
``(B, k n) x (k n, n)`` product per step) and emits the pre-activation cotangents ``dZ``;
after it, ``dK = sum_t h_{t-1}^T dz_t`` is **one** ``(n, T B) x (T B, k n)`` product (the
GRU / NC-GRU: one per kernel block, the same FLOPs) and the recurrent-bias gradient one
reduction. The input cotangent is ``dZ`` (restricted to the
input's columns), so the caller's autodiff turns the hoisted input projection's gradient
into one large product too. Plain autodiff of the same scan computes a small weight-gradient
product at every step instead.

Row-vector convention, Flax's formulations and gate order (:class:`lvf_jax.cells.LSTMCell`,
:class:`lvf_jax.cells.GRUCell`, ``K`` the concatenated hidden kernels, ``b`` the hidden
biases, ``u_t`` the projected input with the input biases):

* :func:`lstm_scan` -- ``z = h K + b + u_t``, ``[i, f, g, o] = [sigmoid, sigmoid, tanh,
  sigmoid](z)``, ``c' = f c + i g``, ``h' = o tanh(c')``; carry ``(c, h)``, output ``h'``.
  Residuals: the four gates and the cell states, ``5 T B n`` floats besides the outputs.
* :func:`gru_scan` -- ``a = h K + b``, ``r = sigmoid(u^r_t + a_r)``, ``z = sigmoid(u^z_t +
  a_z)``, ``m = tanh(u^m_t + r a_m)``, ``h' = (1 - z) m + z h``. Residuals: ``r, z, m, a_m``,
  ``4 T B n`` floats; after the loop ``dK`` is three ``(n, T B) x (T B, n)`` products.
  With ``candidate='modrelu'`` the candidate is ``modReLU(u^m_t + r a_m, b_c)``: the GORU
  (Jing et al. 2019), whose reset gate also acts after the product.
* :func:`ncgru_scan` -- :class:`lvf_jax.cells.NCGRUCell` (NC-GRU eq 19): the reset gate
  acts *before* the candidate's product, so two sequential products per step; residuals
  ``r, z, c``.

Inputs as separate arrays: ``gru_scan`` and ``ncgru_scan`` take ``u`` as three ``(T, B, n)``
arrays (the GRU, GORU and NC-GRU cells project into three arrays; one ``(T, B, 3n)`` array
is split before the loop) and keep their residuals as separate stacked arrays.
Reading three arrays keeps the dynamic slice of each step out of the elementwise fusion
that a split of one ``(T, B, 3n)`` array would join. The LSTM adds ``u_t`` to the whole
pre-activation before its split, so it keeps one array.

In-loop input projection: all three scans also take the raw input ``x`` as ``u`` with
``input_kernel=W`` (and ``input_bias=b``) and form ``u_t = x_t W + b`` inside the forward
step, one ``(B, d) x (d, k n)`` product (split into the three blocks for the GRU and
NC-GRU); the backward pass is unchanged up to its end, where ``dW = X^T dU`` and ``dX = dU
W^T`` are one large product per block. For narrow inputs this saves writing and reading
back the ``(T, B, k n)`` projected sequence (:class:`lvf_jax.layers.Recurrent`'s
``input_projection``).

Masking (``mask`` / ``seq_lengths``), ``reverse`` and the flattening of several batch axes
follow :func:`lvf_jax.recurrences.rnn_scan`: where the mask is False the carry is frozen
(its cotangent flows straight through) and the output is zero. First-order only (the
hand-written backward pass is not itself differentiable again); ``jax.checkpoint``
composes. Inputs are time-major.
"""

from __future__ import annotations

import functools
from typing import Optional

import jax
import jax.numpy as jnp

from lvf_jax.recurrences._common import (act_fwd, act_grad_from_output, big_matmul_tn,
                                         check_unroll, finish, flatten_batch_inputs,
                                         input_cotangents, last_carry, loop_reader, mask_select,
                                         modrelu_bias_cotangent, padded_carry_cotangent,
                                         prev_states, valid_cotangent)

Array = jax.Array

__all__ = ["CANDIDATES", "gru_scan", "lstm_scan", "ncgru_scan"]



def _masked(m_t, new, old):
  return new if m_t is None else mask_select(m_t, new, old)


# ------------------------------------------------------------------------- LSTM


@functools.partial(jax.custom_vjp, nondiff_argnums=(8, 9))
def _lstm_core(kernel, bias, u, w_in, b_in, c0, h0, mask, reverse, unroll):
  (cs, hs), _ = _lstm_forward(kernel, bias, u, w_in, b_in, c0, h0, mask, reverse, unroll)
  return (last_carry(c0, cs, reverse), last_carry(h0, hs, reverse)), hs


def _lstm_forward(kernel, bias, u, w_in, b_in, c0, h0, mask, reverse, unroll):
  read = loop_reader(w_in, b_in)

  def body(carry, xs):
    c, h = carry
    u_t, m_t = xs
    z = jnp.dot(h, kernel) + bias[None, :] + read(u_t)
    zi, zf, zg, zo = jnp.split(z, 4, axis=-1)
    i, f, g, o = jax.nn.sigmoid(zi), jax.nn.sigmoid(zf), jnp.tanh(zg), jax.nn.sigmoid(zo)
    c_new = f * c + i * g
    h_new = o * jnp.tanh(c_new)
    c_new, h_new = _masked(m_t, c_new, c), _masked(m_t, h_new, h)
    return (c_new, h_new), ((c_new, h_new), jnp.concatenate([i, f, g, o], axis=-1))

  _, (states, gates) = jax.lax.scan(body, (c0, h0), (u, mask), reverse=reverse,
                                    unroll=unroll)
  return states, gates


def _lstm_fwd(kernel, bias, u, w_in, b_in, c0, h0, mask, reverse, unroll):
  (cs, hs), gates = _lstm_forward(kernel, bias, u, w_in, b_in, c0, h0, mask, reverse, unroll)
  out = (last_carry(c0, cs, reverse), last_carry(h0, hs, reverse)), hs
  x = None if w_in is None else u  # the raw input, for dW = X^T dZ
  return out, (kernel, c0, h0, mask, cs, hs, gates, x, w_in, b_in)


def _lstm_bwd(reverse, unroll, res, cts):
  kernel, c0, h0, mask, cs, hs, gates, x, w_in, b_in = res
  (dc_last, dh_last), dhs = cts
  kernel_t = kernel.T
  c_prev = prev_states(c0, cs, reverse)

  def body(carry, xs):
    dc, dh = carry
    gates_t, c_t, cp_t, dy_t, m_t = xs
    i, f, g, o = jnp.split(gates_t, 4, axis=-1)
    gh = dh + dy_t
    gh_valid = valid_cotangent(m_t, gh)
    dc_valid = valid_cotangent(m_t, dc)
    tc = jnp.tanh(c_t)
    dct = dc_valid + gh_valid * o * (1.0 - tc * tc)
    dz = jnp.concatenate([dct * g * i * (1.0 - i), dct * cp_t * f * (1.0 - f),
                          dct * i * (1.0 - g * g), gh_valid * tc * o * (1.0 - o)], axis=-1)
    dh_prev = jnp.dot(dz, kernel_t)
    dc_prev = dct * f
    if m_t is not None:  # a padded step's carry is the old carry: pass its cotangent on
      dh_prev = dh_prev + padded_carry_cotangent(m_t, gh)
      dc_prev = mask_select(m_t, dc_prev, dc)
    return (dc_prev, dh_prev), dz

  (dc0, dh0), dz = jax.lax.scan(body, (dc_last, dh_last), (gates, cs, c_prev, dhs, mask),
                                reverse=not reverse, unroll=unroll)
  d_kernel = big_matmul_tn(prev_states(h0, hs, reverse), dz)
  d_bias = jnp.sum(dz, axis=(0, 1))
  return (d_kernel, d_bias) + input_cotangents(x, w_in, b_in, dz) + (dc0, dh0, None)


_lstm_core.defvjp(_lstm_fwd, _lstm_bwd)


def lstm_scan(kernel: Array, bias: Array, u: Array, carry: tuple[Array, Array], *,
              reverse: bool = False, unroll: int = 1, mask: Optional[Array] = None,
              seq_lengths: Optional[Array] = None, input_kernel: Optional[Array] = None,
              input_bias: Optional[Array] = None):
  """The LSTM recurrence over time with the fused backward pass (module docstring).

  Args:
    kernel: concatenated hidden kernels ``[K_i K_f K_g K_o]``, ``(n, 4n)``.
    bias: concatenated hidden biases ``(4n,)``.
    u: projected inputs (input biases included), time-major ``(T, *batch, 4n)``; with
      ``input_kernel``, the raw inputs ``(T, *batch, d)``.
    carry: ``(c0, h0)``, each ``(*batch, n)``.
    reverse, unroll, mask, seq_lengths: as :func:`lvf_jax.recurrences.rnn_scan`.
    input_kernel, input_bias: optional ``W (d, 4n)`` and ``b (4n,)``: ``u_t = x_t W + b``
      is formed inside the loop (module docstring, "In-loop input projection").

  Returns:
    ``((c_final, h_final), hs)`` with ``hs`` time-major ``(T, *batch, n)``.
  """
  fn = "lstm_scan"
  unroll = check_unroll(fn, unroll)
  c0, h0 = carry
  kernel, u2, h02, bias, mask2, batch_shape, w_in, b_in = flatten_batch_inputs(
      fn, kernel, u, h0, bias, mask, seq_lengths, 4, kernels=4, input_kernel=input_kernel,
      input_bias=input_bias)
  c0 = jnp.asarray(c0)
  if c0.shape != jnp.shape(h0):
    raise ValueError(f"{fn}: argument 'carry' must be (c0, h0) of equal shapes; got "
                     f"{c0.shape} and {jnp.shape(h0)}.")
  c02 = c0.astype(u2.dtype).reshape(h02.shape)
  (c_last, h_last), hs = _lstm_core(kernel, bias, u2, w_in, b_in, c02, h02, mask2,
                                    bool(reverse), unroll)
  h_last, ys = finish(h_last, hs, mask2, batch_shape)
  return (c_last.reshape(h_last.shape), h_last), ys


# -------------------------------------------------------------------------- GRU


CANDIDATES = ("tanh", "modrelu")


@functools.partial(jax.custom_vjp, nondiff_argnums=(8, 9, 10))
def _gru_core(kernel, bias, cbias, u, w_in, b_in, h0, mask, candidate, reverse, unroll):
  hs, _ = _gru_forward(kernel, bias, cbias, u, w_in, b_in, h0, mask, candidate, reverse,
                       unroll)
  return last_carry(h0, hs, reverse), hs


def _gru_forward(kernel, bias, cbias, u, w_in, b_in, h0, mask, candidate, reverse, unroll):
  """``u = (u^r, u^z, u^m)``: three ``(T, B, n)`` arrays. A step that read one ``(T, B, 3n)``
  array and split ``u_t`` in three ran 1.7-2.4 times as slow on XLA:CPU (the dynamic slice and the
  column slices fused into the step's elementwise fusion), so
  the inputs come in as three arrays and the residuals ``r, z, m, a_m`` leave as four.
  With ``w_in``, ``u`` is the raw input and ``x_t W + b`` is formed (and split) in the step."""
  read = loop_reader(w_in, b_in, 3)

  def body(h, xs):
    u_t, m_t = xs
    u_r, u_z, u_m = read(u_t)
    a = jnp.dot(h, kernel)
    if bias is not None:
      a = a + bias[None, :]
    a_r, a_z, a_m = jnp.split(a, 3, axis=-1)
    r = jax.nn.sigmoid(u_r + a_r)
    z = jax.nn.sigmoid(u_z + a_z)
    m = act_fwd(candidate, u_m + r * a_m, cbias)  # tanh (GRU) | modReLU (GORU)
    h_new = _masked(m_t, (1.0 - z) * m + z * h, h)
    return h_new, (h_new, (r, z, m, a_m))

  _, (hs, acts) = jax.lax.scan(body, h0, (u, mask), reverse=reverse, unroll=unroll)
  return hs, acts


def _gru_fwd(kernel, bias, cbias, u, w_in, b_in, h0, mask, candidate, reverse, unroll):
  hs, acts = _gru_forward(kernel, bias, cbias, u, w_in, b_in, h0, mask, candidate, reverse,
                          unroll)
  x = None if w_in is None else u  # the raw input, for dW = X^T dU
  return (last_carry(h0, hs, reverse), hs), (kernel, bias, cbias, h0, mask, hs, acts, x,
                                              w_in, b_in)


def _gru_bwd(candidate, reverse, unroll, res, cts):
  kernel, bias, cbias, h0, mask, hs, acts, x, w_in, b_in = res
  has_cbias = cbias is not None
  dh_last, dhs = cts
  kernel_t = kernel.T
  h_prev = prev_states(h0, hs, reverse)

  def body(carry, xs):
    dh, dcb = carry
    (r, z, m, a_m), hp_t, dy_t, m_t = xs
    g = dh + dy_t
    gv = valid_cotangent(m_t, g)
    d_pre_m = gv * (1.0 - z)
    d_act = act_grad_from_output(candidate, m, has_cbias)
    if d_act is not None:
      d_pre_m = d_pre_m * d_act
    if candidate == "modrelu" and has_cbias:  # modReLU's bias: sum d_pre * sign(m)
      dcb = dcb + modrelu_bias_cotangent(d_pre_m, m)
    d_pre_r = d_pre_m * a_m * r * (1.0 - r)
    d_pre_z = gv * (hp_t - m) * z * (1.0 - z)
    da = jnp.concatenate([d_pre_r, d_pre_z, d_pre_m * r], axis=-1)
    dh_prev = gv * z + jnp.dot(da, kernel_t)
    if m_t is not None:
      dh_prev = dh_prev + padded_carry_cotangent(m_t, g)
    return (dh_prev, dcb), (d_pre_r, d_pre_z, d_pre_m)

  dcb0 = jnp.zeros_like(cbias) if has_cbias else None
  (dh0, d_cbias), du = jax.lax.scan(body, (dh_last, dcb0), (acts, h_prev, dhs, mask),
                                    reverse=not reverse, unroll=unroll)
  da_m = du[2] * acts[0]  # the candidate's recurrent part is gated by r
  d_kernel = jnp.concatenate([big_matmul_tn(h_prev, du[0]), big_matmul_tn(h_prev, du[1]),
                              big_matmul_tn(h_prev, da_m)], axis=-1)
  d_bias = None if bias is None else jnp.concatenate(
      [jnp.sum(du[0], axis=(0, 1)), jnp.sum(du[1], axis=(0, 1)), jnp.sum(da_m, axis=(0, 1))])
  return (d_kernel, d_bias, d_cbias) + input_cotangents(x, w_in, b_in, du) + (dh0, None)


_gru_core.defvjp(_gru_fwd, _gru_bwd)


def gru_scan(kernel: Array, bias: Optional[Array], u: Array, h0: Array, *,
             reverse: bool = False, unroll: int = 1, mask: Optional[Array] = None,
             seq_lengths: Optional[Array] = None, candidate: str = "tanh",
             candidate_bias: Optional[Array] = None, input_kernel: Optional[Array] = None,
             input_bias: Optional[Array] = None):
  """The GRU recurrence over time with the fused backward pass (module docstring).

  Args:
    kernel: concatenated hidden kernels ``[K_r K_z K_m]``, ``(n, 3n)``.
    bias: concatenated hidden biases ``(3n,)`` (Flax's GRU: zeros, zeros, ``b_hn``), or
      None for none (the GORU).
    u: projected inputs (input biases included), time-major: one ``(T, *batch, 3n)``
      array ``[u_r | u_z | u_m]`` (split here: a copy of the sequence) or the three
      ``(T, *batch, n)`` arrays (what :meth:`lvf_jax.cells.GRUCell.project_inputs`
      returns); with ``input_kernel``, the raw inputs ``(T, *batch, d)``.
    h0: initial carry ``(*batch, n)``.
    reverse, unroll, mask, seq_lengths: as :func:`lvf_jax.recurrences.rnn_scan`.
    candidate: the candidate's activation, ``'tanh'`` (GRU) or ``'modrelu'``
      (``m = modReLU(u^m_t + r a_m, b_c)``: the GORU, :class:`lvf_jax.cells.GORUCell`,
      with ``K_m`` its orthogonal kernel and ``bias=None``).
    candidate_bias: modReLU's ``b_c`` ``(n,)`` (``'modrelu'`` only; without it the
      candidate is the identity).
    input_kernel, input_bias: optional ``W (d, 3n)`` and ``b (3n,)`` (the input biases):
      ``u_t = x_t W + b`` is formed inside the loop (module docstring).

  Returns:
    ``(h_final, hs)`` with ``hs`` time-major ``(T, *batch, n)``.
  """
  fn = "gru_scan"
  unroll = check_unroll(fn, unroll)
  if candidate not in CANDIDATES:
    raise ValueError(f"{fn}: argument 'candidate' must be one of {list(CANDIDATES)}; got "
                     f"{candidate!r}.")
  kernel, u3, h02, bias, mask2, batch_shape, w_in, b_in = flatten_batch_inputs(
      fn, kernel, u, h0, bias, mask, seq_lengths, 3, kernels=3, split=True,
      input_kernel=input_kernel, input_bias=input_bias)
  cbias = None
  if candidate_bias is not None:
    cbias = jnp.asarray(candidate_bias)
    if candidate != "modrelu" or cbias.shape != h02.shape[-1:]:
      raise ValueError(
          f"{fn}: argument 'candidate_bias' must have shape ({h02.shape[-1]},) and needs "
          f"candidate='modrelu'; got shape {cbias.shape} with candidate={candidate!r}.")
    cbias = cbias.astype(h02.dtype)
  h_last, hs = _gru_core(kernel, bias, cbias, u3, w_in, b_in, h02, mask2, candidate,
                         bool(reverse), unroll)
  return finish(h_last, hs, mask2, batch_shape)


# ----------------------------------------------------------------------- NC-GRU


@functools.partial(jax.custom_vjp, nondiff_argnums=(8, 9))
def _ncgru_core(kernel_ru, kernel_c, bias_c, u, w_in, b_in, h0, mask, reverse, unroll):
  hs, _ = _ncgru_forward(kernel_ru, kernel_c, bias_c, u, w_in, b_in, h0, mask, reverse, unroll)
  return last_carry(h0, hs, reverse), hs


def _ncgru_forward(kernel_ru, kernel_c, bias_c, u, w_in, b_in, h0, mask, reverse, unroll):
  read = loop_reader(w_in, b_in, 3)

  def body(h, xs):  # u = three (T, B, n) arrays, residuals out as three (see _gru_forward)
    u_t, m_t = xs
    u_r, u_z, u_c = read(u_t)
    g_r, g_z = jnp.split(jnp.dot(h, kernel_ru), 2, axis=-1)
    r = jax.nn.sigmoid(u_r + g_r)
    z = jax.nn.sigmoid(u_z + g_z)
    c = act_fwd("modrelu", u_c + jnp.dot(r * h, kernel_c), bias_c)
    h_new = _masked(m_t, (1.0 - z) * h + z * c, h)
    return h_new, (h_new, (r, z, c))

  _, (hs, acts) = jax.lax.scan(body, h0, (u, mask), reverse=reverse, unroll=unroll)
  return hs, acts


def _ncgru_fwd(kernel_ru, kernel_c, bias_c, u, w_in, b_in, h0, mask, reverse, unroll):
  hs, acts = _ncgru_forward(kernel_ru, kernel_c, bias_c, u, w_in, b_in, h0, mask, reverse,
                            unroll)
  x = None if w_in is None else u  # the raw input, for dW = X^T dU
  return (last_carry(h0, hs, reverse), hs), (kernel_ru, kernel_c, h0, mask, hs, acts, x,
                                              w_in, b_in)


def _ncgru_bwd(reverse, unroll, res, cts):
  kernel_ru, kernel_c, h0, mask, hs, acts, x, w_in, b_in = res
  dh_last, dhs = cts
  kernel_ru_t, kernel_c_t = kernel_ru.T, kernel_c.T
  h_prev = prev_states(h0, hs, reverse)

  def body(dh, xs):
    (r, z, c), hp_t, dy_t, m_t = xs
    g = dh + dy_t
    gv = valid_cotangent(m_t, g)
    d_p = gv * z * act_grad_from_output("modrelu", c, True)  # modReLU' read off c
    d_pre_z = gv * (c - hp_t) * z * (1.0 - z)
    d_q = jnp.dot(d_p, kernel_c_t)  # q = r * h_{t-1}
    d_pre_r = d_q * hp_t * r * (1.0 - r)
    d_pre_rz = jnp.concatenate([d_pre_r, d_pre_z], axis=-1)
    dh_prev = gv * (1.0 - z) + d_q * r + jnp.dot(d_pre_rz, kernel_ru_t)
    if m_t is not None:
      dh_prev = dh_prev + padded_carry_cotangent(m_t, g)
    return dh_prev, (d_pre_r, d_pre_z, d_p)

  dh0, du = jax.lax.scan(body, dh_last, (acts, h_prev, dhs, mask), reverse=not reverse,
                         unroll=unroll)
  d_pre_r, d_pre_z, d_p = du
  d_kernel_ru = jnp.concatenate([big_matmul_tn(h_prev, d_pre_r),
                                 big_matmul_tn(h_prev, d_pre_z)], axis=-1)
  d_kernel_c = big_matmul_tn(acts[0] * h_prev, d_p)
  d_bias_c = jnp.sum(d_p * jnp.sign(acts[2]), axis=(0, 1))
  return ((d_kernel_ru, d_kernel_c, d_bias_c) + input_cotangents(x, w_in, b_in, du)
          + (dh0, None))


_ncgru_core.defvjp(_ncgru_fwd, _ncgru_bwd)


def ncgru_scan(kernel_ru: Array, kernel_c: Array, bias_c: Array, u: Array, h0: Array, *,
               reverse: bool = False, unroll: int = 1, mask: Optional[Array] = None,
               seq_lengths: Optional[Array] = None, input_kernel: Optional[Array] = None,
               input_bias: Optional[Array] = None):
  """The NC-GRU recurrence (NC-GRU paper eq 19, row form) with a fused backward pass::

      [g_r | g_z] = h_{t-1} [K_r | K_z]
      r = sigmoid(u^r_t + g_r),  z = sigmoid(u^z_t + g_z)
      c = modReLU(u^c_t + (r * h_{t-1}) K_c, b)
      h_t = (1 - z) * h_{t-1} + z * c

  The reset gate multiplies ``h`` before ``K_c``, so a step has two *sequential* products
  (forward ``(B, n) x (n, 2n)`` then ``(B, n) x (n, n)``; backward the reverse). Residuals:
  ``r, z, c`` (``3 T B n`` floats besides the outputs; the modReLU derivative is read off
  ``c``). After the backward sweep ``d[K_r | K_z] = H_prev^T [dz_r | dz_z]`` and
  ``dK_c = (R * H_prev)^T dP`` are one large product each; the input cotangent is
  ``[dz_r | dz_z | dP]``.

  Args:
    kernel_ru: ``[K_r | K_z]``, ``(n, 2n)`` (:meth:`lvf_jax.cells.NCGRUCell.prepare`'s
      ``kernel_ru``).
    kernel_c: ``K_c = U_c^T``, ``(n, n)``.
    bias_c: modReLU bias ``b``, ``(n,)``.
    u: projected inputs ``[x W_r + b_r | x W_z + b_z | x W_c]``, time-major: one
      ``(T, *batch, 3n)`` array (split here: a copy) or the three ``(T, *batch, n)`` arrays
      (what :meth:`lvf_jax.cells.NCGRUCell.project_inputs` returns); with
      ``input_kernel``, the raw inputs ``(T, *batch, d)``.
    h0: initial carry ``(*batch, n)``.
    reverse, unroll, mask, seq_lengths: as :func:`lvf_jax.recurrences.rnn_scan`.
    input_kernel, input_bias: optional ``W (d, 3n)`` and ``b (3n,)``: ``u_t = x_t W + b``
      is formed inside the loop (module docstring).

  Returns:
    ``(h_final, hs)`` with ``hs`` time-major ``(T, *batch, n)``.
  """
  fn = "ncgru_scan"
  unroll = check_unroll(fn, unroll)
  kernel_ru, u3, h02, _, mask2, batch_shape, w_in, b_in = flatten_batch_inputs(
      fn, kernel_ru, u, h0, None, mask, seq_lengths, 3, kernels=2, split=True,
      input_kernel=input_kernel, input_bias=input_bias)
  n = h02.shape[-1]
  kernel_c, bias_c = jnp.asarray(kernel_c), jnp.asarray(bias_c)
  if kernel_c.shape != (n, n):
    raise ValueError(f"{fn}: argument 'kernel_c' must have shape (n, n) = ({n}, {n}); got "
                     f"{kernel_c.shape}.")
  if bias_c.shape != (n,):
    raise ValueError(f"{fn}: argument 'bias_c' must have shape ({n},); got {bias_c.shape}.")
  h_last, hs = _ncgru_core(kernel_ru, kernel_c.astype(h02.dtype), bias_c.astype(h02.dtype), u3,
                           w_in, b_in, h02, mask2, bool(reverse), unroll)
  return finish(h_last, hs, mask2, batch_shape)
