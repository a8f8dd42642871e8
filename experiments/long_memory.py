"""Memory tasks beyond the papers' lengths: copy at T = 1000 / 2000, adding at T = 1000 /
5000 / 10,000, for the lvfRNN, expRNN and an LSTM, and for adding also NC-GRU (Mucllari et al.
2022, arXiv:2208.06496: a GRU whose recurrent matrix is orthogonal), a gate that decides what
is written beside an orthogonal memory.

::

    python -m experiments.long_memory --list
    python -m experiments.long_memory --runs copy-t1000-exprnn,adding-t5000-lvf
    python -m experiments.long_memory --all --time-limit 9000    # resumable
    python -m experiments.long_memory --report-only

Each run is a preset of ``configs/`` (``copy.py`` / ``adding.py``) with the sequence length,
batch and step budget of the table below, and ``model.segment_length='auto'`` (segment-wise
rematerialisation: memory is not what limits these lengths). It trains in
``runs/long_memory/<run>`` and resumes there; ``--time-limit`` stops a run at its next log
step after that many seconds (the page then says how far it got). The page
``docs/LONG_MEMORY.md`` lists, per run, the validation metric against its target
(cross entropy < 1e-3 for copy, mean squared error < 1e-3 for adding), the first evaluated
step at which the target was reached, the test metric at the best validation step, how
much the last state depends on the first (``||dh_T/dh_1||_F / ||dh_T/dh_T||_F`` of the first
layer at the best validation step, :func:`gradient_reach`: the factor by which a gradient
from the end of a sequence reaches its start), the wall time, machine, commit and command.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import sys
from typing import Optional

from experiments.reproduce import archive as archive_lib
from experiments.reproduce.harness import (load_config, machine, read_result,
                                           started_at_commit, write_result)
from lvf_jax.train.config import set_field
from lvf_jax.train.loop import BEST_VARIABLES
from lvf_jax.train.reporting import MetricWriter
from lvf_jax.train.stop import StoppedBySignal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 1e-3  # copy: cross entropy; adding: mean squared error (LEM's threshold)


@dataclasses.dataclass(frozen=True)
class Run:
  """One long-sequence run: a preset at a length, batch and budget."""
  task: str  # 'copy' or 'adding'
  T: int
  model: str  # a preset of configs/<task>.py
  batch: int
  steps: int
  eval_every: int
  overrides: tuple = ()  # (dotted config field, value) pairs set on top of the preset
  variant: str = ""  # names a second run of the same preset, length and batch

  @property
  def id(self) -> str:
    base = f"{self.task}-t{self.T}-{self.model}"
    return f"{base}-{self.variant}" if self.variant else base

  @property
  def config(self) -> str:
    return f"{self.task}.py:{self.model}"

  @property
  def label(self) -> str:
    """The model column of the page: the preset and any overrides."""
    extra = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in self.overrides)
    return f"{self.model} ({extra})" if extra else self.model


#: The adding preset ``adding.py:lvf`` (tanh, divergence unconstrained) fails at T = 1000 both
#: ways (see NOTES): these runs use the divergence-free modReLU cell of ``copy.py:lvf``.
ADDING_LVF = (("model.cell.divergence_free", True), ("model.cell.activation", "modrelu"))


#: ``ADDING_LVF`` with the input kernel started centred (no drive along the ones vector, which
#: C_V fixes: the value inputs' mean 1/2 otherwise grows the state's mean linearly in T) and
#: the modReLU bias used as ``|b|``.
ADDING_LVF_CENTRED_NONNEG = ADDING_LVF + (("model.cell.center_input_init", True),
                                          ("model.cell.nonnegative_modrelu_bias", True))

#: ``ADDING_LVF`` with the input kernel started centred and 100 times smaller (scoRNN's input
#: weights are U(-0.01, 0.01)): the state's norm at initialisation scales with it.
ADDING_LVF_SMALL_INPUT = ADDING_LVF + (("model.cell.center_input_init", True),
                                       ("model.cell.input_init_scale", 0.01))

#: ``ADDING_LVF_SMALL_INPUT`` with the modReLU bias used as ``|b|`` (no dead zone).
ADDING_LVF_SMALL_INPUT_NONNEG = ADDING_LVF_SMALL_INPUT + (
    ("model.cell.nonnegative_modrelu_bias", True),)

#: The lvfRNN's long-sequence variants of the adding task, ``(variant, overrides)``, tried at
#: T = 5000 only.
ADDING_LVF_VARIANTS = (("centred-nonneg-bias", ADDING_LVF_CENTRED_NONNEG),
                       ("small-input", ADDING_LVF_SMALL_INPUT),
                       ("small-input-nonneg-bias", ADDING_LVF_SMALL_INPUT_NONNEG))


#: ``copy.py:lvf`` at T >= 1000 (see NOTES): the input kernel starts centred (no drive along
#: the ones vector, which C_V fixes), V at Adam 1e-5 and gradients clipped at norm 5.
COPY_LVF = (("model.cell.center_input_init", True), ("optim.lr_vector_field", 1e-5),
            ("optim.clip_norm", 5.0))

#: ``COPY_LVF`` with the modReLU bias used as ``|b|``: no unit can sit in modReLU's dead zone,
#: so the divergence-free (orthogonal) map carries the gradient's norm over every step.
COPY_LVF_NONNEG = COPY_LVF + (("model.cell.nonnegative_modrelu_bias", True),)


def _runs() -> list[Run]:
  out = []
  for t in (1000, 2000):  # copy: the presets' batches would make T = 2000 slow on 2 cores
    for model in ("lvf", "exprnn", "lstm"):
      out.append(Run("copy", t, model, batch=16, steps=20000, eval_every=250,
                     overrides=COPY_LVF if model == "lvf" else ()))
    out.append(Run("copy", t, "lvf", batch=16, steps=20000, eval_every=250,
                   overrides=COPY_LVF_NONNEG, variant="nonneg-bias"))
  for t, batch in ((1000, 50), (5000, 20), (10000, 10)):
    for model in ("lvf", "exprnn", "lstm", "ncgru"):
      out.append(Run("adding", t, model, batch=batch, steps=10000, eval_every=100,
                     overrides=ADDING_LVF if model == "lvf" else ()))
    for variant, overrides in ADDING_LVF_VARIANTS if t == 5000 else ():
      out.append(Run("adding", t, "lvf", batch=batch, steps=10000, eval_every=100,
                     overrides=overrides, variant=variant))
  return out


RUNS = {r.id: r for r in _runs()}

#: What measurement showed about single runs (printed under the table).
NOTES = {
    "copy-t1000-lvf": (
        "`copy.py:lvf` as it stands (divergence-free midpoint, tau = 15, modReLU, Adam 3e-4) "
        "ran the 20,000 steps to a best validation loss of 0.0174 (no-memory level 0.0204; "
        "accuracy 38 %; commit 8f1a8bf): its first logged training loss is 7.4 with gradient "
        "norm 6,100. D_V annihilates constants (eq. 15), so C_V 1 = 1: the blank symbol, "
        "input at almost every step, adds the mean of its input weights along the ones "
        "vector each step, and at initialisation the state's norm reaches 243 after the "
        "1,020 steps, 224 of it along that vector (NumPy, the preset's initialisation). The "
        "run above therefore starts its input kernel centred over the hidden units "
        "(`center_input_init`), trains V at Adam 1e-5 (3e-4 moves the generator tau/2 D_V "
        "15 times faster than expRNN's 1e-4) and clips gradients at norm 5: in 3,000-step "
        "probes the first training loss fell to 0.3, and centring with V at 1e-5 reached "
        "0.0049 (accuracy 83 %) by step 3,500 before a single-batch gradient spike (norm "
        "1,600, also at Adam 1e-4 for the other weights) erased the memory. The run in the "
        "table (all three changes) has no such spike: validation 0.0030 (accuracy 90 %) at "
        "step 16,500, 6 times below the preset's, with dh_T/dh_1 = 0.64 (the preset's: 0.25), "
        "but it plateaus between 0.003 and 0.005 from step 12,000 on, above the target; its "
        "errors at the best validation step are spread over the ten recalled symbols "
        "(accuracy 81-97 % at each position, 64 validation sequences), not gathered on the "
        "first ones written: what it lacks is precision, not reach"),
    "adding-t1000-lvf": (
        "the preset `adding.py:lvf` as it stands (midpoint, tau = 1, no divergence "
        "constraint, Adam 1e-3 on V) diverged at step 292 (AMD EPYC, commit a2d0f77): the "
        "gradient, not the loss, became non-finite; at the checkpointed state of step 291 "
        "every recurrent parameter's gradient is NaN with or without segments (so not the "
        "rematerialisation), the transition matrix has spectral radius 114.7 and ||div V|| "
        "= 12.2: the midpoint map of a field with divergence has eigenvalues above one, and "
        "1,000 steps of backpropagation overflow float32. With the hard divergence-free "
        "constraint alone (tanh kept; commit 96c68c1, 10,000 steps in 40 min) it trains but "
        "stays at the no-memory level (validation 0.177, test 0.154): the midpoint map is "
        "then orthogonal, yet dh_T/dh_t is 2.8e-6 at 100 steps from the end, 1.7e-13 at 250 "
        "and 0 in float32 beyond, because every tanh step shrinks the gradient. The adding "
        "runs therefore use `copy.py:lvf`'s cell: divergence-free and modReLU. With it the "
        "gradient reaches the first step (dh_T/dh_1 = 0.088), but the state, kept in norm by "
        "the orthogonal map while an input is added at every step, starts far too large "
        "(loss 28.7 at step 100) and the 10,000 steps go into recovering from it (0.23 at "
        "step 9,700): still above the no-memory level; expRNN's first steps look the same "
        "(loss 664 at step 50). At the best validation step the last state holds linearly "
        "only the latest inputs (R^2 0.39 at k = 1, 0.14 at 2, at most 0.06 from k = 3 on, "
        "0 beyond k = 200; capacity 6.4 of 128) and nothing of the target"),
    "adding-t1000-exprnn": (
        "the gradient from the last state reaches the first step (dh_T/dh_1 = 0.10 at the "
        "best validation step): the orthogonal recurrence does not vanish it, yet the model "
        "has not found the two marked numbers in the steps run. What the last state holds "
        "(`--probe`): the value inputs of a fading window, R^2 0.75 at k = 1, 0.30 at 10, "
        "0.18 at 100, 0.08 at 200 and 0 from k = 300 on (capacity 43 of 170), and nothing of "
        "the target (R^2 0). The first marked value lies 500 to 1,000 steps back (the "
        "second 1 to 500), outside that window. Every input is written into the state (no "
        "gate decides what to write), so the two marked values share the state's at most n "
        "= 170 linear degrees of memory (Jaeger 2002) with the 998 others, and the model "
        "spends them on a window of recent inputs"),
    "adding-t1000-lstm": (
        "dh_T/dh_1 is 0 in float32: the LSTM's last state no longer depends on the first "
        "steps, so no gradient from the loss reaches a marker there. Its gates keep the "
        "last three inputs (R^2 1.00, 1.00, 0.98 at k = 1, 2, 3; 0.03 at 5, 0 from 10 on; "
        "capacity 4.0 of 68) and nothing of the target (R^2 0)"),
    "adding-t1000-ncgru": (
        "`adding.py:ncgru` as it stands (n 80, Neumann-Cayley updates, Adam 1e-3) reaches "
        "the target at step 1,700 (4 min on one core) and 4.0e-5 at step 8,500. Its last "
        "state holds the target (R^2 1.00) and, of the value inputs, only the latest (R^2 "
        "1.00 at k = 1, 0.11 at 10, 0 at 100) and the very first (0.36 at k = 1000; capacity "
        "4.5 of 80): the update gate writes the two marked values and keeps them, where "
        "expRNN and the lvfRNN write every input. The LSTM is gated too but its gradient "
        "does not reach the markers (dh_T/dh_1 = 0 in float32, here 0.12: the orthogonal "
        "recurrent matrix keeps it)"),
    "adding-t5000-ncgru": (
        "the same preset at batch 20: the validation loss stays at the no-memory level "
        "(0.17-0.18) for 5,400 steps, drops within 300 (0.069 at 5,500, 0.0032 at 5,700) "
        "and first reaches the target at step 6,300 (LEM's reference: about 3,100 steps at "
        "128 units); best 2.5e-4 at step 7,900, where the time limit stopped it (two "
        "parts, 51 min on one core, the second beside the test suite). At that step "
        "dh_T/dh_1 = 0.09 and the last state holds the target (R^2 1.00) and of the value "
        "inputs only the latest (0.99 at k = 1, 0.05 at 10)"),
    "adding-t10000-ncgru": (
        "the same preset at batch 10: at the no-memory level (about 0.19 on the 256 "
        "validation sequences) for 7,000 steps, 0.028 at 7,100, the target first reached at "
        "step 7,900 and 2.2e-4 at the end of the 10,000 steps (59 min on one core in two "
        "time-limited parts, the second beside the test suite). The test loss at that step "
        "is 1.4e-3: on 256 sequences a few missed sums weigh that much. dh_T/dh_1 = 0.10 "
        "(0 in float32 at step 1,300, before the jump); the last state holds the target "
        "(R^2 1.00) and of the value inputs only the latest (0.98 at k = 1)"),
    "copy-t1000-lstm": (
        "stopped by `--time-limit 1200` at 3,750 of 20,000 steps: the validation cross "
        "entropy falls to the no-memory level (0.0204: the blank outputs learnt, the copied "
        "symbols guessed) by step 1,500 and stays there (0.02039 at 3,750); dh_T/dh_1 is "
        "2e-13, so no gradient from the recall phase reaches the symbols 1,000 steps back, "
        "against 0.59 for expRNN, which solves the task at step 1,250"),
    "copy-t2000-exprnn": (
        "`copy.py:exprnn` (n 128, Henaff initialisation, RMSprop 1e-3, lr_orth 1e-4) at "
        "batch 16 reaches the target at step 2,000 (validation 0.005 at 1,000) and 3.0e-4 "
        "at 7,750 (stopped by `--time-limit 1200` at 7,900 of 20,000, one core), with "
        "spikes on the way (0.013 at step 2,500) as at T = 200; dh_T/dh_1 = 0.37"),
    "copy-t2000-lvf": (
        "the T = 1000 recipe (centred input kernel, V at Adam 1e-5, clip 5), stopped by "
        "`--time-limit 2400` at 14,000 of 20,000 steps (one core): the validation cross "
        "entropy is at the no-memory level (0.0103; accuracy 12 %, chance 1/8) from step "
        "1,000 on (best 0.01029 at 9,000). At initialisation the gradient reaches the first "
        "step (dh_T/dh_1 = 0.85); at the best validation step it falls about 2 % a step "
        "(dh_T/dh_t = 0.12 at 100 steps from the end, 6.6e-3 at 250, 5e-5 at 500, 2e-9 at "
        "1,000) to 7e-18: the modReLU biases, within 0.01 of 0 at initialisation, now lie "
        "between -0.17 and 0.25, and on two validation sequences 6.5 % of the hidden units "
        "output exactly 0 at each step (|z| below a negative bias), which passes no gradient, "
        "so the divergence-free map no longer keeps the gradient's norm over the 2,020 steps. "
        "At T = 1000 the same recipe kept dh_T/dh_1 = 0.64. With these trained weights and "
        "|b| in place of b, dh_T/dh_1 is 1.00 (`copy-t2000-lvf-nonneg-bias` trains so)"),
    "copy-t1000-lvf-nonneg-bias": (
        "`copy-t1000-lvf` with |b| as the modReLU bias, in two time-limited parts (one core, "
        "shared with other runs): the same plateau as without it. The validation cross "
        "entropy is 0.0086 at step 1,000 (accuracy 74 %), 0.0039 at 3,000 and between 0.0031 "
        "and 0.0044 from then on to step 20,000 (best 0.00275 at 14,000, "
        "90 %; `copy-t1000-lvf`: 0.0030). dh_T/dh_1 = 1.00 (`copy-t1000-lvf`: 0.64): at "
        "T = 1000 the gradient already reached the first step, and the symbols the model "
        "still misses are not a matter of gradient flow"),
    "copy-t2000-lvf-nonneg-bias": (
        "`copy-t2000-lvf` with |b| as the modReLU bias (`nonnegative_modrelu_bias`), in two "
        "time-limited parts (one core): it leaves the no-memory level where `copy-t2000-lvf` "
        "stays, then plateaus. The validation cross entropy is 0.0132 at step 1,000, 0.0041 "
        "at 3,000 (accuracy 73 %) and between 0.0019 and 0.0038 from step 6,000 to 20,000 "
        "(best 0.0019 at 17,500, 88 %; 0.0036 at the last step), with spikes on the way "
        "(0.024 at 2,500). dh_T/dh_1 = 1.00: with b >= 0 modReLU is z + b sign(z), whose "
        "derivative is 1, so the orthogonal map carries the gradient to the first step "
        "undiminished. Why 1e-3 stays out of reach: the loss averages over all T + 20 "
        "outputs, of which 10 are copied symbols, so 1e-3 asks for 0.20 nats per copied "
        "symbol at T = 2000 and 0.10 at T = 1000. This run's test loss is 0.41 nats per "
        "symbol (`copy-t1000-lvf-nonneg-bias`: 0.30), and at T = 200 the lvfRNN's "
        "reproduced row (lvf-t4, 0.0100 over 220 outputs) is 0.22 nats per symbol, the "
        "paper's own 0.021 is 0.46: the target asks for a precision per symbol that the "
        "lvfRNN does not reach at T = 200 either, so what is missing is not memory over the "
        "length"),
    "copy-t2000-lstm": (
        "stopped by `--time-limit 900` at 2,700 of 20,000 steps (one core): at the no-memory "
        "level (0.0103, accuracy 13 %) from step 1,500 on, as at T = 1000; dh_T/dh_1 is 0 in "
        "float32"),
    "adding-t5000-exprnn": (
        "stopped by `--time-limit 900` at 2,250 of 10,000 steps (one core), still above the "
        "no-memory level 0.167: the validation MSE starts at 13.4 (step 100) and falls to "
        "0.80 at 1,000 and 0.43 at 2,100, the same recovery from an oversized initial state "
        "as at T = 1000; dh_T/dh_1 = 0.010. The last state holds a "
        "fading window of the value inputs (R^2 0.53 at k = 1, 0.23 at 10, 0.16 at 100, 0 at "
        "1,000; capacity 53 of 170) and nothing of the target"),
    "adding-t5000-lvf": (
        "stopped by `--time-limit 900` at 3,400 of 10,000 steps (one core), far above the "
        "no-memory level 0.167: the validation MSE starts at 316 (step 100) and falls to 46 "
        "at 1,000 and 5.2 at 3,400, the recovery from an oversized initial state of the T = "
        "1000 run over 5,000 inputs; the gradient reaches the first step (dh_T/dh_1 = 0.23), "
        "but the last state holds almost nothing of the value inputs (R^2 0.04 at k = 1, 0 "
        "from k = 10 on; capacity 0.9 of 128) or of the target"),
    "adding-t5000-lvf-centred-nonneg-bias": (
        "`adding-t5000-lvf` with the input kernel started centred and |b| as the modReLU bias, "
        "stopped by `--time-limit 1800` at 2,200 steps (one core shared with two other runs): no "
        "better. At initialisation the training loss on one batch is 52,343 for "
        "`adding-t5000-lvf` (the value inputs' mean 1/2 drives the state along the ones vector, "
        "which C_V fixes), 219 with the centred kernel alone and 250 with both. The state itself "
        "is as large in all three: at initialisation its norm (mean over 8 validation sequences) "
        "is 40 after 10 steps, about 690 after 1,000 and 2,200-2,350 after 5,000, because the "
        "input kernel's LeCun-normal columns (fan-in 2) are large and the orthogonal map keeps "
        "every input; with b >= 0 each step also adds b sign(z), which only grows it. "
        "(`adding-t5000-lvf-small-input` starts the input kernel 100 times smaller.) The "
        "validation MSE falls from 77 (step 200) to 21 (600-800) and 6.7 (2,100); dh_T/dh_1 = "
        "1.00, so the gradient reaches every step, yet the last state holds no linear trace of "
        "the inputs (capacity 0.05 of 128) or of the target"),
    "adding-t5000-lvf-small-input": (
        "`adding-t5000-lvf` with the input kernel started centred and 100 times smaller "
        "(`input_init_scale=0.01`), stopped by `--time-limit 1800` at 1,850 steps (one core "
        "shared with two other runs): the oversized start is gone (the state's norm at "
        "initialisation is 0.74 after 10 steps and 51 after 5,000, against 40 and 2,300; the "
        "validation MSE is 0.188 at step 200), but the model stays at the no-memory level (best "
        "0.1695 at step 1,200) and dh_T/dh_1 = 3.7e-16: the state's entries are now of the size "
        "of the modReLU biases, 88 % of which are negative after training, and 29 % of the hidden "
        "outputs on four validation sequences are exactly 0 (0.08 % in `adding-t5000-lvf`), so no "
        "gradient crosses the sequence. The last state holds the latest value inputs only (R^2 "
        "0.49 at k = 1, 0.15 at 10, 0 from 100 on; capacity 4.9 of 128). Small inputs need the "
        "dead zone gone; |b| removes it but grows the state "
        "(`adding-t5000-lvf-centred-nonneg-bias`); `adding-t5000-lvf-small-input-nonneg-bias` "
        "combines the two"),
    "adding-t5000-lvf-small-input-nonneg-bias": (
        "`adding-t5000-lvf-small-input` with |b| as the modReLU bias, stopped by "
        "`--time-limit 1200` at 2,100 steps (one core, shared): at the no-memory level "
        "throughout (validation 0.196 at step 400, 0.18-0.19 from 1,200 on, best 0.1697 at "
        "2,100). The state's norm at initialisation is 0.96 after 10 steps and 238 after "
        "5,000 (the |b| drift), dh_T/dh_1 = 1.00, and the last state holds no linear trace "
        "of the inputs (capacity 0.12 of 128) or of the target: with the gradient reaching "
        "every step, the ungated lvfRNN still does not find the two marked values in these "
        "steps"),
    "adding-t5000-lstm": (
        "stopped by `--time-limit 900` at 2,450 of 10,000 steps (one core): at the no-memory "
        "level throughout (validation 0.171 to 0.173); dh_T/dh_1 is 0 in float32 and the last "
        "state holds the latest value input (R^2 1.00 at k = 1, 0 from k = 10 on; capacity "
        "2.0 of 68) and nothing of the target, as at T = 1000"),
    "adding-t10000-exprnn": (
        "stopped by `--time-limit 900` at 1,850 of 10,000 steps (one core), above the "
        "no-memory level: the validation MSE starts at 41 (step 100) and falls to 1.2 at "
        "1,000 and 0.61 at 1,700, as at T = 5000; dh_T/dh_1 = 5.5e-4. The last state holds "
        "a fading window of the value inputs (R^2 0.39 at k = 1, 0.25 at 10, 0.16 at 100, 0 "
        "at 1,000; capacity 51 of 170) and nothing of the target"),
    "adding-t10000-lvf": (
        "stopped by `--time-limit 900` at 2,900 of 10,000 steps (one core), far above the "
        "no-memory level: the validation MSE is 402 at step 100 and near 300 until step "
        "1,000, then falls to 19 at 1,300 and 6.5 at 2,900, as at T = 5000; dh_T/dh_1 = "
        "8.9e-4. The last state holds a short window of the value inputs (R^2 0.34 at k = 1, "
        "0.13 at 10, 0.05 at 100, 0 at 1,000; capacity 30 of 128) and nothing of the target"),
    "adding-t10000-lstm": (
        "stopped by `--time-limit 600` at 1,450 of 10,000 steps (one core): at the no-memory "
        "level throughout (validation 0.193 to 0.194, about 0.19 on these 256 sequences); "
        "dh_T/dh_1 is 0 in float32 and the last state holds the latest value inputs (R^2 "
        "1.00 at k = 1, 0.15 at 10, 0 from 100 on; capacity 3.0 of 68) and nothing of the "
        "target"),
}


def run_config(run: Run, *, steps: Optional[int] = None, time_limit: float = 0.0):
  """The config of ``run``: its preset with the run's length, batch, budget and segments."""
  c = load_config(run.config)
  for key, value in run.overrides:
    set_field(c, key, value)
  set_field(c, "task.options.T", run.T)
  c.train.batch_size = run.batch
  c.train.steps = int(steps or run.steps)
  c.train.eval_every = min(run.eval_every, c.train.steps)
  c.train.checkpoint_every = c.train.eval_every
  c.train.log_every = min(50, c.train.steps)
  c.train.eval_size = min(int(c.train.eval_size), 256)
  c.train.eval_batch_size = min(int(c.train.eval_batch_size), 64)
  c.model.segment_length = "auto"
  c.train.progress_bar = False
  c.train.tensorboard = False
  c.train.time_limit = float(time_limit)
  c.train.allow_resume_changes = True
  return c


