"""The committed record of finished runs, from which the result pages are written.

A run's ``result.json`` lives in its runs directory (``runs/``, not part of the repository,
lost with the machine). Every time a page is written, the results found there are merged
into a JSON archive beside the page (``<pages>/results/<name>.json``), and the page is
rendered from the archive: a page written on a machine that has none of the runs still
shows every result recorded before, and a new run adds to it.

A result replaces the archived one of the same key when it trained at least as many steps
and is at least as recent (:func:`supersedes`): a partial re-run does not overwrite a
finished one. To drop a recorded result (a config found wrong), delete its entry from the
JSON file.

Each row's entry is ``{"seeds": {seed: record}, "notes": [note, ...]}``. A record is a
run's ``result.json`` (:mod:`experiments.reproduce.runner`) with its thinned learning curve.
A note is a short fact about the runs, ``{"text": ..., "seed": "<seed>"}``: every number in
its text is a value of the record it cites (:func:`unbacked_numbers`), never an
extrapolation; settings and deviations belong in the row's own ``note``
(:mod:`experiments.reproduce.rows`).
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Optional

import numpy as np

#: Most points of a stored learning curve (evenly thinned, the last point always kept).
CURVE_POINTS = 200


def path_for(pages: str, name: str) -> str:
  """The archive of page set ``pages`` (a directory) named ``name``."""
  return os.path.join(pages, "results", f"{name}.json")


def load(path: str) -> dict:
  """The archive at ``path`` (``{}`` if there is none yet)."""
  if not os.path.exists(path):
    return {}
  with open(path) as f:
    return json.load(f)


def save(path: str, archive: dict) -> None:
  """Writes ``archive`` to ``path`` atomically (a crash leaves the old file)."""
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path + ".tmp", "w") as f:
    json.dump(archive, f, indent=1, sort_keys=True)
    f.write("\n")
  os.replace(path + ".tmp", path)


def supersedes(new: dict, old: Optional[dict]) -> bool:
  """Whether result ``new`` replaces the archived ``old``: at least as many steps and a date
  no earlier (dates are ``'YYYY-MM-DD HH:MM UTC'``, so they compare as strings)."""
  if old is None:
    return True
  return (int(new.get("steps") or 0) >= int(old.get("steps") or 0)
          and str(new.get("date", "")) >= str(old.get("date", "")))


def thin_curve(points: list, max_points: int = CURVE_POINTS) -> list:
  """At most ``max_points`` of ``[[step, value], ...]``, evenly spaced, first and last
  kept."""
  if len(points) <= max_points:
    return [list(p) for p in points]
  keep = np.unique(np.round(np.linspace(0, len(points) - 1, max_points)).astype(int))
  return [list(points[i]) for i in keep]


_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])", re.I)


def _leaves(value) -> list:
  """Every number inside ``value`` (nested dicts and lists)."""
  if isinstance(value, bool):
    return []
  if isinstance(value, (int, float)):
    return [float(value)]
  if isinstance(value, dict):
    return [x for v in value.values() for x in _leaves(v)]
  if isinstance(value, (list, tuple)):
    return [x for v in value for x in _leaves(v)]
  return []


def _printed_precision(text: str) -> float:
  """Half a unit of the last digit ``text`` prints (relative for a number in e-notation or
  with a decimal point, absolute otherwise)."""
  mantissa = text.lower().split("e")[0].replace(",", "")
  digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
  return 0.5 * 10.0 ** -digits


def backed(text: str, record: dict) -> bool:
  """Whether the number ``text`` equals a value of ``record`` at its printed precision (a
  percent may be a fraction of one in the record)."""
  value = float(text.replace(",", ""))
  exponent = 0
  if "e" in text.lower():
    exponent = int(text.lower().split("e")[1])
  tol = _printed_precision(text) * 10.0 ** exponent
  for leaf in _leaves(record):
    for scaled in (leaf, 100.0 * leaf):
      if math.isfinite(scaled) and abs(scaled - value) <= tol * (1 + 1e-9):
        return True
  return False


def unbacked_numbers(note: dict, record: Optional[dict]) -> list[str]:
  """The numbers of ``note["text"]`` that its cited ``record`` does not hold (every number,
  without a record)."""
  numbers = _NUMBER.findall(note.get("text", ""))
  if record is None:
    return numbers
  return [n for n in numbers if not backed(n, record)]
