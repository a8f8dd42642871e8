"""Maps: turn a generator ``G`` (column convention, see :mod:`generators`) into a
transition matrix. Any generator can be combined with any map, e.g. a Cayley-map lvfRNN
is ``midpoint(directional_derivative(V), tau)`` and an exponential-map
AntisymmetricRNN is ``expm(antisymmetric_diffusion(W, gamma))``.

All inverses are computed with ``jnp.linalg.solve`` (never ``inv``); the Cayley maps
differentiate the inverse by products with it (:func:`_inverse`). Every map accepts
leading batch dimensions and preserves the dtype.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Callable

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from lvf_jax import _validation
from lvf_jax.geometry._util import eye_like, scale_columns, stored

Array = jax.Array


EXPM_METHODS = ("auto", "taylor", "pade")

# Taylor coefficients 1/k!, k = 0..16.
_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(17))
# Largest ||A||_1 for which the degree-16 Taylor remainder sum_{k>16} x^k/k! stays below
# the unit roundoff (float32: 2.5^17/17! ~ 1.6e-8 < 2^-24; float64: 0.8^17/17! ~ 6e-17).
_THETA = {8: 0.8}
_THETA_DEFAULT = 2.5  # float32 and narrower


def expm(a: Array, *, method: str = "auto") -> Array:
  """Matrix exponential ``exp(A)`` (expRNN eq 1). For skew ``A`` the result is orthogonal.

  Args:
    a: square ``(..., n, n)`` floating matrix.
    method: ``'taylor'`` (:func:`expm_taylor`: matrix products only), ``'pade'``
      (``jax.scipy.linalg.expm``: Pade approximant with scaling and squaring, LU solves)
      or ``'auto'`` (the default): Taylor for float32 and narrower dtypes, where both are
      accurate to the unit roundoff and Taylor is faster inside a training step on CPU
      (no LAPACK call, see :func:`expm_taylor`), Pade for float64, where it is 3-10x more
      accurate. The orthogonality of ``expm`` of skew inputs in float32 is tested for
      ``||A||`` up to 1e2. Taylor is differentiable in reverse mode (first order); Pade
      in every mode (``jax.jvp``, ``jax.hessian`` ...).
  """
  _validation.check_matrix("expm", "a", a)
  if not isinstance(method, str) or method not in EXPM_METHODS:
    raise ValueError(
        f"expm: argument 'method' must be one of {list(EXPM_METHODS)}; got {method!r}.")
  if method == "auto":
    method = "pade" if jnp.dtype(jnp.result_type(a)).itemsize >= 8 else "taylor"
  if method == "taylor":
    return expm_taylor(a)
  return jsl.expm(a)


def expm_taylor(a: Array, *, max_squarings: int = 16) -> Array:
  """``exp(A)`` with matrix products only: scaling and squaring of a degree-16 Taylor sum.

  Same map as :func:`expm` (expRNN eq 1), but no LAPACK call: the polynomial is evaluated
  with Paterson-Stockmeyer (6 products) on ``X = 2^-s A`` and undone with ``s``
  squarings. ``s`` is the least count with ``alpha_3(X) = max(||X^3||_1^(1/3),
  ||X^4||_1^(1/4)) <= theta`` (``theta = 2.5`` in float32, ``0.8`` in float64): by
  Al-Mohy and Higham (2009, Thm 4.2(a), with ``p = 3``, as ``17 >= p (p - 1)``) the
  truncated tail ``sum_{k>16} X^k / k!`` is then below the unit roundoff, as the plain
  bound ``||X||_1 <= theta`` would ensure, with fewer squarings where ``A`` is far from
  nilpotent in the 1-norm sense (a dense skew matrix: ``alpha_3`` is near its spectral
  radius, its 1-norm up to ``sqrt(n)`` times that). The powers are computed once at the
  1-norm count and rescaled exactly by powers of 2 (not in float16, whose range is too
  narrow for that: there the 1-norm count is used). With leading batch axes ``s`` is taken
  from the largest ``alpha_3``. Everything is an XLA matmul, so on CPU it runs on XLA's
  own thread pool, while the LU / triangular solves of ``jax.scipy.linalg.expm`` go to the
  OpenBLAS that ships with SciPy, whose worker threads contend with XLA's.

  Reverse mode keeps ``O(1)`` matrices for the squarings whatever ``s`` and
  ``max_squarings`` (:func:`_square_repeatedly`: the ``s`` squarings run in a loop whose
  backward pass recomputes them instead of storing them). So ``jax.grad`` and ``jax.vjp``
  work (first order), but no forward mode (``jax.jvp``, ``jax.jacfwd``, ``jax.hessian``)
  and no second reverse pass: use ``expm(a, method='pade')`` for those.

  Args:
    a: square ``(..., n, n)`` floating matrix (any; skew for an orthogonal result).
    max_squarings: static bound on ``s``, an int in ``[0, 64]``; larger norms
      (``||A||_1 > theta 2^max_squarings``) are not accurate.

  Returns:
    ``exp(A)`` of the same shape and dtype.
  """
  a = jnp.asarray(a)
  _validation.check_matrix("expm_taylor", "a", a)
  _validation.check_floating("expm_taylor", "a", a.dtype)
  if (isinstance(max_squarings, bool) or not isinstance(max_squarings, numbers.Integral)
      or not 0 <= max_squarings <= 64):
    raise ValueError(
        f"expm_taylor: argument 'max_squarings' must be an int in [0, 64]; got "
        f"{max_squarings!r}.")
  return _expm_taylor(a, max_squarings)


@functools.partial(jax.jit, static_argnums=(1,))
def _expm_taylor(a: Array, max_squarings: int) -> Array:
  # Jitted so that eager calls reuse one compilation per shape and dtype.
  s, x, x2, x3, x4 = _scaled_powers(_cotangent_stored(a), max_squarings)
  eye = eye_like(a)
  c = _TAYLOR

  def block(j):
    return c[4 * j] * eye + c[4 * j + 1] * x + c[4 * j + 2] * x2 + c[4 * j + 3] * x3

  p = block(3) + c[16] * x4
  for j in (2, 1, 0):
    p = block(j) + x4 @ p

  return _square_repeatedly(p, s)


@jax.custom_vjp
def _cotangent_stored(a: Array) -> Array:
  """The identity, whose backward pass hands on its cotangent stored in memory.

  The cotangent of ``expm_taylor``'s input is a sum of a dozen products and scaled terms.
  XLA would fuse that sum into each consumer of the cotangent and evaluate it there: a
  parameterisation's transpose (``skew_from_triu``'s ``G - G^T``) then evaluates it at
  ``(i, j)`` and ``(j, i)``, reading each of its terms with a column stride, and an
  optimiser's moments re-evaluate it once each. Stored once
  (:func:`~lvf_jax.geometry._util.stored`), every consumer reads one array.
  """
  return a


_cotangent_stored.defvjp(lambda a: (a, None), lambda _, g: (stored(g),))


def _norm1(m: Array) -> Array:
  """The largest 1-norm (column sum) over all matrices of ``m``, without gradient."""
  return jax.lax.stop_gradient(jnp.max(jnp.sum(jnp.abs(m), axis=-2)))


def _scaled_powers(a: Array, max_squarings: int):
  """``(s, X, X^2, X^3, X^4)`` with ``X = 2^-s A``, ``s`` as in :func:`expm_taylor`.

  The powers are computed at the count ``s_1`` of the 1-norm bound (``||X||_1 <= theta``,
  so they cannot overflow) and then scaled up by ``2^(k d)`` for the ``d`` squarings that
  ``alpha_3`` saves -- exact, since only the exponent changes.
  """
  theta = _THETA.get(jnp.dtype(a.dtype).itemsize, _THETA_DEFAULT)

  def count(norm):  # least s in [0, max_squarings] with norm 2^-s <= theta; 0 if not finite
    s = jnp.clip(jnp.ceil(jnp.log2(norm / theta)), 0, max_squarings)
    return jnp.where(jnp.isfinite(s), s, 0).astype(jnp.int32)

  s1 = count(_norm1(a))
  x = a * jnp.exp2(-s1.astype(a.dtype))
  x2 = x @ x
  x3 = x2 @ x
  x4 = x2 @ x2
  if jnp.finfo(a.dtype).maxexp < 128:  # float16: 2^(4 d) scalings could overflow
    return s1, x, x2, x3, x4
  alpha_x = jnp.maximum(_norm1(x3) ** (1 / 3), _norm1(x4) ** (1 / 4))
  alpha = alpha_x * jnp.exp2(s1.astype(alpha_x.dtype))  # alpha_3 of A itself
  s = jnp.minimum(count(alpha), s1)
  up = jnp.exp2((s1 - s).astype(a.dtype))  # one factor per power of X: no overflow
  return s, x * up, x2 * up * up, x3 * up * up * up, x4 * up * up * up * up


def _squaring_count(a: Array, max_squarings: int = 16) -> Array:
  """The squaring count ``s`` that :func:`expm_taylor` uses for ``a`` (benchmarks, tests)."""
  return _scaled_powers(jnp.asarray(a), max_squarings)[0]


@jax.custom_vjp
def _square_repeatedly(m: Array, s: Array) -> Array:
  """``m^(2^s)``: ``s`` (a traced int) squarings of ``m`` in a loop.

  Its backward pass uses that the adjoint of the Frechet derivative of a power series
  with real coefficients at ``M`` is the Frechet derivative at ``M^T``: the cotangent
  ``G`` of ``F(M) = M^(2^s)`` pulls back to ``E_s``, where ``Y_0 = M^T``, ``E_0 = G`` and
  ``(Y_{k+1}, E_{k+1}) = (Y_k^2, Y_k E_k + E_k Y_k)`` -- a forward recursion, so nothing
  of the forward loop is stored (3 products per squaring instead of 2 with stored
  squares), and no matrix is kept for a squaring that does not happen (the unrolled
  branches of a ``lax.switch`` would keep ``max_squarings`` of them).
  """
  return jax.lax.fori_loop(0, s, lambda _, x: x @ x, m)


def _square_repeatedly_fwd(m, s):
  return _square_repeatedly(m, s), (m, s)


def _square_repeatedly_bwd(res, g):
  m, s = res

  def body(_, carry):
    y, e = carry
    return y @ y, y @ e + e @ y

  _, e = jax.lax.fori_loop(0, s, body, (jnp.swapaxes(m, -1, -2), g))
  return e, None


_square_repeatedly.defvjp(_square_repeatedly_fwd, _square_repeatedly_bwd)


@jax.custom_jvp
def _inverse(m: Array) -> Array:
  """``M^{-1}`` by an LU solve against ``I``, differentiated as ``dX = -X dM X``.

  Reverse mode then costs two matrix products (``-X^T G X^T``) instead of the transposed
  triangular solves plus a product of ``jnp.linalg.solve``'s rule (the products run on
  XLA's threads, the solves on LAPACK).
  """
  return jnp.linalg.solve(m, eye_like(m))


@_inverse.defjvp
def _inverse_jvp(primals, tangents):
  (m,), (dm,) = primals, tangents
  x = _inverse(m)
  return x, -((x @ dm) @ x)


def cayley(a: Array) -> Array:
  """Cayley transform ``(I + A)^{-1} (I - A)``; orthogonal for skew ``A``.

  Evaluated as ``2 (I + A)^{-1} - I`` (the same matrix: ``I - A = 2 I - (I + A)``), one LU
  solve against ``I``.
  """
  _validation.check_matrix("cayley", "a", a)
  eye = eye_like(a)
  return 2.0 * _inverse(eye + a) - eye


def scaling_diagonal(n: int, rho: int, dtype=jnp.float32) -> Array:
  """Diagonal of scoRNN's ``D``: ``n - rho`` entries +1 followed by ``rho`` entries -1."""
  rho = _validation.check_rho("scaling_diagonal", rho, n)
  return jnp.concatenate([jnp.ones((n - rho,), dtype), -jnp.ones((rho,), dtype)])


