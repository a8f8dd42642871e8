"""Initialisers with Flax's ``init(key, shape, dtype)`` signature.

Each public name is a *factory* (like ``flax.linen.initializers.normal``) returning the
initialiser, so it can be passed to ``self.param(name, init, shape)``. Skew initialisers
return the full ``(n, n)`` skew-symmetric matrix (column convention).
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from lvf_jax import _validation
from lvf_jax.geometry import unitary

Array = jax.Array
Initializer = Callable[..., Array]


def _superdiagonal_skew(s: Array, n: int, dtype) -> Array:
  """Skew matrix with ``A[2i, 2i+1] = s_i``, ``A[2i+1, 2i] = -s_i`` (expRNN layout)."""
  idx = jnp.arange(n // 2) * 2
  a = jnp.zeros((n, n), dtype).at[idx, idx + 1].set(s.astype(dtype))
  return a - a.T


def henaff() -> Initializer:
  """Henaff et al. (2016) skew init: ``s_i ~ U(-pi, pi)`` on the 2x2 blocks (expRNN)."""

  def init(key, shape, dtype=jnp.float32):
    n = _validation.check_init_shape("henaff", shape)[0]
    dtype = _validation.check_floating("henaff", "dtype", dtype)
    s = jax.random.uniform(key, (n // 2,), dtype, -math.pi, math.pi)
    return _superdiagonal_skew(s, n, dtype)

  return init


def cayley_init() -> Initializer:
  """Cayley skew init (Helfrich et al. 2018 / expRNN): ``u ~ U(0, pi/2)``, ``s = -tan(u/2)``.

  ``cayley(A)`` then has eigen-angles spread in ``(-pi/2, pi/2)`` (expm(A) in a smaller
  range, as in expRNN's ``cayley_init_``).
  """

  def init(key, shape, dtype=jnp.float32):
    n = _validation.check_init_shape("cayley_init", shape)[0]
    dtype = _validation.check_floating("cayley_init", "dtype", dtype)
    u = jax.random.uniform(key, (n // 2,), dtype, 0.0, math.pi / 2)
    return _superdiagonal_skew(-jnp.tan(u / 2), n, dtype)

  return init


def _compute_dtype(dtype) -> jnp.dtype:
  """LAPACK has no bfloat16/float16 kernels: compute in (at least) float32, then cast."""
  dtype = jnp.dtype(dtype)
  return jnp.dtype(jnp.float32) if dtype.itemsize < 4 else dtype


def _haar_orthogonal(key, n: int, dtype) -> Array:
  z = jax.random.normal(key, (n, n), _compute_dtype(dtype))
  q = unitary.qr_positive(z)  # Mezzadri's sign fix: Haar on O(n)
  sign = jnp.sign(jnp.linalg.det(q))
  return q.at[:, 0].multiply(sign)  # reflect one column: Haar on SO(n) (compute dtype)


def haar_orthogonal() -> Initializer:
  """Haar-random orthogonal matrix with ``det = +1`` (QR with sign fix)."""

  def init(key, shape, dtype=jnp.float32):
    n = _validation.check_init_shape("haar_orthogonal", shape)[0]
    dtype = _validation.check_floating("haar_orthogonal", "dtype", dtype)
    return _haar_orthogonal(key, n, dtype).astype(dtype)

  return init


def _unitary_pair_shape(fn: str, shape) -> int:
  shape = tuple(int(s) for s in shape)
  if len(shape) != 3 or shape[0] != 2 or shape[1] != shape[2] or shape[1] <= 0:
    raise ValueError(
        f"{fn}: argument 'shape' must be (2, n, n) (the pair [Re W, Im W] of a unitary "
        f"matrix); got {shape}.")
  return shape[1]


def haar_unitary() -> Initializer:
  """Haar-random unitary ``W`` as the real pair ``[Re W, Im W]`` of shape ``(2, n, n)``.

  QR of a complex Gaussian matrix with the phases of ``diag(R)`` moved into ``Q``
  (Mezzadri 2007), which makes ``Q`` Haar-distributed on U(n).
  """

  def init(key, shape, dtype=jnp.float32):
    n = _unitary_pair_shape("haar_unitary", shape)
    dtype = _validation.check_floating("haar_unitary", "dtype", dtype)
    z = jax.random.normal(key, (2, n, n), _compute_dtype(dtype))
    q = unitary.qr_positive(unitary.complex_from_pair(z))
    return unitary.pair_from_complex(q).astype(dtype)

  return init


def urnn_unitary(permutation_seed: int = 0) -> Initializer:
  r"""A random uRNN product ``W = D_3 R_2 F^{-1} D_2 \Pi R_1 F D_1`` as ``[Re W, Im W]``
  ``(2, n, n)``: the full-capacity uRNN reference's default initial ``W`` (Wisdom et al.
  2016). Phases ``U(-pi, pi)`` and reflection vectors ``U(-1, 1)`` from ``key``; the
  permutation ``\Pi`` is NumPy's ``RandomState(permutation_seed).permutation(n)`` (a constant,
  so the initialiser works on traced keys).
  """

  def init(key, shape, dtype=jnp.float32):
    n = _unitary_pair_shape("urnn_unitary", shape)
    dtype = _validation.check_floating("urnn_unitary", "dtype", dtype)
    k_theta, k_refl = jax.random.split(key)
    cdt = _compute_dtype(dtype)
    theta = jax.random.uniform(k_theta, (3, n), cdt, -math.pi, math.pi)
    r = jax.random.uniform(k_refl, (2, 2, n), cdt, -1.0, 1.0)  # [k, re/im, :] of v_1, v_2
    v = jax.lax.complex(r[:, 0], r[:, 1])
    perm = np.random.RandomState(permutation_seed).permutation(n)
    w = unitary.urnn_matrix(theta[0], theta[1], theta[2], v[0], v[1], perm)
    return unitary.pair_from_complex(w).astype(dtype)

  return init


def orthogonal_log(q: Array) -> Array:
  """Real skew logarithm of a special orthogonal ``Q`` (principal branch).

  ``S = (Q + Q^T)/2`` and ``K = (Q - Q^T)/2`` commute; on each invariant plane
  ``S = cos(t) I`` and ``K = sin(t) J``, so ``log Q = K g(S)`` with ``g = t / sin t``,
  evaluated through ``eigh(S)``. ``sin t`` is read off ``K`` itself (``||K z|| = sin t`` for
  an eigenvector ``z`` of ``S``) and ``t = atan2(sin t, cos t)``, so ``K z g`` has the norm
  ``t`` however close an eigen-angle is to ``+-pi`` (where ``1 - cos^2 t`` rounds to zero
  while ``K`` keeps its rounding error). Exact up to rounding away from eigen-angles at
  ``+-pi``, where the logarithm is not unique.
  """
  _validation.check_matrix("orthogonal_log", "q", q, batched=False)
  s = (q + q.T) / 2
  k = (q - q.T) / 2
  c, z = jnp.linalg.eigh(s)
  sin_t = jnp.sqrt(jnp.sum(jnp.square(k @ z), axis=0))
  t = jnp.arctan2(sin_t, c)
  small = t < 1e-3
  g = jnp.where(small, 1 + t * t / 6, t / jnp.where(small | (sin_t == 0), 1, sin_t))
  log_q = k @ ((z * g[None, :]) @ z.T)
  return (log_q - log_q.T) / 2


def haar_skew() -> Initializer:
  """Skew ``A`` with ``expm(A)`` Haar on SO(n): the "random" init of expRNN/nnRNN."""

  def init(key, shape, dtype=jnp.float32):
    n = _validation.check_init_shape("haar_skew", shape)[0]
    dtype = _validation.check_floating("haar_skew", "dtype", dtype)
    return orthogonal_log(_haar_orthogonal(key, n, dtype)).astype(dtype)

  return init


def sinkhorn(m: Array, tol: float = 1e-8, max_iter: int = 1000) -> Array:
  """Sinkhorn-Knopp: alternately normalise rows and columns of a non-negative ``m``.

  The stopping test (lvfRNN Alg. 2, corrected) measures the *row* sums after the column
  step (right after its own normalisation each sum is trivially 1). Iteration stops at
  ``max |row sum - 1| <= tol``, when the error stops decreasing (the floating-point
  floor, e.g. ~1e-7 in float32), or after ``max_iter`` sweeps.
  """
  _validation.check_matrix("sinkhorn", "m", m, batched=False)

  def sweep(x):
    x = x / jnp.sum(x, axis=1, keepdims=True)
    x = x / jnp.sum(x, axis=0, keepdims=True)
    return x, jnp.max(jnp.abs(jnp.sum(x, axis=1) - 1))

  def cond(state):
    _, err, prev_err, it = state
    return (err > tol) & (err < prev_err) & (it < max_iter)

  def body(state):
    x, err, _, it = state
    x, new_err = sweep(x)
    return x, new_err, err, it + 1

  x0, err0 = sweep(m)
  inf = jnp.asarray(jnp.inf, err0.dtype)
  x, *_ = jax.lax.while_loop(cond, body, (x0, err0, inf, jnp.asarray(1)))
  return x


def doubly_stochastic(tol: float = 1e-8, max_iter: int = 1000) -> Initializer:
  """lvfRNN Alg. 2: a doubly-stochastic vector field by Sinkhorn from ``U[0, 1]``.

  The diagonal is zero from the start (Sinkhorn preserves zeros), so the result lies in
  ``vf_n`` and is divergence-free: ``div V = col sums - row sums = 0``.
  """

  def init(key, shape, dtype=jnp.float32):
    n = _validation.check_init_shape("doubly_stochastic", shape)[0]
    if n < 2:
      raise ValueError(f"doubly_stochastic: needs n >= 2; got shape {tuple(shape)}.")
    dtype = _validation.check_floating("doubly_stochastic", "dtype", dtype)
    cdt = _compute_dtype(dtype)
    m = jax.random.uniform(key, (n, n), cdt) * (1 - jnp.eye(n, dtype=cdt))
    return sinkhorn(m, tol, max_iter).astype(dtype)

  return init


def rotation_field(skew_init: Optional[Initializer] = None) -> Initializer:
  """A vector field ``V = -A / 2`` whose rotation ``R_V = V^T - V`` (lvfRNN eq. 9) is the
  skew draw ``A`` of ``skew_init`` (default :func:`haar_skew`): with ``div V = 0`` the
  operator ``D_V`` is ``A``, and the exponential map at ``tau = 1`` gives ``C_V =
  expm(-A)``, Haar on SO(n) for the default, eigen-angles spread over the circle as an
  expRNN's ``expm(A)`` (Lezcano-Casado & Martinez-Rubio 2019, arXiv:1901.08428)."""
  skew_init = skew_init or haar_skew()

  def init(key, shape, dtype=jnp.float32):
    _validation.check_init_shape("rotation_field", shape)
    a = skew_init(key, shape, dtype)
    return (-a / 2).astype(dtype)

  return init


