"""Benchmark: the float32 matrix exponential of the expRNN / nnRNN ``prepare``.

For each hidden size ``n`` and each generator ``A`` (a random dense skew-symmetric matrix
scaled to a given 1-norm, or the expRNN cell's initial skew matrix), times ``jax.grad`` of
``<expm_taylor(A), W>`` (forward + backward, jitted; what a training step pays per
sequence) and reports:

* ``ms``: median wall time of a call (interleaved repetitions, :mod:`timing`);
* ``faults``: minor page faults per call (fresh ``mmap`` pages, see docs/RESULTS.md, 'Performance
notes');
* ``temp MiB``: the compiled gradient's temporary buffer (XLA memory analysis) -- above
  glibc's 32 MiB mmap threshold a buffer is mapped, and its pages faulted in, every call;
* ``compile s``: lowering + compiling the gradient;
* ``s``: the number of squarings chosen for ``A``;
* ``orth err``: ``max |Q^T Q - I|`` of ``Q = expm_taylor(A)``; ``err``: ``max |Q - exp(A)|``
  against SciPy's float64 exponential.

``--ablate-stored`` adds, for every generator, the same gradient traced with
``geometry._util.stored`` (the loop that keeps XLA from fusing through the cotangent in
``expm_taylor``'s backward pass) replaced by the identity, timed interleaved with the
original; ``--json`` writes the rows with the metadata.

The metadata line names the ``lvf_jax`` that was imported (path and git commit), so two
versions can be compared by running the same command with ``PYTHONPATH`` pointing at a
checkout of the other one. Example::

    python benchmarks/expm.py --n 128 256 512 --norms 3 30 300 --init
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

import lvf_jax
from lvf_jax import cells as cells_lib
from lvf_jax import geometry
from lvf_jax.geometry import maps

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import command_line, git_commit, measured_on, time_interleaved  # noqa: E402  (benchmarks/timing.py)


def random_skew(n: int, norm1: float, seed: int = 0) -> np.ndarray:
  """A dense skew-symmetric ``(n, n)`` float64 matrix with 1-norm ``norm1``."""
  g = np.random.default_rng(seed).standard_normal((n, n))
  a = g - g.T
  return a * (norm1 / np.abs(a).sum(axis=0).max())


def init_skew(n: int) -> np.ndarray:
  """The skew matrix of a freshly initialised ``ExpRNNCell(n)`` (its default init)."""
  cell = cells_lib.make_cell("exprnn", n)
  x = jnp.zeros((1, 1), jnp.float32)
  params = cell.init(jax.random.key(0), cell.initialize_carry(jax.random.key(0), x.shape), x)
  return np.asarray(geometry.skew_from_triu(params["params"]["skew"]), np.float64)


def squarings(a: jnp.ndarray) -> int:
  """The squaring count ``expm_taylor`` picks for ``a`` (the 1-norm rule where the imported
  version has no ``_squaring_count``)."""
  if hasattr(maps, "_squaring_count"):
    return int(maps._squaring_count(a, 16))
  norm = float(jnp.max(jnp.sum(jnp.abs(a), axis=-2)))
  return int(np.clip(np.ceil(np.log2(norm / maps._THETA_DEFAULT)), 0, 16))


def gradient_call(a: np.ndarray):
  """``(fn, state, compile_s, temp_mib)``: a jitted ``A -> A - 1e-30 grad <expm(A), W>``."""
  a32 = jnp.asarray(a, jnp.float32)
  w = jax.random.normal(jax.random.key(1), a32.shape, jnp.float32)
  grad = jax.grad(lambda m: jnp.sum(geometry.expm_taylor(m) * w))
  t0 = time.perf_counter()
  compiled = jax.jit(lambda m: m - 1e-30 * grad(m)).lower(a32).compile()
  compile_s = time.perf_counter() - t0
  analysis = compiled.memory_analysis()
  temp = None if analysis is None else analysis.temp_size_in_bytes / 2 ** 20
  return compiled, a32, compile_s, temp


@contextlib.contextmanager
def stored_removed():
  """``maps.stored`` replaced by the identity while a gradient is traced inside the block
  (a compiled gradient keeps what it was traced with). JAX caches the trace of a
  ``custom_vjp``'s backward rule, so the caches are cleared on entry and on exit."""
  kept = maps.stored
  jax.clear_caches()
  maps.stored = lambda x: x
  try:
    yield
  finally:
    maps.stored = kept
    jax.clear_caches()


