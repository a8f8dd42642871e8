"""Maps: turn a generator ``G`` (column convention, see :mod:`generators`) into a
transition matrix. Any generator can be combined with any map, e.g. a Cayley-map lvfRNN
is ``midpoint(directional_derivative(V), tau)`` and an exponential-map
AntisymmetricRNN is ``expm(antisymmetric_diffusion(W, gamma))``.

All inverses are computed with ``jnp.linalg.solve`` (never ``inv``). Every map accepts
leading batch dimensions and preserves the dtype.
"""

from __future__ import annotations

from typing import Callable

import jax.numpy as jnp
import jax.scipy.linalg as jsl

from lvf_jax.geometry import _checks
from lvf_jax.geometry._util import eye_like, scale_columns

Array = jnp.ndarray


def expm(a: Array) -> Array:
  """Matrix exponential ``exp(A)`` (expRNN eq 1). For skew ``A`` the result is orthogonal.

  Uses ``jax.scipy.linalg.expm`` (Pade approximant with scaling and squaring); the
  orthogonality of ``expm`` of skew inputs in float32 is tested for ``||A||`` up to 1e2.
  """
  _checks.check_matrix("expm", "a", a)
  return jsl.expm(a)


def cayley(a: Array) -> Array:
  """Cayley transform ``(I + A)^{-1} (I - A)``; orthogonal for skew ``A``."""
  _checks.check_matrix("cayley", "a", a)
  eye = eye_like(a)
  return jnp.linalg.solve(eye + a, eye - a)


def scaling_diagonal(n: int, rho: int, dtype=jnp.float32) -> Array:
  """Diagonal of scoRNN's ``D``: ``n - rho`` entries +1 followed by ``rho`` entries -1."""
  rho = _checks.check_rho("scaling_diagonal", rho, n)
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
  n = _checks.check_matrix("scaled_cayley", "a", a)
  d = scaling_diagonal(n, _checks.check_rho("scaled_cayley", rho, n), a.dtype)
  return scale_columns(cayley(a), d)


def inverse_scaled_cayley(w: Array, rho: int) -> Array:
  """Skew ``A`` with ``scaled_cayley(A, rho) == W``: ``A = (I + W D)^{-1} (I - W D)``.

  Requires ``W D`` to have no eigenvalue -1 (Kahan: a suitable ``rho`` exists).
  """
  n = _checks.check_matrix("inverse_scaled_cayley", "w", w)
  d = scaling_diagonal(n, _checks.check_rho("inverse_scaled_cayley", rho, n), w.dtype)
  return cayley(scale_columns(w, d))


def euler(g: Array, tau) -> Array:
  """Explicit Euler step of ``dh/dt = -G h``: ``I - tau G`` (lvfRNN eq 5)."""
  _checks.check_matrix("euler", "g", g)
  _checks.check_positive("euler", "tau", tau)
  return eye_like(g) - jnp.asarray(tau, g.dtype) * g


def midpoint(g: Array, tau) -> Array:
  """Implicit midpoint (Cayley) step ``(I + tau/2 G)^{-1} (I - tau/2 G)`` (lvfRNN eq 16).

  Orthogonal when ``G`` is skew; equals ``cayley(tau/2 G)``.
  """
  _checks.check_matrix("midpoint", "g", g)
  _checks.check_positive("midpoint", "tau", tau)
  return cayley(jnp.asarray(tau / 2, g.dtype) * g)


def exponential(g: Array, tau) -> Array:
  """Exact flow ``exp(-tau G)`` of ``dh/dt = -G h`` (lvfRNN eq 3)."""
  _checks.check_matrix("exponential", "g", g)
  _checks.check_positive("exponential", "tau", tau)
  return jsl.expm(-jnp.asarray(tau, g.dtype) * g)


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
  _checks.check_matrix("orthogonality_error", "w", w)
  wt_w = jnp.swapaxes(w, -1, -2) @ w
  return jnp.max(jnp.abs(wt_w - eye_like(w)), axis=(-2, -1))