def command(run: Run) -> str:
  return f"python -m experiments.long_memory --runs {run.id}"


def train_run(run: Run, workdir: str, *, steps: Optional[int] = None,
              time_limit: float = 0.0) -> dict:
  """Trains ``run`` in ``workdir/<id>`` (resuming) and writes its ``result.json``."""
  from lvf_jax import train  # pylint: disable=g-import-not-at-top
  run_dir = os.path.join(workdir, run.id)
  os.makedirs(run_dir, exist_ok=True)
  diverged = stopped = None
  try:
    summary = train.train_and_evaluate(run_config(run, steps=steps, time_limit=time_limit),
                                       run_dir)
  except train.NonFiniteLossError as e:  # a result too: where and how it failed
    print(f"long_memory: {run.id}: {e}")
    diverged = {"step": e.step, "loss": e.loss, "grad_norm": e.grad_norm}
    summary = {"steps": e.step, "parameters": None, "seconds_total": None}
  except train.StoppedBySignal as e:  # a partial result, as at a time limit; then stop
    stopped, summary = e, e.summary
  result = {
      "run": run.id, "config": run.config, "T": run.T, "batch": run.batch,
      "steps": summary["steps"], "budget": int(steps or run.steps),
      "parameters": summary["parameters"],
      "seconds": summary["seconds_total"],  # every part of the run that finished
      "machine": machine(), "commit": started_at_commit(),
      "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
      "command": command(run), "diverged": diverged,
  }
  result.update(reached(run_dir))
  result["gradient_reach"] = gradient_reach(run_dir)
  result["memory_probe"] = memory_probe(run_dir)
  write_result(run_dir, result)
  if stopped is not None:
    raise stopped
  return result


