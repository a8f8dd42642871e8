"""Independent NumPy implementations of the papers' equations (column form) and shared
test helpers for the cell tests (not a test module)."""

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

N, M, B = 6, 3, 4


def _np(x):
  return np.asarray(x, dtype=np.float64)


def np_modrelu(z, b):
  return np.sign(z) * np.maximum(np.abs(z) + b, 0.0)


def np_sigmoid(z):
  return 1.0 / (1.0 + np.exp(-z))


def np_skew_from_triu(p):
  u = np.triu(p, 1)
  return u - u.T


def np_directional_derivative(v):
  """lvfRNN eq (9) entry by entry: (D_V)_ij = V_ji - V_ij (i != j), (D_V)_ii = -(div V)_i."""
  n = v.shape[0]
  div = np.array([sum(v[j, i] - v[i, j] for j in range(n)) for i in range(n)])
  d = np.zeros((n, n))
  for i in range(n):
    for j in range(n):
      d[i, j] = -div[i] if i == j else v[j, i] - v[i, j]
  return d, div


def np_lvf_matrix(v, integrator, tau):
  d, _ = np_directional_derivative(v)
  eye = np.eye(v.shape[0])
  if integrator == "euler":
    return eye - tau * d
  if integrator == "midpoint":
    return np.linalg.solve(eye + tau / 2 * d, eye - tau / 2 * d)
  return scipy.linalg.expm(-tau * d)


def init_apply(cell, x=None, carry=None, key=0):
  """Initialises ``cell`` and applies one step; returns (variables, carry, x, h')."""
  kx, kh, kp = jax.random.split(jax.random.key(key), 3)
  x = jax.random.normal(kx, (B, M)) if x is None else x
  width = getattr(cell, "state_size", cell.features)  # 2n for a complex state [Re | Im]
  carry = 0.5 * jax.random.normal(kh, (B, width)) if carry is None else carry
  variables = cell.init(kp, carry, x)
  new_carry, y = cell.apply(variables, carry, x)
  np.testing.assert_array_equal(np.asarray(new_carry), np.asarray(y))
  return variables, carry, x, new_carry


def replace_param(variables, name, value):
  params = dict(variables["params"])
  params[name] = jnp.asarray(value, jnp.float32)
  return {**variables, "params": params}


def kernel_of(cell, variables):
  """The prepared row-form recurrent kernel."""
  prep = cell.apply(variables, method=lambda c: c.prepare())
  return prep


