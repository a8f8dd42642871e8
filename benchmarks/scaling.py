"""Time and peak memory of a training iteration against the sequence length.

``python benchmarks/scaling.py --cell exprnn --n 128 --batch 16 --T 100 1000 10000 --out t.md``

Each setting runs in its own process (so its peak resident memory is its own): the fused
``Recurrent`` layer with a last-state loss (``sum(h_T^2)``: the adding task's shape of loss)
or an every-step loss (``--loss all``: the copy task's), one jitted forward + backward
iteration, timed after a warm-up call. Reports ms per iteration, the process's peak RSS (MiB)
and, where a GPU is the default device, its peak memory; then fits ``time = a + b T`` by least
squares over the settings of one ``(n, batch, checkpoint)`` and prints the slope per step and
the constant. ``--checkpoint`` rematerialises every step (``Recurrent(checkpoint=True)``);
``--segment auto 1000`` adds segment-wise rematerialisation (``Recurrent(segment_length=k)``,
the carry kept every ``k`` steps), with the last-state loss read from the final carry
without forming the outputs (``return_sequences=False``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np


def measure(cell: str, n: int, T: int, batch: int, checkpoint: bool, loss: str,
            repeats: int, segment=None) -> dict:
  """One setting in this process: ms per iteration (median) and peak memory."""
  import resource  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top

  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top

  from lvf_jax import cells, layers  # pylint: disable=g-import-not-at-top
  layer = layers.Recurrent(cells.make_cell(cell, n), fused=True, checkpoint=checkpoint,
                           return_carry=(loss == "last"), segment_length=segment,
                           return_sequences=not (loss == "last" and segment))
  x = jax.random.normal(jax.random.key(0), (batch, T, 2), jnp.float32)
  params = jax.jit(layer.init)(jax.random.key(1), x[:, :2])

  def objective(p, x):
    out = layer.apply(p, x)
    if loss == "last":
      carry, _ = out
      h = carry[-1] if isinstance(carry, tuple) else carry
      return jnp.sum(h ** 2)
    return jnp.sum(out ** 2)

  step = jax.jit(jax.value_and_grad(objective))
  jax.block_until_ready(step(params, x))  # compile and warm up
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(step(params, x))
    times.append(time.perf_counter() - t0)
  out = {"cell": cell, "n": n, "T": T, "batch": batch, "checkpoint": checkpoint, "loss": loss,
         "segment": segment,
         "ms": 1e3 * float(np.median(times)),
         "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
  dev = jax.devices()[0]
  if dev.platform != "cpu":
    stats = dev.memory_stats() or {}
    out["peak_device_mib"] = stats.get("peak_bytes_in_use", 0) / 2 ** 20
  out["device"] = dev.device_kind
  return out


def fit_linear(ts, ms) -> tuple[float, float]:
  """``(a, b)`` of ``ms = a + b T`` by least squares."""
  b, a = np.polyfit(np.asarray(ts, float), np.asarray(ms, float), 1)
  return float(a), float(b)


def _remat(r: dict) -> str:
  """The rematerialisation of a measured setting in the table and the fits."""
  return f"segment {r['segment']}" if r.get("segment") else str(r["checkpoint"])


def _read_rows(path: str) -> list[dict]:
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]


def _label(r: dict) -> str:
  remat = f"segment_length={r['segment']}" if r.get("segment") else (
      "checkpoint=True" if r["checkpoint"] else "no remat")
  return f"n={r['n']} B={r['batch']} {r['loss']} loss, {remat}"


def plot(rows: list[dict], path: str) -> None:
  """Time per iteration and peak memory against T (log-log), one line per setting."""
  from matplotlib.figure import Figure  # pylint: disable=g-import-not-at-top
  fig = Figure(figsize=(10, 4), layout="constrained")
  ax_t, ax_m = fig.subplots(1, 2)
  groups: dict = {}
  for r in rows:
    if "ms" in r:
      groups.setdefault(_label(r), []).append(r)
  for label, rs in groups.items():
    rs = sorted(rs, key=lambda r: r["T"])
    ts = [r["T"] for r in rs]
    ax_t.plot(ts, [r["ms"] / 1e3 for r in rs], "o-", label=label)
    key = "peak_device_mib" if "peak_device_mib" in rs[0] else "peak_rss_mib"
    ax_m.plot(ts, [r[key] for r in rs], "o-", label=label)
  for ax, title in ((ax_t, "seconds per training iteration"),
                    (ax_m, "peak memory (MiB; RSS on CPU)")):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("sequence length T")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
  ax_t.legend(fontsize=7)
  fig.savefig(path, dpi=120)


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--cell", default="exprnn")
  parser.add_argument("--n", type=int, nargs="+", default=[128])
  parser.add_argument("--batch", type=int, nargs="+", default=[16])
  parser.add_argument("--T", type=int, nargs="*", default=[100, 1000, 10000],
                      help="sequence lengths (none with --plot: only plot --json)")
  parser.add_argument("--checkpoint", action="store_true", help="also with checkpoint=True")
  parser.add_argument("--segment", nargs="+", default=[],
                      help="also with segment_length (e.g. auto 1000)")
  parser.add_argument("--no-plain", action="store_true",
                      help="skip the setting without any rematerialisation")
  parser.add_argument("--loss", choices=("last", "all"), default="last")
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--out", help="markdown table")
  parser.add_argument("--json", help="append the measured settings (JSON lines) to this file")
  parser.add_argument("--plot", help="PNG of time and memory against T of the settings in "
                                     "--json (after this run's, if any)")
  parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: one setting, JSON out
  return parser


def settings(args) -> list[dict]:
  """Every setting the arguments ask for: each size, batch, rematerialisation and length."""
  out = []
  for n in args.n:
    for batch in args.batch:
      variants = [] if args.no_plain else [(False, None)]
      variants += [(True, None)] if args.checkpoint else []
      variants += [(False, int(k) if k.isdigit() else k) for k in args.segment]
      out += [dict(cell=args.cell, n=n, T=T, batch=batch, checkpoint=checkpoint,
                   loss=args.loss, repeats=args.repeats, segment=segment)
              for checkpoint, segment in variants for T in args.T]
  return out


def measure_in_process(setting: dict) -> dict:
  """One setting measured in a fresh process (its peak RSS is its own), or its error."""
  r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", json.dumps(setting)],
                     capture_output=True, text=True)
  if r.returncode:
    return {**setting, "error": r.stderr.strip().splitlines()[-1][:200]}
  return json.loads(r.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
  """The Markdown table of ``rows`` and the linear fit of time in ``T`` per setting."""
  lines = ["| n | batch | remat | T | ms / iteration | peak RSS MiB |", "|---|---|---|---|---|---|"]
  for r in rows:
    lines.append(f"| {r['n']} | {r['batch']} | {_remat(r)} | {r['T']} | "
                 + (f"{r['ms']:.1f} | {r['peak_rss_mib']:.0f} |" if "ms" in r else
                    f"failed: {r['error']} | |"))
  fits = {}
  for r in rows:
    if "ms" in r:
      fits.setdefault((r["n"], r["batch"], _remat(r)), []).append((r["T"], r["ms"]))
  lines.append("")
  for key, pts in fits.items():
    if len(pts) >= 2:
      a, b = fit_linear(*zip(*pts))
      lines.append(f"n={key[0]} batch={key[1]} remat={key[2]}: ms = {a:.2f} + {b * 1e3:.3f} "
                   f"us x T")
  return "\n".join(lines)


def main(argv=None) -> None:
  args = _parser().parse_args(argv)
  if args.one:
    print(json.dumps(measure(**json.loads(args.one))))
    return
  if args.plot and not args.T:  # plot what --json already holds
    plot(_read_rows(args.json), args.plot)
    return
  rows = []
  for setting in settings(args):
    rows.append(measure_in_process(setting))
    print(json.dumps(rows[-1]), flush=True)
  text = table(rows)
  print(text)
  if args.out:
    with open(args.out, "w") as f:
      f.write(text + "\n")
  if args.json:
    with open(args.json, "a") as f:
      f.writelines(json.dumps(r) + "\n" for r in rows)
  if args.plot:
    plot(_read_rows(args.json) if args.json else rows, args.plot)


if __name__ == "__main__":
  main()
