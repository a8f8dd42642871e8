"""Where and when a record was made: the repository's commit and the machine.

Every record of the harness (:mod:`experiments.reproduce.runner`) and every stored
measurement beside it (the floors, the step times) says which code ran on which machine at
what time, through the functions here.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: The committed reproduction pages and their archives (``results/``).
PAGES = os.path.join(ROOT, "docs", "reproduction")

_STARTED_AT_COMMIT: list = []


def started_at_commit() -> str:
  """:func:`git_commit` when this process first asked: the code a long-running process
  trains with is the code it imported, not the work tree's when a run ends."""
  if not _STARTED_AT_COMMIT:
    _STARTED_AT_COMMIT.append(git_commit())
  return _STARTED_AT_COMMIT[0]


def git_commit(root: str = ROOT) -> str:
  """``HEAD``'s short hash of the checkout at ``root`` (this repository by default), with
  ``+dirty`` when its tracked files have uncommitted changes, ``'unknown'`` outside a
  checkout; ``$LVF_JAX_COMMIT`` where set (a copy of the tree without its git history, e.g.
  on a remote machine). The one reader of the commit for the harness and the
  benchmarks."""
  if os.environ.get("LVF_JAX_COMMIT"):
    return os.environ["LVF_JAX_COMMIT"]
  try:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, check=True,
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                           check=True, capture_output=True, text=True).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    return "unknown"
  return head + ("+dirty" if dirty else "")


def usable_cores() -> int:
  """The number of CPU cores this process may run on: its affinity mask where the platform
  has one (a run pinned with ``taskset -c 0`` gets 1), else the machine's core count."""
  try:
    return len(os.sched_getaffinity(0))
  except (AttributeError, OSError):
    return os.cpu_count() or 1


def command_line(module: str, argv: list) -> str:
  """``python -m module argv`` as a record keeps it, without paths of the machine that ran
  it: ``--workdir`` and its value left out, and any other absolute path shortened
  (:func:`machine_free`)."""
  kept, skip = [], False
  for a in argv:
    if skip or a.startswith("--workdir="):
      skip = False
      continue
    skip = a == "--workdir"
    if not skip:
      kept.append(machine_free(a))
  return " ".join(["python -m " + module, *kept])


def stamp(module: str, argv: list) -> dict:
  """What a measurement's record says of its making: the command (:func:`command_line`), the
  commit the process started at, the machine and the date."""
  return {"command": command_line(module, argv), "commit": started_at_commit(),
          "machine": machine(), "date": utc_now()}


_ABSOLUTE = re.compile(r"(?<![\w.])/[^\s'\"(),;]+")


def machine_free(text: str) -> str:
  """``text`` with every absolute path shortened to ``.../`` and at most its last three
  parts, never its first (a run directory's table, row and seed; no machine's folders)."""
  return _ABSOLUTE.sub(lambda m: _shortened(m.group(0)), text)


def _shortened(path: str) -> str:
  parts = [p for p in path.split("/") if p]
  return ".../" + "/".join(parts[max(1, len(parts) - 3):]) if len(parts) > 1 else path


def utc_now() -> str:
  """The current time as the records write it (``'YYYY-MM-DD HH:MM UTC'``, sortable)."""
  return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def cpu_model() -> str:
  """The CPU's model name (``/proc/cpuinfo``), or what the platform says; the one reader
  of the CPU model for the harness and the benchmarks."""
  model = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        if line.startswith("model name"):
          return line.split(":", 1)[1].strip()
  except OSError:
    pass
  return model


def machine() -> str:
  """The CPU model and the cores the run may use (or the JAX accelerator), for the tables."""
  import jax  # pylint: disable=g-import-not-at-top
  dev = jax.devices()[0]
  if dev.platform != "cpu":
    return f"{dev.device_kind} ({dev.platform})"
  cores = usable_cores()
  return f"{cpu_model()}, {cores} core{'s' if cores != 1 else ''}"
