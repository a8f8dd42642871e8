"""Benchmark: median milliseconds per training iteration of every cell.

One iteration = forward + backward + an SGD update of all parameters on a random batch
(``jax.jit``-compiled; compilation and ``--warmup`` iterations excluded). Each cell is timed

* in :class:`lvf_jax.layers.Recurrent` (``prepare`` once per sequence, hoisted input
  projection, ``jax.lax.scan`` of the pure step; with ``--fused`` the hand-written-VJP
  scans of :mod:`lvf_jax.recurrences` for the cells they cover) -- column ``layer``;
* inside :class:`flax.linen.RNN` (the cell's ``__call__`` per step, i.e. the recurrent
  matrix recomputed every step) -- column ``nn.RNN``;

next to the floor: a plain tanh RNN (:class:`lvf_jax.cells.TanhRNNCell`) in the same layer
(fused too with ``--fused``). The table reports the median and the minimum over
``--repeats`` iterations. Within a setting the repetitions are interleaved (each repetition
times every entry once, in turn), so that all entries see the same machine load; the
``rnn_orth`` row (the same computation as the floor with another initialisation) shows the
remaining noise of the ratios. A cell whose carry is wider than ``n`` (a complex state
``[Re h | Im h]``: uRNN, complex EURNN, ``2n`` entries and a ``2n x 2n`` recurrent kernel)
adds the row ``rnn at n = 2n (state width)``: the tanh floor at the cell's own state width,
timed in the same interleaved set, to divide by.

Two columns explain what a ratio to the floor can be (``--explain``):

* ``prepare ms``: forward + backward of the cell's ``prepare`` alone (its matrix function:
  ``expm``, Cayley solve, ``D_V`` ...) -- a per-sequence cost the floor does not have;
  ``(floor + prepare) / floor`` is a lower bound of the cell's ratio;
* rows ``products x k``: a scan doing only the sequential products of a cell with ``k``
  recurrent kernels (one ``(B, n) x (n, k n)`` product per step forward, one
  ``(B, k n) x (k n, n)`` backward, one big weight-gradient product after the loop, no
  activation): the FLOP floor of a gated AntisymmetricRNN (k = 2: ``h K`` with the
  ``(n, 2n)`` kernel ``[K_h K_z]``), a GRU / NC-GRU (k = 3) or an LSTM (k = 4); ``k = 1``
  and the ``k`` of each requested gated cell are timed. Its ratio to
  the tanh floor is a lower bound of the ratio any implementation of such a cell reaches.

The file given by ``--out`` is rewritten after every setting (a crash loses at most the
setting it was in) and ends with two matrices, cells x settings: ``layer / floor`` and
``layer / own floor``, the own floor being the tanh floor at the cell's state width for a
complex cell, ``products x k`` for a gated cell with ``k`` recurrent kernels (gated
AntisymmetricRNN: 2; GRU, NC-GRU, GORU: 3; LSTM: 4; needs ``--explain``), and the tanh
floor otherwise.

Rows: every registered cell (:data:`lvf_jax.cells.CELLS`) and the ``VARIANTS``
``eurnn_fft`` / ``goru_fft`` (the FFT-style EUNN of the EURNN and GORU papers, ``n`` a
power of 2), ``lvf_exp`` (the lvfRNN's ``exp`` integrator) and ``kru_factors`` /
``kru_dense`` (the KRU factor by factor, and with its dense ``W``). Default grid: hidden
``n`` in {128, 256, 512}, ``T`` in {200, 1000}, batch in {10, 128} (slow on a CPU:
restrict it with the flags). Run as a script it sets
``OPENBLAS_NUM_THREADS=1`` unless already set (LAPACK solves otherwise contend with XLA's
threads, see docs/RESULTS.md, 'Performance notes'). Example::

    python benchmarks/cells.py --n 64 --T 50 --batch 10 --repeats 5 --fused --explain
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import cells as cells_lib
from lvf_jax import layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import matrix_function  # noqa: E402  (benchmarks/matrix_function.py)
from timing import command_line, measured_on, time_interleaved  # noqa: E402  (benchmarks/timing.py)

FLOOR = "rnn"
# Rows for configurations of a registered cell: row name -> (cell, constructor arguments).
# The FFT-style EUNN (log2 n butterfly layers instead of ``capacity``) changes only the
# per-sequence ``prepare``; it needs n a power of 2. ``lvf_exp``: the lvfRNN with the
# exact flow ``exp(-tau D_V)`` (the ``lvf`` row uses the midpoint map). ``kru_factors``:
# the KRU's stored factors applied one by one (the ``kru`` row merges them into Kronecker
# blocks); ``kru_dense``: the dense ``W``.
VARIANTS = {"eurnn_fft": ("eurnn", {"fft": True}), "goru_fft": ("goru", {"fft": True}),
            "lvf_exp": ("lvf", {"integrator": "exp", "tau": 1.0}),
            "kru_factors": ("kru", {"block_size": 1}), "kru_dense": ("kru", {"factored": False})}
# Recurrent kernels per step of the gated cells (their FLOP floor is ``products x k``).
KERNELS = {"gated_antisymmetric": 2, "gru": 3, "ncgru": 3, "goru": 3, "goru_fft": 3,
           "lstm": 4}


def build(name: str, n: int):
  """The cell of row ``name`` (a registered cell or one of ``VARIANTS``) at hidden size n."""
  if name in VARIANTS:
    cell, kw = VARIANTS[name]
    return cells_lib.make_cell(cell, n, **kw)
  kw = {"lvf": dict(integrator="midpoint", tau=1.0)}.get(name, {})
  return cells_lib.make_cell(name, n, **kw)


def runs_at(name: str, n: int) -> bool:
  """Whether row ``name`` exists at hidden size ``n`` (nnRNN's Schur form needs n even, the
  FFT-style EUNN a power of 2)."""
  if name == "nnrnn":
    return n % 2 == 0
  if name in VARIANTS and VARIANTS[name][1].get("fft"):
    return n & (n - 1) == 0
  return True


def training_step(module, x, lr: float = 1e-3):
  """``(fn, state)``: one jitted forward + backward + SGD step of ``module`` on ``x``."""
  params = jax.jit(module.init)(jax.random.key(0), x)["params"]
  target = jax.random.normal(jax.random.key(1), x.shape[:-1] + (1,), x.dtype)

  def loss_fn(p):
    y = module.apply({"params": p}, x)
    return jnp.mean((jnp.mean(y, axis=-1, keepdims=True) - target) ** 2)

  @jax.jit
  def train_step(p):
    g = jax.grad(loss_fn)(p)
    return jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g)

  return train_step, params


PREPARE_INNER = 20  # prepare passes per timed call (divides out the dispatch overhead)


def prepare_step(cell, input_size: int):
  """``(fn, state)`` running ``PREPARE_INNER`` dependent forward + backward passes of
  ``cell.prepare`` alone in one jitted loop (:func:`matrix_function.prepare_step`), or None
  if the cell has no ``prepare`` (Flax's own cells) -- the per-sequence matrix-function
  cost."""
  if not hasattr(cell, "prepare"):
    return None
  x = jnp.zeros((1, input_size), jnp.float32)
  carry = cell.initialize_carry(jax.random.key(0), x.shape)
  params = cell.init(jax.random.key(0), carry, x)["params"]
  return matrix_function.prepare_step(cell, params, jnp.float32, inner=PREPARE_INNER)


def product_floor(n: int, steps: int, batch: int, k: int):
  """``(fn, state)``: the sequential-products-only scan of a ``k``-kernel cell.

  Forward ``h <- sum_j (h W)_j`` (one ``(B, n) x (n, k n)`` product per step), backward
  ``c <- tile(c) W^T`` (one ``(B, k n) x (k n, n)`` product per step), then one
  ``(n, T B) x (T B, k n)`` weight-gradient product: the FLOP floor for ``k``
  recurrent kernels.
  """
  w = jax.random.normal(jax.random.key(0), (n, k * n), jnp.float32) / (k * n) ** 0.5
  h0 = jax.random.normal(jax.random.key(1), (batch, n), jnp.float32)

  def fwd(h, _):
    z = h @ w
    h = z if k == 1 else jnp.sum(z.reshape((batch, k, n)), axis=1)
    return h, h

  def bwd(c, _):
    c = (c if k == 1 else jnp.tile(c, (1, k))) @ w.T
    return c, c

  @jax.jit
  def run(state):
    w_, h = state
    _, hs = jax.lax.scan(fwd, h, None, length=steps)
    _, cs = jax.lax.scan(bwd, h, None, length=steps)
    cs = cs if k == 1 else jnp.tile(cs, (1, 1, k))
    dw = jax.lax.dot_general(hs.reshape((-1, n)), cs.reshape((-1, k * n)),
                             (((0,), (0,)), ((), ())))
    return w_ - 1e-30 * dw, h + 1e-30 * hs[-1]

  return run, (w, h0)


def _malloc_env() -> str:
  """The glibc malloc settings of this process's environment (they decide whether large
  buffers are mapped afresh by every call)."""
  keys = sorted(k for k in os.environ if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES"
                or k == "LD_PRELOAD")
  return " ".join(f"{k}={os.environ[k]}" for k in keys)


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  rows_all = sorted(cells_lib.CELLS) + sorted(VARIANTS)
  parser.add_argument("--cells", nargs="+", default=rows_all, choices=rows_all,
                      help="registered cells and the variants " + ", ".join(sorted(VARIANTS)))
  parser.add_argument("--n", nargs="+", type=int, default=[128, 256, 512])
  parser.add_argument("--T", nargs="+", type=int, default=[200, 1000])
  parser.add_argument("--batch", nargs="+", type=int, default=[10, 128])
  parser.add_argument("--input-size", type=int, default=16)
  parser.add_argument("--repeats", type=int, default=10)
  parser.add_argument("--warmup", type=int, default=2)
  parser.add_argument("--paths", nargs="+", default=["layer", "nn.RNN"],
                      choices=["layer", "nn.RNN"],
                      help="nn.RNN recomputes the matrix every step: slow for large n, T")
  parser.add_argument("--fused", action="store_true",
                      help="Recurrent(fused=True) for the cells and the floor")
  parser.add_argument("--input-projection", default="auto",
                      choices=list(layers.INPUT_PROJECTIONS),
                      help="Recurrent's input_projection for the cells and the floor "
                      "(with --fused; 'auto': x_t W inside the loop for the rnn_scan cells "
                      "when 8 d <= n)")
  parser.add_argument("--explain", action="store_true",
                      help="add the prepare-alone column and the products-only floors "
                      "for k = 1 and the k recurrent kernels of each gated cell")
  parser.add_argument("--out", default=None, help="write the markdown table to this file")
  return parser


HEADER = ("| cell | n | T | batch | layer ms | nn.RNN ms | layer / floor | nn.RNN / layer |"
          " layer min ms | nn.RNN min ms | prepare ms | (floor + prepare) / floor |"
          " layer faults / iter |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def setting_entries(args, n: int, steps: int, batch: int) -> tuple[dict, list[str]]:
  """The timed entries of one setting, ``{(row label, path): (step_fn, state)}``, and the
  row labels in the table's order."""
  def layer(cell):
    return layers.Recurrent(cell, fused=args.fused,
                            input_projection=args.input_projection if args.fused else "auto")

  x = jax.random.normal(jax.random.key(2), (batch, steps, args.input_size))
  names = [FLOOR] + [c for c in args.cells if c != FLOOR and runs_at(c, n)]
  entries = {}
  for name in names:
    if "layer" in args.paths or name == FLOOR:
      entries[(name, "layer")] = training_step(layer(build(name, n)), x)
    if "nn.RNN" in args.paths:
      entries[(name, "nn.RNN")] = training_step(nn.RNN(build(name, n)), x)
    prep = prepare_step(build(name, n), args.input_size) if args.explain else None
    if prep is not None:
      entries[(name, "prepare")] = prep
  wide = sorted({w for w in (getattr(build(c, n), "state_size", n) for c in names) if w != n})
  for w in wide:  # the floor at a complex cell's state width [Re h | Im h]
    entries[(f"{FLOOR} at n = {w} (state width)", "layer")] = training_step(
        layer(build(FLOOR, w)), x)
  counts = product_counts(names) if args.explain else []
  for k in counts:
    entries[(f"products x {k}", "layer")] = product_floor(n, steps, batch, k)
  labels = [nm for nm in names if nm != FLOOR or FLOOR in args.cells]
  labels += [f"{FLOOR} at n = {w} (state width)" for w in wide]
  labels += [f"products x {k}" for k in counts]
  return entries, labels