def _first_layer(run_dir: str):
  """``(cell, params, config, task)`` of the first layer at the run's best validation
  variables, or None before its first evaluation."""
  if not os.path.exists(os.path.join(run_dir, BEST_VARIABLES)):
    return None
  from lvf_jax import zoo  # pylint: disable=g-import-not-at-top
  from lvf_jax.train import builders  # pylint: disable=g-import-not-at-top
  model, variables, c = zoo.load_run(run_dir)
  return (model.cells[0], variables["params"]["rnn"]["layer_0"]["cell"], c,
          builders.build_pipeline(c).task)


def gradient_reach(run_dir: str, batch: int = 2) -> Optional[float]:
  """``||dh_T/dh_1||_F / ||dh_T/dh_T||_F`` of the first layer (mean over ``batch`` validation
  sequences) with the run's best validation variables; None before its first evaluation.

  ``dh_T/dh_T`` is the identity, so the ratio is ``||dh_T/dh_1||_F / sqrt(n)``: far below one,
  a gradient from the end of a sequence vanishes before it reaches the start.
  """
  layer = _first_layer(run_dir)
  if layer is None:
    return None
  from lvf_jax import diagnostics  # pylint: disable=g-import-not-at-top
  cell, params, _, task = layer
  norms = diagnostics.state_jacobian_norms(cell, params,
                                           task.fixed_split("validation", batch).inputs)
  return float(norms[0] / norms[-1])