def scaled_cayley(a: Array, rho: int) -> Array:
  """Scaled Cayley transform ``W = (I + A)^{-1} (I - A) D`` (scoRNN; NC-GRU eq 2).

  ``D = diag(+1 x (n - rho), -1 x rho)`` multiplies on the right (it scales columns), as
  in the paper. Orthogonal for skew ``A``, ``det W = (-1)^rho``; unlike the plain Cayley
  map it reaches orthogonal matrices with eigenvalue -1.

  Args:
    a: skew-symmetric ``(..., n, n)``.
    rho: number of -1 entries of ``D``, a Python int in ``[0, n]``.
  """
  n = _validation.check_matrix("scaled_cayley", "a", a)
  d = scaling_diagonal(n, _validation.check_rho("scaled_cayley", rho, n), a.dtype)
  return scale_columns(cayley(a), d)


def inverse_scaled_cayley(w: Array, rho: int) -> Array:
  """Skew ``A`` with ``scaled_cayley(A, rho) == W``: ``A = (I + W D)^{-1} (I - W D)``.

  Requires ``W D`` to have no eigenvalue -1 (Kahan: a suitable ``rho`` exists).
  """
  n = _validation.check_matrix("inverse_scaled_cayley", "w", w)
  d = scaling_diagonal(n, _validation.check_rho("inverse_scaled_cayley", rho, n), w.dtype)
  return cayley(scale_columns(w, d))


