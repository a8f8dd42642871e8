"""Fused recurrences with a hand-written VJP: the sequential work only, big matmuls outside.

Plain reverse-mode autodiff of a ``jax.lax.scan`` over ``h_t = sigma(h_{t-1} K + u_t)``
computes, at every time step of its backward loop, the state cotangent
``dh_{t-1} = dz_t K^T`` (unavoidable: sequential) **and** a small weight-gradient product
``dK += h_{t-1}^T dz_t`` (avoidable: it does not feed the recursion). It also stores more
residuals than needed. The functions here run

* a forward ``lax.scan`` that does one ``(B, n) x (n, n)`` product per step and stores only
  the carries ``H = (h_1, ..., h_T)`` (which are the outputs anyway);
* a backward ``lax.scan`` that propagates **only** the state cotangent (one ``(B, n) x
  (n, n)`` product per step, the elementwise derivative fused into the loop) and writes
  the pre-activation cotangents shifted by one step, ``S_t = dz_{t+1}``, over the output
  cotangents ``dy_t`` it has just read (in place: no sequence-long buffer of its own), so
  that the weight gradient needs no shifted copy of the states;
* after the loop, **one** large product ``dK = sum_t h_{t-1}^T dz_t = H^T S + h_0^T dz_0``
  over all ``T * B`` rows (the modReLU bias gradient is accumulated in the loop). The
  input cotangent ``du = dZ``, which the loop also emits (the one new sequence of the
  backward pass), lets the caller's autodiff turn ``dW = X^T dZ`` into one large product
  as well when ``u = x W`` is the hoisted input projection.

Covered recurrences (row-vector convention ``h_t = sigma(h_{t-1} K + u_t + b)``):

* :func:`rnn_scan` -- ``h_t = sigma(h_{t-1} K + u_t, b)`` with ``sigma`` in
  ``'tanh'`` (``tanh(z + b)``), ``'modrelu'`` (``sign(z) relu(|z| + b)``, Arjovsky et al.
  2016 eq 8 / expRNN), ``'identity'`` (``z + b``) and ``'relu'`` (``relu(z + b)``). Cells:
  :class:`~lvf_jax.cells.TanhRNNCell` / ``OrthInitRNNCell`` (tanh, bias inside ``u``),
  ``ExpRNNCell`` / ``ScoRNNCell`` (expRNN eq 3, scoRNN eq 5; modReLU or tanh),
  ``NNRNNCell`` (nnRNN eq 4), ``LVFRNNCell`` (lvfRNN eq 5 / 16: ``K = C_V^T``).
  The derivative ``sigma'`` is a function of the *output* ``h_t`` for all four
  activations (``1 - h^2``; ``[h != 0]``; ``1``; ``[h > 0]``), so nothing besides the
  outputs is stored and nothing is recomputed. ``'modrelu_split'`` is the complex modReLU
  of a state carried as ``[Re h | Im h]`` (``URNNCell``, complex ``EURNNCell``; bias
  ``(n / 2,)``): its ``2 x 2`` Jacobian per unit is a function of the output too.
* :func:`euler_scan` -- ``h_t = h_{t-1} + eps tanh(h_{t-1} K + u_t)`` (AntisymmetricRNN,
  Chang et al. 2019, eq 12, with ``K = (W - W^T - gamma I)^T``).
* :func:`gated_euler_scan` -- ``h_t = h_{t-1} + eps sigmoid(a_t + u^z_t) * tanh(a_t +
  u^h_t)``, ``a_t = h_{t-1} K`` (gated AntisymmetricRNN, eq 13).

For the Euler variants the derivative is not a stable function of the outputs; ``store``
chooses between keeping the activations from the forward pass (``'activation'``, the
default: no extra compute and no extra memory, since the scans keep their activations in
the buffers of their projected inputs and the backward pass writes the input cotangents
over them) and recomputing the pre-activations after the forward pass as **one** large
product ``H_prev K + U`` (``'recompute'``: keeps ``U`` instead, so it saves no memory and
costs one extra non-sequential GEMM -- measured training steps of 1.13x (n = 128) and
1.25x (n = 512) of ``'activation'``'s at batch 128, T = 200; kept for comparison). Wrap the
layer in ``checkpoint=True`` when memory is short.

Input projection: pass ``u = x W`` (hoisted: one large product; the default, best when the
input width ``d`` is comparable to ``n``) or, for narrow inputs (tokens, pixels: ``d`` much
smaller than ``n``), pass the raw ``x`` with ``rnn_scan(..., input_kernel=W)``: ``x_t W``
is then computed inside the loop, which saves writing and re-reading the ``(T, B, n)``
projected sequence, while ``dW = X^T dZ`` and ``dX = dZ W^T`` stay one large product each.

Memory: the residuals are the carries ``H`` (the outputs) plus, for ``store='activation'``,
the activations, in the buffers of the projected inputs (plain autodiff of the same
modReLU scan kept five ``T B n`` float arrays and one boolean one in the compiled HLO,
jax 0.10.2). For very long sequences wrap the
call in :func:`jax.checkpoint` (the forward scan is then re-run inside the backward pass
and nothing is kept between the passes), or split the sequence into chunks.

:func:`expm_taylor` (re-exported from :mod:`lvf_jax.geometry`, the default of
:func:`lvf_jax.geometry.expm` in float32) is a matmul-only matrix exponential for
``prepare``, and :func:`fused_scan_for_cell` maps the library's cells to the scan that
computes them.

Masking: ``mask`` (boolean ``(T, *batch)``) or ``seq_lengths`` (int ``(*batch,)``) follow
:class:`lvf_jax.layers.Recurrent`: where the mask is False the carry is frozen and the
output is zero. ``reverse=True`` processes ``t = T-1, ..., 0`` with outputs aligned with
the inputs.

All functions take **time-major** inputs ``u: (T, *batch, k)`` and return
``(final_carry, outputs)`` with outputs time-major ``(T, *batch, n)``. They are pure, and
compose with ``jit``, ``vmap``, ``grad`` (first order; the hand-written backward pass is
not itself differentiable a second time) and ``jax.checkpoint``.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any, Optional

import jax
import jax.numpy as jnp

from lvf_jax.geometry.activations import modrelu_split, pair_sum
from lvf_jax.geometry.maps import expm_taylor  # noqa: F401  (re-export)

Array = jnp.ndarray

ACTIVATIONS = ("tanh", "modrelu", "identity", "relu", "modrelu_split")
STORES = ("activation", "recompute")


# --------------------------------------------------------------------- validation


def _check_unroll(fn: str, unroll: Any) -> int:
  if isinstance(unroll, bool) or not isinstance(unroll, numbers.Integral) or unroll < 1:
    raise ValueError(f"{fn}: argument 'unroll' must be an int >= 1; got {unroll!r}.")
  return int(unroll)


def _check_choice(fn: str, name: str, value: Any, allowed: tuple[str, ...]) -> str:
  if not isinstance(value, str) or value not in allowed:
    raise ValueError(f"{fn}: argument '{name}' must be one of {list(allowed)}; got {value!r}.")
  return value


def _prepare(fn: str, kernel, u, h0, bias, mask, seq_lengths, width: int, kernels: int = 1):
  """Validates, casts to ``u.dtype`` and flattens the batch axes to one.

  Returns ``(kernel, u2, h02, bias, mask2, batch_shape)`` with ``u2: (T, B, width n)``,
  ``h02: (B, n)``, ``mask2: (T, B) bool or None``. ``kernels``: the kernel is ``(n,
  kernels n)`` (the gated cells' concatenated recurrent kernels) and the bias ``(kernels
  n,)``.
  """
  u = jnp.asarray(u)
  if u.ndim < 2 or not jnp.issubdtype(u.dtype, jnp.floating):
    raise ValueError(
        f"{fn}: argument 'u' must be a floating array of shape (time, *batch, features); "
        f"got {u.dtype} of shape {u.shape}.")
  dtype = u.dtype
  kernel = jnp.asarray(kernel)
  n = kernel.shape[0] if kernel.ndim == 2 else -1
  if kernel.ndim != 2 or kernel.shape != (n, kernels * n):
    want = "a square matrix (n, n)" if kernels == 1 else f"a matrix (n, {kernels} n)"
    raise ValueError(f"{fn}: argument 'kernel' must be {want}; got shape {kernel.shape}.")
  if width is not None and u.shape[-1] != width * n:
    raise ValueError(
        f"{fn}: argument 'u' must have {width * n} features (= {width} x n, n={n}); "
        f"got shape {u.shape}.")
  num_steps, batch_shape = u.shape[0], u.shape[1:-1]
  if num_steps < 1:
    raise ValueError(f"{fn}: argument 'u' must have at least one time step; got shape {u.shape}.")
  h0 = jnp.asarray(h0)
  if h0.shape != batch_shape + (n,):
    raise ValueError(
        f"{fn}: argument 'h0' must have shape (*batch, n) = {batch_shape + (n,)}; "
        f"got {h0.shape}.")
  if bias is not None:
    bias = jnp.asarray(bias)
    if bias.shape != (kernels * n,):
      raise ValueError(f"{fn}: argument 'bias' must have shape ({kernels * n},); got "
                       f"{bias.shape}.")
    bias = bias.astype(dtype)
  if mask is not None and seq_lengths is not None:
    raise ValueError(f"{fn}: pass at most one of 'mask' and 'seq_lengths'.")
  if seq_lengths is not None:
    seq_lengths = jnp.asarray(seq_lengths)
    if seq_lengths.shape != batch_shape or not jnp.issubdtype(seq_lengths.dtype, jnp.integer):
      raise ValueError(
          f"{fn}: argument 'seq_lengths' must be an int array of shape (*batch,) = "
          f"{batch_shape}; got {seq_lengths.dtype} of shape {seq_lengths.shape}.")
    t = jnp.arange(num_steps, dtype=jnp.int32).reshape((num_steps,) + (1,) * len(batch_shape))
    mask = t < seq_lengths.astype(jnp.int32)[None, ...]
  if mask is not None:
    mask = jnp.asarray(mask)
    if mask.shape != (num_steps,) + batch_shape or mask.dtype != jnp.bool_:
      raise ValueError(
          f"{fn}: argument 'mask' must be a bool array of shape (time, *batch) = "
          f"{(num_steps,) + batch_shape}; got {mask.dtype} of shape {mask.shape}.")
  b = math.prod(batch_shape)
  u2 = u.reshape((num_steps, b, u.shape[-1]))
  h02 = h0.astype(dtype).reshape((b, n))
  mask2 = None if mask is None else mask.reshape((num_steps, b))
  return kernel.astype(dtype), u2, h02, bias, mask2, batch_shape


def _finish(h_last, hs, mask, batch_shape):
  """Masked outputs (zero where ``mask`` is False) and un-flattened batch axes."""
  n = hs.shape[-1]
  ys = hs if mask is None else jnp.where(mask[..., None], hs, jnp.zeros((), hs.dtype))
  return (h_last.reshape(batch_shape + (n,)),
          ys.reshape((hs.shape[0],) + batch_shape + (n,)))


def _prev_states(h0: Array, hs: Array, reverse: bool) -> Array:
  """``H_prev[t] = h_{t-1}``: the carry each step consumed (``h_{t+1}`` when reversed).

  The same shift takes a backward loop's shifted sequence (index ``t`` holding the value of
  step ``t + 1``; ``t - 1`` when reversed) back to the aligned one, ``h0`` being the value
  of the step that falls off it."""
  if reverse:
    return jnp.concatenate([hs[1:], h0[None]], axis=0)
  return jnp.concatenate([h0[None], hs[:-1]], axis=0)


def _next_steps(a: Array, reverse: bool) -> Array:
  """``a`` moved one step back in processing order: index ``t`` holds ``a_{t+1}``
  (``a_{t-1}`` when reversed), zero past the end."""
  zero = jnp.zeros_like(a[:1])
  return jnp.concatenate([zero, a[:-1]] if reverse else [a[1:], zero], axis=0)


def _step_slice(a: Array, t) -> Array:
  return jax.lax.dynamic_index_in_dim(a, t, 0, keepdims=False)


def _step_update(a: Array, t, v: Array) -> Array:
  return jax.lax.dynamic_update_index_in_dim(a, v, t, 0)


def _step_indices(num_steps: int) -> Array:
  """``0 .. T-1`` as unsigned ints: a slice at an unsigned index needs no wrap of negative
  indices (one scalar fusion less per step)."""
  return jnp.arange(num_steps, dtype=jnp.uint32)


def _processing_ends(num_steps: int, reverse: bool) -> tuple[int, int]:
  """The steps a backward loop processes first and last (the last one's previous state is
  ``h0``)."""
  first = 0 if reverse else num_steps - 1
  return first, num_steps - 1 - first


def _next_index(t, last: int, reverse: bool):
  """``(t == last, the step a backward loop processes after t)``; at the last step ``t``
  itself (read there, not used)."""
  at_last = t == last
  return at_last, jnp.where(at_last, t, t + 1 if reverse else t - 1)


def _last_carry(h0: Array, hs: Array, reverse: bool) -> Array:
  if hs.shape[0] == 0:
    return h0
  return hs[0] if reverse else hs[-1]


def _big_matmul_tn(a: Array, b: Array) -> Array:
  """``sum_t a_t^T b_t`` as ONE ``(n, T B) x (T B, m)`` product."""
  a2 = a.reshape((-1, a.shape[-1]))
  b2 = b.reshape((-1, b.shape[-1]))
  return jax.lax.dot_general(a2, b2, (((0,), (0,)), ((), ())))


def _mask_select(m_t, new, old):
  return jnp.where(m_t[:, None], new, old)


def _padded_carry_cotangent(m_t, g):
  """``g`` where step ``t`` is padding (its carry is the old carry, so the cotangent flows
  straight through), zero elsewhere."""
  return _mask_select(m_t, jnp.zeros((), g.dtype), g)


# ------------------------------------------------------------ sigma(h K + u, b)


def _act_fwd(name: str, z: Array, bias: Optional[Array]) -> Array:
  if name == "modrelu_split":
    return z if bias is None else modrelu_split(z, bias)
  if name == "modrelu":
    if bias is None:
      return z
    b = bias[None, :]
    return jnp.sign(z) * jnp.maximum(jnp.abs(z) + b, jnp.zeros((), z.dtype))
  if bias is not None:
    z = z + bias[None, :]
  if name == "tanh":
    return jnp.tanh(z)
  if name == "relu":
    return jnp.maximum(z, jnp.zeros((), z.dtype))
  return z


def _act_grad_from_output(name: str, h: Array, has_bias: bool) -> Optional[Array]:
  """``d sigma / d z`` written as a function of the output ``h = sigma(z)`` (None = 1)."""
  if name == "tanh":
    return 1.0 - h * h
  if name == "modrelu":
    if not has_bias:
      return None
    return jnp.abs(jnp.sign(h))  # 1 where |z| + b > 0 (and z != 0), else 0
  if name == "modrelu_split" and not has_bias:
    return None  # the identity (with a bias: not elementwise, see _modrelu_split_vjp)
  if name == "relu":
    return (h > 0).astype(h.dtype)
  return None


def _modrelu_bias_cotangent(dz: Array, h: Array) -> Array:
  """Batch sum of modReLU's bias cotangent, ``sum_b dz * sign(h)`` (``dh/db = sign(z)``
  where the unit is active, 0 where ``h = 0``)."""
  return jnp.sum(dz * jnp.sign(h), axis=0)


def _modrelu_split_vjp(h: Array, g: Array, b: Array) -> tuple[Array, Array]:
  """Cotangent ``dz`` of the complex modReLU (``[Re | Im]`` layout) and the batch sum of
  its bias cotangent, both from the *output* ``h`` (nothing else is stored).

  Where the unit is active (``h != 0``): ``h = z (1 + b / r)`` with ``r = |z| = |h| - b``,
  so the (symmetric) Jacobian is ``(|h| / r) I - (b / r) u u^T``, ``u = h / |h|``, and
  ``dh / db = u``; where ``h = 0`` both are zero.
  """
  n = h.shape[-1] // 2
  mag2 = pair_sum(h * h)  # |h_k|^2 and Re(conj(h_k) g_k), at both k and n + k
  proj = pair_sum(h * g)
  active = mag2 > 0
  mag = jnp.sqrt(jnp.where(active, mag2, jnp.ones_like(mag2)))
  bb = jnp.broadcast_to(jnp.concatenate([b, b])[None, :], mag.shape)
  inv_r = jnp.where(active, 1.0 / jnp.where(active, mag - bb, jnp.ones_like(mag)),
                    jnp.zeros_like(mag))
  dz = (mag * inv_r) * g - (bb * proj * inv_r / (mag * mag)) * h
  db = jnp.sum(jnp.where(active, proj / mag, jnp.zeros_like(mag))[:, :n], axis=0)
  return dz, db


@functools.partial(jax.custom_vjp, nondiff_argnums=(6, 7, 8))
def _rnn_core(kernel, w_in, u, h0, bias, mask, activation, reverse, unroll):
  hs = _rnn_forward(kernel, w_in, u, h0, bias, mask, activation, reverse, unroll)
  return _last_carry(h0, hs, reverse), hs


def _rnn_forward(kernel, w_in, u, h0, bias, mask, activation, reverse, unroll):
  def body(h, xs):
    u_t, m_t = xs
    if w_in is not None:  # in-loop input projection (small input width)
      u_t = jnp.dot(u_t, w_in)
    h_new = _act_fwd(activation, jnp.dot(h, kernel) + u_t, bias)
    if m_t is not None:
      h_new = _mask_select(m_t, h_new, h)
    return h_new, h_new

  _, hs = jax.lax.scan(body, h0, (u, mask), reverse=reverse, unroll=unroll)
  return hs


def _rnn_fwd(kernel, w_in, u, h0, bias, mask, activation, reverse, unroll):
  hs = _rnn_forward(kernel, w_in, u, h0, bias, mask, activation, reverse, unroll)
  x = None if w_in is None else u
  return (_last_carry(h0, hs, reverse), hs), (kernel, w_in, x, h0, bias, mask, hs)


def _rnn_bwd(activation, reverse, unroll, res, cts):
  kernel, w_in, x, h0, bias, mask, hs = res
  dh_last, dhs = cts
  kernel_t = kernel.T
  has_bias = bias is not None
  # modReLU's bias gradient is sum dz * sign(h), not sum dz: accumulate it in the loop,
  # where h_t and dz_t are already in registers (saves a pass over two T B n arrays).
  acc_bias = has_bias and activation in ("modrelu", "modrelu_split")
  split = has_bias and activation == "modrelu_split"
  # With the projection inside the loop nobody needs dZ aligned with u: emit only the
  # shifted sequence S and shift the (narrow) inputs instead.
  emit_aligned = w_in is None
  num_steps = hs.shape[0]
  first, last = _processing_ends(num_steps, reverse)

  # The loop writes S_t = dz_{t+1} (dz_{t-1} when reversed; zero for the first step it
  # processes) over dy_t in the output cotangents' buffer, right after reading dy_t, and
  # reads the next step's dy from the buffer it has just written (reading dy_t before the
  # write instead made XLA copy the whole buffer every step: 3-40x slower, measured):
  # dK = H^T S + h0^T dz_last needs no shifted copy of H, and the sequence-long cotangents
  # need no buffer of their own; with the hoisted projection the loop also emits the
  # aligned dZ, the input cotangent (the backward pass's one new sequence).
  def body(carry, xs):
    g, db, dz_prev, buf = carry  # g = dL/dh_t (the carry's cotangent plus dy_t)
    t, h_t, m_t = xs
    if split:  # complex modReLU: a 2 x 2 Jacobian per unit, bias cotangent alongside
      gm = g if m_t is None else _mask_select(m_t, g, jnp.zeros((), g.dtype))
      dz, db_t = _modrelu_split_vjp(h_t, gm, bias)
      db = db + db_t
    else:
      d = _act_grad_from_output(activation, h_t, has_bias)
      dz = g if d is None else g * d
      if m_t is not None:
        dz = _mask_select(m_t, dz, jnp.zeros((), dz.dtype))
      if acc_bias:
        db = db + _modrelu_bias_cotangent(dz, h_t)
    buf = _step_update(buf, t, dz_prev)
    at_last, nxt = _next_index(t, last, reverse)
    dy_next = jnp.where(at_last, jnp.zeros((), g.dtype), _step_slice(buf, nxt))
    c_new = jnp.dot(dz, kernel_t) + dy_next
    if m_t is not None:
      # The carry of a padded step is the old carry: its cotangent flows straight through.
      c_new = c_new + _padded_carry_cotangent(m_t, g)
    return (c_new, db, dz, buf), (dz if emit_aligned else None)

  db0 = jnp.zeros(bias.shape, kernel.dtype) if acc_bias else None
  init = (dh_last + dhs[first], db0, jnp.zeros_like(dh_last), dhs)
  (dh0, db, dz_first, shifted), dz = jax.lax.scan(
      body, init, (_step_indices(num_steps), hs, mask), reverse=not reverse, unroll=unroll)
  d_kernel = _big_matmul_tn(hs, shifted) + jnp.dot(h0.T, dz_first)
  d_bias = None
  if has_bias:
    if acc_bias:
      d_bias = db
    else:
      d_bias = _sum_rows(shifted) + jnp.sum(dz_first, axis=0)
  d_mask = None
  if emit_aligned:  # hoisted projection: du = dZ (the one new sequence of the loop)
    return d_kernel, None, dz, dh0, d_bias, d_mask
  # Projection inside the loop: sum_t x_t^T dz_t = X_next^T S + x_first^T dz_first, with
  # X_next[t] = x_{t+1} (x_{t-1} when reversed; zero past the end), a cheap (T, B, d) shift.
  x_next, x_first = _next_steps(x, reverse), x[-1 if reverse else 0]
  d_w_in = _big_matmul_tn(x_next, shifted) + jnp.dot(x_first.T, dz_first)
  # dX = dZ W^T, formed from S and shifted back (only evaluated if x is differentiated).
  dx_shifted = jnp.dot(shifted.reshape((-1, shifted.shape[-1])), w_in.T).reshape(x.shape)
  d_x = _prev_states(jnp.dot(dz_first, w_in.T), dx_shifted, reverse)
  return d_kernel, d_w_in, d_x, dh0, d_bias, d_mask


def _sum_rows(a: Array) -> Array:
  """``sum_{t, b} a[t, b]`` as a ``(T B,) x (T B, n)`` product. XLA:CPU's YNNPACK
  reduction of the in-place cotangent buffer ran 3-4x slower than the whole training step
  it belonged to, with millions of fresh pages per call (benchmarks/fused_ab.py); the
  product reads the buffer once."""
  a2 = a.reshape((-1, a.shape[-1]))
  return jnp.dot(jnp.ones((a2.shape[0],), a.dtype), a2)


_rnn_core.defvjp(_rnn_fwd, _rnn_bwd)


def rnn_scan(kernel: Array, u: Array, h0: Array, bias: Optional[Array] = None, *,
             activation: str = "tanh", input_kernel: Optional[Array] = None,
             reverse: bool = False, unroll: int = 1,
             mask: Optional[Array] = None,
             seq_lengths: Optional[Array] = None) -> tuple[Array, Array]:
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

  Returns:
    ``(h_final, hs)`` with ``hs`` time-major ``(T, *batch, n)``. Floating arguments are
    cast to ``u.dtype``.
  """
  fn = "rnn_scan"
  _check_choice(fn, "activation", activation, ACTIVATIONS)
  unroll = _check_unroll(fn, unroll)
  split_bias = None
  if activation == "modrelu_split" and bias is not None:  # one bias per complex unit
    n = jnp.shape(kernel)[-1]
    split_bias, bias = jnp.asarray(bias), None
    if n % 2 or split_bias.shape != (n // 2,):
      raise ValueError(
          f"{fn}: with activation='modrelu_split' the kernel acts on [Re h | Im h] (even "
          f"size 2m) and argument 'bias' must have shape (m,); got kernel {jnp.shape(kernel)} "
          f"and bias {split_bias.shape}.")
  kernel, u2, h02, bias, mask2, batch_shape, w_in, _ = _prepare_inputs(
      fn, kernel, u, h0, bias, mask, seq_lengths, 1, input_kernel=input_kernel)
  if split_bias is not None:
    bias = split_bias.astype(u2.dtype)
  h_last, hs = _rnn_core(kernel, w_in, u2, h02, bias, mask2, activation, bool(reverse),
                         unroll)
  return _finish(h_last, hs, mask2, batch_shape)


# ---------------------------------------------- h + eps tanh(h K + u) (Euler)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5, 6, 7, 8))
def _euler_core(kernel, u, h0, mask, eps, store, reverse, unroll, gated):
  hs, _ = _euler_forward(kernel, u, h0, mask, eps, store, reverse, unroll, gated)
  return _last_carry(h0, hs, reverse), hs


def _euler_acts(a, u_t, gated):
  """``tanh`` (and the ``sigmoid`` gate) of the pre-activations ``a + u_t``.

  ``u_t`` is ``u^h_t`` or, gated, the pair ``(u^h_t, u^z_t)``.
  """
  if gated:
    return jnp.tanh(a + u_t[0]), jax.nn.sigmoid(a + u_t[1])
  return jnp.tanh(a + u_t), None


def _valid_cotangent(m_t, g):
  """``g`` where step ``t`` is valid, zero where it is padding (``m_t`` False)."""
  return g if m_t is None else _mask_select(m_t, g, jnp.zeros((), g.dtype))


def _gated_pre_cotangents(e, tau, s):
  """Cotangents of the two pre-activations of eq (13) given ``e = eps dh_t`` and the
  activations ``tau = tanh(.)``, ``s = sigmoid(.)`` (``h_t = h_{t-1} + eps s tau``)."""
  return e * s * (1.0 - tau * tau), e * tau * (s * (1.0 - s))


def _euler_forward(kernel, u, h0, mask, eps, store, reverse, unroll, gated):
  """Forward loop; returns ``hs`` and, with ``store='activation'``, the activations in the
  buffers of ``u`` (:func:`_euler_forward_in_place`), else ``None``."""
  if store == "activation":
    return _euler_forward_in_place(kernel, u, h0, mask, eps, reverse, unroll, gated)

  def body(h, xs):
    u_t, m_t = xs
    tau, s = _euler_acts(jnp.dot(h, kernel), u_t, gated)
    h_new = h + eps * (tau if s is None else s * tau)
    if m_t is not None:
      h_new = _mask_select(m_t, h_new, h)
    return h_new, h_new

  _, hs = jax.lax.scan(body, h0, (u, mask), reverse=reverse, unroll=unroll)
  return hs, None


def _euler_fwd(kernel, u, h0, mask, eps, store, reverse, unroll, gated):
  hs, acts = _euler_forward(kernel, u, h0, mask, eps, store, reverse, unroll, gated)
  keep_u = None if store == "activation" else u
  return (_last_carry(h0, hs, reverse), hs), (kernel, h0, mask, hs, acts, keep_u)


def _euler_bwd(eps, store, reverse, unroll, gated, res, cts):
  if store == "activation":
    return _euler_bwd_in_place(eps, reverse, unroll, gated, res, cts)
  kernel, h0, mask, hs, _, u = res
  dh_last, dhs = cts
  n = kernel.shape[0]
  kernel_t = kernel.T
  h_prev = _prev_states(h0, hs, reverse)
  # store='recompute': the pre-activations as ONE large product
  num_steps, b = hs.shape[:2]
  a = jnp.dot(h_prev.reshape((num_steps * b, n)), kernel).reshape((num_steps, b, n))
  acts = _euler_acts(a, u, gated)
  acts = acts if gated else acts[0]

  def body(c, xs):
    act_t, dy_t, m_t = xs
    g = c + dy_t
    g_valid = _valid_cotangent(m_t, g)
    if gated:
      du = _gated_pre_cotangents(eps * g_valid, *act_t)
      da = du[0] + du[1]
    else:
      da = (eps * g_valid) * (1.0 - act_t * act_t)
      du = da
    # d h_{t-1} = g (identity path; also the frozen carry of a padded step) + da K^T
    return g + jnp.dot(da, kernel_t), du

  dh0, du = jax.lax.scan(body, dh_last, (acts, dhs, mask), reverse=not reverse, unroll=unroll)
  da_all = (du[0] + du[1]) if gated else du
  d_kernel = _big_matmul_tn(h_prev, da_all)
  return d_kernel, du, dh0, None


_euler_core.defvjp(_euler_fwd, _euler_bwd)


# With store='activation' the Euler scans keep their activations in the buffers of the
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


def _euler_forward_in_place(kernel, u, h0, mask, eps, reverse, unroll, gated):
  """Forward loop of eq (12) (or, gated, eq (13)); returns ``hs`` and the activations,
  ``(tanh,)`` or ``(tanh, sigmoid)``, in the buffers of ``u`` (or ``(u_h, u_z)``)."""
  def body(carry, xs):
    h, bufs = carry
    t, m_t = xs
    u_t = tuple(_step_slice(b, t) for b in bufs)
    acts = _euler_acts(jnp.dot(h, kernel), u_t if gated else u_t[0], gated)
    bufs = tuple(_step_update(b, t, a) for b, a in zip(bufs, acts))
    # read back from the buffers, not the activations: each then has one consumer
    tau = _step_slice(bufs[0], t)
    h_new = h + eps * (_step_slice(bufs[1], t) * tau if gated else tau)
    if m_t is not None:
      h_new = _mask_select(m_t, h_new, h)
    return (h_new, bufs), h_new

  parts = _as_parts(u, gated)
  (_, acts), hs = jax.lax.scan(body, (h0, parts), (_step_indices(parts[0].shape[0]), mask),
                               reverse=reverse, unroll=unroll)
  return hs, acts


def _euler_bwd_in_place(eps, reverse, unroll, gated, res, cts):
  kernel, h0, mask, hs, acts, _ = res
  dh_last, dhs = cts
  kernel_t = kernel.T
  num_steps = hs.shape[0]
  first, last = _processing_ends(num_steps, reverse)

  def body(carry, xs):
    g, act_t, bufs = carry  # g = dL/dh_t (the carry's cotangent plus dy_t)
    t, m_t = xs
    e = eps * _valid_cotangent(m_t, g)
    d = _gated_pre_cotangents(e, *act_t) if gated else (e * (1.0 - act_t[0] * act_t[0]),)
    bufs = tuple(_step_update(b, t, v) for b, v in zip(bufs, d))
    at_last, nxt = _next_index(t, last, reverse)
    dy_next = jnp.where(at_last, jnp.zeros((), g.dtype), _step_slice(dhs, nxt))
    da = _step_slice(bufs[0], t)
    if gated:
      da = da + _step_slice(bufs[1], t)
    # d h_{t-1} = g (identity path; also the frozen carry of a padded step) + da K^T
    return (g + jnp.dot(da, kernel_t) + dy_next, tuple(_step_slice(b, nxt) for b in bufs),
            bufs), None

  init = (dh_last + dhs[first], tuple(a[first] for a in acts), acts)
  (dh0, _, du), _ = jax.lax.scan(body, init, (_step_indices(num_steps), mask),
                                 reverse=not reverse, unroll=unroll)
  da_all = du[0] + du[1] if gated else du[0]
  # dK = sum_t h_{t-1}^T da_t = H^T S + h0^T da_first, S = da one step back (gated: the
  # shift is computed in the same fusion as da = du_h + du_z; no shifted copy of H).
  # (``last`` is the step whose previous state is h0.)
  d_kernel = _big_matmul_tn(hs, _next_steps(da_all, reverse)) + jnp.dot(h0.T, da_all[last])
  return d_kernel, (du if gated else du[0]), dh0, None


def _euler_api(fn, kernel, u, h0, *, epsilon, store, reverse, unroll, mask, seq_lengths, gated):
  _check_choice(fn, "store", store, STORES)
  unroll = _check_unroll(fn, unroll)
  if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) \
      or not math.isfinite(float(epsilon)) or float(epsilon) <= 0:
    raise ValueError(f"{fn}: argument 'epsilon' must be a finite number > 0; got {epsilon!r}.")
  # gated: two (T, B, n) arrays for the loop bodies
  kernel, u2, h02, _, mask2, batch_shape, _, _ = _prepare_inputs(
      fn, kernel, u, h0, None, mask, seq_lengths, 2 if gated else 1, split=gated)
  h_last, hs = _euler_core(kernel, u2, h02, mask2, float(epsilon), store, bool(reverse),
                           unroll, gated)
  return _finish(h_last, hs, mask2, batch_shape)


