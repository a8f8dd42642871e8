"""Interleaved wall-clock timing shared by the benchmark scripts (``cells.py``, ``speed.py``).

Every repetition times each entry once, in turn (the order rotates from one repetition to
the next), so that all entries of a setting see the same machine load: their ratios stay
meaningful on a shared CPU even when the absolute times drift. Python's garbage collector
runs once before timing and is paused during it, and the minor page faults of each call
are counted: XLA:CPU allocates a jitted function's temporary buffers on every call, and
buffers above glibc's mmap threshold arrive as fresh pages that fault in again each time
(docs/RESULTS.md, "Performance notes").
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import shlex
import statistics
import sys
import time
from typing import Any, Callable, Hashable, Optional, Sequence

try:
  import resource
except ImportError:  # not on Windows
  resource = None

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
# The commit and CPU model are read once for the harness and the benchmarks.
from experiments.reproduce.provenance import cpu_model, git_commit  # noqa: E402,F401


def minor_faults() -> int:
  """Minor page faults of this process so far (0 where ``getrusage`` is unavailable)."""
  return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource else 0


@dataclasses.dataclass
class Timing:
  """Wall times (seconds) of the timed calls of one entry and its page faults per call."""

  seconds: list[float]
  faults_per_call: float

  @property
  def median_ms(self) -> float:
    return 1e3 * statistics.median(self.seconds)

  @property
  def min_ms(self) -> float:
    return 1e3 * min(self.seconds)


def median_interval(values: Sequence[float],
                    confidence: float = 0.95) -> Optional[tuple[float, float, float]]:
  """``(median, low, high)``: the median of ``values`` and the distribution-free interval
  ``[x_(k), x_(m+1-k)]`` of their order statistics that covers the population median with
  probability at least ``confidence`` (the largest ``k`` with ``2 P(Bin(m, 1/2) < k) <= 1 -
  confidence``, for ``m`` independent values); ``None`` where ``m`` values cannot give that
  coverage (``m < 6`` at 95 %)."""
  xs = sorted(values)
  m = len(xs)
  tail, k = 0.0, 0
  while k < m // 2:
    tail += math.comb(m, k) / 2.0 ** m  # P(Bin(m, 1/2) <= k)
    if 2 * tail > 1 - confidence:
      break
    k += 1
  if k == 0:
    return None
  return statistics.median(xs), xs[k - 1], xs[m - k]


def command_line(script: str, argv: Optional[Sequence[str]]) -> str:
  """``python <script> <arguments>``, quoted so that it can be pasted into a shell
  (``argv`` None: this process's own arguments)."""
  return shlex.join(["python", script, *(sys.argv[1:] if argv is None else argv)])


def measured_on(extra: str = "") -> str:
  """``'Measured <date> <time> UTC on <platform> (<device kind>; <CPU model>, <n> logical
  CPUs<extra>), jax <version>'``: the opening of a result file's metadata line."""
  import datetime

  import jax
  dev = jax.devices()[0]
  return (f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on "
          f"{dev.platform} ({dev.device_kind}; {cpu_model()}, "
          f"{os.cpu_count()} logical CPUs{extra}), jax {jax.__version__}")


def _block(tree: Any) -> Any:
  import jax
  return jax.block_until_ready(tree)  # leaves that are not JAX arrays are returned as is


def time_interleaved(entries: dict[Hashable, tuple[Callable[[Any], Any], Any]], repeats: int,
                     warmup: int, *, budget_s: Optional[float] = None, pause_s: float = 0.0,
                     label: str = "") -> dict[Hashable, Timing]:
  """Times ``fn(state) -> state`` of every entry ``{key: (fn, state)}``, interleaved.

  Args:
    entries: the functions and their initial states; each call's output (blocked with
      ``jax.block_until_ready``) is the next call's state.
    repeats: timed repetitions (each times every entry once).
    warmup: untimed calls per entry before timing (the first one also compiles).
    budget_s: stop after the repetition during which this many seconds of timing passed
      (every entry then has the same number of timed calls, at least one).
    pause_s: sleep before each timed call (lets another runtime's spinning worker threads,
      e.g. PyTorch's, go idle).
    label: prefix of the message printed to stderr when the budget ends the timing.

  Returns:
    ``{key: Timing}``.
  """
  states = {key: state for key, (_, state) in entries.items()}
  for key, (fn, _) in entries.items():
    for _ in range(warmup):
      states[key] = _block(fn(states[key]))
  seconds = {key: [] for key in entries}
  faults = {key: 0 for key in entries}
  gc.collect()
  gc.disable()
  keys = list(entries)
  start = time.perf_counter()
  try:
    for rep in range(repeats):
      if budget_s is not None and rep and time.perf_counter() - start > budget_s:
        print(f"{label}time budget reached after {rep} repetitions", file=sys.stderr)
        break
      # No collection between repetitions (the call after a gc.collect() ran up to 30 %
      # slower at batch 10, and with a fixed order that was always the first entry, the
      # floor), and the order rotates so that no entry is always first.
      for key in keys[rep % len(keys):] + keys[:rep % len(keys)]:
        fn = entries[key][0]
        if pause_s:
          time.sleep(pause_s)
        f0 = minor_faults()
        t0 = time.perf_counter()
        states[key] = _block(fn(states[key]))
        seconds[key].append(time.perf_counter() - t0)
        faults[key] += minor_faults() - f0
  finally:
    gc.enable()
  return {key: Timing(s, faults[key] / max(len(s), 1)) for key, s in seconds.items()}