def _fmt(v) -> str:
  return "-" if v is None else f"{v:.2f}"


def table_row(name: str, res: dict, floor: float, setting: tuple) -> str:
  """One row of the table: the timings ``res`` of ``name`` against the ``floor``."""
  lay, lay_min, lay_faults = res.get((name, "layer"), (None, None, None))
  rnn, rnn_min, _ = res.get((name, "nn.RNN"), (None, None, None))
  prep = res.get((name, "prepare"), (None, None, None))[0]
  prep = None if prep is None else prep / PREPARE_INNER
  ratio_floor = None if lay is None else lay / floor
  ratio_rnn = None if (lay is None or rnn is None) else rnn / lay
  bound = None if prep is None else (floor + prep) / floor
  label = f"{name} (floor)" if name == FLOOR else name
  n, steps, batch = setting
  return (f"| {label} | {n} | {steps} | {batch} | {_fmt(lay)} | {_fmt(rnn)} | "
          f"{_fmt(ratio_floor)} | {_fmt(ratio_rnn)} | {_fmt(lay_min)} | {_fmt(rnn_min)} | "
          f"{_fmt(prep)} | {_fmt(bound)} | "
          f"{'-' if lay_faults is None else f'{lay_faults:.0f}'} |")


def main(argv=None) -> int:
  args = _parser().parse_args(argv)
  rows = []
  medians = {}  # (n, T, batch) -> {row label: layer median ms}
  print(HEADER, flush=True)
  for setting in [(n, t, b) for n in args.n for t in args.T for b in args.batch]:
    entries, labels = setting_entries(args, *setting)
    res = {key: (t.median_ms, t.min_ms, t.faults_per_call) for key, t in
           time_interleaved(entries, args.repeats, args.warmup + 1).items()}
    floor = res[(FLOOR, "layer")][0]
    for name in labels:
      rows.append(table_row(name, res, floor, setting))
      print(rows[-1], flush=True)
    medians[setting] = {nm: res[(nm, "layer")][0] for nm in labels if (nm, "layer") in res}
    medians[setting][FLOOR] = floor
    del entries, res
    if args.out:  # after every setting: a crash loses at most the setting it was in
      _write(args.out, argv, args, HEADER, rows, medians)
  return 0


