"""The GPU kit: what a GPU run needs, prepared here, run there within a deadline, and
collected back into records and pages.

GPU time comes in short windows on a machine that reaches no package registry and no data,
so everything is prepared beforehand into the ignored folder ``.gpu_kit`` (carried with the
working tree)::

  python -m experiments.gpu_kit prepare              # here: pinned wheels and the data
  python -m experiments.gpu_kit run --deadline 540 --out $OUT     # on the GPU machine
  python -m experiments.gpu_kit collect DIR          # here: DIR holds what came back
  python -m experiments.gpu_kit run --dry-run --deadline 120 --out /tmp/kit   # CPU check

``run`` installs the wheels whose module the image lacks (``pip --no-index`` into a private
folder), runs ``benchmarks/gpu.py`` first, then the reproduction rows of :data:`PRIORITY` in
``--lanes`` parallel processes, in order, each with the time left as its training time
limit. Every ``--sync-every`` seconds it packs the records (no checkpoints) into
``OUT/kit.tar.gz`` beside ``OUT/gpu.json`` and ``OUT/kit.log``; before the deadline it
stops the rows that are still running (SIGTERM: each writes its partial record) and packs a
last time.
``--dry-run`` runs the same sequence on the CPU with ``--tiny`` benchmark settings and
``--smoke`` rows. ``collect`` merges the returned runs into ``runs/reproduce``, rewrites the
tables' pages from the records and writes ``docs/results/gpu.json``, ``docs/GPU.md`` and
the package's record of where ``rnn_scan`` selects the persistent kernel
(``lvf_jax/recurrences/persistent_faster.json``).

The module imports only the standard library at the top: on the GPU machine it runs before
its wheels are installed.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from typing import Optional


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIT = os.path.join(ROOT, ".gpu_kit")

# Packages the GPU machine's image may lack (it holds jax with CUDA, flax, optax, orbax,
# matplotlib, torch), pinned, each with the module that shows the image has it: lvf_jax's
# configs and its TFDS data layer with the requirements of tensorflow-datasets beyond those.
# ``run`` installs the ones whose module the image cannot import, so none shadows a package
# the image has.
WHEELS = {
    "ml-collections": ("1.1.0", "ml_collections"),
    "tensorflow-datasets": ("4.9.10", "tensorflow_datasets"),
    "array-record": ("0.8.6", "array_record"), "dm-tree": ("0.1.10", "tree"),
    "immutabledict": ("4.3.1", "immutabledict"), "promise": ("2.3", "promise"),
    "simple-parsing": ("0.1.9", "simple_parsing"),
    "docstring-parser": ("0.18.0", "docstring_parser"),
    "tensorflow-metadata": ("1.21.0", "tensorflow_metadata"),
    "googleapis-common-protos": ("1.76.0", "google.api"),
    "termcolor": ("3.3.0", "termcolor"), "toml": ("0.10.2", "toml"),
    "six": ("1.17.0", "six"), "wrapt": ("2.5.2", "wrapt"), "tqdm": ("4.70.1", "tqdm"),
}
SOURCE_ONLY = ("promise",)  # published as a source archive: built into a wheel here
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")
PYTHON = "3.12"  # the GPU image's python3
# The folders of LVF_JAX_DATA_DIR the rows of PRIORITY read, with the files they need.
DATA = {"ptb": ("ptb.char.*", "README.md"), "mnist": ("*.gz", "README.md")}


@dataclasses.dataclass(frozen=True)
class Job:
  """One reproduction run: table, row, seed and optimiser steps (None: the row's budget)."""

  table: str
  row: str
  steps: Optional[int] = None
  seed: int = 0


# In order: the lvfRNN's full PTB-char budget and its tau / field-rate sweep, then the
# baselines of the same table, then the GPU rows of the other tables.
PRIORITY = (
    Job("lvf-t1", "ptb-lvf"), Job("lvf-t1", "ptb-lvf-separate"),
    Job("lvf-t1", "ptb-lvf-tau2.5"), Job("lvf-t1", "ptb-lvf-tau10"),
    Job("lvf-t1", "ptb-lvf-vf6e-6"), Job("lvf-t1", "ptb-lvf-vf2.4e-5"), Job("lvf-t1", "ptb-rnn"),
    Job("lvf-t1", "ptb-exprnn"), Job("antisymmetric-t1", "mnist-fcurnn-n512"),
    Job("antisymmetric-t1", "mnist-kru"),
)


# ---------------------------------------------------------------------- prepare


def wheel_commands(dest: str) -> list[list[str]]:
  """The pip commands that fetch :data:`WHEELS` for the GPU image's Python into ``dest``."""
  binary = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--python-version", PYTHON, "--implementation", "cp", "-d", dest]
  for platform in PLATFORMS:
    binary += ["--platform", platform]
  cmds = []
  for name, (version, _) in WHEELS.items():
    if name in SOURCE_ONLY:
      cmds.append([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dest,
                   f"{name}=={version}"])
    else:
      cmds.append(binary + [f"{name}=={version}"])
  return cmds


def copy_data(source: str, dest: str) -> list[str]:
  """Copies the files of :data:`DATA` from ``source`` (``LVF_JAX_DATA_DIR``) to ``dest``;
  returns the copied paths relative to ``dest``."""
  copied = []
  for folder, patterns in DATA.items():
    for pattern in patterns:
      files = sorted(glob.glob(os.path.join(source, folder, pattern)))
      if not files:
        raise FileNotFoundError(f"gpu_kit prepare: no {folder}/{pattern} under {source!r} "
                                "(LVF_JAX_DATA_DIR)")
      os.makedirs(os.path.join(dest, folder), exist_ok=True)
      for f in files:
        shutil.copyfile(f, os.path.join(dest, folder, os.path.basename(f)))
        copied.append(os.path.join(folder, os.path.basename(f)))
  return copied


def prepare(kit: str, data_dir: str, fetch: bool = True) -> None:
  """Fills ``kit`` with the wheels (``fetch``) and the data."""
  wheels = os.path.join(kit, "wheels")
  os.makedirs(wheels, exist_ok=True)
  if fetch:
    for cmd in wheel_commands(wheels):
      subprocess.run(cmd, check=True)
  copied = copy_data(data_dir, os.path.join(kit, "data"))
  with open(os.path.join(kit, "commit.txt"), "w") as f:
    f.write(_runner().git_commit() + "\n")
  print(f"gpu_kit: {len(os.listdir(wheels))} wheels, {len(copied)} data files in {kit}; "
        f"carry {os.path.relpath(kit, ROOT)!r} to the GPU machine")


# -------------------------------------------------------------------------- run


class Clock:
  """Seconds left before a deadline."""

  def __init__(self, seconds: float):
    self.end = time.monotonic() + seconds

  def left(self) -> float:
    return self.end - time.monotonic()


def install_wheels(kit: str, site: str, log) -> Optional[str]:
  """Installs into ``site`` (no index, no dependencies) the kit's wheels whose module this
  interpreter cannot import; returns ``site``, or None when none is needed."""
  wheels = [w for w in sorted(glob.glob(os.path.join(kit, "wheels", "*.whl")))
            if not _importable(WHEELS.get(_distribution(w), ("", ""))[1])]
  if not wheels:
    return None
  cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
         "--no-compile", "--target", site] + wheels
  log(f"install: {len(wheels)} wheels into {site}: "
      + ", ".join(_distribution(w) for w in wheels))
  subprocess.run(cmd, check=True)
  return site


