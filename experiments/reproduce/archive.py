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

Entries may also hold ``"page"``: a row's figures as they were printed on its page before
its runs were archived (the per-seed values behind a mean are then not known). The
renderer shows them as printed until a run of the row replaces them.
"""

from __future__ import annotations

import json
import os
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
