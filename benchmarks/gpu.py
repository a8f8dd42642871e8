"""GPU benchmark: lvf_jax against a PyTorch peer and cuDNN, per training iteration, against
the device's FLOP and bandwidth floors.

One command, a few minutes of device time (``--budget``, split evenly over the settings and
precisions). For every setting and precision it times, interleaved (``benchmarks/timing.py``),
one training iteration (forward, backward, RMSprop) of:

* ``lvf_jax``: the expRNN model of ``benchmarks/speed.py`` through
  :func:`lvf_jax.recurrences.rnn_scan` (custom VJP); ``jax_scan``: the same model as a plain
  ``lax.scan`` with autodiff;
* ``lvf_jax_tanh``: a tanh RNN through ``rnn_scan``; ``persistent``: the same through
  :func:`lvf_jax.recurrences.persistent_rnn_scan` (one Pallas kernel for the whole loop);
* ``torch_loop``: ``benchmarks/torch_peer.py``'s expRNN, a Python loop over time as the
  authors' code runs it, after a check that it computes lvf_jax's loss and gradients;
* ``cudnn_lstm``: ``torch.nn.LSTM`` of the same width (cuDNN on a GPU);
* the LSTM setting: ``lvf_jax_lstm`` (:func:`lvf_jax.recurrences.lstm_scan`), ``jax_lstm_scan``
  (plain ``lax.scan``) and ``cudnn_lstm``.

Floors (measured on the device at the start): the rate of one large matrix product at the
precision and the bandwidth of one large elementwise pass. A variant's floor is the larger of
its model FLOPs (recurrence, input projection and readout, forward and backward; the matrix
function excluded) over that rate and its minimum memory traffic (the stored states written
once and read once, the recurrent weights read once per pass) over that bandwidth. A time
more than ``LAUNCH_BOUND`` times its floor is labelled launch-bound: the loop's per-step
latency, not arithmetic or memory, sets it.

Precisions: ``fp32`` (JAX's default matmul precision set to ``highest``, PyTorch's TF32 off)
and ``tf32`` (the GPU defaults of both: TensorFloat-32 products); on a CPU only ``fp32``.

Usage::

  python benchmarks/gpu.py [--settings ...] [--precisions fp32 tf32] [--budget 330]
      [--json docs/results/gpu.json] [--out table.md] [--tiny]

``--tiny`` shrinks every setting to a few steps and units (the CPU dry run of the tests).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import git_commit, measured_on, time_interleaved  # noqa: E402  (benchmarks/timing.py)

import speed  # noqa: E402  (benchmarks/speed.py: the expRNN model and its data)

from lvf_jax.recurrences import persistent  # noqa: E402

SETTINGS = {
    "copy_b128": dict(T=220, n=128, B=128, d_in=10, classes=9, every_step=True, cell="exprnn",
                      task="copy"),
    "copy_b10": dict(T=220, n=128, B=10, d_in=10, classes=9, every_step=True, cell="exprnn",
                     task="copy"),
    "mnist_n170": dict(T=784, n=170, B=128, d_in=1, classes=10, every_step=False,
                       cell="exprnn", task="pixel MNIST"),
    "mnist_n512": dict(T=784, n=512, B=128, d_in=1, classes=10, every_step=False,
                       cell="exprnn", task="pixel MNIST"),
    "ptb_n1024": dict(T=150, n=1024, B=128, d_in=50, classes=50, every_step=True,
                      cell="exprnn", task="PTB-char"),
    "lstm_n1024": dict(T=150, n=1024, B=128, d_in=50, classes=50, every_step=True, cell="lstm",
                       task="PTB-char, LSTM"),
}
EXPRNN_VARIANTS = ("lvf_jax", "jax_scan", "lvf_jax_tanh", "persistent", "torch_loop",
                   "cudnn_lstm")
LSTM_VARIANTS = ("lvf_jax_lstm", "jax_lstm_scan", "cudnn_lstm")
# speed.py's names of the JAX variants
SPEED_NAMES = {"lvf_jax": "lvf_jax", "jax_scan": "jax_plain", "lvf_jax_tanh": "lvf_jax_tanh",
               "persistent": "lvf_jax_persistent"}
PRECISIONS = ("fp32", "tf32")
LAUNCH_BOUND = 10.0  # time / floor above which a variant is labelled launch-bound
TINY = dict(T=5, n=8, B=2)
MIN_PAIRED = 5  # repetitions below which no setting counts the kernel faster


def label(r: dict) -> str:
  """``'copy, T = 220, n = 128, batch 10'`` of a setting's record (its measured shape)."""
  s = r["shape"]
  return f"{s['task']}, T = {s['T']}, n = {s['n']}, batch {s['B']}"