def _distribution(wheel: str) -> str:
  """The :data:`WHEELS` name of a wheel file (``ml_collections-1.1.0-...`` is
  ``ml-collections``)."""
  stem = os.path.basename(wheel).split("-")[0].lower()
  return next((name for name in WHEELS if name.replace("-", "_") == stem), stem)


def _importable(module: str) -> bool:
  """Whether ``module`` imports here (without importing it)."""
  try:
    return bool(module) and importlib.util.find_spec(module) is not None
  except (ImportError, ValueError):
    return False


def job_command(job: Job, work: str, time_limit: float, dry_run: bool) -> list[str]:
  """The reproduction command of ``job`` (its records under ``work/runs``)."""
  cmd = [sys.executable, "-m", "experiments.reproduce", job.table, "--rows", job.row,
         "--seed", str(job.seed), "--workdir", os.path.join(work, "runs"),
         "--out", os.path.join(work, "pages"), "--include-blocked",
         "--time-limit", str(max(int(time_limit), 1))]
  if dry_run:
    return cmd + ["--smoke"]
  return cmd + (["--steps", str(job.steps)] if job.steps else [])


DRY_RUN_SETTINGS = ("copy_b10", "lstm_n1024")  # one expRNN and the LSTM setting


def benchmark_command(work: str, budget: float, dry_run: bool) -> list[str]:
  """``benchmarks/gpu.py`` writing ``work/gpu.json``; tiny and two settings in a dry run."""
  cmd = [sys.executable, os.path.join(ROOT, "benchmarks", "gpu.py"), "--budget", str(budget),
         "--json", os.path.join(work, "gpu.json"), "--out", os.path.join(work, "gpu.md")]
  if dry_run:
    return cmd + ["--tiny", "--repeats", "3", "--settings", *DRY_RUN_SETTINGS]
  return cmd


