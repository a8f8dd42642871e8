"""Why ``expm`` inside a jitted training step cost 25-60 ms on 2 CPU cores, and the fix.

Cause: ``jax.scipy.linalg.expm`` (Pade + scaling and squaring) solves ``Q X = P`` with an
LU factorisation and two triangular solves. On CPU these are LAPACK custom calls
(``lapack_sgetrf_ffi``, ``lapack_strsm_ffi``) that jaxlib runs on the OpenBLAS shipped with
SciPy. OpenBLAS starts its own worker threads (one per core); they busy-wait and compete
with XLA's intra-op thread pool for the same two cores, and a 128 x 128 triangular solve
takes 10-30 ms instead of ~0.1 ms. The step's while loops and matmuls are identical with
and without ``expm`` (checked on the compiled HLO); only the LAPACK calls slow down.

Fixes, measured below in separate processes (the thread count must be set before OpenBLAS
is loaded): ``OPENBLAS_NUM_THREADS=1`` in the environment, or no LAPACK at all --
:func:`lvf_jax.layers.fused.expm_taylor` (matmuls only).

Usage: ``python benchmarks/expm_overhead.py [--setting copy220] [--repeats 20]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _child(setting: str, repeats: int) -> dict:
  import jax
  import jax.numpy as jnp

  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  import speed  # noqa: E402

  s = speed.SETTINGS[setting]
  out = {}
  for expm in ("jsl", "taylor"):
    models, _ = speed._jax_models(s, 1, expm=expm)
    out[f"step_{expm}"] = models["lvf_jax"]
    if expm == "jsl":
      out["step_no_expm"] = models["diag_lvf_jax_no_expm"]
      out["expm_jsl_fwd_bwd"] = models["diag_expm_jsl"]
    else:
      out["expm_taylor_fwd_bwd"] = models["diag_expm_taylor"]
  n = s["n"]
  a = jnp.eye(n, dtype=jnp.float32) * 4.0 + jnp.triu(jnp.ones((n, n), jnp.float32), 1) * 0.01
  b = jnp.ones((n, n), jnp.float32)

  @jax.jit
  def tri_solve(state):
    a, b = state
    x = jax.scipy.linalg.solve_triangular(a, b, lower=False)
    return a, b + 1e-30 * x

  out["triangular_solve"] = (tri_solve, (a, b))
  states = {k: st for k, (_, st) in out.items()}
  for k, (f, _) in out.items():
    for _ in range(2):
      states[k] = jax.block_until_ready(f(states[k]))
  times = {k: [] for k in out}
  for _ in range(repeats):
    for k, (f, _) in out.items():
      t0 = time.perf_counter()
      states[k] = jax.block_until_ready(f(states[k]))
      times[k].append(time.perf_counter() - t0)
  return {k: 1e3 * statistics.median(v) for k, v in times.items()}


def main():
  p = argparse.ArgumentParser()
  p.add_argument("--setting", default="copy220")
  p.add_argument("--repeats", type=int, default=20)
  p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
  args = p.parse_args()
  if args.child:
    print(json.dumps(_child(args.setting, args.repeats)))
    return
  rows = {}
  for threads in ("default", "1"):
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    if threads != "default":
      env["OPENBLAS_NUM_THREADS"] = threads
    res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--setting",
                          args.setting, "--repeats", str(args.repeats)],
                         env=env, capture_output=True, text=True, check=True)
    rows[threads] = json.loads(res.stdout.strip().splitlines()[-1])
  keys = ["triangular_solve", "expm_jsl_fwd_bwd", "expm_taylor_fwd_bwd", "step_no_expm",
          "step_jsl", "step_taylor"]
  print(f"setting {args.setting}, medians of {args.repeats} (ms); load average "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
  print("| OPENBLAS_NUM_THREADS | " + " | ".join(keys) + " |")
  print("|---|" + "---|" * len(keys))
  for threads, r in rows.items():
    print(f"| {threads} | " + " | ".join(f"{r[k]:.2f}" for k in keys) + " |")


if __name__ == "__main__":
  main()