def setting_of(name: str, tiny: bool) -> dict:
  """The setting ``name``, shrunk to :data:`TINY` sizes where ``tiny``."""
  s = dict(SETTINGS[name])
  if tiny:
    s.update(TINY, d_in=min(s["d_in"], 3), classes=min(s["classes"], 4))
  return s


# ----------------------------------------------------------------------- counts


def model_flops(s: dict) -> float:
  """FLOPs of one training iteration's products: the recurrence (forward, state cotangent,
  weight gradient), the input projection (forward, weight gradient) and the readout
  (forward, weight gradient, state cotangent). The matrix function is excluded."""
  T, n, B, d, C = (s[k] for k in ("T", "n", "B", "d_in", "classes"))
  gates = 4 if s["cell"] == "lstm" else 1
  readout_rows = T * B if s["every_step"] else B
  return 2.0 * (3 * T * B * n * gates * n + 2 * T * B * d * gates * n
                + 3 * readout_rows * n * C)


def model_bytes(s: dict) -> float:
  """Minimum float32 memory traffic of one training iteration: each stored state (the
  LSTM's gates and cell states too) written once and read once, the inputs read, the
  recurrent weights read once in each of the three passes."""
  T, n, B, d = (s[k] for k in ("T", "n", "B", "d_in"))
  stored = (6 if s["cell"] == "lstm" else 1) * T * B * n
  weights = (4 if s["cell"] == "lstm" else 1) * n * n
  return 4.0 * (2 * stored + T * B * d + 3 * weights)


# ------------------------------------------------------------------------ floors


def _time_min(fn, arg, repeats: int) -> float:
  import jax
  jax.block_until_ready(fn(arg))
  best = math.inf
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(arg))
    best = min(best, time.perf_counter() - t0)
  return best


def measure_peaks(tiny: bool, backend: str, repeats: int = 5) -> dict:
  """The device's measured matrix-product rate (FLOP/s, at the current default precision)
  and elementwise bandwidth (bytes read plus written per second)."""
  import jax
  import jax.numpy as jnp

  size = 256 if tiny else (8192 if backend == "gpu" else 1024)
  a = jax.random.normal(jax.random.key(0), (size, size), jnp.float32)
  matmul = jax.jit(lambda x: x @ x)
  flops = 2.0 * size ** 3 / _time_min(matmul, a, repeats)
  count = (1 << 20) if tiny else ((1 << 28) if backend == "gpu" else (1 << 24))
  v = jnp.ones((count,), jnp.float32)
  scale = jax.jit(lambda x: x * 1.0001 + 1.0)
  bandwidth = 8.0 * count / _time_min(scale, v, repeats)
  return {"matmul_flops": flops, "bandwidth_bytes": bandwidth, "matmul_size": size,
          "bandwidth_floats": count}


# -------------------------------------------------------------------------- JAX