def pack(work: str, out: str) -> None:
  """Writes ``out/kit.tar.gz`` (every file of ``work`` but checkpoints and weights) and
  copies ``gpu.json`` and ``kit.log`` beside it; each file replaced atomically."""
  buf = io.BytesIO()
  with tarfile.open(fileobj=buf, mode="w:gz") as tar:
    for path in sorted(glob.glob(os.path.join(work, "**", "*"), recursive=True)):
      rel = os.path.relpath(path, work)
      if os.path.isfile(path) and not _heavy(rel):
        try:
          tar.add(path, arcname=rel)
        except OSError:  # a file being replaced while packed: the next pass takes it
          pass
  _write_atomic(os.path.join(out, "kit.tar.gz"), buf.getvalue())
  for name in ("gpu.json", "kit.log"):
    src = os.path.join(work, name)
    if os.path.exists(src):
      with open(src, "rb") as f:
        _write_atomic(os.path.join(out, name), f.read())


def _heavy(rel: str) -> bool:
  """Left out of the pack: checkpoints, weights and the installed wheels (``site``)."""
  parts = rel.split(os.sep)
  return "checkpoints" in parts or rel.endswith(".msgpack") or parts[0] == "site"


def _write_atomic(path: str, data: bytes) -> None:
  tmp = path + ".tmp"
  with open(tmp, "wb") as f:
    f.write(data)
  os.replace(tmp, path)


class Syncer(threading.Thread):
  """Packs ``work`` into ``out`` every ``every`` seconds until stopped."""

  def __init__(self, work: str, out: str, every: float):
    super().__init__(daemon=True)
    self.work, self.out, self.every = work, out, every
    self.stop = threading.Event()

  def run(self):
    while not self.stop.wait(self.every):
      pack(self.work, self.out)


