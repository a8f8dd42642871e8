"""Training-iteration speed: lvf_jax's fused recurrence vs the FLOP floor vs a PyTorch peer.

One process, interleaved repetitions (every repetition times each variant once, in turn),
so that all columns see the same machine load. Per setting and variant it reports the
median, min and max of the wall time of one training iteration (forward + backward +
optimiser step), and ratios of medians.

Variants (all models: input projection -> recurrent layer -> linear readout -> softmax
cross-entropy -> RMSprop; time-major data):

* ``lvf_jax``   expRNN-style layer, ``K = expm(A - A^T)^T`` once per iteration,
  :func:`lvf_jax.recurrences.rnn_scan` (modReLU, custom VJP), input projection inside
  the loop when the input is narrow (``--projection``), readout as one large product over
  all steps.
* ``floor``     the FLOP floor: a forward scan doing only ``h <- h K`` (one ``(B, n) x
  (n, n)`` product per step), a backward scan doing only ``c <- c K^T``, and ONE
  ``(n, T B) x (T B, n)`` product for the weight gradient. No activation, no input,
  no readout, no loss, no optimiser.
* ``torch``     ``benchmarks/torch_peer.py``: Python loop over time, ``torch.matrix_exp``
  once per iteration, autograd, ``torch.optim.RMSprop`` (needs ``pip install torch``),
  ``--threads`` intra-op threads (default 2); ``torch_1t``: the same with one thread
  (PyTorch's OpenMP pool degrades badly when the cores are shared).
* ``jax_plain`` straightforward JAX: the same expRNN model, ``lax.scan`` of the cell
  (input projection inside the step) and plain autodiff.
* ``jax_tanh``  plain tanh RNN in JAX (unconstrained ``W``, ``lax.scan``, autodiff).
* ``lvf_jax_tanh`` the tanh RNN through :func:`~lvf_jax.recurrences.rnn_scan`.

Diagnostics (``--diagnostics``): the measured matmul rate at the two shapes of the floor,
``expm`` forward+backward alone, ``lvf_jax`` with the orthogonal matrix given as an
input (no ``expm`` in the step), ``lvf_jax`` with the hoisted projection, and the step
without its recurrence (``diag_no_recurrence``: expm, readout, loss with the state
cotangent, optimiser; no input-projection gradient, so a lower bound) -- work the floor
does not contain and no fused recurrence removes.

Usage::

  python benchmarks/speed.py [--settings copy1020 copy220 mnist784 copy220_b10]
      [--repeats 40] [--budget SECONDS] [--diagnostics] [--out table.md]

Data are random batches of the right shapes (one-hot symbols for the copy task, pixel
intensities for MNIST); speed does not depend on the values. Run as a script it sets
``OPENBLAS_NUM_THREADS=1`` unless already set (see the note at the bottom). A GPU is used
automatically when JAX's default backend is one (and ``cuda`` for the torch peer).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import time_interleaved  # noqa: E402  (benchmarks/timing.py)

SETTINGS = {
    # name: (T, n, B, d_in, classes, loss at every step)
    "copy1020": dict(T=1020, n=190, B=128, d_in=10, classes=9, every_step=True,
                     label="copy, 1020 steps, n = 190, batch 128"),
    "copy220": dict(T=220, n=128, B=128, d_in=10, classes=9, every_step=True,
                    label="copy, 220 steps, n = 128, batch 128"),
    "mnist784": dict(T=784, n=170, B=128, d_in=1, classes=10, every_step=False,
                     label="pixel MNIST, 784 steps, n = 170, batch 128"),
    "copy220_b10": dict(T=220, n=128, B=10, d_in=10, classes=9, every_step=True,
                        label="copy, 220 steps, n = 128, batch 10"),
}
VARIANTS = ("lvf_jax", "floor", "torch", "torch_1t", "jax_plain", "jax_tanh", "lvf_jax_tanh")


# ----------------------------------------------------------------------------- JAX


def _random_batch(setting: dict, seed: int):
  """NumPy ``(x (T, B, d_in) float32, y int32)`` of a setting: pixel intensities (``d_in``
  = 1) or one-hot symbols; labels at every step or one per sequence."""
  import numpy as np

  T, B, d, C = (setting[k] for k in ("T", "B", "d_in", "classes"))
  rng = np.random.default_rng(seed)
  if d == 1:
    x = rng.uniform(0, 1, (T, B, 1)).astype(np.float32)
  else:
    x = np.eye(d, dtype=np.float32)[rng.integers(0, d, (T, B))]
  y = rng.integers(0, C, (T, B) if setting["every_step"] else (B,)).astype(np.int32)
  return x, y


def jax_models(setting: dict, unroll: int, expm: str = "taylor", projection: str = "auto",
               seed: int = 0, persistent_interpret: bool = False, dtype: str = "float32"):
  """The JAX variants of a setting (``benchmarks/speed_jax.py``, imported here: it loads JAX).

  Returns:
    ``(models, flops, losses)``: ``{variant: (step_fn, state)}`` with ``step_fn(state) ->
    state`` jitted; the FLOP counts of the floor and the product diagnostics; and
    ``{variant: (loss_fn, params)}`` of the trained variants, for checks against a peer.
    ``lvf_jax_persistent`` is the tanh RNN through
    :func:`lvf_jax.recurrences.persistent_rnn_scan` (in Pallas's interpreter where
    ``persistent_interpret``). ``dtype``: of the parameters, data and states (float64 needs
    JAX's x64 mode).
  """
  import speed_jax  # benchmarks/ is on sys.path (top of this file)

  return speed_jax.jax_models(setting, _random_batch(setting, seed), unroll, expm, projection,
                              seed, persistent_interpret, dtype)


# --------------------------------------------------------------------------- torch


def _torch_model(setting: dict, threads: int, device: str, seed: int = 0):
  import torch

  import torch_peer  # benchmarks/ is on sys.path (top of this file)

  n, d, C = (setting[k] for k in ("n", "d_in", "classes"))
  every = setting["every_step"]
  x, y = _random_batch(setting, seed)
  x = torch.from_numpy(x).to(device)
  y = torch.from_numpy(y).long().to(device)
  step = torch_peer.make_train_step("exprnn", d, n, C, every, device=device)

  def run(state):
    torch.set_num_threads(threads)
    step(x, y)
    if device != "cpu":
      torch.cuda.synchronize()
    return state

  return run


# ------------------------------------------------------------------------- driver


def _fmt(v):
  return "—" if v is None else f"{1e3 * statistics.median(v):.1f}"


def _fmt_range(v):
  return "—" if v is None else f"{1e3 * min(v):.0f}–{1e3 * max(v):.0f}"


def run(settings, variants, repeats, warmup, threads, diagnostics, unroll, torch_device,
        expm, projection, budget=None):
  results = {}
  extra = {}
  for name in settings:
    s = SETTINGS[name]
    models, flops, _ = jax_models(s, unroll, expm, projection)
    fns = {}
    for v in variants:
      if v in ("torch", "torch_1t"):
        try:
          fns[v] = (_torch_model(s, threads if v == "torch" else 1, torch_device), None)
        except ImportError:
          print("torch not installed: skipping the PyTorch peer", file=sys.stderr)
      else:
        fns[v] = models[v]
    if diagnostics:
      for v in models:
        if v.startswith("diag_"):
          fns[v] = models[v]
    # pause: let the other runtime's spinning worker threads go idle before each call
    timed = time_interleaved(fns, repeats, warmup, budget_s=budget, pause_s=0.02,
                             label=f"[{name}] ")
    times = {v: t.seconds for v, t in timed.items()}
    results[name] = times
    extra[name] = flops
    line = "  ".join(f"{v}={_fmt(t)}" for v, t in times.items())
    print(f"[{name}] {line}", flush=True)
  return results, extra


def table(results, extra, variants, diagnostics) -> str:
  cols = [v for v in variants]
  head = ["Setting", "reps"]
  for v in cols:
    head += [f"{v} ms: median (min–max)"]
  head += ["lvf_jax / floor", "best torch / lvf_jax", "jax_plain / lvf_jax"]
  rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  for name, times in results.items():
    r = [SETTINGS[name]["label"], str(min(len(t) for t in times.values()))]
    for v in cols:
      t = times.get(v)
      r += ["—" if t is None else f"{_fmt(t)} ({_fmt_range(t)})"]

    def ratio(a, b):
      if a not in times or b not in times:
        return "—"
      return f"{statistics.median(times[a]) / statistics.median(times[b]):.2f}"

    torch_best = [statistics.median(times[v]) for v in ("torch", "torch_1t") if v in times]
    best = "—"
    if torch_best and "lvf_jax" in times:
      best = f"{min(torch_best) / statistics.median(times['lvf_jax']):.2f}"
    r += [ratio("lvf_jax", "floor"), best, ratio("jax_plain", "lvf_jax")]
    rows.append("| " + " | ".join(r) + " |")
  out = "\n".join(rows)
  if diagnostics:
    d_rows = ["", "", "| Setting | step product GFLOP/s | big product GFLOP/s | floor GFLOP/s | "
              "jsl expm fwd+bwd (ms) | expm_taylor fwd+bwd (ms) | lvf_jax without expm (ms) | "
              "lvf_jax hoisted projection (ms) | step without recurrence (ms) | "
              "(floor + step without recurrence) / floor | lvf_jax (ms) |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, times in results.items():
      fl = extra[name]

      def bound(times):
        if "floor" not in times or "diag_no_recurrence" not in times:
          return "—"
        fl_ = statistics.median(times["floor"])
        return f"{(fl_ + statistics.median(times['diag_no_recurrence'])) / fl_:.2f}"

      def rate(v):
        return f"{fl[v] / statistics.median(times[v]) / 1e9:.0f}" if v in times else "—"

      d_rows.append(
          f"| {SETTINGS[name]['label']} | {rate('diag_step_products')} | "
          f"{rate('diag_big_product')} | {rate('floor')} | "
          f"{_fmt(times.get('diag_expm_jsl'))} | {_fmt(times.get('diag_expm_taylor'))} | "
          f"{_fmt(times.get('diag_lvf_jax_no_expm'))} | "
          f"{_fmt(times.get('diag_lvf_jax_hoisted'))} | {_fmt(times.get('diag_no_recurrence'))} | "
          f"{bound(times)} | {_fmt(times.get('lvf_jax'))} |")
    out += "\n".join(d_rows) + "\n"
  return out


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
  p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
  p.add_argument("--repeats", type=int, default=40)
  p.add_argument("--warmup", type=int, default=3)
  p.add_argument("--budget", type=float, default=None,
                 help="stop a setting's repetitions after this many seconds (the table "
                 "gives the number of repetitions actually run)")
  p.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
  p.add_argument("--unroll", type=int, default=1)
  p.add_argument("--expm", default="taylor", choices=["taylor", "jsl"],
                 help="matrix exponential of the lvf_jax variant: lvf_jax.geometry."
                 "expm_taylor (matmuls only) or jax.scipy.linalg.expm (LAPACK solves)")
  p.add_argument("--projection", default="auto", choices=["auto", "hoisted", "inloop"],
                 help="lvf_jax input projection: hoisted u = X W (one large product) or "
                 "inside the loop (rnn_scan(input_kernel=W)); auto: Recurrent's rule, in the loop "
                 "when lvf_jax.layers.IN_LOOP_RATIO * d <= n (8 d <= n)")
  p.add_argument("--diagnostics", action="store_true")
  p.add_argument("--torch-device", default=None, help="cpu or cuda (default: cuda if "
                 "available and JAX runs on a GPU, else cpu)")
  p.add_argument("--out", default=None, help="write the markdown table to this file")
  args = p.parse_args(argv)

  import jax
  backend = jax.default_backend()
  torch_device = args.torch_device
  if torch_device is None:
    torch_device = "cpu"
    if backend == "gpu":
      try:
        import torch
        torch_device = "cuda" if torch.cuda.is_available() else "cpu"
      except ImportError:
        pass
  results, extra = run(args.settings, args.variants, args.repeats, args.warmup, args.threads,
                       args.diagnostics, args.unroll, torch_device, args.expm,
                       args.projection, args.budget)
  now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
  try:
    load = "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
  except OSError:
    load = ""
  header = (f"Command: `python {' '.join(sys.argv)}`  \n"
            f"Date: {now}; {load}  \n"
            f"Machine: {platform.machine()}, {os.cpu_count()} logical CPUs, JAX backend "
            f"{backend} ({jax.devices()[0].device_kind}), jax {jax.__version__}, torch device "
            f"{torch_device}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, "
            f"expm={args.expm}, projection={args.projection}, unroll={args.unroll}; medians "
            f"of up to {args.repeats} interleaved repetitions (column reps), ms per "
            f"training iteration.\n\n")
  md = header + table(results, extra, args.variants, args.diagnostics) + "\n"
  print(md)
  if args.out:
    with open(args.out, "w") as f:
      f.write(md)


if __name__ == "__main__":
  # jaxlib's CPU LAPACK kernels (LU, triangular solves: jax.scipy.linalg.expm, Cayley) run
  # on SciPy's OpenBLAS, whose own worker threads fight XLA's thread pool for the cores and
  # turn a 0.5 ms solve into 15-30 ms on 2 cores. One OpenBLAS thread removes that; it must
  # be set before the library is loaded. Override by setting the variable yourself.
  os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
  main()
