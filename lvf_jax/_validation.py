"""Argument validation, defined once for every layer of lvf_jax.

Each ``check_*`` raises ``ValueError`` with a message that names the function or class
(``where``), the argument, the value received and what is allowed, and returns the value
in the form the caller uses. The checks of arrays are *static* (shapes, dtypes and Python
numbers), so errors surface at trace time; values that are JAX tracers (a learned ``tau``
inside ``jit``) cannot be inspected and pass unchecked.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, NoReturn

import jax
import jax.numpy as jnp
import numpy as np


def fail(where: str, name: str, value: Any, allowed: str) -> NoReturn:
  """Raises ``ValueError``: ``"<where>: argument '<name>' must be <allowed>; got <value>."``"""
  raise ValueError(f"{where}: argument '{name}' must be {allowed}; got {value!r}.")

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


def is_concrete(x: Any) -> bool:
  """Whether ``x`` can be inspected now (not a JAX tracer)."""
  return not isinstance(x, jax.core.Tracer)


def concrete_value(x: Any) -> float | None:
  """``x`` as a Python float if it is a concrete number (a Python number or a one-element
  numeric array), else ``None``: a tracer, a bool (a flag, not a number) or anything
  else."""
  if not is_concrete(x) or isinstance(x, (bool, np.bool_)):
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


def check_in_range(fn: str, name: str, value: Any, low: float, high: float, *,
                   low_open: bool = True, high_open: bool = False) -> Any:
  """A concrete scalar ``value`` in the interval from ``low`` to ``high`` (``(low, high]``
  by default; each end open or closed), returned as given; a JAX tracer passes unchecked."""
  if not is_concrete(value):
    return value
  v = concrete_value(value)
  above = v is not None and np.isfinite(v) and (v > low if low_open else v >= low)
  if not (above and (v < high if high_open else v <= high)):
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    raise ValueError(f"{fn}: argument '{name}' must lie in {interval}; got {value!r}.")
  return value


def check_rate(fn: str, name: str, value: Any) -> Any:
  """A dropout rate in ``[0, 1)``, returned as given."""
  return check_in_range(fn, name, value, 0, 1, low_open=False, high_open=True)


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


# ------------------------------------------------------------- Python values


def check_int(where: str, name: str, value: Any, minimum: int = 1) -> int:
  """``value`` as an int ``>= minimum`` (bools rejected)."""
  if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)) \
      or int(value) < minimum:
    fail(where, name, value, f"an int >= {minimum}")
  return int(value)


def check_concrete_int(where: str, name: str, value: Any, *, minimum: int = 0,
                            allow_none: bool = False) -> Any:
  """A concrete integer hyperparameter ``>= minimum`` (or ``None`` where ``allow_none``),
  returned as given; a JAX tracer passes unchecked."""
  if (value is None and allow_none) or isinstance(value, jax.core.Tracer):
    return value
  v = concrete_value(value)
  if isinstance(value, bool) or v is None or v != int(v) or int(v) < minimum:
    fail(where, name, value, f"an int >= {minimum}" + (" or None" if allow_none else ""))
  return value


def check_optional_int(where: str, name: str, value: Any, minimum: int = 1) -> int | None:
  """``None``, or ``value`` as an int ``>= minimum``."""
  return None if value is None else check_int(where, name, value, minimum)


def check_features(where: str, features: Any, minimum: int = 1) -> int:
  """A cell's ``features`` as an int ``>= minimum``."""
  return check_int(where, "features", features, minimum)


def check_choice(where: str, name: str, value: Any, allowed: tuple) -> Any:
  """``value`` if it is one of ``allowed`` (an instance of the choice's type that compares
  equal: a string choice is only met by a string)."""
  if not any(isinstance(value, type(a)) and value == a for a in allowed):
    fail(where, name, value, f"one of {list(allowed)}")
  return value


def _check_number(where: str, name: str, value: Any, ok: Callable[[float], bool],
                  what: str) -> float:
  if isinstance(value, bool) or not isinstance(value, numbers.Real) \
      or not math.isfinite(float(value)) or not ok(float(value)):
    fail(where, name, value, f"a finite number{what}")
  return float(value)


def check_positive_number(where: str, name: str, value: Any) -> float:
  """A Python number ``> 0`` as a float."""
  return _check_number(where, name, value, lambda v: v > 0, " > 0")


def check_nonnegative_number(where: str, name: str, value: Any) -> float:
  """A Python number ``>= 0`` as a float."""
  return _check_number(where, name, value, lambda v: v >= 0, " >= 0")


def check_finite_number(where: str, name: str, value: Any) -> float:
  """A finite Python number as a float."""
  return _check_number(where, name, value, lambda v: True, "")


def check_rho(where: str, rho: Any, n: int) -> int:
  """The number of ``-1`` entries of a scaled Cayley transform's ``D``: an int in
  ``[0, n]``."""
  if isinstance(rho, bool) or not isinstance(rho, (numbers.Integral, np.integer)) \
      or not 0 <= int(rho) <= n:
    fail(where, "rho", rho, f"the number of -1 entries of D, an int in [0, n={n}]")
  return int(rho)