def euler(g: Array, tau) -> Array:
  """Explicit Euler step of ``dh/dt = -G h``: ``I - tau G`` (lvfRNN eq 5)."""
  _validation.check_matrix("euler", "g", g)
  _validation.check_positive("euler", "tau", tau)
  return eye_like(g) - jnp.asarray(tau, g.dtype) * g


def midpoint(g: Array, tau) -> Array:
  """Implicit midpoint (Cayley) step ``(I + tau/2 G)^{-1} (I - tau/2 G)`` (lvfRNN eq 16).

  Orthogonal when ``G`` is skew; equals ``cayley(tau/2 G)``.
  """
  _validation.check_matrix("midpoint", "g", g)
  _validation.check_positive("midpoint", "tau", tau)
  return cayley(jnp.asarray(tau / 2, g.dtype) * g)


def exponential(g: Array, tau) -> Array:
  """Exact flow ``exp(-tau G)`` of ``dh/dt = -G h`` (lvfRNN eq 3), by :func:`expm` (its
  ``'auto'`` method: matmul-only Taylor in float32, Pade in float64)."""
  _validation.check_matrix("exponential", "g", g)
  _validation.check_positive("exponential", "tau", tau)
  return expm(-jnp.asarray(tau, g.dtype) * g)


INTEGRATORS: dict[str, Callable[[Array, float], Array]] = {
    "euler": euler,
    "midpoint": midpoint,
    "exp": exponential,
}


def get_integrator(name: str) -> Callable[[Array, float], Array]:
  """Returns the integrator map ``(G, tau) -> C`` called ``name``."""
  try:
    return INTEGRATORS[name]
  except (KeyError, TypeError):
    raise ValueError(
        f"get_integrator: argument 'name' must be one of {sorted(INTEGRATORS)}; "
        f"got {name!r}.") from None


def orthogonality_error(w: Array) -> Array:
  """``||W^T W - I||_max``, the orthogonality defect used throughout the tests."""
  _validation.check_matrix("orthogonality_error", "w", w)
  wt_w = jnp.swapaxes(w, -1, -2) @ w
  return jnp.max(jnp.abs(wt_w - eye_like(w)), axis=(-2, -1))
