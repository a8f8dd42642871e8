"""Memory beyond the papers' lengths: copy at T = 1000 and 2000, adding at T = 1000, 5000
and 10,000, for the lvfRNN, expRNN and an LSTM, and for adding also NC-GRU (Mucllari et al.
2022, arXiv:2208.06496: a GRU whose recurrent matrix is orthogonal), a gate that decides what
is written beside an orthogonal memory.

These are this repository's own tables (``Table.study``), run by the same harness as the
papers'::

    python -m experiments.reproduce long-memory-copy --rows t1000-exprnn
    python -m experiments.reproduce long-memory-adding --time-limit 9000    # resumable

Each row is a preset of ``configs/`` (``copy.py`` / ``adding.py``) at the row's sequence
length, batch and step budget, with ``model.segment_length='auto'`` (segment-wise
rematerialisation: memory is not what limits these lengths). No paper gives these values:
a row's verdict is ``at floor`` when its loss is within the tolerance of the task's
no-memory loss, none otherwise. After training the runner records, per seed, the first
evaluated step whose validation loss is below :data:`TARGET`, how far a gradient from the
last state reaches back and, for adding, what the last state holds
(:mod:`experiments.reproduce.diagnostics`).
"""

from __future__ import annotations

from typing import Optional

from experiments.reproduce.rows import Row, Table, sentence

#: Validation loss the rows aim at: cross entropy (copy) or mean squared error (adding),
#: LEM's threshold (Rusch and Mishra 2021).
TARGET = 1e-3

MODELS = {"lvf": "lvfRNN", "exprnn": "expRNN", "lstm": "LSTM", "ncgru": "NC-GRU"}

#: The presets that run each model, where it is not ``<task>.py:<model>``: the copy lvfRNN
#: is the divergence-free (orthogonal) midpoint cell with modReLU.
CONFIGS = {("copy", "lvf"): "copy.py:lvf_divfree"}

#: The adding preset ``adding.py:lvf`` has tanh and an unconstrained divergence; these rows
#: use the divergence-free modReLU cell of the copy preset instead.
ADDING_LVF = {"model.cell.divergence_free": True, "model.cell.activation": "modrelu"}
ADDING_LVF_NOTE = ("the divergence-free modReLU cell of `copy.py:lvf_divfree` in place of "
                   "`adding.py:lvf`'s tanh cell with unconstrained divergence")

#: Centred input kernel: no drive along the ones vector, which C_V fixes (the value inputs'
#: mean 1/2 otherwise grows the state's mean linearly in T).
CENTRED = {"model.cell.center_input_init": True}
NONNEG_BIAS = {"model.cell.nonnegative_modrelu_bias": True}
#: The input kernel 100 times smaller (scoRNN's input weights are U(-0.01, 0.01)).
SMALL_INPUT = {"model.cell.input_init_scale": 0.01}

#: The lvfRNN's variants of the adding task, tried at T = 5000 only:
#: ``(variant, overrides, note)``.
ADDING_LVF_VARIANTS = (
    ("centred-nonneg-bias", {**ADDING_LVF, **CENTRED, **NONNEG_BIAS},
     "input kernel started centred and |b| as the modReLU bias (no dead zone)"),
    ("small-input", {**ADDING_LVF, **CENTRED, **SMALL_INPUT},
     "input kernel started centred and 100 times smaller: the state's norm at "
     "initialisation scales with it"),
    ("small-input-nonneg-bias", {**ADDING_LVF, **CENTRED, **SMALL_INPUT, **NONNEG_BIAS},
     "input kernel started centred and 100 times smaller, and |b| as the modReLU bias"),
)

#: The copy lvfRNN at T >= 1000: input kernel started centred, V at Adam 1e-5 (the preset's
#: 3e-4 moves the generator tau/2 D_V 15 times faster than expRNN's 1e-4), gradients clipped
#: at norm 5.
COPY_LVF = {**CENTRED, "optim.lr_vector_field": 1e-5, "optim.clip_norm": 5.0}
COPY_LVF_NOTE = ("`copy.py:lvf_divfree` with the input kernel started centred (no drive "
                 "along the ones vector, which C_V fixes), V at Adam 1e-5 and gradients "
                 "clipped at norm 5")
NONNEG_BIAS_NOTE = ("|b| as the modReLU bias: no unit sits in modReLU's dead zone, so the "
                    "divergence-free (orthogonal) map carries the gradient's norm over every "
                    "step")