def _lstm_jax_models(s: dict, seed: int = 0) -> tuple[dict, dict]:
  """``({variant: (step_fn, state)}, {variant: (loss_fn, params)})`` of the LSTM setting: the
  fused scan and plain autodiff of ``lax.scan``, the same model (Flax's gate order, readout
  at every step)."""
  import jax
  import jax.numpy as jnp
  import optax

  from lvf_jax import recurrences

  T, n, B, d, C = (s[k] for k in ("T", "n", "B", "d_in", "classes"))
  x, y = speed._random_batch(s, seed)  # pylint: disable=protected-access
  x, y_onehot = jnp.asarray(x), jax.nn.one_hot(jnp.asarray(y), C, dtype=jnp.float32)
  keys = jax.random.split(jax.random.key(seed), 3)
  params = {"w_in": jax.random.normal(keys[0], (d, 4 * n), jnp.float32) / math.sqrt(d),
            "kernel": jax.random.normal(keys[1], (n, 4 * n), jnp.float32) / math.sqrt(n),
            "bias": jnp.zeros((4 * n,), jnp.float32),
            "w_out": jax.random.normal(keys[2], (C, n), jnp.float32) / math.sqrt(n),
            "b_out": jnp.zeros((C,), jnp.float32)}
  carry = (jnp.zeros((B, n), jnp.float32), jnp.zeros((B, n), jnp.float32))
  opt = optax.rmsprop(1e-3)

  def loss_of(hs):
    def loss(p):
      logits = hs(p).reshape((T * B, n)) @ p["w_out"].T + p["b_out"][None, :]
      return optax.softmax_cross_entropy(logits, y_onehot.reshape((T * B, C))).mean()
    return loss

  def fused(p):
    u = (x.reshape((T * B, d)) @ p["w_in"]).reshape((T, B, 4 * n))
    return recurrences.lstm_scan(p["kernel"], p["bias"], u, carry)[1]

  def plain(p):
    u = (x.reshape((T * B, d)) @ p["w_in"]).reshape((T, B, 4 * n))

    def step(c_h, u_t):
      c, h = c_h
      zi, zf, zg, zo = jnp.split(h @ p["kernel"] + p["bias"][None, :] + u_t, 4, axis=-1)
      c = jax.nn.sigmoid(zf) * c + jax.nn.sigmoid(zi) * jnp.tanh(zg)
      h = jax.nn.sigmoid(zo) * jnp.tanh(c)
      return (c, h), h

    return jax.lax.scan(step, carry, u)[1]

  def train_step(loss_fn):
    @jax.jit
    def step(state):
      p, o = state
      g = jax.grad(loss_fn)(p)
      upd, o = opt.update(g, o, p)
      return optax.apply_updates(p, upd), o
    return step, (params, opt.init(params))

  losses = {"lvf_jax_lstm": loss_of(fused), "jax_lstm_scan": loss_of(plain)}
  return ({v: train_step(f) for v, f in losses.items()},
          {v: (f, params) for v, f in losses.items()})


def jax_variants(s: dict, variants, backend: str) -> tuple[dict, dict]:
  """``({variant: (step_fn, state)}, {variant: (loss_fn, params)})`` of the JAX variants."""
  if s["cell"] == "lstm":
    models, losses = _lstm_jax_models(s)
    wanted = [v for v in variants if v in models]
    return {v: models[v] for v in wanted}, {v: losses[v] for v in wanted}
  models, _, losses = speed.jax_models(s, unroll=1, persistent_interpret=backend != "gpu")
  wanted = [v for v in variants if v in SPEED_NAMES]
  return ({v: models[SPEED_NAMES[v]] for v in wanted},
          {v: losses[SPEED_NAMES[v]] for v in wanted})


# ------------------------------------------------------------------------ torch


def _torch():
  try:
    import torch  # pylint: disable=g-import-not-at-top
    return torch
  except ImportError:
    return None


def torch_device() -> str:
  torch = _torch()
  return "cuda" if torch is not None and torch.cuda.is_available() else "cpu"


def torch_variants(s: dict, variants, device: str) -> dict:
  """``{variant: (step_fn, None)}`` of the PyTorch variants (none without PyTorch)."""
  torch = _torch()
  if torch is None:
    return {}
  import torch_peer  # pylint: disable=g-import-not-at-top  (benchmarks/torch_peer.py)

  x, y = speed._random_batch(s, 0)  # pylint: disable=protected-access
  x, y = torch.from_numpy(x).to(device), torch.from_numpy(y).long().to(device)
  cells = {"torch_loop": "exprnn", "cudnn_lstm": "lstm"}
  out = {}
  for v in variants:
    if v in cells:
      step = torch_peer.make_train_step(cells[v], s["d_in"], s["n"], s["classes"],
                                        s["every_step"], device=device)
      out[v] = (_synchronised(step, x, y, device), None)
  return out