def _prepare_parts(fn, kernel, u, h0, bias, mask, seq_lengths, parts: int, kernels: int = 1):
  """:func:`_prepare` for a scan whose ``u`` is one ``(T, *batch, parts n)`` array or
  ``parts`` arrays ``(T, *batch, n)`` (the gated cells' separately projected inputs);
  returns ``u`` as a tuple of ``parts`` arrays ``(T, B, n)`` (one array is split here: a
  copy of the sequence)."""
  if isinstance(u, (tuple, list)):
    arrays = _input_parts(fn, u, parts)
    kernel, u0, h02, bias, mask2, batch_shape = _prepare(fn, kernel, arrays[0], h0, bias, mask,
                                                         seq_lengths, 1, kernels=kernels)
    return kernel, tuple(a.reshape(u0.shape) for a in arrays), h02, bias, mask2, batch_shape
  kernel, u2, h02, bias, mask2, batch_shape = _prepare(fn, kernel, u, h0, bias, mask,
                                                       seq_lengths, parts, kernels=kernels)
  return kernel, tuple(jnp.split(u2, parts, axis=-1)), h02, bias, mask2, batch_shape


def _prepare_inputs(fn, kernel, u, h0, bias, mask, seq_lengths, width: int, kernels: int = 1,
                    *, split: bool = False, input_kernel=None, input_bias=None):
  """:func:`_prepare` (or with ``split`` :func:`_prepare_parts`) plus the optional in-loop
  input projection; returns ``(kernel, u2, h02, bias, mask2, batch_shape, w_in, b_in)``.

  Without ``input_kernel``, ``u`` holds the projected inputs (``width n`` features, or with
  ``split`` a tuple of ``width`` arrays) and ``w_in = b_in = None``. With it, ``u`` is the
  raw input ``(T, *batch, d)`` (``u2: (T, B, d)``), ``w_in = input_kernel`` must be ``(d,
  width n)`` and ``b_in = input_bias`` ``(width n,)`` or None; both are cast to ``u``'s
  dtype and the scan forms ``u_t = x_t W + b`` inside its loop (:func:`_loop_reader`).
  """
  if input_kernel is None:
    if input_bias is not None:
      raise ValueError(f"{fn}: argument 'input_bias' needs 'input_kernel'.")
    if split:
      out = _prepare_parts(fn, kernel, u, h0, bias, mask, seq_lengths, width, kernels)
    else:
      out = _prepare(fn, kernel, u, h0, bias, mask, seq_lengths, width, kernels)
    return out + (None, None)
  if isinstance(u, (tuple, list)):
    raise ValueError(f"{fn}: with 'input_kernel', argument 'u' must be the raw input array "
                     f"(time, *batch, d); got a sequence of {len(u)} arrays.")
  kernel, u2, h02, bias, mask2, batch_shape = _prepare(fn, kernel, u, h0, bias, mask,
                                                       seq_lengths, None, kernels)
  n, d = h02.shape[-1], u2.shape[-1]
  w_in = jnp.asarray(input_kernel)
  if w_in.shape != (d, width * n):
    what = "n" if width == 1 else f"{width} n"
    raise ValueError(f"{fn}: argument 'input_kernel' must have shape (d, {what}) = "
                     f"({d}, {width * n}) for inputs u of shape {jnp.shape(u)}; got "
                     f"{w_in.shape}.")
  b_in = None
  if input_bias is not None:
    b_in = jnp.asarray(input_bias)
    if b_in.shape != (width * n,):
      raise ValueError(f"{fn}: argument 'input_bias' must have shape ({width * n},); got "
                       f"{b_in.shape}.")
    b_in = b_in.astype(u2.dtype)
  return kernel, u2, h02, bias, mask2, batch_shape, w_in.astype(u2.dtype), b_in


