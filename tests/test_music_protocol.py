"""Tests of experiments/music_protocol.py and the music floors of
experiments/reproduce/floors.py: their averages and floors against plain NumPy."""

import math
import os

import numpy as np
import pytest

from experiments import music_protocol as mp
from experiments.reproduce import floors


def _rolls(seed, lengths, density=0.1):
  rng = np.random.default_rng(seed)
  return [(rng.random((n, 88)) < density).astype(np.uint8) for n in lengths]


def _nll(p, y):
  """Per-frame NLL by an explicit loop over keys, independent of the script's vectorised one."""
  out = []
  for t in range(y.shape[0]):
    total = 0.0
    for k in range(88):
      q = min(max(float(p[t][k]), floors.EPS), 1 - floors.EPS)
      total -= math.log(q) if y[t, k] else math.log(1 - q)
    out.append(total)
  return np.array(out)


def _reference_markov(train, pieces):
  on_on, off_on = np.zeros(88), np.zeros(88)
  for k in range(88):
    prev = np.concatenate([r[:-1, k] for r in train]).astype(int)
    nxt = np.concatenate([r[1:, k] for r in train]).astype(int)
    on_on[k] = (np.sum((prev == 1) & (nxt == 1)) + 1) / (np.sum(prev == 1) + 2)
    off_on[k] = (np.sum((prev == 0) & (nxt == 1)) + 1) / (np.sum(prev == 0) + 2)
  return [_nll(np.where(r[:-1] == 1, on_on, off_on), r[1:]) for r in pieces]


def _reference_averages(per_piece):
  flat = [v for piece in per_piece for v in piece]
  return (sum(flat) / len(flat), float(np.mean([np.mean(p) for p in per_piece])),
          float(np.mean([np.sum(p) for p in per_piece])))


def test_averages_against_numpy():
  pieces = [np.array([1.0, 2.0, 3.0]), np.array([10.0])]
  a = mp.averages(pieces)
  assert a["frame_weighted"] == pytest.approx(16.0 / 4)
  assert a["per_piece"] == pytest.approx((2.0 + 10.0) / 2)
  assert a["summed_per_piece"] == pytest.approx((6.0 + 10.0) / 2)


@pytest.mark.parametrize("floor", ["bernoulli", "markov"])
def test_floors_under_both_averages(floor):
  train = _rolls(0, [12, 30, 7])
  test = _rolls(1, [5, 40, 9, 2], density=0.15)
  if floor == "bernoulli":
    p = np.concatenate([r[1:] for r in train]).mean(axis=0)
    ref = [_nll(np.tile(p, (len(r) - 1, 1)), r[1:]) for r in test]
    got = floors.bernoulli_frame_nll(train, test)
  else:
    ref = _reference_markov(train, test)
    got = floors.markov_frame_nll(train, test)
  for g, r in zip(got, ref):
    np.testing.assert_allclose(g, r, rtol=1e-10)  # float64 sums of <= 88 x 40 terms: 1e-13
  fw, pp, summed = _reference_averages(ref)
  a = mp.averages(got)
  assert a["frame_weighted"] == pytest.approx(fw, rel=1e-10)
  assert a["per_piece"] == pytest.approx(pp, rel=1e-10)
  assert a["summed_per_piece"] == pytest.approx(summed, rel=1e-10)
  assert a["frame_weighted"] != pytest.approx(a["per_piece"], rel=1e-6)


def test_split_stats_counts():
  rolls = _rolls(2, [3, 6])
  rolls[0][1] = rolls[0][0]
  rolls[1][3] = 0
  s = mp.split_stats(rolls)
  assert (s["pieces"], s["frames"], s["predicted_frames"]) == (2, 9, 7)
  assert s["notes_per_frame"] == pytest.approx(np.concatenate(rolls).sum() / 9)
  repeats = sum(int((r[t] == r[t - 1]).all()) for r in rolls for t in range(1, len(r)))
  assert s["repeated_frame_share"] == pytest.approx(repeats / 7)
  assert s["longest_tenth_frame_share"] == pytest.approx(5 / 7)


def test_page_renders_from_stored_records():
  if not os.path.exists(mp.RESULTS):
    pytest.skip("no stored records")
  value = mp.load()
  value["rows"] = mp.t3_rows()
  page = mp.render(value)
  assert "## Conclusion" in page and "| musedata | test | markov |" in page


def test_real_data_floor_matches_harness():
  data_dir = os.environ.get("LVF_JAX_DATA_DIR", "")
  if not data_dir or not os.path.isdir(os.path.join(data_dir, "polyphonic")):
    pytest.skip("no music data (set LVF_JAX_DATA_DIR)")
  from lvf_jax.data import readers  # pylint: disable=g-import-not-at-top
  rolls = readers.read_music(readers.music_source_file(data_dir, "jsb"))
  got = mp.measure_set(rolls)
  assert got["splits"]["train"]["pieces"] == 229
  for model, frame_nll in (("markov", floors.markov_frame_nll),
                           ("bernoulli", floors.bernoulli_frame_nll)):
    harness = floors.averages(frame_nll(rolls["train"], rolls["test"]))
    assert got["floors"]["test"][model]["frame_weighted"] == pytest.approx(
        harness["frame_weighted"], rel=1e-9)