def _synchronised(step, x, y, device):
  def run(state):
    step(x, y)
    if device == "cuda":
      _torch().cuda.synchronize()
    return state
  return run


def check_torch_peer(s: dict, device: str) -> dict:
  """Compares ``torch_loop``'s loss and gradients with lvf_jax's (the ``lvf_jax`` variant)
  at the same parameters and batch.

  Both run in float64: in float32 the gradients of these long modReLU recurrences differ by
  up to a few percent between two correct implementations (rounding changes which units sit
  at modReLU's kink), which no float32 tolerance separates from a wrong model. The
  tolerance is derived from the same computation: the relative difference between lvf_jax's
  float32 and float64 gradients, divided by float32's epsilon, is the loss's amplification of
  rounding ``A``; float64 rounding then leaves about ``A eps64``, and the check allows
  ``100 A eps64`` (at least ``1e-12``).
  """
  torch = _torch()
  if torch is None:
    return {"checked": False, "why": "torch not installed"}
  import jax
  import numpy as np
  import torch_peer  # pylint: disable=g-import-not-at-top

  x, y = speed._random_batch(s, 0)  # pylint: disable=protected-access
  with jax.enable_x64(True), jax.default_matmul_precision("highest"), \
      _torch_precision(torch, "fp32"):
    loss64, params64 = speed.jax_models(s, unroll=1, dtype="float64")[2]["lvf_jax"]
    loss32 = speed.jax_models(s, unroll=1, dtype="float32")[2]["lvf_jax"][0]
    ref = jax.value_and_grad(loss64)(params64)
    low = jax.grad(loss32)(jax.tree.map(lambda a: a.astype(np.float32), params64))
    peer = torch_peer.exprnn_loss_and_grads({k: np.asarray(v) for k, v in params64.items()},
                                            x, y, s["every_step"], device, dtype="float64")

  def rel(a, b):
    return float(np.linalg.norm(np.asarray(a, np.float64) - np.asarray(b, np.float64))
                 / max(np.linalg.norm(np.asarray(b, np.float64)), 1e-300))

  amplification = max(rel(low[k], ref[1][k]) for k in low) / float(np.finfo(np.float32).eps)
  tol = max(100 * amplification * float(np.finfo(np.float64).eps), 1e-12)
  diffs = {k: rel(peer[1][k], ref[1][k]) for k in peer[1]}
  diffs["loss"] = abs(peer[0] - float(ref[0])) / abs(float(ref[0]))
  return {"checked": True, "dtype": "float64", "amplification": amplification,
          "tolerance": tol, "relative_differences": diffs,
          "passed": all(v <= tol for v in diffs.values())}


def _checked(s: dict, device: str) -> dict:
  """:func:`check_torch_peer`, with an error recorded as a failed check instead of ending
  the run (the remaining settings still get measured)."""
  try:
    return check_torch_peer(s, device)
  except Exception as e:  # pylint: disable=broad-except
    return {"checked": True, "passed": False, "error": f"{type(e).__name__}: {e}"[:300],
            "tolerance": 0.0, "relative_differences": {}}


@contextlib.contextmanager
def _torch_precision(torch, precision: str):
  if torch is None:
    yield
    return
  saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
  torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
  try:
    yield
  finally:
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@contextlib.contextmanager
def precision_context(precision: str):
  """JAX's and PyTorch's matmul precision for ``precision``, restored on exit."""
  import jax
  jax_precision = persistent.MATMUL_PRECISIONS[precision][0]
  with jax.default_matmul_precision(jax_precision), _torch_precision(_torch(), precision):
    yield


# ------------------------------------------------------------------------ driver