def centered_over_units(init: Initializer) -> Initializer:
  """``init`` with each draw's mean over its last axis removed.

  For a row-form input kernel ``(m, n)`` (``x @ U``) the last axis runs over the ``n`` hidden
  units, so no input feature then drives the constant direction ``1``: ``U^T 1 = 0`` in the
  column form ``u = U x``. The lvfRNN's ``D_V`` annihilates constant vectors (Azencot et
  al. 2021, arXiv:2102.09589, eq. 15), so ``C_V 1 = 1`` for every field and integrator and
  the state's component along ``1`` adds up the inputs' mean drive without decay: under a
  constant input it grows linearly in the sequence length.

  Args:
    init: the initialiser to centre (Flax signature ``init(key, shape, dtype)``).
  """

  def centered(key, shape, dtype=jnp.float32):
    shape = _validation.check_init_shape("centered_over_units", shape, square=False)
    if not shape:
      raise ValueError("centered_over_units: argument 'shape' must have at least one axis; "
                       "got ().")
    w = init(key, shape, dtype)
    return w - jnp.mean(w, axis=-1, keepdims=True)

  return centered


def uniform_angle() -> Initializer:
  """nnRNN rotation angles ``theta ~ U(0, 2 pi)``."""

  def init(key, shape, dtype=jnp.float32):
    return jax.random.uniform(key, tuple(shape), dtype, 0.0, 2 * math.pi)

  return init