COPY = dict(steps=20000, eval_every=250, lengths=((1000, 16), (2000, 16)))
ADDING = dict(steps=10000, eval_every=100, lengths=((1000, 50), (5000, 20), (10000, 10)))


def run_overrides(t: int, batch: int, eval_every: int) -> dict:
  """The overrides every row sets on its preset: the length, batch, evaluation and
  checkpoint periods, a 256-sequence evaluation set and segment-wise rematerialisation."""
  return {"task.options.T": t, "train.batch_size": batch, "train.eval_every": eval_every,
          "train.checkpoint_every": eval_every, "train.log_every": 50,
          "train.eval_size": 256, "train.eval_batch_size": 64,
          "model.segment_length": "auto"}


def diagnostics_of(task: str) -> dict:
  """The measurements recorded after training: the target reached, the gradient's reach
  and, for adding, the last state's linear memory."""
  out = {"target_reached": {"target": TARGET}, "gradient_reach": {}}
  if task == "adding":
    out["memory_probe"] = {}
  return out


def make_row(task: str, t: int, batch: int, model: str, *, steps: int, eval_every: int,
             overrides: Optional[dict] = None, variant: str = "", note: str = "") -> Row:
  """The row of ``model`` on ``task`` at length ``t``: id ``t<T>-<model>[-<variant>]``."""
  name = MODELS[model] + (f" ({variant})" if variant else "")
  return Row(id=f"t{t}-{model}" + (f"-{variant}" if variant else ""),
             task=f"{task} T={t}", model=name, paper={},
             config=CONFIGS.get((task, model), f"{task}.py:{model}"),
             overrides={**run_overrides(t, batch, eval_every), **(overrides or {})},
             steps=steps, diagnostics=diagnostics_of(task),
             note=sentence(f"batch {batch}", note, end=""))


def copy_rows() -> tuple:
  rows = []
  for t, batch in COPY["lengths"]:
    spec = dict(steps=COPY["steps"], eval_every=COPY["eval_every"])
    for model in ("lvf", "exprnn", "lstm"):
      lvf = model == "lvf"
      rows.append(make_row("copy", t, batch, model, overrides=COPY_LVF if lvf else None,
                           note=COPY_LVF_NOTE if lvf else "", **spec))
    rows.append(make_row("copy", t, batch, "lvf", overrides={**COPY_LVF, **NONNEG_BIAS},
                         variant="nonneg-bias",
                         note=f"{COPY_LVF_NOTE}; {NONNEG_BIAS_NOTE}", **spec))
  return tuple(rows)


def adding_rows() -> tuple:
  rows = []
  for t, batch in ADDING["lengths"]:
    spec = dict(steps=ADDING["steps"], eval_every=ADDING["eval_every"])
    for model in ("lvf", "exprnn", "lstm", "ncgru"):
      lvf = model == "lvf"
      rows.append(make_row("adding", t, batch, model, overrides=ADDING_LVF if lvf else None,
                           note=ADDING_LVF_NOTE if lvf else "", **spec))
    for variant, overrides, note in ADDING_LVF_VARIANTS if t == 5000 else ():
      rows.append(make_row("adding", t, batch, "lvf", overrides=overrides, variant=variant,
                           note=f"{ADDING_LVF_NOTE}; {note}", **spec))
  return tuple(rows)


def _lengths(spec: dict) -> str:
  return ", ".join(f"{t:,}" for t, _ in spec["lengths"])


CAPTION = ("{task} at T = {lengths}, beyond the papers' lengths; 'ours' is the test loss at "
           "the best validation step ({metric}); the aim is a validation loss below {target:g}. "
           "Every row uses `model.segment_length='auto'`; its batch is in its note.")

TABLES = {
    "copy": Table(
        "long-memory", "", CAPTION.format(task="Copy (K = 10 symbols to recall)",
                                          lengths=_lengths(COPY), metric="cross entropy",
                                          target=TARGET),
        "Memory beyond the papers' lengths: copy", copy_rows(), study="long-memory-copy"),
    "adding": Table(
        "long-memory", "", CAPTION.format(task="Adding", lengths=_lengths(ADDING),
                                          metric="mean squared error", target=TARGET),
        "Memory beyond the papers' lengths: adding", adding_rows(),
        study="long-memory-adding"),
}