def run_lanes(jobs, lanes: int, clock: Clock, work: str, env: dict, *, dry_run: bool,
              margin: float, min_job_s: float, log) -> list[dict]:
  """Runs ``jobs`` in order in up to ``lanes`` processes; a job starts only with more than
  ``min_job_s`` seconds left; at ``margin`` seconds before the deadline every running job
  gets SIGTERM. Returns ``[{job, rc, seconds}]``."""
  pending, running, done = list(jobs), {}, []
  while pending or running:
    while pending and len(running) < lanes and clock.left() - margin > min_job_s:
      job = pending.pop(0)
      cmd = job_command(job, work, clock.left() - margin, dry_run)
      log(f"start {job.table}/{job.row} seed {job.seed}: {' '.join(cmd[1:])}")
      logf = open(os.path.join(work, f"{job.table}-{job.row}-{job.seed}.log"), "w")
      proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=logf, stderr=subprocess.STDOUT)
      running[proc] = (job, time.monotonic(), logf)
    if not running:
      break
    for proc in [p for p in running if p.poll() is not None]:
      job, t0, logf = running.pop(proc)
      logf.close()
      done.append({"job": dataclasses.asdict(job), "rc": proc.returncode,
                   "seconds": round(time.monotonic() - t0, 1)})
      log(f"end {job.table}/{job.row}: rc {proc.returncode}")
    if clock.left() < margin:
      for proc in running:
        proc.send_signal(signal.SIGTERM)
      log(f"deadline: SIGTERM to {len(running)} running jobs")
      grace_end = time.monotonic() + margin / 2  # one grace for all, not one each
      for proc, (job, t0, logf) in list(running.items()):
        try:
          proc.wait(timeout=max(grace_end - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:  # it did not stop at its step: ended here
          proc.kill()
          proc.wait()
        logf.close()
        done.append({"job": dataclasses.asdict(job), "rc": proc.returncode,
                     "seconds": round(time.monotonic() - t0, 1)})
      running.clear()
      break
    time.sleep(0.5)
  return done


def run(out: str, deadline: float, *, lanes: int, benchmark_budget: float, dry_run: bool,
        sync_every: float, margin: float, kit: str = KIT, jobs=PRIORITY) -> dict:
  """The kit's run (module docstring); ``benchmark_budget`` 0 skips the benchmark (a later
  call that runs rows only). Returns its summary, also written to ``kit.json``."""
  clock = Clock(deadline)
  os.makedirs(out, exist_ok=True)
  work = tempfile.mkdtemp(prefix="gpu_kit_")
  log_path = os.path.join(work, "kit.log")

  def log(msg):
    line = f"{time.strftime('%H:%M:%S')} {msg}"
    print(line, flush=True)
    with open(log_path, "a") as f:
      f.write(line + "\n")

  env = dict(os.environ, PYTHONUNBUFFERED="1", XLA_PYTHON_CLIENT_PREALLOCATE="false")
  site = None if dry_run else install_wheels(kit, os.path.join(work, "site"), log)
  env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, site, env.get("PYTHONPATH")) if p)
  if os.path.isdir(os.path.join(kit, "data")) and not dry_run:
    env["LVF_JAX_DATA_DIR"] = os.path.join(kit, "data")
  if os.path.exists(os.path.join(kit, "commit.txt")):
    with open(os.path.join(kit, "commit.txt")) as f:
      env["LVF_JAX_COMMIT"] = f.read().strip()
  syncer = Syncer(work, out, sync_every)
  syncer.start()
  summary = {"dry_run": dry_run, "deadline_s": deadline, "lanes": lanes}
  summary["benchmark_rc"] = 0 if benchmark_budget <= 0 else _benchmark(
      work, env, clock, min(benchmark_budget, max(clock.left() - 2 * margin, 1)), margin,
      dry_run, log)
  summary["jobs"] = run_lanes(jobs, lanes, clock, work, env, dry_run=dry_run, margin=margin,
                              min_job_s=0 if dry_run else 60, log=log)
  with open(os.path.join(work, "kit.json"), "w") as f:
    json.dump(summary, f, indent=1)
  syncer.stop.set()
  syncer.join()
  pack(work, out)
  log(f"packed into {out} with {clock.left():.0f} s left")
  shutil.rmtree(work, ignore_errors=True)  # everything kept is in out
  return summary


def _benchmark(work, env, clock: Clock, budget: float, margin: float, dry_run: bool, log):
  """Runs ``benchmarks/gpu.py`` until it ends or the deadline nears; returns its exit status
  (``'timeout'`` when stopped: the settings measured so far are in ``gpu.json``)."""
  bench = benchmark_command(work, budget, dry_run)
  log("benchmark: " + " ".join(bench[1:]))
  with open(os.path.join(work, "gpu.log"), "w") as f:
    try:  # compilation is not in the benchmark's budget: the deadline bounds it here
      rc = subprocess.run(bench, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT,
                          timeout=max(clock.left() - margin, 1)).returncode
    except subprocess.TimeoutExpired:
      rc = "timeout"
  log(f"benchmark: rc {rc}")
  return rc


# ---------------------------------------------------------------------- collect


def unpack(src: str, dest: str) -> str:
  """Extracts ``src/kit.tar.gz`` into ``dest``; returns ``dest``."""
  with tarfile.open(os.path.join(src, "kit.tar.gz")) as tar:
    tar.extractall(dest, filter="data")
  return dest


def merge_runs(unpacked: str, runs: str) -> list[tuple[str, str]]:
  """Copies every returned run (``runs/<table>/<row>/seed<k>`` with a ``result.json``) into
  ``runs`` unless a run there already counts as many steps; returns the ``(table, row)``
  pairs merged."""
  merged = []
  for result in sorted(glob.glob(os.path.join(unpacked, "runs", "*", "*", "seed*",
                                              "result.json"))):
    run_dir = os.path.dirname(result)
    rel = os.path.relpath(run_dir, os.path.join(unpacked, "runs"))
    target = os.path.join(runs, rel)
    if _steps(target) >= _steps(run_dir):
      continue
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(run_dir, target)
    table, row = rel.split(os.sep)[:2]
    merged.append((table, row))
  return merged


