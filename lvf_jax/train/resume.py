"""A workdir remembers its config: resuming with another one stops before anything is written.

``train_and_evaluate`` writes ``config.json`` when it starts a run. When it finds checkpoints
in the workdir it compares the new config with that file first: any difference stops the run
(``ConfigMismatchError``, naming every differing field with both values) before a file is
touched. ``config.train.allow_resume_changes = True`` lets the fields of
:data:`SAFE_TO_CHANGE` (the step budget and the logging, evaluation and checkpoint cadence)
differ; each such resume appends its differences to ``resumes.jsonl`` and the new config
replaces ``config.json``.
"""

from __future__ import annotations

import datetime
import json
import os
from typing import Any, Optional

from lvf_jax.train.config import config_defaults

CONFIG = "config.json"
RESUMES = "resumes.jsonl"

#: Fields a resume may always change: where the run computes (the devices at hand may differ
#: between a run and its resume) and for how long and until what this part runs.
ALWAYS_SAFE = frozenset({"train.mesh", "train.time_limit", "train.stop_on_signal",
                         "distributed.coordinator_address", "distributed.num_processes",
                         "distributed.process_id"})

#: Fields a resume may change with ``train.allow_resume_changes`` (besides
#: :data:`ALWAYS_SAFE`): they decide how long and how often (and whether raw data may be
#: downloaded) and how much memory the gradient takes, not what is trained.
SAFE_TO_CHANGE = ALWAYS_SAFE | frozenset({
    "train.steps", "train.log_every", "train.eval_every", "train.checkpoint_every",
    "train.keep_checkpoints", "train.progress_bar", "train.tensorboard", "train.plot",
    "train.eval_batch_size", "train.allow_resume_changes", "task.options.download",
    "train.diagnostics",
    "model.segment_length", "model.checkpoint"})  # memory only: the same gradients (tested)


class ConfigMismatchError(ValueError):
  """The config of a resumed run differs from the one its workdir was started with."""


def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
  if isinstance(tree, dict):
    out = {}
    for k, v in tree.items():
      out.update(_flatten(v, f"{prefix}{k}."))
    return out
  return {prefix[:-1]: tree}


def config_differences(saved: dict, new: dict,
                       defaults: Optional[dict] = None) -> dict[str, tuple[Any, Any]]:
  """``{dotted field: (saved value, new value)}`` for every field that differs (a field
  only one side has counts, with ``'<absent>'`` on the other, except a field the saved
  config predates: absent there and at its value of ``defaults``, a nested dict such as
  :func:`lvf_jax.train.config.config_defaults`)."""
  a, b = _flatten(saved), _flatten(new)
  d = _flatten(defaults or {})
  return {k: (a.get(k, "<absent>"), b.get(k, "<absent>")) for k in sorted(set(a) | set(b))
          if a.get(k, "<absent>") != b.get(k, "<absent>")
          and not (k not in a and k in d and b.get(k) == d[k])}


def check_resume(config, workdir: str, resuming: bool) -> None:
  """Compares ``config`` with the workdir's ``config.json`` when ``resuming``; raises
  :class:`ConfigMismatchError` or, where allowed, records the differences; then writes the
  config. Nothing is written when it raises."""
  path = os.path.join(workdir, CONFIG)
  new_json = config.to_json_best_effort(indent=2)
  if resuming and os.path.exists(path):
    with open(path) as f:
      saved = json.load(f)
    model = (saved.get("model") or {}).get("name", "")
    diffs = config_differences(saved, json.loads(new_json), config_defaults(model))
    allowed = bool(config.train.get("allow_resume_changes", False))
    unsafe = {k: v for k, v in diffs.items()
              if k not in ALWAYS_SAFE and not (allowed and k in SAFE_TO_CHANGE)}
    if unsafe:
      listed = "; ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in unsafe.items())
      hint = ("" if allowed or set(unsafe) - SAFE_TO_CHANGE else
              " Set train.allow_resume_changes=True to resume with these changes.")
      raise ConfigMismatchError(
          f"the workdir {workdir} holds a run started with another config; differing "
          f"field(s): {listed}. Use a new workdir, or the original values.{hint}")
    if diffs:
      with open(os.path.join(workdir, RESUMES), "a") as f:
        f.write(json.dumps({
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "changes": {k: [a, b] for k, (a, b) in diffs.items()}}) + "\n")
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    f.write(new_json)
  os.replace(tmp, path)