def memory_probe(run_dir: str, batch: int = 4096, chunk: int = 256) -> Optional[dict]:
  """What the first layer's last state ``h_T`` holds on ``batch`` test sequences of an adding
  run, by held-out linear probes (:mod:`lvf_jax.diagnostics.probes`; half fit, half test).

  Returns ``{"capacity": sum_k m(k), "n": units, "target_r2": R^2 of the target (the sum of
  the two marked values), "lags": m(k) at k = 1, 10, 100, 1000}``, where ``m(k)`` is the
  memory curve of the value channel (Jaeger 2002: the sum is at most ``n`` for a linear
  state); None for a copy run or before the first evaluation.
  """
  layer = _first_layer(run_dir)
  if layer is None or layer[2].task.name != "adding":
    return None
  import jax  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from lvf_jax import diagnostics, layers  # pylint: disable=g-import-not-at-top
  cell, params, _, task = layer
  split = task.fixed_split("test", batch)
  scan = layers.Recurrent(cell, fused=True, return_sequences=False)  # the final carry only
  # the state is the carry itself or its last entry (the LSTM's (c, h))
  last = jax.jit(lambda x: jax.tree_util.tree_leaves(scan.apply({"params": {"cell": params}},
                                                                x))[-1])
  x = np.asarray(split.inputs)
  h = np.concatenate([np.asarray(last(x[i:i + chunk])) for i in range(0, len(x), chunk)])
  m = np.asarray(diagnostics.linear_memory_curve(h, x[..., 0]))
  r2 = diagnostics.linear_probe_r2(h, np.asarray(split.targets).reshape(len(x)))
  return {"capacity": float(m.sum()), "n": int(h.shape[-1]), "target_r2": float(r2),
          "lags": {str(k): float(m[k - 1]) for k in (1, 10, 100, 1000) if k <= len(m)}}