def _loop_reader(w_in, b_in, parts: int = 1):
  """``read(xs_t) -> u_t`` for a forward loop: the identity when the inputs were projected
  before the loop (``w_in`` None), else ``x_t W + b`` (split into ``parts`` blocks)."""
  if w_in is None:
    return lambda u_t: u_t

  def read(x_t):
    v = jnp.dot(x_t, w_in)
    if b_in is not None:
      v = v + b_in[None, :]
    return v if parts == 1 else tuple(jnp.split(v, parts, axis=-1))
  return read


def _input_cotangents(x, w_in, b_in, du):
  """Cotangents of the scan's input arguments ``(u, w_in, b_in)`` from the pre-activation
  cotangents ``du`` (one ``(T, B, k)`` array or a tuple of blocks): ``(du, None, None)``
  when the inputs came projected, else ``(dX, dW, db)`` of ``u = x W + b`` with ``dW =
  X^T dU`` and ``dX = dU W^T`` one large product per block, after the loop."""
  if w_in is None:
    return du, None, None
  blocks = du if isinstance(du, tuple) else (du,)
  ws = jnp.split(w_in, len(blocks), axis=-1)
  d_w = jnp.concatenate([_big_matmul_tn(x, g) for g in blocks], axis=-1)
  d_x = sum(jnp.dot(g.reshape((-1, g.shape[-1])), w.T) for g, w in zip(blocks, ws))
  d_b = None if b_in is None else jnp.concatenate([jnp.sum(g, axis=(0, 1)) for g in blocks])
  return d_x.reshape(x.shape), d_w, d_b