def _steps(run_dir: str) -> int:
  try:
    with open(os.path.join(run_dir, "result.json")) as f:
      return int(json.load(f).get("steps") or 0)
  except (OSError, ValueError):
    return -1


def collect(src: str, *, runs: str, pages: str, docs: str,
            selection: Optional[str] = None, benchmarks: tuple[str, ...] = (),
            expm: Optional[str] = None, log=print) -> dict:
  """Turns what a run returned (``src``) into records and pages (module docstring);
  ``benchmarks`` are further records of ``benchmarks/gpu.py`` on the same device (a later
  window's settings), merged after ``src/gpu.json``; ``expm`` a record of
  ``benchmarks/expm.py --ablate-stored`` there."""
  with tempfile.TemporaryDirectory() as tmp:
    merged = merge_runs(unpack(src, tmp), runs)
  tables = sorted({t for t, _ in merged})
  if tables:
    cmd = [sys.executable, "-m", "experiments.reproduce", *tables, "--report-only",
           "--workdir", runs, "--out", pages]
    subprocess.run(cmd, cwd=ROOT, check=True)
  records = [p for p in (os.path.join(src, "gpu.json"), *benchmarks) if os.path.exists(p)]
  if records:
    write_gpu_page(records, docs, selection, expm)
  log(f"gpu_kit collect: {len(merged)} runs merged ({', '.join(tables) or 'none'})"
      + (f"; benchmark page written from {len(records)} records" if records else ""))
  return {"merged": merged, "tables": tables, "benchmark": bool(records)}


STATIC_FROM = "## What it measures"
"""``docs/GPU.md`` from this heading on is written by hand and kept when the page is
rewritten."""


def write_gpu_page(bench_jsons: list[str], docs: str, selection: Optional[str] = None,
                   expm_json: Optional[str] = None) -> str:
  """Merges the benchmark records ``bench_jsons`` (``benchmarks/gpu.py``'s ``merge``) into
  ``docs/results/gpu.json``, copies ``expm_json`` to ``docs/results/expm_gpu.json``, writes
  ``docs/GPU.md`` from them (its hand-written part from :data:`STATIC_FROM` kept) and, at
  ``selection`` (default: the package's
  :data:`lvf_jax.recurrences.persistent.MEASURED_FASTER`), where ``rnn_scan`` selects the
  persistent kernel (``benchmarks/gpu.py``'s ``persistent_faster``); returns the page's
  path."""
  bench = _benchmark_module()
  records = [_machine_free_record(path) for path in bench_jsons]
  record = records[0] if len(records) == 1 else bench.merge(records)
  write_selection(record, selection)
  os.makedirs(os.path.join(docs, "results"), exist_ok=True)
  with open(os.path.join(docs, "results", "gpu.json"), "w") as f:
    json.dump(record, f, indent=1)
  expm_record = None
  if expm_json:
    expm_record = _machine_free_record(expm_json)
    with open(os.path.join(docs, "results", "expm_gpu.json"), "w") as f:
      json.dump(expm_record, f, indent=1)
  path = os.path.join(docs, "GPU.md")
  static = ""
  if os.path.exists(path):
    with open(path) as f:
      text = f.read()
    static = text[text.index(STATIC_FROM):] if STATIC_FROM in text else ""
  with open(path, "w") as f:
    f.write(bench.page(record, expm_record) + ("\n" + static if static else ""))
  return path


def _machine_free_record(path: str) -> dict:
  """The JSON record at ``path`` with every absolute path in it shortened (the GPU machine's
  folders are no part of a figure's provenance)."""
  from experiments.reproduce import provenance  # pylint: disable=g-import-not-at-top
  with open(path) as f:
    return json.loads(provenance.machine_free(f.read()))