def reached(run_dir: str) -> dict:
  """The best validation metric, the first evaluated step below :data:`TARGET` (None if
  never) and the test metric at the best validation step, from the run's metrics."""
  records = MetricWriter.read(os.path.join(run_dir, "metrics.jsonl"))
  val = [r for r in records if r["split"] == "validation"]
  if not val:
    return {"best_validation": None, "reached_at": None, "test_at_best": None}
  best = min(val, key=lambda r: r["loss"])
  first = next((r["step"] for r in val if r["loss"] < TARGET), None)
  test = [r for r in records if r["split"] == "test" and r["step"] == best["step"]]
  return {"best_validation": best["loss"], "best_step": best["step"], "reached_at": first,
          "test_at_best": test[0]["loss"] if test else None}


def _fmt(x) -> str:
  return "" if x is None else f"{x:.3g}"


def _memory(probe: Optional[dict]) -> str:
  if not probe:
    return ""
  return (f"{probe['capacity']:.1f} of n = {probe['n']}; target R^2 "
          f"{max(probe['target_r2'], 0.0):.2f}")


def archived_results(workdir: str, path: str) -> dict:
  """The results of the page ``path``: those archived beside it
  (``results/long_memory.json``, :mod:`experiments.reproduce.archive`) merged with those
  under ``workdir`` that supersede them, saved back. ``{"runs": {run: {"result": ...} or
  {"page": {"line": ...}}}}``; ``"page"`` is a run's line as printed before its result was
  archived."""
  store = archive_lib.path_for(os.path.dirname(path), "long_memory")
  archive = archive_lib.load(store)
  entries = archive.setdefault("runs", {})
  for run_id in RUNS:
    r = read_result(os.path.join(workdir, run_id))
    if r is not None and archive_lib.supersedes(r, entries.get(run_id, {}).get("result")):
      entries.setdefault(run_id, {})["result"] = r
  archive_lib.save(store, archive)
  return archive


