"""Argument validation shared by the geometric core.

Every public function of :mod:`lvf_jax.geometry` validates its arguments *statically*
(shapes, dtypes, and Python-number hyperparameters) so that errors surface at trace time
with a message naming the function, the argument, and the offending value. Values that
are JAX tracers (e.g. a learned ``tau`` inside ``jit``) cannot be inspected and are
passed through unchecked.
"""

from __future__ import annotations

import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def shape_of(x: Any) -> tuple[int, ...]:
  return tuple(np.shape(x))


def check_matrix(fn: str, name: str, x: Any, *, batched: bool = True) -> int:
  """Checks that ``x`` is square, shape ``(..., n, n)``; returns ``n``."""
  shape = shape_of(x)
  if len(shape) < 2 or shape[-1] != shape[-2] or (not batched and len(shape) != 2):
    want = "(..., n, n)" if batched else "(n, n)"
    raise ValueError(
        f"{fn}: argument '{name}' must be a square matrix of shape {want}; "
        f"got shape {shape}.")
  return shape[-1]


def check_same_shape(fn: str, names: tuple[str, str], a: Any, b: Any) -> None:
  if shape_of(a) != shape_of(b):
    raise ValueError(
        f"{fn}: arguments '{names[0]}' and '{names[1]}' must have the same shape; "
        f"got {shape_of(a)} and {shape_of(b)}.")


def concrete_value(x: Any) -> float | None:
  """Returns ``x`` as a Python float if it is concrete, else ``None`` (tracer)."""
  if isinstance(x, jax.core.Tracer):
    return None
  if isinstance(x, numbers.Real):
    return float(x)
  try:
    arr = np.asarray(x)
  except Exception:  # pragma: no cover - exotic array types
    return None
  if arr.size == 1 and np.issubdtype(arr.dtype, np.number):
    return float(arr.reshape(()))
  return None


def check_positive(fn: str, name: str, value: Any) -> None:
  """Raises if a concrete scalar ``value`` is not strictly positive (or not finite)."""
  v = concrete_value(value)
  if v is not None and not (np.isfinite(v) and v > 0):
    raise ValueError(
        f"{fn}: argument '{name}' must be a finite number > 0; got {value!r}.")
  if v is None and not isinstance(value, jax.core.Tracer) and np.ndim(value) != 0:
    raise ValueError(
        f"{fn}: argument '{name}' must be a scalar; got shape {shape_of(value)}.")


def check_nonnegative(fn: str, name: str, value: Any) -> None:
  v = concrete_value(value)
  if v is not None and not (np.isfinite(v) and v >= 0):
    raise ValueError(
        f"{fn}: argument '{name}' must be a finite number >= 0; got {value!r}.")


def check_rho(fn: str, rho: Any, n: int) -> int:
  """Checks the number of negative ones of a scaled Cayley transform: 0 <= rho <= n."""
  if isinstance(rho, bool) or not isinstance(rho, (numbers.Integral, np.integer)):
    raise ValueError(
        f"{fn}: argument 'rho' must be a Python int in [0, n={n}]; got {rho!r}.")
  if not 0 <= int(rho) <= n:
    raise ValueError(
        f"{fn}: argument 'rho' (number of -1 entries of D) must lie in [0, n={n}]; "
        f"got rho={rho}.")
  return int(rho)


def check_int_in(fn: str, name: str, value: Any, allowed: tuple[int, ...]) -> int:
  if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)) \
      or int(value) not in allowed:
    raise ValueError(
        f"{fn}: argument '{name}' must be one of {allowed}; got {value!r}.")
  return int(value)


def check_floating(fn: str, name: str, dtype: Any) -> jnp.dtype:
  dt = jnp.dtype(dtype)
  if not jnp.issubdtype(dt, jnp.floating):
    raise ValueError(
        f"{fn}: argument '{name}' must be a floating dtype; got {dt}.")
  return dt


def check_init_shape(fn: str, shape: Any, *, square: bool = True) -> tuple[int, ...]:
  shape = tuple(int(s) for s in shape)
  if square and (len(shape) != 2 or shape[0] != shape[1]):
    raise ValueError(
        f"{fn}: argument 'shape' must be square (n, n); got {shape}.")
  if any(s <= 0 for s in shape):
    raise ValueError(f"{fn}: argument 'shape' must be positive; got {shape}.")
  return shape
