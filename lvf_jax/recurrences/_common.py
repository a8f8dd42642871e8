"""Helpers shared by the fused scans of :mod:`lvf_jax.recurrences`: argument checks and
flattening, the shifts and in-place slices of the loops, the activations and their
derivatives from the outputs, the in-loop input projection and its cotangents.

Private to the package: the scans' public signatures are in :mod:`lvf_jax.recurrences`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from lvf_jax.geometry.activations import modrelu_split, pair_sum

Array = jax.Array

# --------------------------------------------------------------------- validation


def check_unroll(fn: str, unroll: Any) -> int:
  if isinstance(unroll, bool) or not isinstance(unroll, numbers.Integral) or unroll < 1:
    raise ValueError(f"{fn}: argument 'unroll' must be an int >= 1; got {unroll!r}.")
  return int(unroll)



def check_seq_lengths(fn: str, seq_lengths: Any, batch_shape: tuple[int, ...],
                      num_steps: int) -> Array:
  """``seq_lengths`` as an int array of shape ``batch_shape``; raises ``ValueError`` naming
  ``fn`` for another shape or dtype, or (where the lengths are concrete, not under ``jit``
  tracing) for a length outside ``[0, num_steps]``."""
  seq_lengths = jnp.asarray(seq_lengths)
  if seq_lengths.shape != batch_shape or not jnp.issubdtype(seq_lengths.dtype, jnp.integer):
    raise ValueError(
        f"{fn}: argument 'seq_lengths' must be an int array of shape (*batch,) = "
        f"{batch_shape}; got {seq_lengths.dtype} of shape {seq_lengths.shape}.")
  try:
    known = np.asarray(seq_lengths)
  except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
    known = None
  if known is not None and known.size and (known.min() < 0 or known.max() > num_steps):
    raise ValueError(
        f"{fn}: argument 'seq_lengths' must lie in [0, {num_steps}] (the number of time "
        f"steps); got values from {int(known.min())} to {int(known.max())}.")
  return seq_lengths


def flatten_batch(fn: str, kernel, u, h0, bias, mask, seq_lengths, width: int, kernels: int = 1):
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
  shape_only = isinstance(kernel, jax.ShapeDtypeStruct)  # a structured operator's shape
  if not shape_only:
    kernel = jnp.asarray(kernel)
  n = kernel.shape[0] if len(kernel.shape) == 2 else -1
  if len(kernel.shape) != 2 or kernel.shape != (n, kernels * n):
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
    seq_lengths = check_seq_lengths(fn, seq_lengths, batch_shape, num_steps)
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
  return (kernel if shape_only else kernel.astype(dtype)), u2, h02, bias, mask2, batch_shape


def finish(h_last, hs, mask, batch_shape):
  """Masked outputs (zero where ``mask`` is False) and un-flattened batch axes."""
  n = hs.shape[-1]
  ys = hs if mask is None else jnp.where(mask[..., None], hs, jnp.zeros((), hs.dtype))
  return (h_last.reshape(batch_shape + (n,)),
          ys.reshape((hs.shape[0],) + batch_shape + (n,)))


def prev_states(h0: Array, hs: Array, reverse: bool) -> Array:
  """``H_prev[t] = h_{t-1}``: the carry each step consumed (``h_{t+1}`` when reversed).

  The same shift takes a backward loop's shifted sequence (index ``t`` holding the value of
  step ``t + 1``; ``t - 1`` when reversed) back to the aligned one, ``h0`` being the value
  of the step that falls off it."""
  if reverse:
    return jnp.concatenate([hs[1:], h0[None]], axis=0)
  return jnp.concatenate([h0[None], hs[:-1]], axis=0)


def next_steps(a: Array, reverse: bool) -> Array:
  """``a`` moved one step back in processing order: index ``t`` holds ``a_{t+1}``
  (``a_{t-1}`` when reversed), zero past the end."""
  zero = jnp.zeros_like(a[:1])
  return jnp.concatenate([zero, a[:-1]] if reverse else [a[1:], zero], axis=0)


def step_slice(a: Array, t) -> Array:
  return jax.lax.dynamic_index_in_dim(a, t, 0, keepdims=False)


def step_update(a: Array, t, v: Array) -> Array:
  return jax.lax.dynamic_update_index_in_dim(a, v, t, 0)


def step_indices(num_steps: int) -> Array:
  """``0 .. T-1`` as unsigned ints: a slice at an unsigned index needs no wrap of negative
  indices (one scalar fusion less per step)."""
  return jnp.arange(num_steps, dtype=jnp.uint32)


def processing_ends(num_steps: int, reverse: bool) -> tuple[int, int]:
  """The steps a backward loop processes first and last (the last one's previous state is
  ``h0``)."""
  first = 0 if reverse else num_steps - 1
  return first, num_steps - 1 - first


def next_index(t, last: int, reverse: bool):
  """``(t == last, the step a backward loop processes after t)``; at the last step ``t``
  itself (read there, not used)."""
  at_last = t == last
  return at_last, jnp.where(at_last, t, t + 1 if reverse else t - 1)


def last_carry(h0: Array, hs: Array, reverse: bool) -> Array:
  if hs.shape[0] == 0:
    return h0
  return hs[0] if reverse else hs[-1]


def typed_sharding(x: Any):
  """The ``NamedSharding`` in ``x``'s type when an axis of it is sharded (a mesh with
  ``Explicit`` axes, JAX's sharding in types); None otherwise (one device, ``Auto`` axes,
  non-array leaves)."""
  try:
    s = jax.typeof(x).sharding
  except Exception:  # pylint: disable=broad-except  (no sharding in the type)
    return None
  spec = getattr(s, "spec", None)
  if spec is None or getattr(s, "mesh", None) is None or all(p is None for p in spec):
    return None
  return s


def explicitly_sharded(x: Array) -> bool:
  """Whether ``x``'s type carries a sharded axis (:func:`typed_sharding`): then merging its
  leading axes by a reshape is refused, and the products below contract the axes in place
  instead (the partitioner inserts the reduction over the sharded batch)."""
  return typed_sharding(x) is not None


def replicated(x: Array) -> Array:
  """``x`` gathered onto every device when it is explicitly sharded (:func:`typed_sharding`),
  unchanged otherwise: for a reshape that merges a sharded batch axis into a leading one."""
  sharding = typed_sharding(x)
  if sharding is None:
    return x
  return jax.sharding.reshard(x, jax.sharding.NamedSharding(sharding.mesh,
                                                            jax.sharding.PartitionSpec()))


def shard_batch_like(tree: Any, x: Array) -> Any:
  """Every leaf of ``tree`` (carries ``(*batch, n)``) with the batch axes sharded as those of
  the time-major ``x`` (``(T, *batch, d)``) when ``x`` is explicitly sharded; unchanged
  otherwise. A scan needs its carry typed as the states it computes from ``x``."""
  sharding = typed_sharding(x)
  if sharding is None:
    return tree
  batch_spec = tuple(sharding.spec)[1:-1]

  def reshard(leaf):
    spec = jax.sharding.PartitionSpec(*batch_spec, *([None] * (leaf.ndim - len(batch_spec))))
    return jax.sharding.reshard(leaf, jax.sharding.NamedSharding(sharding.mesh, spec))

  return jax.tree_util.tree_map(reshard, tree)


def dot_rows(a: Array, w: Array) -> Array:
  """``a @ w`` over every leading axis of ``a`` as ONE 2-D ``(T B, d) x (d, k)`` product
  (no layout copies of the whole sequence, which a 3-D ``dot_general`` and its transpose
  can need on XLA:CPU); in place under explicit sharding."""
  if explicitly_sharded(a):
    return jnp.einsum("...d,dk->...k", a, w)
  return jnp.dot(a.reshape((-1, a.shape[-1])), w).reshape(a.shape[:-1] + (w.shape[-1],))


def big_matmul_tn(a: Array, b: Array) -> Array:
  """``sum_t a_t^T b_t`` as ONE ``(n, T B) x (T B, m)`` product."""
  if explicitly_sharded(a) or explicitly_sharded(b):  # a weight gradient: replicated
    lead = tuple(range(a.ndim - 1))
    return jax.lax.dot_general(a, b, ((lead, lead), ((), ())),
                               out_sharding=jax.sharding.PartitionSpec())
  a2 = a.reshape((-1, a.shape[-1]))
  b2 = b.reshape((-1, b.shape[-1]))
  return jax.lax.dot_general(a2, b2, (((0,), (0,)), ((), ())))


def mask_select(m_t, new, old):
  return jnp.where(m_t[:, None], new, old)


def padded_carry_cotangent(m_t, g):
  """``g`` where step ``t`` is padding (its carry is the old carry, so the cotangent flows
  straight through), zero elsewhere."""
  return mask_select(m_t, jnp.zeros((), g.dtype), g)


# ------------------------------------------------------------ sigma(h K + u, b)


def act_fwd(name: str, z: Array, bias: Optional[Array]) -> Array:
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


def act_grad_from_output(name: str, h: Array, has_bias: bool) -> Optional[Array]:
  """``d sigma / d z`` written as a function of the output ``h = sigma(z)`` (None = 1)."""
  if name == "tanh":
    return 1.0 - h * h
  if name == "modrelu":
    if not has_bias:
      return None
    return jnp.abs(jnp.sign(h))  # 1 where |z| + b > 0 (and z != 0), else 0
  if name == "modrelu_split" and not has_bias:
    return None  # the identity (with a bias: not elementwise, see modrelu_split_vjp)
  if name == "relu":
    return (h > 0).astype(h.dtype)
  return None


def modrelu_bias_cotangent(dz: Array, h: Array) -> Array:
  """Batch sum of modReLU's bias cotangent, ``sum_b dz * sign(h)`` (``dh/db = sign(z)``
  where the unit is active, 0 where ``h = 0``)."""
  return jnp.sum(dz * jnp.sign(h), axis=0)


def modrelu_split_vjp(h: Array, g: Array, b: Array) -> tuple[Array, Array]:
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


def valid_cotangent(m_t, g):
  """``g`` where step ``t`` is valid, zero where it is padding (``m_t`` False)."""
  return g if m_t is None else mask_select(m_t, g, jnp.zeros((), g.dtype))


# ----------------------------------------------------------- input handling


def flatten_batch_parts(fn, kernel, u, h0, bias, mask, seq_lengths, parts: int, kernels: int = 1):
  """:func:`flatten_batch` for a scan whose ``u`` is one ``(T, *batch, parts n)`` array or
  ``parts`` arrays ``(T, *batch, n)`` (the gated cells' separately projected inputs);
  returns ``u`` as a tuple of ``parts`` arrays ``(T, B, n)`` (one array is split here: a
  copy of the sequence)."""
  if isinstance(u, (tuple, list)):
    arrays = input_parts(fn, u, parts)
    kernel, u0, h02, bias, mask2, batch_shape = flatten_batch(
        fn, kernel, arrays[0], h0, bias, mask, seq_lengths, 1, kernels=kernels)
    return kernel, tuple(a.reshape(u0.shape) for a in arrays), h02, bias, mask2, batch_shape
  kernel, u2, h02, bias, mask2, batch_shape = flatten_batch(
      fn, kernel, u, h0, bias, mask, seq_lengths, parts, kernels=kernels)
  return kernel, tuple(jnp.split(u2, parts, axis=-1)), h02, bias, mask2, batch_shape


def flatten_batch_inputs(fn, kernel, u, h0, bias, mask, seq_lengths, width: int,
                         kernels: int = 1, *, split: bool = False, input_kernel=None,
                         input_bias=None):
  """:func:`flatten_batch` (or with ``split`` :func:`flatten_batch_parts`) plus the optional
  in-loop input projection; returns ``(kernel, u2, h02, bias, mask2, batch_shape, w_in, b_in)``.

  Without ``input_kernel``, ``u`` holds the projected inputs (``width n`` features, or with
  ``split`` a tuple of ``width`` arrays) and ``w_in = b_in = None``. With it, ``u`` is the
  raw input ``(T, *batch, d)`` (``u2: (T, B, d)``), ``w_in = input_kernel`` must be ``(d,
  width n)`` and ``b_in = input_bias`` ``(width n,)`` or None; both are cast to ``u``'s
  dtype and the scan forms ``u_t = x_t W + b`` inside its loop (:func:`loop_reader`).
  """
  if input_kernel is None:
    if input_bias is not None:
      raise ValueError(f"{fn}: argument 'input_bias' needs 'input_kernel'.")
    if split:
      out = flatten_batch_parts(fn, kernel, u, h0, bias, mask, seq_lengths, width, kernels)
    else:
      out = flatten_batch(fn, kernel, u, h0, bias, mask, seq_lengths, width, kernels)
    return out + (None, None)
  if isinstance(u, (tuple, list)):
    raise ValueError(f"{fn}: with 'input_kernel', argument 'u' must be the raw input array "
                     f"(time, *batch, d); got a sequence of {len(u)} arrays.")
  kernel, u2, h02, bias, mask2, batch_shape = flatten_batch(
      fn, kernel, u, h0, bias, mask, seq_lengths, None, kernels)
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


def loop_reader(w_in, b_in, parts: int = 1):
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


def input_cotangents(x, w_in, b_in, du):
  """Cotangents of the scan's input arguments ``(u, w_in, b_in)`` from the pre-activation
  cotangents ``du`` (one ``(T, B, k)`` array or a tuple of blocks): ``(du, None, None)``
  when the inputs came projected, else ``(dX, dW, db)`` of ``u = x W + b`` with ``dW =
  X^T dU`` and ``dX = dU W^T`` one large product per block, after the loop."""
  if w_in is None:
    return du, None, None
  blocks = du if isinstance(du, tuple) else (du,)
  ws = jnp.split(w_in, len(blocks), axis=-1)
  d_w = jnp.concatenate([big_matmul_tn(x, g) for g in blocks], axis=-1)
  d_x = sum(dot_rows(g, w.T) for g, w in zip(blocks, ws))
  d_b = None if b_in is None else jnp.concatenate([jnp.sum(g, axis=(0, 1)) for g in blocks])
  return d_x.reshape(x.shape), d_w, d_b


def input_parts(fn: str, u, parts: int) -> tuple[Array, ...]:
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