def measure_setting(name: str, precision: str, *, tiny: bool, budget_s: float,
                    repeats: int, backend: str, device: str, peaks: dict,
                    variants=None) -> dict:
  """The record of one setting at one precision: per variant the times (s), FLOP/s, floor
  and label; the peer check."""
  s = setting_of(name, tiny)
  wanted = variants or (LSTM_VARIANTS if s["cell"] == "lstm" else EXPRNN_VARIANTS)
  with precision_context(precision):
    entries, losses = jax_variants(s, wanted, backend)
    entries.update(torch_variants(s, wanted, device))
    check = _checked(s, device) if "torch_loop" in entries else None
    entries, failed = compiled(entries)
    timed = time_interleaved(entries, repeats, warmup=2, budget_s=budget_s, pause_s=0.0,
                             label=f"[{name} {precision}] ")
  rows = {}
  for v, t in timed.items():
    med = statistics.median(t.seconds)
    cell = dict(s, cell="lstm" if v in LSTM_VARIANTS else s["cell"])
    flops, traffic = model_flops(cell), model_bytes(cell)
    floor = max(flops / peaks[precision]["matmul_flops"],
                traffic / peaks[precision]["bandwidth_bytes"])
    rows[v] = {"seconds": t.seconds, "median_ms": 1e3 * med, "min_ms": 1e3 * min(t.seconds),
               "us_per_time_step": 1e6 * med / s["T"], "model_flops": flops,
               "model_bytes": traffic, "floor_ms": 1e3 * floor, "flops_per_s": flops / med,
               "time_over_floor": med / floor,
               "bound": "launch-bound" if med > LAUNCH_BOUND * floor else "compute/memory"}
  skipped = {v: failed.get(v, "not available here (PyTorch not installed)")
             for v in wanted if v not in entries}
  return {"setting": name, "precision": precision, "shape": s, "variants": rows,
          "skipped": skipped, "torch_check": check}


def compiled(entries: dict) -> tuple[dict, dict]:
  """Runs every entry once; returns the entries that ran and ``{variant: error}`` of the
  others (a kernel that does not lower for this device or width is reported, not fatal)."""
  import jax
  ok, failed = {}, {}
  for v, (fn, state) in entries.items():
    try:
      ok[v] = (fn, jax.block_until_ready(fn(state)))
    except Exception as e:  # pylint: disable=broad-except
      failed[v] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
  return ok, failed


def run(settings, precisions, *, tiny: bool, budget_s: float, repeats: int, variants=None,
        log=print, on_record=None) -> dict:
  """Measures every setting at every precision within about ``budget_s`` seconds of timing
  (compilation not included); returns the record of the run, which ``on_record`` (if given)
  also receives after every setting, so that a run cut short keeps what it measured."""
  import jax
  backend = jax.default_backend()
  device = torch_device() if backend == "gpu" else "cpu"
  precisions = [p for p in precisions if backend == "gpu" or p == "fp32"]
  peaks = {}
  for p in precisions:
    with precision_context(p):
      peaks[p] = measure_peaks(tiny, backend)
  share = budget_s / max(len(settings) * len(precisions), 1)
  torch = _torch()
  record = {"measured": measured_on(), "commit": git_commit(), "backend": backend,
            "device": jax.devices()[0].device_kind,
            "torch": getattr(torch, "__version__", None), "torch_device": device,
            "command": "python " + " ".join(sys.argv), "tiny": tiny, "peaks": peaks,
            "launch_bound_factor": LAUNCH_BOUND, "results": []}
  for name in settings:
    for p in precisions:
      r = measure_setting(name, p, tiny=tiny, budget_s=share, repeats=repeats,
                          backend=backend, device=device, peaks=peaks, variants=variants)
      log(summary_line(r))
      record["results"].append(r)
      if on_record is not None:
        on_record(record)
  return record


def summary_line(r: dict) -> str:
  times = "  ".join(f"{v}={row['median_ms']:.2f} (floor {row['floor_ms']:.3g})"
                    for v, row in r["variants"].items())
  return f"[{r['setting']} {r['precision']}] ms: {times}"


