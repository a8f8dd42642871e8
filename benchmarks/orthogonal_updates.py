"""Per-update time and orthogonality error of the orthogonal-matrix updates of lvf_jax.optim.

Methods (each a full update of an ``n x n`` orthogonal matrix from a gradient ``G = dL/dW``,
with a plain SGD inner step so that only the manifold machinery differs):

* ``cayley_exact``  -- :func:`lvf_jax.optim.scornn` (one LU inverse per update);
* ``neumann1..3``   -- :func:`lvf_jax.optim.neumann_cayley` of that order, no reset during
  the timed run (``reset_every=None``; the number of validity resets is reported, 0 expected);
* ``multiplicative``-- :func:`lvf_jax.optim.multiplicative_cayley` (one solve per update);
* ``expm``          -- trivialisation: the forward map ``W = expm(A)`` plus the backward
  (VJP of ``expm``) and the SGD step on ``A``, i.e. the map's share of a training step;
* ``inv_exact`` / ``inv_neumann1..3`` -- only the inverse update ``(I + A)^{-1}``: LU
  (:func:`lvf_jax.geometry.cayley_inverse`) vs the Neumann series, NC-GRU's claimed saving.

Every method runs ``--steps`` updates inside one jitted ``lax.fori_loop``; the time is the
fastest of ``--repeats`` runs divided by ``--steps`` (the minimum is robust to other load on a
shared machine; the median is also recorded). The orthogonality error
``||W^T W - I||_max`` is measured after those updates, starting from an exactly orthogonal
``W`` (float32).

Usage::

  python benchmarks/orthogonal_updates.py --sizes 128 512 --steps 10 --repeats 3
  python benchmarks/orthogonal_updates.py --json out.json   # full grid 128..2048
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import optax

from lvf_jax import geometry as g
from lvf_jax import optim

METHODS = ("cayley_exact", "neumann1", "neumann2", "neumann3", "multiplicative", "expm",
           "inv_exact", "inv_neumann1", "inv_neumann2", "inv_neumann3")


def _gradient(i, n, scale):
  return scale * jax.random.normal(jax.random.fold_in(jax.random.key(1), i), (n, n), jnp.float32)


def _transform_runner(tx, w0, steps, scale):
  n = w0.shape[-1]

  @jax.jit
  def run(w, state):
    def body(i, carry):
      w, s = carry
      u, s = tx.update(_gradient(i, n, scale), s, w)
      return w + u, s

    return jax.lax.fori_loop(0, steps, body, (w, state))

  state = tx.init(w0)
  return lambda: run(w0, state)


def _expm_runner(a0, steps, scale, lr):
  n = a0.shape[-1]
  phi = optim.expm_triu

  @jax.jit
  def run(a):
    def body(i, a):
      _, vjp = jax.vjp(phi, a)  # forward map (the cell's W) and its backward
      (ga,) = vjp(_gradient(i, n, scale))
      return a - lr * ga

    a = jax.lax.fori_loop(0, steps, body, a)
    return phi(a), a

  return lambda: run(a0)


def _inverse_runner(a0, steps, scale, order):
  n = a0.shape[-1]
  inv0 = g.cayley_inverse(a0)

  @jax.jit
  def run(a, inv):
    def body(i, carry):
      a, inv = carry
      delta = g.antisymmetrize(_gradient(i, n, scale))
      a_new = a - delta
      if order == 0:
        return a_new, g.cayley_inverse(a_new)
      return a_new, g.neumann_inverse_update(inv, delta, order)

    return jax.lax.fori_loop(0, steps, body, (a, inv))

  return lambda: run(a0, inv0)


def _time(fn, repeats):
  jax.block_until_ready(fn())  # compile and warm up
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn())
    times.append(time.perf_counter() - t0)
  return min(times), statistics.median(times), out


def bench(n, method, steps, repeats, lr=1e-3):
  rho = n // 2
  a0 = g.cayley_init()(jax.random.key(0), (n, n), jnp.float32)
  w0 = g.scaled_cayley(a0, rho)
  scale = 1.0 / n  # keeps ||Ainv dA|| well inside the Neumann series' validity region
  extra = {}
  if method == "cayley_exact":
    fn = _transform_runner(optim.scornn(optax.sgd(lr), rho), w0, steps, scale)
  elif method.startswith("neumann"):
    tx = optim.neumann_cayley(optax.sgd(lr), rho, order=int(method[-1]), reset_every=None,
                              threshold=1.0)
    fn = _transform_runner(tx, w0, steps, scale)
  elif method == "multiplicative":
    fn = _transform_runner(optim.multiplicative_cayley(lr), w0, steps, scale)
  elif method == "expm":
    fn = _expm_runner(jnp.triu(a0, 1), steps, scale, lr)
  elif method == "inv_exact":
    fn = _inverse_runner(a0, steps, scale * lr, 0)
  else:
    fn = _inverse_runner(a0, steps, scale * lr, int(method[-1]))
  seconds, median, out = _time(fn, repeats)
  if method.startswith("inv_"):
    a, inv = out
    err = jnp.max(jnp.abs(inv - g.cayley_inverse(a)))
    extra["inverse_error_max"] = float(err)
    w = (inv @ (jnp.eye(n) - a)) * jnp.broadcast_to(g.scaling_diagonal(n, rho), (n, n))
  else:
    w = out[0]
    if method.startswith("neumann"):
      extra["resets"] = int(out[1].num_resets)
      extra["residual_norm_last"] = float(out[1].residual_norm)
  return {"n": n, "method": method, "ms_per_update": 1e3 * seconds / steps,
          "ms_per_update_median": 1e3 * median / steps,
          "orthogonality_error": float(g.orthogonality_error(w)), **extra}


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--sizes", type=int, nargs="+", default=[128, 512, 1024, 2048])
  parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
  parser.add_argument("--steps", type=int, default=10, help="updates per timed run")
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--json", help="write the results to this file")
  args = parser.parse_args(argv)
  device = jax.devices()[0]
  meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
          "device": f"{device.platform}:{device.device_kind}", "jax": jax.__version__,
          "cpu_count": __import__("os").cpu_count(), "machine": platform.machine(),
          "steps": args.steps, "repeats": args.repeats}
  print(json.dumps(meta))
  rows = []
  print(f"{'n':>5} {'method':>15} {'ms/update':>10} {'(median)':>10} {'orth.err':>9}  extra")
  for n in args.sizes:
    for method in args.methods:
      r = bench(n, method, args.steps, args.repeats)
      rows.append(r)
      extra = {k: v for k, v in r.items() if k not in (
          "n", "method", "ms_per_update", "ms_per_update_median", "orthogonality_error")}
      print(f"{n:>5} {method:>15} {r['ms_per_update']:>10.3f} "
            f"{r['ms_per_update_median']:>10.3f} "
            f"{r['orthogonality_error']:>9.2e}  {extra or ''}", flush=True)
    base = {r["method"]: r["ms_per_update"] for r in rows if r["n"] == n}
    for k in (1, 2, 3):
      if f"neumann{k}" in base and "cayley_exact" in base:
        print(f"  n={n}: cayley_exact / neumann{k} = "
              f"{base['cayley_exact'] / base[f'neumann{k}']:.2f}x")
      if f"inv_neumann{k}" in base and "inv_exact" in base:
        print(f"  n={n}: inv_exact / inv_neumann{k} = "
              f"{base['inv_exact'] / base[f'inv_neumann{k}']:.2f}x")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"meta": meta, "results": rows}, f, indent=1)


if __name__ == "__main__":
  main()