def _source() -> str:
  """Where the imported lvf_jax lives and its git commit (``unknown`` outside a checkout)."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(lvf_jax.__file__)))
  return f"lvf_jax from {root} (commit {git_commit(root)})"


def _generators(n: int, args) -> list[tuple[str, np.ndarray]]:
  gens = [("random skew", random_skew(n, v)) for v in args.norms]
  return gens + ([("exprnn init", init_skew(n))] if args.init else [])


def _measure(n: int, args) -> list[dict]:
  """The rows of hidden size ``n``: every generator, and without ``stored`` when ablated."""
  variants = [("stored", contextlib.nullcontext)]
  if args.ablate_stored:
    variants.append(("identity", stored_removed))
  entries, meta = {}, {}
  for i, (label, a) in enumerate(_generators(n, args)):
    a32 = jnp.asarray(a, jnp.float32)
    q = np.asarray(geometry.expm_taylor(a32), np.float64)
    common = {"n": n, "generator": label, "norm1": float(np.abs(a).sum(axis=0).max()),
              "squarings": squarings(a32), "orth_err": float(np.abs(q.T @ q - np.eye(n)).max()),
              "err": float(np.abs(q - scipy.linalg.expm(a)).max())}
    for barrier, context in variants:
      with context():
        fn, state, compile_s, temp = gradient_call(a)
      entries[(i, barrier)] = (fn, state)
      meta[(i, barrier)] = dict(common, barrier=barrier, compile_s=compile_s,
                                    temp_mib=temp)
  res = time_interleaved(entries, args.repeats, args.warmup)
  return [dict(meta[key], ms=t.median_ms, faults=t.faults_per_call) for key, t in res.items()]


def _line(r: dict) -> str:
  temp = "-" if r["temp_mib"] is None else f"{r['temp_mib']:.1f}"
  return (f"| {r['n']} | {r['generator']} | {r['barrier']} | {r['norm1']:.3g} | "
          f"{r['squarings']} | {r['ms']:.2f} | {r['faults']:.0f} | {temp} | "
          f"{r['compile_s']:.2f} | {r['orth_err']:.1e} | {r['err']:.1e} |")


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--n", nargs="+", type=int, default=[128, 256, 512])
  parser.add_argument("--norms", nargs="+", type=float, default=[3.0, 30.0, 300.0],
                      help="1-norms of the random dense skew generators")
  parser.add_argument("--init", action="store_true",
                      help="add the expRNN cell's initial skew matrix at each n")
  parser.add_argument("--ablate-stored", action="store_true",
                      help="also time each gradient with geometry._util.stored as identity")
  parser.add_argument("--json", default=None, help="also write the rows to this file")
  parser.add_argument("--repeats", type=int, default=20)
  parser.add_argument("--warmup", type=int, default=2)
  args = parser.parse_args(argv)
  for name, values in (("n", args.n), ("norms", args.norms)):
    if any(v <= 0 for v in values):
      parser.error(f"argument --{name}: every value must be positive; got {values}")

  meta = f"{measured_on()}; {_source()}; median of {args.repeats} interleaved calls"
  print(meta + "\n")
  print("| n | generator | barrier | 1-norm | s | ms | faults | temp MiB | compile s | orth err "
        "| err |\n|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
  rows = []
  for n in args.n:
    for r in _measure(n, args):
      rows.append(r)
      print(_line(r), flush=True)
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"measured": meta, "device": jax.devices()[0].device_kind,
                 "command": command_line("benchmarks/expm.py", argv), "rows": rows}, f,
                indent=1)
  return 0


if __name__ == "__main__":
  os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/cells.py
  sys.exit(main())