def write_selection(record: dict, path: Optional[str] = None) -> None:
  """The package's ``persistent_faster.json`` (or ``path``) from a benchmark record (see
  :func:`lvf_jax.recurrences.persistent.measured_faster`)."""
  if path is None:
    from lvf_jax.recurrences import persistent  # pylint: disable=g-import-not-at-top
    path = persistent.MEASURED_FASTER
  with open(path) as f:
    selection = json.load(f)
  selection["faster"] = _benchmark_module().persistent_faster(record)
  selection["record"] = (f"docs/results/gpu.json: {record['device']}, commit "
                         f"{record['commit']}, {record['measured']}")
  _write_atomic(path, (json.dumps(selection, indent=1) + "\n").encode())


def _runner():
  """:mod:`experiments.reproduce.runner`, imported where it is used: the GPU machine runs
  this module before the kit's wheels (``ml_collections`` among them) are installed."""
  from experiments.reproduce import runner  # pylint: disable=g-import-not-at-top
  return runner


def _benchmark_module():
  """``benchmarks/gpu.py``, a script beside the package, loaded from its path."""
  bench_dir = os.path.join(ROOT, "benchmarks")
  if bench_dir not in sys.path:
    sys.path.insert(0, bench_dir)
  spec = importlib.util.spec_from_file_location("lvf_gpu_benchmark",
                                                os.path.join(bench_dir, "gpu.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


# ------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
  p = argparse.ArgumentParser(prog="python -m experiments.gpu_kit",
                              description=__doc__.split("\n")[0])
  sub = p.add_subparsers(dest="command", required=True)
  pr = sub.add_parser("prepare", help="fetch the wheels and copy the data into .gpu_kit")
  pr.add_argument("--data-dir", default=os.environ.get("LVF_JAX_DATA_DIR"))
  pr.add_argument("--no-fetch", action="store_true", help="copy the data only")
  r = sub.add_parser("run", help="on the GPU machine: benchmark, then rows, until --deadline")
  r.add_argument("--out", required=True, help="folder the results are copied to ($OUT)")
  r.add_argument("--deadline", type=float, required=True, help="seconds from now")
  r.add_argument("--lanes", type=int, default=3)
  r.add_argument("--benchmark-budget", type=float, default=240.0,
                 help="seconds of benchmark timing (compilation adds to it); 0: rows only")
  r.add_argument("--sync-every", type=float, default=5.0)
  r.add_argument("--margin", type=float, default=30.0,
                 help="seconds before the deadline at which running rows are stopped")
  r.add_argument("--dry-run", action="store_true", help="CPU: tiny benchmark, smoke rows")
  c = sub.add_parser("collect", help="here: the returned folder into records and pages")
  c.add_argument("src")
  c.add_argument("--runs", default=os.path.join(ROOT, "runs", "reproduce"))
  c.add_argument("--pages", default=os.path.join(ROOT, "docs", "reproduction"))
  c.add_argument("--docs", default=os.path.join(ROOT, "docs"))
  c.add_argument("--benchmarks", nargs="*", default=[],
                 help="further benchmarks/gpu.py records of the same device, merged")
  c.add_argument("--expm", default=None,
                 help="a record of benchmarks/expm.py --ablate-stored on the same device")
  c.add_argument("--selection", default=None,
                 help="where rnn_scan's choice of the persistent kernel is written (default: "
                      "lvf_jax/recurrences/persistent_faster.json)")
  return p


def main(argv=None) -> int:
  args = _parser().parse_args(argv)
  if args.command == "prepare":
    if not args.data_dir:
      raise SystemExit("gpu_kit prepare: set LVF_JAX_DATA_DIR or pass --data-dir")
    prepare(KIT, args.data_dir, fetch=not args.no_fetch)
  elif args.command == "run":
    if args.lanes < 1 or args.deadline <= 0:
      raise SystemExit(f"gpu_kit run: --lanes must be >= 1 and --deadline > 0; got "
                       f"{args.lanes} and {args.deadline}")
    summary = run(args.out, args.deadline, lanes=args.lanes,
                  benchmark_budget=args.benchmark_budget, dry_run=args.dry_run,
                  sync_every=args.sync_every, margin=args.margin)
    return 0 if summary["benchmark_rc"] == 0 else 1
  else:
    collect(args.src, runs=args.runs, pages=args.pages, docs=args.docs,
            selection=args.selection, benchmarks=tuple(args.benchmarks), expm=args.expm)
  return 0


if __name__ == "__main__":
  sys.exit(main())