def report(workdir: str, path: str) -> str:
  """Writes the page of every run (run or not) from the runs under ``workdir`` and the
  archive beside the page (:func:`archived_results`) and returns its path."""
  entries = archived_results(workdir, path)["runs"]
  lines = [
      "# Memory tasks beyond the papers' lengths", "",
      "Generated by `python -m experiments.long_memory --report-only` from the runs' "
      "`result.json` (archived in `results/long_memory.json`). Target: validation cross "
      "entropy (copy) or mean squared error "
      f"(adding) below {TARGET:g}; 'reached at' is the first evaluated step below it. Every "
      "run uses `model.segment_length='auto'`; batch reduced from the presets where "
      "stated. 'dh_T/dh_1' is `||dh_T/dh_1||_F / ||dh_T/dh_T||_F` of the first layer at the "
      "best validation step on two validation sequences: the factor by which a gradient "
      "from the last state reaches the first step. 'h_T memory' (adding) is what the first "
      "layer's last state holds at the best validation step, by held-out linear probes on "
      "4,096 test sequences (`lvf_jax.diagnostics.linear_memory_curve`, half fit, half "
      "measure): the sum over lags k of the R^2 with which the value input k steps back is "
      "read (the linear memory capacity, at most n for a linear state; Jaeger 2002), and "
      "the R^2 with which the target itself is read (1: the answer is in the state; 0: "
      "nothing of it).", "",
      "| task | T | model | batch | steps | best validation | reached at | test at best "
      "validation | dh_T/dh_1 | h_T memory | wall time | machine | commit | command |",
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
  for run in RUNS.values():
    r = entries.get(run.id, {}).get("result")
    printed = entries.get(run.id, {}).get("page")
    if r is None and printed:
      lines.append(printed["line"])
      continue
    if r is None:
      lines.append(f"| {run.task} | {run.T} | {run.label} | {run.batch} | {run.steps} | "
                   f"not run yet | | | | | | | | `{command(run)}` |")
      continue
    steps = (f"{r['steps']}" if r["steps"] >= r["budget"] else
             f"{r['steps']} of {r['budget']}")
    hit = "not reached" if r["reached_at"] is None else str(r["reached_at"])
    if r.get("diverged"):
      d = r["diverged"]
      hit += (f"; **diverged** at step {d['step']} (loss {d['loss']:.3g}, gradient norm "
              f"{d['grad_norm']:.3g})")
    wall = "" if r["seconds"] is None else f"{r['seconds'] / 60:.1f} min"
    lines.append(
        f"| {run.task} | {run.T} | {run.label} | {run.batch} | {steps} | "
        f"{_fmt(r['best_validation'])} | {hit} | {_fmt(r['test_at_best'])} | "
        f"{_fmt(r.get('gradient_reach'))} | {_memory(r.get('memory_probe'))} | {wall} | "
        f"{r['machine']} | {r['commit']} | "
        f"`{r['command']}` |")
  notes = [f"- `{k}`: {v}" for k, v in NOTES.items() if entries.get(k)]
  if notes:
    lines += ["", "Notes:", ""] + notes
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
  return path


def main(argv=None) -> int:
  p = argparse.ArgumentParser(prog="python -m experiments.long_memory", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--runs", default="", help="comma-separated run ids (--list shows them)")
  p.add_argument("--all", action="store_true", help="every run, in the listed order")
  p.add_argument("--list", action="store_true")
  p.add_argument("--steps", type=int, default=0, help="steps per run (default: its budget)")
  p.add_argument("--time-limit", type=float, default=0.0,
                 help="seconds per run, after which it stops at its next log step")
  p.add_argument("--workdir", default=os.path.join(ROOT, "runs", "long_memory"))
  p.add_argument("--out", default=os.path.join(ROOT, "docs", "LONG_MEMORY.md"))
  p.add_argument("--report-only", action="store_true")
  p.add_argument("--probe", action="store_true",
                 help="measure what the last state holds (the 'h_T memory' column) for the "
                      "named runs that have a result, without training")
  args = p.parse_args(argv)
  if args.list:
    for run in RUNS.values():
      print(f"{run.id:24s} {run.config:18s} T={run.T} batch={run.batch} steps={run.steps}")
    return 0
  names = list(RUNS) if args.all else [s for s in args.runs.split(",") if s]
  unknown = [n for n in names if n not in RUNS]
  if unknown:
    raise SystemExit(f"unknown run(s) {unknown}; --list shows them.")
  stopped = None  # a run stopped by SIGTERM / SIGINT: the report is written, then exit
  if args.probe:
    for name in names:
      run_dir = os.path.join(args.workdir, name)
      done = read_result(run_dir)
      if done is None:
        print(f"long_memory: {name}: no result yet, nothing to probe")
        continue
      write_result(run_dir, {**done, "memory_probe": memory_probe(run_dir)})
      print(f"long_memory: {name}: {json.dumps(read_result(run_dir)['memory_probe'])}")
  elif not args.report_only:
    started_at_commit()  # the code this process imports now is the code that trains
    for name in names:
      done = read_result(os.path.join(args.workdir, name))
      if done is not None and done["steps"] >= (args.steps or RUNS[name].steps):
        print(f"long_memory: {name}: done ({done['steps']} steps), skipped")
        if "gradient_reach" not in done:  # a result from before the column existed
          run_dir = os.path.join(args.workdir, name)
          write_result(run_dir, {**done, "gradient_reach": gradient_reach(run_dir)})
        continue
      if done is not None and done.get("diverged"):  # deterministic: it would again
        print(f"long_memory: {name}: diverged at step {done['diverged']['step']}, skipped "
              f"(remove {os.path.join(args.workdir, name)} to train it again)")
        continue
      try:
        result = train_run(RUNS[name], args.workdir, steps=args.steps or None,
                           time_limit=args.time_limit)
      except StoppedBySignal as e:  # its partial result is written
        print(f"long_memory: {name}: {e}")
        stopped = e
        break
      print(f"long_memory: {name}: {json.dumps(result)}")
  print(f"long_memory: wrote {report(args.workdir, args.out)}")
  return 0 if stopped is None else stopped.exit_status


if __name__ == "__main__":
  sys.exit(main())