def _input_parts(fn: str, u, parts: int) -> tuple[Array, ...]:
  """Validates ``u`` given as ``parts`` arrays of one shape and dtype (the gated scans'
  separately projected inputs) and returns them as arrays."""
  what = "a pair" if parts == 2 else f"{parts} arrays"
  if len(u) != parts:
    raise ValueError(f"{fn}: argument 'u' must be one array (time, *batch, {parts}n) or "
                     f"{what} (time, *batch, n); got a sequence of {len(u)} arrays.")
  arrays = tuple(jnp.asarray(a) for a in u)
  if any(a.shape != arrays[0].shape or a.dtype != arrays[0].dtype for a in arrays[1:]):
    got = " and ".join(f"{a.dtype}{a.shape}" for a in arrays)
    raise ValueError(f"{fn}: the {parts} arrays of u must have one shape and dtype; got "
                     f"{got}.")
  return arrays


def euler_scan(kernel: Array, u: Array, h0: Array, *, epsilon: float,
               store: str = "activation",
               reverse: bool = False, unroll: int = 1, mask: Optional[Array] = None,
               seq_lengths: Optional[Array] = None) -> tuple[Array, Array]:
  """``h_t = h_{t-1} + eps tanh(h_{t-1} K + u_t)`` (AntisymmetricRNN eq 12, row form).

  Args:
    kernel: ``K = (W - W^T - gamma I)^T``, ``(n, n)``.
    u: ``x_t V + b``, time-major ``(T, *batch, n)``.
    h0: initial carry ``(*batch, n)``.
    epsilon: step size ``eps > 0`` (a Python number).
    store: ``'activation'`` (default: keep ``tanh(z_t)``, written over ``u``'s buffer
      inside the computation -- the caller's array is not modified: XLA copies it first
      if it is used after the call -- and the input cotangents written over the
      activations) or ``'recompute'`` (recompute ``z = H_prev K + U`` as one large
      product in the backward pass; slower, no memory saved).
    reverse, unroll, mask, seq_lengths: as in :func:`rnn_scan`.

  Returns:
    ``(h_final, hs)``, ``hs`` time-major ``(T, *batch, n)``.
  """
  return _euler_api("euler_scan", kernel, u, h0, epsilon=epsilon, store=store,
                    reverse=reverse, unroll=unroll, mask=mask, seq_lengths=seq_lengths,
                    gated=False)