def table(record: dict) -> str:
  """Markdown: one row per setting, precision and variant."""
  lines = ["| setting | precision | variant | ms / iteration (median, min) | µs / time step | "
           "GFLOP/s | floor ms | time / floor | bound |", "|" + "---|" * 9]
  for r in record["results"]:
    for v, row in r["variants"].items():
      lines.append(f"| {label(r)} | {r['precision']} | {v} | {row['median_ms']:.2f} "
                   f"({row['min_ms']:.2f}) | {row['us_per_time_step']:.1f} | "
                   f"{row['flops_per_s'] / 1e9:.3g} | {row['floor_ms']:.3g} | "
                   f"{row['time_over_floor']:.1f} | {row['bound']} |")
  skipped = [f"- {label(r)}, {r['precision']}, {v}: {why}"
             for r in record["results"] for v, why in r["skipped"].items()]
  if skipped:
    lines += ["", "Not measured:", ""] + skipped
  return "\n".join(lines) + "\n"


def kernel_lines(record: dict) -> list[str]:
  """The persistent Pallas kernel against the XLA loop of the same tanh RNN, per setting."""
  lines = []
  for r in record["results"]:
    v = r["variants"]
    if "persistent" in v and "lvf_jax_tanh" in v:
      ratio = v["lvf_jax_tanh"]["median_ms"] / v["persistent"]["median_ms"]
      lines.append(f"| {label(r)} | {r['precision']} | "
                   f"{v['lvf_jax_tanh']['us_per_time_step']:.1f} | "
                   f"{v['persistent']['us_per_time_step']:.1f} | {ratio:.2f} |")
  if not lines:
    return ["No setting measured both the persistent kernel and the XLA loop."]
  return ["| setting | precision | XLA loop µs / time step | persistent kernel µs / time "
          "step | XLA / persistent |", "|---|---|---|---|---|"] + lines


def persistent_faster(record: dict) -> dict[str, dict[str, list[int]]]:
  """``{device kind: {precision: padded widths}}`` at which ``rnn_scan`` is to select the
  persistent kernel: at each precision, a padded width
  (:func:`lvf_jax.recurrences.persistent.padded_side`) is listed when at every setting of
  that width both the kernel and the XLA loop ran and the kernel was faster in every one of
  at least ``MIN_PAIRED`` interleaved repetitions. A CPU or tiny record lists none."""
  if record["backend"] != "gpu" or record["tiny"]:
    return {}
  verdicts = {}
  for r in record["results"]:
    if r["shape"]["cell"] == "lstm":
      continue
    v = r["variants"]
    pairs = (list(zip(v["persistent"]["seconds"], v["lvf_jax_tanh"]["seconds"]))
             if "persistent" in v and "lvf_jax_tanh" in v else [])
    faster = len(pairs) >= MIN_PAIRED and all(a < b for a, b in pairs)
    key = (r["precision"], persistent.padded_side(r["shape"]["n"]))
    verdicts[key] = verdicts.get(key, True) and faster
  chosen = {}
  for (precision, width), ok in sorted(verdicts.items()):
    if ok:
      chosen.setdefault(precision, []).append(width)
  return {record["device"]: chosen} if chosen else {}


def selection_lines(record: dict) -> list[str]:
  """The sentence on what ``rnn_scan`` selects from this record."""
  faster = persistent_faster(record)
  if not faster:
    return ["From this record `rnn_scan` selects the persistent kernel nowhere: it was not "
            f"faster in every one of at least {MIN_PAIRED} paired repetitions at any padded "
            "width and precision, or the record is not a GPU's."]
  return [f"From this record `rnn_scan` selects the persistent kernel on {kind} at "
          + "; ".join(f"{p} at padded widths {', '.join(map(str, w))}"
                      for p, w in by_precision.items())
          + " (faster in every paired repetition of every setting there; `fp32` is JAX's "
          "matmul precision `'highest'`, `tf32` its GPU default), and at no other width or "
          "precision." for kind, by_precision in faster.items()]


def merge(records: list[dict]) -> dict:
  """One record from several runs of this benchmark on one device (each a window too short
  for every setting): the first's fields, every run's results in order, and ``runs``, each
  run's command, date, commit and peaks (each row's floor uses its own run's peaks)."""
  kinds = {(r["backend"], r["device"], r["tiny"]) for r in records}
  if len(kinds) != 1:
    raise ValueError(f"gpu.merge: the records must share backend, device and tiny; got {kinds}")
  merged = dict(records[0], results=[x for r in records for x in r["results"]])
  merged["runs"] = [{k: r[k] for k in ("command", "measured", "commit", "peaks")}
                    for r in records]
  return merged