@pytest.mark.parametrize("ours,want", [(7.0, "meets"), (7.3, "misses"), (6.7, "beats")])
def test_calibration_judges_our_rnn_against_each_published_rnn(ours, want):
  rows = {"musedata-rnn": {"seeds": [{"test_loss": ours}]}}
  lines = mp.calibration_lines(rows)
  published = mp.PUBLISHED["pascanu2013"]["values"]
  assert len(lines) == 2 + len(published)
  line = next(l for l in lines if l.startswith("| RNN (MSGD+C) |"))
  cells = [c.strip() for c in line.strip("|").split("|")]
  theirs = published[("musedata", "RNN (MSGD+C)")]
  assert float(cells[2]) == pytest.approx(0.015 * theirs, abs=5e-4)  # 1.5 % of their NLL
  assert float(cells[4]) == pytest.approx(ours - theirs, abs=5e-4) and cells[5] == want
  lvf_rnn = mp.PUBLISHED["lvf-t3"]["values"][("musedata", "RNN")]
  assert float(cells[6]) == pytest.approx(lvf_rnn - theirs, abs=5e-3)
  unrun = mp.calibration_lines({"musedata-rnn": {"seeds": []}})
  assert all("not run" in l for l in unrun[2:])


def _seed(steps=100, budget=100, best=50, val_best=7.0, val_last=7.0, **metrics):
  return {"seed": 0, "steps": steps, "budget": budget, "best": best, "val_best": val_best,
          "val_last": val_last, "min_train": None, **metrics}


@pytest.mark.parametrize("seed,want", [
    (_seed(steps=60), "partial"),
    (_seed(best=int(100 * mp.LATE_BEST)), "still improving at the end"),
    (_seed(best=int(100 * mp.EARLY_BEST), val_last=7.5), "best early, worse after"),
    (_seed(best=int(100 * mp.EARLY_BEST)), "best mid-budget"),  # early, but no rise after
    (_seed(best=int(100 * mp.EARLY_BEST) + 1, val_last=7.5), "best mid-budget"),
    (_seed(best=None), "—"),
])
def test_training_reading(seed, want):
  assert mp.training_reading(seed) == want


def _row(model, paper, frame, piece, **seed):
  return {"set": "musedata", "model": model, "paper": paper, "steps": 100, "planned": 1,
          "seeds": [_seed(test_loss=frame, test_nll_per_sequence=piece, **seed)]}


def test_the_sentences_about_the_records_follow_the_records():
  rows = {"musedata-rnn": _row("RNN", 6.0, 7.0, 6.5),  # gap 1.0 -> 0.5: closer
          "musedata-urnn": _row("uRNN", 6.0, 6.5, 6.8, steps=10),  # 0.5 -> 0.8, partial
          "musedata-lvf": _row("lvfRNN", 6.0, 7.0, 6.05),  # 1.0 -> 0.05: 95 % removed
          "jsb-rnn": {**_row("RNN", 8.0, 9.0, 9.0), "set": "jsb"}}
  text = mp.averages_sentence(rows)
  assert "2 of the 3 MuseData rows" in text and "uRNN +0.500 to +0.800" in text
  assert "removes 95% of the lvfRNN's" in text
  tol = mp.verdict_lib.tolerance("test_nll_per_sequence", [6.05], 6.0,
                                 mp.verdict_lib.LOG_LIKELIHOOD)
  assert ("lvfRNN's per-piece mean meets the paper" in text) == (0.05 <= tol)
  below = mp.averages_sentence({"musedata-lvf": _row("lvfRNN", 6.0, 5.0, 4.0)})
  assert "removes" not in below and "per-piece mean is below the paper" in below
  assert mp.open_sentence(rows) == ("Short of their budget: `musedata-urnn` (their page gives "
                                    "the hours left).")
  del rows["musedata-urnn"]
  assert mp.open_sentence(rows).startswith("Every MuseData row")
  assert mp.training_sentence(rows) == "best mid-budget: RNN, lvfRNN"
  assert "{" not in mp.conclusion(rows)


def test_t3_rows_take_the_paper_values_the_citations_give():
  if not os.path.exists(mp.T3_RECORDS):
    pytest.skip("no stored records")
  rows = mp.t3_rows()
  muse = [r for r in rows if r.startswith("musedata-")]
  assert len(muse) > 3 and set(mp.JSB_ROWS) <= set(rows)
  cited = mp.PUBLISHED["lvf-t3"]["values"]
  for row, r in rows.items():
    if (r["set"], r["model"]) in cited:
      assert r["paper"] == cited[(r["set"], r["model"])], row
  assert sum((r["set"], r["model"]) in cited for r in rows.values()) >= 6
