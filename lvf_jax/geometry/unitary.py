"""Unitary matrices as products of structured factors (uRNN, EUNN), and the real embedding
of complex hidden states.

The parametrisations build the paper's *column-form* matrix ``W`` (``h' = W h``) by
applying their factors to the identity, ``O(n^2 log n)`` (uRNN) or ``O(L n^2)`` (EUNN of
capacity ``L``; ``L = log2 n`` in the FFT style) once per call -- a layer calls it once per
sequence, so the recurrence is then one ``n x n`` product per step instead of ``L`` sparse
factors. Where ``L`` is much smaller than ``n`` (the EUNN's default capacity 2 at ``n`` in the
thousands) the factors themselves are the cheaper step: :func:`eunn_rotations` evaluates the
layers' cosines, sines and phases once, :func:`eunn_apply` applies them in ``O(L n)`` a
vector; likewise :func:`urnn_factors` and :func:`urnn_apply` (``O(n log n)`` a vector) for
the uRNN.

A full-capacity unitary matrix (Wisdom et al. 2016) is stored as the real pair
``P = [Re W, Im W]`` of shape ``(..., 2, n, n)`` (:func:`complex_from_pair`,
:func:`pair_from_complex`), so parameters and optimiser states stay real.

Complex hidden states are carried as real vectors ``[Re h | Im h]`` (length ``2n``);
:func:`complex_to_real_kernel` turns a complex column-form ``W`` into the real row-form
``2n x 2n`` kernel ``K`` with ``[Re h | Im h] @ K = [Re Wh | Im Wh]``, orthogonal when ``W``
is unitary. No Flax in this module; every function is jit / vmap / grad safe.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from lvf_jax import _validation



Array = jax.Array


def complex_dtype(dtype) -> jnp.dtype:
  """The complex dtype that pairs with the real ``dtype`` (``complex128`` for ``float64``,
  else ``complex64``)."""
  return jnp.dtype(jnp.complex128 if jnp.dtype(dtype) == jnp.float64 else jnp.complex64)


def qr_positive(m: Array) -> Array:
  """The Q factor of ``M = Q R`` with the phases of ``diag(R)`` moved into ``Q`` (``R`` then
  has a positive real diagonal; signs for a real ``M``; a zero diagonal entry keeps its
  column). Batched. Mezzadri (2007): applied to a Gaussian matrix this makes ``Q``
  Haar-distributed on O(n) / U(n)."""
  q, r = jnp.linalg.qr(m)
  d = jnp.diagonal(r, axis1=-2, axis2=-1)
  mag = jnp.abs(d).astype(d.dtype)
  ph = jnp.where(mag == 0, jnp.ones_like(d), d / jnp.where(mag == 0, jnp.ones_like(d), mag))
  return q * ph[..., None, :]


def complex_from_pair(p: Array) -> Array:
  """The complex matrix ``P[..., 0, :, :] + i P[..., 1, :, :]`` of a real pair
  ``(..., 2, n, m)`` (dtype ``complex_dtype(P.dtype)``; bfloat16/float16 computed as float32)."""
  p = jnp.asarray(p)
  if p.ndim < 3 or p.shape[-3] != 2:
    raise ValueError(
        f"complex_from_pair: argument 'p' must have shape (..., 2, n, m) ([Re, Im] pairs); "
        f"got {p.shape}.")
  if jnp.dtype(p.dtype).itemsize < 4:
    p = p.astype(jnp.float32)
  return jax.lax.complex(p[..., 0, :, :], p[..., 1, :, :])


def pair_from_complex(w: Array) -> Array:
  """The real pair ``[Re W, Im W]`` (``(..., 2, n, m)``) of a complex ``W`` (``(..., n, m)``)."""
  w = jnp.asarray(w)
  return jnp.stack([jnp.real(w), jnp.imag(w)], axis=-3)


def phase(theta: Array) -> Array:
  """``exp(i theta)`` of a real array, as the matching complex dtype."""
  theta = jnp.asarray(theta)
  if jnp.dtype(theta.dtype).itemsize < 4:
    theta = theta.astype(jnp.float32)
  return jax.lax.complex(jnp.cos(theta), jnp.sin(theta))


def reflect(v: Array, x: Array) -> Array:
  """Complex Householder reflection ``R x = x - 2 v (v^H x) / ||v||^2`` of the columns of
  ``x`` (``(n, m)``), ``v`` of shape ``(n,)`` (uRNN's ``R``). ``v = 0`` gives ``R = I``."""
  return _reflect_rows(_unit(v), x.T).T


def _unit(v: Array) -> Array:
  """``v / ||v||`` (``0`` for ``v = 0``, so that the reflection is the identity)."""
  norm2 = jnp.real(jnp.vdot(v, v))
  scale = jnp.where(norm2 > 0, jax.lax.rsqrt(jnp.where(norm2 > 0, norm2, 1.0)), 0.0)
  return v * scale.astype(v.dtype)


def _reflect_rows(unit_v: Array, x: Array) -> Array:
  """``R`` applied to each row of ``x`` (``(..., n)``): ``x - 2 (x . conj(v)) v`` for a unit
  (or zero) ``v``."""
  v = _over_rows(unit_v, x)
  return x - 2 * jnp.sum(x * jnp.conj(v), axis=-1, keepdims=True) * v


def urnn_matrix(theta1: Array, theta2: Array, theta3: Array, v1: Array, v2: Array,
                permutation: np.ndarray) -> Array:
  r"""uRNN recurrent matrix (Arjovsky, Shah & Bengio 2016, Sec. 4), column form::

      W = D_3 R_2 F^{-1} D_2 \Pi R_1 F D_1

  with ``D_k = diag(exp(i theta_k))``, ``R_k = I - 2 v_k v_k^H / ||v_k||^2`` (complex
  Householder reflections), ``F`` the *unitary* DFT (``norm='ortho'``, so ``W`` is exactly
  unitary) and ``\Pi`` the fixed permutation ``(\Pi x)_i = x_{permutation[i]}``.

  Args:
    theta1, theta2, theta3: real phases, shape ``(n,)``.
    v1, v2: complex reflection vectors, shape ``(n,)``.
    permutation: a permutation of ``range(n)`` (a NumPy constant, not traced).

  Returns:
    The complex ``(n, n)`` unitary matrix ``W``.
  """
  factors = urnn_factors(theta1, theta2, theta3, v1, v2)
  perm = _check_permutation("urnn_matrix", permutation, factors.phase_cos.shape[-1])
  return urnn_factors_matrix(factors, perm)


def urnn_factors_matrix(factors: URNNFactors, permutation: np.ndarray) -> Array:
  """The complex column-form ``(n, n)`` ``W`` of :func:`urnn_matrix` from its factors
  (:func:`urnn_factors`): :func:`urnn_apply` on the identity."""
  n = factors.phase_cos.shape[-1]
  return urnn_apply(factors, jnp.eye(n, dtype=complex_dtype(factors.phase_cos.dtype)),
                    permutation).T


def _check_permutation(fn: str, permutation: np.ndarray, n: int) -> np.ndarray:
  perm = np.asarray(permutation)
  if perm.shape != (n,) or not np.array_equal(np.sort(perm), np.arange(n)):
    raise ValueError(
        f"{fn}: argument 'permutation' must be a permutation of range({n}); got {perm!r}.")
  return perm


class URNNFactors(NamedTuple):
  """The factors of the uRNN's ``W`` (:func:`urnn_factors`), evaluated once per sequence:
  ``phase_cos``, ``phase_sin`` ``(3, n)`` of ``D_1, D_2, D_3`` and the unit reflection vectors
  ``reflection`` ``(2, 2, n)`` (``[k, re/im, :]`` of ``v_k / ||v_k||``). Real leaves only, so
  casts and pytree maps treat it as any parameter."""

  phase_cos: Array
  phase_sin: Array
  reflection: Array


def urnn_factors(theta1: Array, theta2: Array, theta3: Array, v1: Array,
                 v2: Array) -> URNNFactors:
  """The factors of :func:`urnn_matrix`'s ``W`` (Arjovsky et al. 2016, arXiv:1511.06464,
  Sec. 4) for :func:`urnn_apply`: real phases ``theta_k`` ``(n,)``, complex reflection
  vectors ``v_k`` ``(n,)``."""
  theta = jnp.stack([jnp.asarray(t) for t in (theta1, theta2, theta3)])
  if theta.ndim != 2 or any(jnp.shape(v) != theta.shape[1:] for v in (v1, v2)):
    raise ValueError(
        f"urnn_factors: arguments 'theta1', 'theta2', 'theta3', 'v1' and 'v2' must all have "
        f"shape (n,); got {[tuple(jnp.shape(a)) for a in (theta1, theta2, theta3, v1, v2)]}.")
  d = phase(theta)
  v = jnp.stack([_unit(jnp.asarray(v1).astype(d.dtype)), _unit(jnp.asarray(v2).astype(d.dtype))])
  return URNNFactors(d.real, d.imag, jnp.stack([v.real, v.imag], axis=1))


def urnn_apply(factors: URNNFactors, x: Array, permutation: np.ndarray) -> Array:
  r"""``W x`` for every row ``x`` of ``x`` (``(..., n)``, complex or real), with the uRNN's
  ``W = D_3 R_2 F^{-1} D_2 \Pi R_1 F D_1`` applied factor by factor, ``O(n log n)`` a row
  (two FFTs) instead of the dense ``O(n^2)`` (Arjovsky et al. 2016, arXiv:1511.06464,
  Sec. 4); ``permutation`` as :func:`urnn_matrix`. Returns the complex rows."""
  n = factors.phase_cos.shape[-1]
  x = jnp.asarray(x)
  if x.shape[-1:] != (n,):
    raise ValueError(f"urnn_apply: argument 'x' must have n = {n} entries on its last axis; "
                     f"got shape {x.shape}.")
  perm = _check_permutation("urnn_apply", permutation, n)
  cdt = complex_dtype(factors.phase_cos.dtype)
  d = jax.lax.complex(factors.phase_cos, factors.phase_sin).astype(cdt)
  v = jax.lax.complex(factors.reflection[:, 0], factors.reflection[:, 1]).astype(cdt)
  x = jnp.asarray(x, cdt)
  x = x * _over_rows(d[0], x)                               # D_1
  x = jnp.fft.fft(x, axis=-1, norm="ortho")                 # F
  x = _reflect_rows(v[0], x)                                # R_1
  x = x[..., perm]                                          # Pi
  x = x * _over_rows(d[1], x)                               # D_2
  x = jnp.fft.ifft(x, axis=-1, norm="ortho")                # F^-1
  x = _reflect_rows(v[1], x)                                # R_2
  return x * _over_rows(d[2], x)                            # D_3


def givens_pairs(n: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
  """Coordinates ``(i, i + 1)``, ``i = offset, offset + 2, ...`` rotated by one EUNN layer
  (``offset`` 0: pairs ``(0, 1), (2, 3), ...``; 1: ``(1, 2), (3, 4), ...``)."""
  first = np.arange(offset, n - 1, 2)
  return first, first + 1


def eunn_layer(x: Array, theta: Array, phi: Optional[Array], offset: int) -> Array:
  r"""One EUNN layer of Givens rotations applied to the columns of ``x`` (``(n, m)``).

  Each pair ``(i, j = i + 1)`` of :func:`givens_pairs` is rotated by (Jing et al. 2017,
  Sec. 4, as the authors' code builds it from its ``diag`` / ``off`` vectors)::

      [x_i']   [cos t   -e^{i phi} sin t] [x_i]
      [x_j'] = [sin t    e^{i phi} cos t] [x_j]

  and with ``phi=None`` by the real rotation ``[[cos t, -sin t], [sin t, cos t]]``.
  Coordinates in no pair are left unchanged.
  """
  i, j = givens_pairs(x.shape[0], offset)
  if theta.shape != i.shape:
    raise ValueError(
        f"eunn_layer: argument 'theta' must have shape {i.shape} (the pairs of a layer of "
        f"size {x.shape[0]} with offset {offset}); got {theta.shape}.")
  return _rotate_pairs(x, i, j, theta, phi)


def _rotate_pairs(x: Array, i: np.ndarray, j: np.ndarray, theta: Array,
                  phi: Optional[Array]) -> Array:
  """Rows ``(i_k, j_k)`` of ``x`` rotated by ``theta_k`` (and phase ``phi_k``), see
  :func:`eunn_layer`."""
  c = jnp.cos(theta)[:, None].astype(x.dtype)
  s = jnp.sin(theta)[:, None].astype(x.dtype)
  xi, xj = x[i], x[j]
  if phi is None:
    new_i, new_j = c * xi - s * xj, s * xi + c * xj
  else:
    e = phase(phi)[:, None].astype(x.dtype)
    new_i, new_j = c * xi - e * s * xj, s * xi + e * c * xj
  return x.at[i].set(new_i).at[j].set(new_j)


def _check_tunable(fn: str, theta_a: Array, theta_b: Array, phi_a: Optional[Array],
                   phi_b: Optional[Array], omega: Optional[Array]) -> tuple[int, int, int]:
  """``(n, L_a, L_b)`` of a tunable-space EUNN's angles, or ValueError naming ``fn``."""
  if theta_a.ndim != 2 or theta_b.ndim != 2:
    raise ValueError(
        f"{fn}: arguments 'theta_a' and 'theta_b' must be 2-D (layers, pairs); got "
        f"shapes {theta_a.shape} and {theta_b.shape}.")
  n = theta_a.shape[1] + theta_b.shape[1] + 1
  la, lb = theta_a.shape[0], theta_b.shape[0]
  if theta_a.shape[1] != n // 2 or la - lb not in (0, 1):
    raise ValueError(
        f"{fn}: shapes of 'theta_a' {theta_a.shape} and 'theta_b' {theta_b.shape} do "
        f"not describe alternating layers: need (L_a, n // 2) and (L_b, (n - 1) // 2) with "
        f"L_a - L_b in {{0, 1}}.")
  if (phi_a is not None) != (phi_b is not None):
    raise ValueError(f"{fn}: give both 'phi_a' and 'phi_b' (complex EUNN) or neither.")
  if omega is not None and phi_a is None:
    raise ValueError(f"{fn}: argument 'omega' requires the phases 'phi_a', 'phi_b'.")
  return n, la, lb


def eunn_matrix(theta_a: Array, theta_b: Array, phi_a: Optional[Array] = None,
                phi_b: Optional[Array] = None, omega: Optional[Array] = None) -> Array:
  r"""Tunable-space EUNN matrix (Jing et al. 2017, Sec. 4), column form::

      W = D_omega F_L ... F_2 F_1

  with layers alternating ``A`` (pairs from 0) and ``B`` (pairs from 1): ``F_1 = A_1``,
  ``F_2 = B_1``, ``F_3 = A_2``, ... (capacity ``L = L_a + L_b``, ``L_a - L_b`` in
  ``{0, 1}``), each a product of Givens rotations (:func:`eunn_layer`), and
  ``D_omega = diag(exp(i omega))``. Without phases the result is real orthogonal.

  Args:
    theta_a: ``(L_a, n // 2)`` rotation angles of the ``A`` layers.
    theta_b: ``(L_b, (n - 1) // 2)`` rotation angles of the ``B`` layers.
    phi_a, phi_b: phases of the same shapes (both or neither: complex EUNN).
    omega: ``(n,)`` final diagonal phases (complex EUNN only; optional).

  Returns:
    ``W`` of shape ``(n, n)``: complex unitary if phases are given, else real orthogonal.
  """
  theta_a, theta_b = jnp.asarray(theta_a), jnp.asarray(theta_b)
  n, la, lb = _check_tunable("eunn_matrix", theta_a, theta_b, phi_a, phi_b, omega)
  complex_valued = phi_a is not None
  real = _validation.check_floating("eunn_matrix", "theta_a", theta_a.dtype)
  dtype = complex_dtype(real) if complex_valued else real
  x = jnp.eye(n, dtype=dtype)

  def pair(x, params):
    ta, tb, pa, pb = params
    x = eunn_layer(x, ta, pa, 0)
    return eunn_layer(x, tb, pb, 1), None

  phases = (phi_a[:lb], phi_b) if complex_valued else (None, None)
  if lb:
    x, _ = jax.lax.scan(pair, x, (theta_a[:lb], theta_b) + phases)
  if la > lb:
    x = eunn_layer(x, theta_a[lb], phi_a[lb] if complex_valued else None, 0)
  if omega is not None:
    x = phase(omega)[:, None].astype(dtype) * x
  return x


class EUNNRotations(NamedTuple):
  """The trigonometric factors of a tunable-space EUNN (:func:`eunn_rotations`), evaluated
  once per sequence: per layer ``cos theta``, ``sin theta`` and, for the complex EUNN,
  ``cos phi``, ``sin phi``; ``omega_cos``, ``omega_sin`` of ``D_omega``. Real leaves only
  (``None`` where absent), so casts and optimiser-free pytrees treat it as any parameter."""

  cos_a: Array
  sin_a: Array
  cos_b: Array
  sin_b: Array
  phase_cos_a: Optional[Array] = None
  phase_sin_a: Optional[Array] = None
  phase_cos_b: Optional[Array] = None
  phase_sin_b: Optional[Array] = None
  omega_cos: Optional[Array] = None
  omega_sin: Optional[Array] = None


def eunn_rotations(theta_a: Array, theta_b: Array, phi_a: Optional[Array] = None,
                   phi_b: Optional[Array] = None,
                   omega: Optional[Array] = None) -> EUNNRotations:
  """The factors of :func:`eunn_matrix`'s ``W = D_omega F_L ... F_1`` (Jing et al. 2017,
  arXiv:1612.05231, Sec. 4) for :func:`eunn_apply`; arguments and checks as
  :func:`eunn_matrix`."""
  theta_a, theta_b = jnp.asarray(theta_a), jnp.asarray(theta_b)
  _check_tunable("eunn_rotations", theta_a, theta_b, phi_a, phi_b, omega)
  _validation.check_floating("eunn_rotations", "theta_a", theta_a.dtype)
  trig = lambda a: (None, None) if a is None else (jnp.cos(a), jnp.sin(a))  # noqa: E731
  return EUNNRotations(jnp.cos(theta_a), jnp.sin(theta_a), jnp.cos(theta_b),
                       jnp.sin(theta_b), *trig(phi_a), *trig(phi_b), *trig(omega))


def eunn_apply(rotations: EUNNRotations, x: Array) -> Array:
  r"""``W x`` for every vector on the last axis of ``x`` (``(..., n)``), ``W`` the EUNN of
  :func:`eunn_rotations`, applied layer by layer: ``A_1, B_1, A_2, ...`` then ``D_omega``,
  ``O(L n)`` per vector instead of ``O(n^2)``. Equal to ``x @ eunn_matrix(...).T``.

  ``x`` is complex for a complex EUNN (phases given); a real ``x`` with a complex EUNN is
  taken as a complex vector with zero imaginary part.
  """
  r = rotations
  complex_valued = r.phase_cos_a is not None
  if complex_valued and not jnp.iscomplexobj(x):
    x = jax.lax.complex(x, jnp.zeros_like(x))
  n = x.shape[-1]
  if r.cos_a.shape[-1] != n // 2 or r.cos_b.shape[-1] != (n - 1) // 2:
    raise ValueError(
        f"eunn_apply: argument 'x' must have n = {2 * r.cos_a.shape[-1]} or "
        f"{2 * r.cos_a.shape[-1] + 1} entries on its last axis (the rotations' size); got "
        f"shape {x.shape}.")
  la, lb = r.cos_a.shape[0], r.cos_b.shape[0]

  def phase(pc, ps, k):
    return None if pc is None else jax.lax.complex(pc[k], ps[k]).astype(x.dtype)

  for k in range(la):  # static: a few layers (the reference's capacity is 2)
    x = _rotate_adjacent(x, r.cos_a[k], r.sin_a[k], phase(r.phase_cos_a, r.phase_sin_a, k), 0)
    if k < lb:
      x = _rotate_adjacent(x, r.cos_b[k], r.sin_b[k],
                           phase(r.phase_cos_b, r.phase_sin_b, k), 1)
  if r.omega_cos is not None:
    x = _over_rows(jax.lax.complex(r.omega_cos, r.omega_sin).astype(x.dtype), x) * x
  return x


def _over_rows(v: Array, x: Array) -> Array:
  """The per-coordinate vector ``v`` with leading unit axes to the rank of ``x``."""
  return v.reshape((1,) * (x.ndim - v.ndim) + v.shape)


def _rotate_adjacent(x: Array, c: Array, s: Array, e: Optional[Array], offset: int) -> Array:
  """:func:`eunn_layer`'s rotation of the pairs ``(offset + 2k, offset + 2k + 1)`` of the
  last axis of ``x``, as a reshape into pairs (no gather)."""
  m = c.shape[-1]
  lo, hi = offset, offset + 2 * m
  pairs = x[..., lo:hi].reshape(x.shape[:-1] + (m, 2))
  xi, xj = pairs[..., 0], pairs[..., 1]
  if e is not None:
    xj = _over_rows(e, xj) * xj
  c, s = _over_rows(c.astype(x.dtype), xi), _over_rows(s.astype(x.dtype), xi)
  new = jnp.stack([c * xi - s * xj, s * xi + c * xj], axis=-1).reshape(x.shape[:-1] + (2 * m,))
  return jnp.concatenate([x[..., :lo], new, x[..., hi:]], axis=-1)


def fft_pairs(n: int, layer: int) -> tuple[np.ndarray, np.ndarray]:
  """Coordinates ``(i, i + n / 2^(layer+1))`` rotated by layer ``layer`` (0-based) of an
  FFT-style EUNN of size ``n`` (a power of 2): butterflies within blocks of
  ``n / 2^layer``."""
  stride = n >> (layer + 1)
  first = (np.arange(0, n, 2 * stride)[:, None] + np.arange(stride)[None, :]).ravel()
  return first, first + stride


def eunn_fft_matrix(theta: Array, phi: Optional[Array] = None,
                    omega: Optional[Array] = None) -> Array:
  r"""FFT-style EUNN matrix (Jing et al. 2017, Sec. 4, the FFT-style layout), column form::

      W = D_omega F_{log2 n} ... F_2 F_1

  with ``log2 n`` layers of ``n / 2`` Givens rotations (:func:`eunn_layer`'s rotation):
  layer ``k`` (1-based) rotates the pairs ``(i, i + n / 2^k)`` of :func:`fft_pairs`, the
  butterflies of the FFT, so ``log2 n`` layers already mix every coordinate with every
  other (the authors' code: ``fft=True``, capacity ``log2 n``). Without phases the result is
  real orthogonal.

  Args:
    theta: ``(log2 n, n / 2)`` rotation angles; ``n`` a power of 2, ``n >= 2``.
    phi: phases of the same shape (complex EUNN) or ``None``.
    omega: ``(n,)`` final diagonal phases (complex EUNN only; optional).

  Returns:
    ``W`` of shape ``(n, n)``: complex unitary if phases are given, else real orthogonal.
  """
  theta = jnp.asarray(theta)
  half = theta.shape[-1] if theta.ndim == 2 else 0
  n = 2 * half
  if theta.ndim != 2 or half < 1 or n & (n - 1) or theta.shape[0] != n.bit_length() - 1:
    raise ValueError(
        f"eunn_fft_matrix: argument 'theta' must have shape (log2 n, n / 2) with n a power "
        f"of 2; got {theta.shape}.")
  if phi is not None and jnp.shape(phi) != theta.shape:
    raise ValueError(
        f"eunn_fft_matrix: argument 'phi' must have the shape of 'theta' {theta.shape}; got "
        f"{jnp.shape(phi)}.")
  if omega is not None and phi is None:
    raise ValueError("eunn_fft_matrix: argument 'omega' requires the phases 'phi'.")
  real = _validation.check_floating("eunn_fft_matrix", "theta", theta.dtype)
  dtype = complex_dtype(real) if phi is not None else real
  x = jnp.eye(n, dtype=dtype)
  for layer in range(theta.shape[0]):  # log2 n static layers, each with its own pairs
    i, j = fft_pairs(n, layer)
    x = _rotate_pairs(x, i, j, theta[layer], None if phi is None else phi[layer])
  if omega is not None:
    x = phase(omega)[:, None].astype(dtype) * x
  return x


def complex_to_real_kernel(w: Array) -> Array:
  r"""Real row-form kernel of a complex column-form matrix ``W = A + i B``::

      K = [[A^T,  B^T],
           [-B^T, A^T]],   [Re h | Im h] @ K = [Re (W h) | Im (W h)].

  ``K`` is orthogonal iff ``W`` is unitary. Returns a real ``(2n, 2n)`` array.
  """
  a, b = jnp.real(w).T, jnp.imag(w).T
  return jnp.concatenate([jnp.concatenate([a, b], axis=1),
                          jnp.concatenate([-b, a], axis=1)], axis=0)