def _median(record: dict, setting: str, precision: str, variant: str):
  for r in record["results"]:
    if r["setting"] == setting and r["precision"] == precision:
      row = r["variants"].get(variant)
      return row and row["median_ms"]
  return None


READING = (  # (numerator, denominator, what the ratio says)
    ("torch_loop", "lvf_jax", "the authors' PyTorch loop over lvf_jax's scan"),
    ("jax_scan", "lvf_jax", "a plain `lax.scan` with autodiff over lvf_jax's scan"),
    ("lvf_jax_tanh", "persistent", "the XLA loop over the persistent kernel"),
    ("cudnn_lstm", "lvf_jax_lstm", "cuDNN's LSTM over lvf_jax's `lstm_scan`"),
)


def reading_lines(record: dict) -> list[str]:
  """Ratios of the record's medians (above 1: the second is faster), per setting and
  precision, and each variant's fp32 time over its tf32 time."""
  lines = ["| ratio | setting | fp32 | tf32 |", "|---|---|---|---|"]
  settings = list(dict.fromkeys(r["setting"] for r in record["results"]))
  for a, b, what in READING:
    for name in settings:
      cells = []
      for p in ("fp32", "tf32"):
        x, y = _median(record, name, p, a), _median(record, name, p, b)
        cells.append(f"{x / y:.2f}" if x and y else "-")
      if cells != ["-", "-"]:
        lines.append(f"| {what} | {name} | {cells[0]} | {cells[1]} |")
  lines += ["", "| variant | setting | fp32 time over tf32 time |", "|---|---|---|"]
  variants = list(dict.fromkeys(v for r in record["results"] for v in r["variants"]))
  for v in variants:
    for name in settings:
      x, y = _median(record, name, "fp32", v), _median(record, name, "tf32", v)
      if x and y:
        lines.append(f"| {v} | {name} | {x / y:.2f} |")
  return lines


def check_lines(record: dict) -> list[str]:
  """The PyTorch peer's agreement with lvf_jax, per setting."""
  lines = []
  for r in record["results"]:
    c = r.get("torch_check")
    if not c:
      continue
    where = f"{label(r)}, {r['precision']}"
    if not c["checked"]:
      lines.append(f"- {where}: not checked ({c['why']})")
      continue
    if "error" in c:
      lines.append(f"- {where}: **the check failed to run** ({c['error']})")
      continue
    worst = max(c["relative_differences"].items(), key=lambda kv: kv[1])
    lines.append(f"- {where}: {'agrees' if c['passed'] else '**disagrees**'} (largest "
                 f"relative difference {worst[1]:.1e} in {worst[0]}, tolerance "
                 f"{c['tolerance']:.1e})")
  return lines


def barrier_lines(expm_record: Optional[dict]) -> list[str]:
  """``benchmarks/expm.py --ablate-stored``'s record: the gradient of ``expm_taylor`` with
  ``geometry._util.stored`` against the identity, and the orthogonality the exponential
  reached at the record's matmul precision."""
  if not expm_record:
    return ["No record of `benchmarks/expm.py --ablate-stored` on a GPU."]
  rows = {(r["n"], r["generator"], r["barrier"]): r for r in expm_record["rows"]}
  lines = [f"    {expm_record['command']}", "", f"{expm_record['measured']}; device "
           f"{expm_record['device']}.", "",
           "| n | generator | ms with `stored` | ms with the identity | ratio | "
           "max abs(Q^T Q - I) |", "|---|---|---|---|---|---|"]
  for (n, gen, barrier), r in rows.items():
    plain = rows.get((n, gen, "identity"))
    if barrier == "stored" and plain:
      lines.append(f"| {n} | {gen} | {r['ms']:.3f} | {plain['ms']:.3f} | "
                   f"{r['ms'] / plain['ms']:.2f} | {r['orth_err']:.1e} |")
  return lines