def gated_euler_scan(kernel: Array, u: Array, h0: Array, *, epsilon: float,
                     store: str = "activation", reverse: bool = False, unroll: int = 1,
                     mask: Optional[Array] = None,
                     seq_lengths: Optional[Array] = None) -> tuple[Array, Array]:
  """Gated AntisymmetricRNN (eq 13, row form), one shared kernel ``K``::

      a_t = h_{t-1} K
      h_t = h_{t-1} + eps sigmoid(a_t + u^z_t) * tanh(a_t + u^h_t)

  Args:
    kernel: ``(n, n)``.
    u: the pair ``(x_t V_h + b_h, x_t V_z + b_z)`` of time-major ``(T, *batch, n)``
      arrays (what :meth:`~lvf_jax.cells.GatedAntisymmetricRNNCell.project_inputs`
      returns), or one ``(T, *batch, 2 n)`` array ``[u_h | u_z]`` (split here: a copy of
      the sequence, measured slower than projecting the halves separately).
    h0: ``(*batch, n)``.
    epsilon, store, reverse, unroll, mask, seq_lengths: as in :func:`euler_scan`
      (``store='activation'`` writes both activations over the two projected inputs).

  Returns:
    ``(h_final, hs)``, ``hs`` time-major ``(T, *batch, n)``.
  """
  return _euler_api("gated_euler_scan", kernel, u, h0, epsilon=epsilon, store=store,
                    reverse=reverse, unroll=unroll, mask=mask, seq_lengths=seq_lengths,
                    gated=True)