def product_counts(names) -> list[int]:
  """The ``k`` of the ``products x k`` rows timed with ``--explain``: 1 and the kernel
  counts of the gated cells among ``names``."""
  return sorted({1} | {KERNELS[c] for c in names if c in KERNELS})


def own_floor(name: str, n: int, table: dict) -> tuple[str, float] | None:
  """``(label, ms)`` of the floor a cell is held to: the tanh floor at its state width
  (complex cells), ``products x k`` for a gated cell with ``k`` recurrent kernels (when
  measured), else the tanh floor at ``n``."""
  width = getattr(build(name, n), "state_size", n)
  if width != n:
    label = f"{FLOOR} at n = {width} (state width)"
  elif name in KERNELS and f"products x {KERNELS[name]}" in table:
    label = f"products x {KERNELS[name]}"
  else:
    label = FLOOR
  return (label, table[label]) if label in table else None


def summary(medians: dict) -> str:
  """Two matrices (cells x settings): ``layer / floor`` and ``layer / own floor``."""
  settings = list(medians)
  cells = [c for c in dict.fromkeys(c for t in medians.values() for c in t)
           if (c in cells_lib.CELLS or c in VARIANTS) and c != FLOOR]
  head = ("| cell | " + " | ".join(f"{n} / {t} / {b}" for n, t, b in settings) + " |\n"
          "|---|" + "---:|" * len(settings))
  out = []
  for title, own in (("layer / floor (tanh RNN at the same n)", False),
                     ("layer / own floor (complex: tanh RNN at the state width 2n; gated: "
                      "products x k; others: the tanh floor)", True)):
    lines = [f"{title}, columns n / T / batch:", "", head]
    for c in cells:
      vals = []
      for (n, t, b) in settings:
        table = medians[(n, t, b)]
        ref = own_floor(c, n, table) if own else (FLOOR, table[FLOOR])
        vals.append("-" if c not in table or ref is None else f"{table[c] / ref[1]:.2f}")
      lines.append(f"| {c} | " + " | ".join(vals) + " |")
    out.append("\n".join(lines))
  return "\n\n".join(out) + "\n"


def _write(path, argv, args, header, rows, medians):
  """Writes the metadata line, the command, the per-setting rows and the summary."""
  try:
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
  except OSError:
    load = "?"
  meta = (f"{measured_on(f', load average at the end {load}')}, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}, allocator settings "
          f"{_malloc_env() or 'default'}; median (and min) of {args.repeats} "
          f"interleaved jitted training iterations (forward + backward + SGD), input size "
          f"{args.input_size}, fused={args.fused}, input_projection="
          f"{args.input_projection}; ratios use medians.\n"
          f"Command: {command_line('benchmarks/cells.py', argv)}\n\n")
  with open(path, "w") as f:
    f.write(meta + header + "\n" + "\n".join(rows) + "\n\n" + summary(medians))


if __name__ == "__main__":
  # LAPACK solves (Cayley maps, jax.scipy.linalg.expm) run on SciPy's OpenBLAS, whose worker
  # threads fight XLA's pool on a small CPU; one thread removes that (set before jax loads).
  os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
  sys.exit(main())