def provenance_lines(record: dict) -> list[str]:
  """Every run's command, date, commit and measured peaks."""
  lines = []
  for run_ in record.get("runs") or [record]:
    peaks = "; ".join(f"{p}: {v['matmul_flops'] / 1e12:.1f} TFLOP/s ({v['matmul_size']}^3 "
                      f"product), {v['bandwidth_bytes'] / 1e9:.0f} GB/s"
                      for p, v in run_["peaks"].items())
    lines += [f"    {run_['command']}", "",
              f"{run_['measured']}; commit {run_['commit']}; measured peaks: {peaks}.", ""]
  return lines


def page(record: dict, expm_record: Optional[dict] = None) -> str:
  """``docs/GPU.md``'s measured part from a record of :func:`run` (or of :func:`merge`)
  and, where given, of ``benchmarks/expm.py --ablate-stored``."""
  parts = [
      "# GPU: lvf_jax against PyTorch and cuDNN", "",
      "Generated by `python -m experiments.gpu_kit collect` from `docs/results/gpu.json`, "
      f"the record of device {record['device']}, torch {record['torch']} on "
      f"{record['torch_device']}"
      + (" (**Tiny settings: a dry run, not a measurement**)" if record["tiny"] else "")
      + ", from:", "", *provenance_lines(record),
      "Each row is one training iteration (forward, backward, RMSprop), the median of "
      "interleaved repetitions ([the benchmark](../benchmarks/gpu.py) defines the variants). "
      "The floor is the larger of the model FLOPs over the measured product rate and the "
      "minimum memory traffic over the measured bandwidth; a time above "
      f"{record['launch_bound_factor']:g} times its floor is labelled launch-bound.", "",
      table(record), "## Ratios", "",
      "Computed from the medians above; above 1 the second named is faster.", "",
      *reading_lines(record), "", "## The persistent kernel", "",
      *kernel_lines(record), "", *selection_lines(record), "",
      "## The PyTorch peer computes lvf_jax's loss and gradients",
      "", *(check_lines(record) or ["No setting ran the PyTorch peer."]), "",
      "## The stored barrier", "",
      "The gradient of `geometry.expm_taylor` (the expRNN's `prepare`, forward and backward) "
      "with `geometry._util.stored` in its backward pass and with the identity in its place "
      "(a ratio above 1: the barrier costs time), at JAX's default matmul precision; "
      "`lvf_jax` keeps the barrier on the CPU only.", "", *barrier_lines(expm_record), ""]
  return "\n".join(parts)


def _write(path: str, text: str) -> None:
  """Writes ``text`` to ``path`` through a temporary file (a reader never sees half)."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path + ".tmp", "w") as f:
    f.write(text)
  os.replace(path + ".tmp", path)


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
  p.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
  p.add_argument("--variants", nargs="+", default=None,
                 choices=sorted(set(EXPRNN_VARIANTS + LSTM_VARIANTS)))
  p.add_argument("--budget", type=float, default=330.0,
                 help="seconds of timing in all (compilation not counted)")
  p.add_argument("--repeats", type=int, default=50)
  p.add_argument("--tiny", action="store_true", help="a few steps and units per setting")
  p.add_argument("--json", default=None, help="write the record (JSON) here")
  p.add_argument("--out", default=None, help="write the markdown table here")
  args = p.parse_args(argv)
  def save(record):
    if args.json:
      _write(args.json, json.dumps(record, indent=1) + "\n")

  record = run(args.settings, args.precisions, tiny=args.tiny, budget_s=args.budget,
               repeats=args.repeats, variants=args.variants, on_record=save)
  md = table(record)
  print(md)
  save(record)
  if args.out:
    _write(args.out, md)
  failed = [r["setting"] for r in record["results"]
            if r["torch_check"] and r["torch_check"].get("checked")
            and not r["torch_check"]["passed"]]
  if failed:
    print(f"gpu.py: the PyTorch peer disagrees with lvf_jax in {failed}", file=sys.stderr)
  return 1 if failed else 0


if __name__ == "__main__":
  os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/speed.py
  sys.exit(main())