# ----------------------------------------------------------------- cell wiring


def fused_scan_for_cell(cell: Any, in_loop: bool = False):
  """The fused scan that computes ``cell``'s recurrence, or ``None`` if none covers it.

  Returns ``scan(prep, carry, u, *, reverse=False, unroll=1, mask=None) -> (carry, ys)``
  taking the cell's own ``prepare()`` output and time-major ``project_inputs`` output, a
  drop-in replacement of :func:`lvf_jax.layers.scan_steps` ``(cell.step, prep, carry, u)``
  (same masking / reverse semantics, outputs time-major). Mapping:

  ==========================================  ==========================================
  cell                                        fused call
  ==========================================  ==========================================
  ``ExpRNNCell``, ``ScoRNNCell``,             ``rnn_scan(prep['kernel'], u, carry,
  ``NNRNNCell``, ``LVFRNNCell``, real         prep['bias'], activation=cell.activation)``
  ``EURNNCell`` (``complex_valued=False``)
  ``URNNCell``, complex ``EURNNCell``         ``rnn_scan(..., activation='modrelu_split')``
  ``TanhRNNCell``, ``OrthInitRNNCell``        ``rnn_scan(prep['kernel'], u, carry,
                                              activation='tanh')`` (bias is inside ``u``)
  ``AntisymmetricRNNCell``                    ``euler_scan(prep['kernel'], u, carry,
                                              epsilon=cell.epsilon)``
  ``GatedAntisymmetricRNNCell``               ``gated_euler_scan(prep['kernel'], u, carry,
                                              epsilon=cell.epsilon)``
  ``LSTMCell``, ``GRUCell`` (sigmoid gates,   :func:`lvf_jax.layers.fused_gated.lstm_scan`
  tanh activations: the defaults)             / ``gru_scan(prep['kernel'], prep['bias'],
                                              u, carry)``
  ``NCGRUCell``                                :func:`lvf_jax.layers.fused_gated.ncgru_scan`
                                              ``(prep['kernel_ru'], prep['kernel_c'],
                                              prep['bias_c'], u, carry)``
  ``GORUCell``                                 ``gru_scan(prep['kernel'], None, u, carry,
                                              candidate='modrelu', candidate_bias=
                                              prep['bias_c'])``
  LSTM / GRU with other gate functions        ``None`` (use ``scan_steps``)
  ==========================================  ==========================================

  With ``in_loop=True`` the scan instead takes the raw inputs ``x`` (time-major ``(T,
  *batch, d)``) in place of ``u`` and the keyword ``input_weights=(W, b)`` (the cell's
  :meth:`~lvf_jax.cells.base.StructuredCell.input_weights`), and forms ``x_t W + b``
  inside its loop (:func:`rnn_scan`'s ``input_kernel``; an input bias joins the activation
  bias, the same sum inside ``tanh`` / ``relu`` / identity, and a ``ValueError`` for a
  modReLU cell with an input bias: none of the library's has one) or the ``input_kernel``
  / ``input_bias`` of the LSTM, GRU, GORU and NC-GRU scans; it is ``None`` for the
  AntisymmetricRNN cells (their Euler scans keep the projected inputs: the gated one
  reuses their buffers for its activations) and for the cells no scan covers.

  Args:
    cell: a cell instance (bound or unbound); only its class and static attributes are read.
    in_loop: return the in-loop-projection form of the scan (above).

  The Euler scans also accept ``store=`` (see :func:`euler_scan`; default here
  ``'activation'``, measured faster than ``'recompute'``).
  """
  from lvf_jax import cells  # lazy: lvf_jax.layers must not import the cells at import time

  def simple(activation, use_bias):
    def scan(prep, carry, u, *, reverse=False, unroll=1, mask=None):
      return rnn_scan(prep["kernel"], u, carry, prep["bias"] if use_bias else None,
                      activation=activation, reverse=reverse, unroll=unroll, mask=mask)

    def scan_in_loop(prep, carry, x, *, input_weights, reverse=False, unroll=1, mask=None):
      w, b_in = input_weights
      bias = prep["bias"] if use_bias else None
      if b_in is not None:  # x W + b_in + b: both biases sit inside the activation
        if activation not in ("tanh", "identity", "relu"):
          raise ValueError(f"fused scan of {type(cell).__name__}: an input bias cannot join "
                           f"the {activation!r} bias; project the inputs before the loop.")
        bias = b_in if bias is None else bias + b_in
      return rnn_scan(prep["kernel"], x, carry, bias, activation=activation,
                      input_kernel=w, reverse=reverse, unroll=unroll, mask=mask)

    return scan_in_loop if in_loop else scan

  def gated(fn, params):
    """The scan ``fn(*args, u, carry, ..., **kw)`` of a gated cell, ``(args, kw) =
    params(prep)``, in either form."""
    def scan(prep, carry, u, *, reverse=False, unroll=1, mask=None):
      args, kw = params(prep)
      return fn(*args, u, carry, reverse=reverse, unroll=unroll, mask=mask, **kw)

    def scan_in_loop(prep, carry, x, *, input_weights, reverse=False, unroll=1, mask=None):
      args, kw = params(prep)
      w, b_in = input_weights
      return fn(*args, x, carry, reverse=reverse, unroll=unroll, mask=mask,
                input_kernel=w, input_bias=b_in, **kw)
    return scan_in_loop if in_loop else scan


  def euler(gated, epsilon):
    fn = gated_euler_scan if gated else euler_scan

    def scan(prep, carry, u, *, reverse=False, unroll=1, mask=None, store="activation"):
      return fn(prep["kernel"], u, carry, epsilon=epsilon, store=store, reverse=reverse,
                unroll=unroll, mask=mask)
    return scan

  if isinstance(cell, cells.KernelCell):  # expRNN, scoRNN, nnRNN, lvfRNN: sigma(hK + u + b)
    if cell.state_is_complex:  # uRNN, complex EURNN: [Re h | Im h], complex modReLU
      return simple("modrelu_split", True)
    return simple(cell.activation, True)
  if isinstance(cell, cells.TanhRNNCell):  # includes OrthInitRNNCell
    return simple("tanh", False)
  if isinstance(cell, cells.AntisymmetricRNNCell):  # includes the gated subclass
    return None if in_loop else euler(bool(cell.gated), float(cell.epsilon))
  if isinstance(cell, (cells.LSTMCell, cells.GRUCell)):
    if cell.gate_fn is not jax.nn.sigmoid or cell.activation_fn is not jnp.tanh:
      return None  # the hand-written derivatives assume Flax's default functions
    fn = _fused_gated().lstm_scan if isinstance(cell, cells.LSTMCell) else \
        _fused_gated().gru_scan
    return gated(fn, lambda p: ((p["kernel"], p["bias"]), {}))
  if isinstance(cell, cells.GORUCell):  # a GRU with a modReLU candidate, no hidden biases
    return gated(_fused_gated().gru_scan, lambda p: (
        (p["kernel"], None), {"candidate": "modrelu", "candidate_bias": p["bias_c"]}))
  if isinstance(cell, cells.NCGRUCell):
    return gated(_fused_gated().ncgru_scan,
                 lambda p: ((p["kernel_ru"], p["kernel_c"], p["bias_c"]), {}))
  return None


def _fused_gated():
  from lvf_jax.layers import fused_gated  # lazy: fused_gated imports this module
  return fused_gated


# ------------------------------------------------------------------- references


def reference_scan(step, kernel: Array, u: Array, h0: Array, *, reverse: bool = False,
                   unroll: int = 1, mask: Optional[Array] = None) -> tuple[Array, Array]:
  """Plain ``lax.scan`` of ``step(kernel, h, u_t) -> h`` (autodiff baseline, same masking)."""

  def body(h, xs):
    u_t, m_t = xs
    h_new = step(kernel, h, u_t)
    if m_t is not None:
      h_new = jnp.where(m_t[..., None], h_new, h)
    return h_new, h_new

  h_last, hs = jax.lax.scan(body, h0, (u, mask), reverse=reverse, unroll=unroll)
  if mask is not None:
    hs = jnp.where(mask[..., None], hs, jnp.zeros((), hs.dtype))
  return h_last, hs


__all__ = ["ACTIVATIONS", "STORES", "rnn_scan", "euler_scan", "gated_euler_scan",
           "fused_scan_for_cell", "expm_taylor", "reference_scan"]