def modrelu_bias(scale: float = 0.01) -> Initializer:
  """modReLU bias ``b ~ U(-scale, scale)`` (uRNN / expRNN)."""

  def init(key, shape, dtype=jnp.float32):
    return jax.random.uniform(key, tuple(shape), dtype, -scale, scale)

  return init


def scaled_normal(sigma: float = 1.0, fan_axis: int = 0) -> Initializer:
  """``N(0, sigma^2 / n)`` with ``n = shape[fan_axis]`` (AntisymmetricRNN: ``sigma_w``)."""

  def init(key, shape, dtype=jnp.float32):
    shape = tuple(shape)
    return jax.random.normal(key, shape, dtype) * (sigma / math.sqrt(shape[fan_axis]))

  return init


def column_blocks(*inits: Initializer) -> Initializer:
  """Each of ``len(inits)`` equal blocks of the last axis drawn by its own initialiser.

  For a fused row-form kernel ``(m, k n)`` whose column blocks are separate matrices, e.g.
  a gated cell's input kernel ``[W_r | W_u | W_c]``: block ``i`` is ``inits[i](key_i, (..., n),
  dtype)``, so a fan-in based initialiser sees the block's own shape.

  Raises:
    ValueError: when the last axis does not split into ``len(inits)`` equal blocks.
  """
  if not inits:
    raise ValueError("column_blocks: needs at least one initialiser; got none.")

  def init(key, shape, dtype=jnp.float32):
    shape = _validation.check_init_shape("column_blocks", shape, square=False)
    if not shape or shape[-1] % len(inits):
      _validation.fail("column_blocks", "shape", shape,
                       f"a last axis that splits into {len(inits)} equal blocks")
    block = (*shape[:-1], shape[-1] // len(inits))
    keys = jax.random.split(key, len(inits))
    return jnp.concatenate([f(k, block, dtype) for f, k in zip(inits, keys)], axis=-1)

  return init
