"""Smoke tests of the benchmark scripts on tiny shapes (they must keep running; no timing
is asserted)."""

import json
import os
import shlex
import sys
import time

import matplotlib.image
import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))

import cells as cells_bench  # noqa: E402
import timing  # noqa: E402
import tolerances as tol  # noqa: E402


def test_cells_benchmark_writes_every_requested_row(tmp_path):
  out = tmp_path / "cells.md"
  rc = cells_bench.main(["--cells", "antisymmetric", "gru", "--n", "8", "--T", "4", "--batch", "2",
                         "--repeats", "1", "--warmup", "0", "--fused", "--explain",
                         "--out", str(out)])
  assert rc == 0
  text, summary = out.read_text().split("layer / floor (")
  assert "fused=True" in text and "| antisymmetric |" in summary and "| gru |" in summary
  rows = [r for r in text.splitlines() if r.startswith("| ") and "---" not in r][1:]
  labels = [r.split("|")[1].strip() for r in rows]
  assert labels == ["antisymmetric", "gru", "products x 1", "products x 3"]
  for row in rows[:2]:
    # Both cells have a prepare (W - W^T - gamma I; the concatenated GRU kernels) and both
    # paths were timed: every column is a number.
    cols = [c.strip() for c in row.split("|")[1:-1]]
    assert all(c not in ("", "-") for c in cols[4:]), cols


@pytest.mark.slow  # the summary's use of the state-width row is checked without timing below
def test_cells_benchmark_adds_the_state_width_floor_for_complex_cells(tmp_path):
  out = tmp_path / "cells.md"
  assert cells_bench.main(["--cells", "urnn", "goru", "--n", "4", "--T", "3", "--batch", "2",
                           "--repeats", "1", "--warmup", "0", "--paths", "layer",
                           "--out", str(out)]) == 0
  text = out.read_text().split("layer / floor (")[0]  # the per-setting rows, not the summary
  rows = [r for r in text.splitlines() if r.startswith("| ") and "---" not in r][1:]
  assert [r.split("|")[1].strip() for r in rows] == ["urnn", "goru",
                                                     "rnn at n = 8 (state width)"]


def test_cells_interleaved_timing_of_prepare_and_product_floor():
  from flax import linen as nn

  from lvf_jax import cells
  entries = {"prepare": cells_bench.prepare_step(cells.make_cell("scornn", 6), 3),
             "floor": cells_bench.product_floor(6, 4, 2, 3)}
  res = timing.time_interleaved(entries, 3, 1)
  for t in res.values():
    assert len(t.seconds) == 3 and 0 < t.min_ms <= t.median_ms and t.faults_per_call >= 0
  assert cells_bench.prepare_step(nn.OptimizedLSTMCell(6), 3) is None


def test_timing_budget_stops_every_entry_after_the_same_repetition():
  calls = {"a": 0, "b": 0}

  def slow(key):
    def fn(state):
      calls[key] += 1
      time.sleep(0.02)
      return state
    return fn

  res = timing.time_interleaved({"a": (slow("a"), None), "b": (slow("b"), None)}, 50, 0,
                                budget_s=0.05)
  assert 1 <= len(res["a"].seconds) == len(res["b"].seconds) < 50
  assert calls["a"] == calls["b"] == len(res["a"].seconds)


def test_cells_summary_divides_each_cell_by_its_own_floor():
  medians = {(4, 3, 2): {"rnn": 2.0, "antisymmetric": 2.2, "gru": 6.0, "products x 3": 3.0,
                         "urnn": 8.0, "rnn at n = 8 (state width)": 4.0,
                         "gated_antisymmetric": 3.0, "products x 2": 2.5},
             (4, 3, 5): {"rnn": 1.0, "gru": 5.0}}  # no products floor measured here
  text = cells_bench.summary(medians)
  plain, own = text.split("layer / own floor")
  assert "| cell | 4 / 3 / 2 | 4 / 3 / 5 |" in plain
  assert "| antisymmetric | 1.10 | - |" in plain and "| antisymmetric | 1.10 | - |" in own
  assert "| gru | 3.00 | 5.00 |" in plain and "| gru | 2.00 | 5.00 |" in own
  assert "| urnn | 4.00 | - |" in plain and "| urnn | 2.00 | - |" in own
  assert ("| gated_antisymmetric | 1.50 | - |" in plain
          and "| gated_antisymmetric | 1.20 | - |" in own)
  assert "products" not in plain.split("|---|")[1] and "| rnn |" not in text


def test_cells_benchmark_keeps_finished_settings_when_a_later_one_fails(tmp_path, monkeypatch):
  calls = []

  def fake_timing(entries, repeats, warmup):
    calls.append(len(calls))
    if len(calls) == 2:
      raise RuntimeError("killed in the second setting")
    return {k: timing.Timing([1e-3 * (1 + i)], 0.0) for i, k in enumerate(entries)}

  monkeypatch.setattr(cells_bench, "time_interleaved", fake_timing)
  out = tmp_path / "cells.md"
  with pytest.raises(RuntimeError, match="second setting"):
    cells_bench.main(["--cells", "antisymmetric", "--n", "4", "--T", "2", "--batch", "2", "3",
                      "--repeats", "1", "--paths", "layer", "--out", str(out)])
  text = out.read_text()
  assert "| antisymmetric | 4 | 2 | 2 |" in text and "| 4 | 2 | 3 |" not in text
  assert "| antisymmetric | 2.00 |" in text  # its summary: 2 ms / the floor's 1 ms


@pytest.mark.slow
def test_cells_benchmark_times_the_fft_variants_where_n_is_a_power_of_two(tmp_path,
                                                                          monkeypatch):
  assert cells_bench.build("eurnn_fft", 8).fft and cells_bench.build("goru_fft", 8).fft
  assert not cells_bench.build("eurnn", 8).fft
  monkeypatch.setattr(cells_bench, "time_interleaved", lambda entries, repeats, warmup: {
      k: timing.Timing([1e-3 * (1 + i)], 0.0) for i, k in enumerate(entries)})
  out = tmp_path / "cells.md"
  assert cells_bench.main(["--cells", "eurnn_fft", "goru_fft", "nnrnn", "--n", "6", "4",
                           "--T", "2", "--batch", "2", "--repeats", "1", "--paths", "layer",
                           "--explain", "--out", str(out)]) == 0
  rows = out.read_text().split("layer / floor (")[0]
  for name in ("eurnn_fft", "goru_fft"):
    assert f"| {name} | 4 | 2 | 2 |" in rows and f"| {name} | 6 |" not in rows
  assert "| nnrnn | 6 | 2 | 2 |" in rows and "| nnrnn | 4 | 2 | 2 |" in rows  # n even
  own = out.read_text().split("layer / own floor")[1]
  assert "| eurnn_fft | - | " in own and "| goru_fft | - | " in own  # not run at n = 6


def test_cells_benchmark_rejects_unknown_cell():
  with pytest.raises(SystemExit):
    cells_bench.main(["--cells", "transformer"])


def test_timing_rotates_the_order_so_no_entry_is_always_first():
  order = []

  def record(key):
    def fn(state):
      order.append(key)
      return state
    return fn

  timing.time_interleaved({k: (record(k), None) for k in "abc"}, 3, 0)
  assert [order[i * 3] for i in range(3)] == ["a", "b", "c"]
  assert sorted(order) == sorted("abc" * 3)


def test_input_projection_variants_train_the_same_model_and_the_script_runs(tmp_path):
  import jax
  import numpy as np
  import input_projection
  entries = input_projection.variants("exprnn", 8, 2, 4, 3)
  assert set(entries) == set(input_projection.MODES)
  # One SGD step from the same parameters lands on the same parameters in both modes.
  new = {m: fn(state) for m, (fn, state) in entries.items()}
  start = entries["hoisted"][1]
  moved = jax.tree_util.tree_map(lambda a, b: float(np.max(np.abs(a - b))), new["hoisted"], start)
  assert max(jax.tree_util.tree_leaves(moved)) > 0
  # p - lr g at lr 1e-3: a few float32 roundings of p, plus lr times the gradients' float32
  # difference (F32_GRAD, 2e-4 of |g|), both within F32
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F32),
                         new["in_loop"], new["hoisted"])
  out = tmp_path / "proj.md"
  assert input_projection.main(["--cells", "rnn", "--n", "8", "--d", "1", "3", "--T", "3",
                                "--batch", "2", "--repeats", "1", "--warmup", "0",
                                "--out", str(out)]) == 0
  rows = [r for r in out.read_text().splitlines() if r.startswith("| rnn |")]
  assert [r.split("|")[3].strip() for r in rows] == ["1", "3"]


def test_expm_script_runs_and_reports_the_squarings_it_uses(capsys):
  import numpy as np
  import expm as expm_bench
  a = expm_bench.random_skew(6, 30.0)
  np.testing.assert_allclose(a, -a.T)
  np.testing.assert_allclose(np.abs(a).sum(axis=0).max(), 30.0)
  assert expm_bench.main(["--n", "6", "--norms", "0.5", "30", "--init", "--repeats", "2",
                          "--warmup", "1"]) == 0
  rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| 6 |")]
  assert [r.split("|")[2].strip() for r in rows] == ["random skew", "random skew", "exprnn init"]
  counts = [int(r.split("|")[5]) for r in rows]
  assert counts[0] == 0 and 1 <= counts[1] <= 4  # alpha_3 <= the 1-norm (4 squarings)
  with pytest.raises(SystemExit):
    expm_bench.main(["--n", "0"])


def test_expm_script_ablates_the_stored_barrier(tmp_path):
  import jax
  import jax.numpy as jnp
  import numpy as np
  import expm as expm_bench
  from lvf_jax import geometry
  from lvf_jax.geometry import maps
  a = jnp.asarray(expm_bench.random_skew(5, 30.0), jnp.float32)
  grad = jax.grad(lambda m: jnp.sum(geometry.expm_taylor(m) ** 3))

  def loops(fn):
    return str(jax.make_jaxpr(fn)(a)).count("while[")

  with expm_bench.stored_removed():
    without = loops(grad)
    plain = grad(a)
  assert loops(grad) == without + 1 and maps.stored is geometry._util.stored  # restored
  np.testing.assert_allclose(plain, grad(a), **tol.F32)
  out = tmp_path / "expm.json"
  assert expm_bench.main(["--n", "5", "--norms", "3", "--ablate-stored", "--repeats", "2",
                          "--warmup", "1", "--json", str(out)]) == 0
  record = json.loads(out.read_text())
  assert [r["barrier"] for r in record["rows"]] == ["stored", "identity"]
  assert all(r["ms"] > 0 for r in record["rows"]) and "--ablate-stored" in record["command"]


@pytest.mark.slow
def test_loop_overhead_script_reports_every_variant(capsys):
  import loop_overhead
  assert loop_overhead.main(["--short", "2", "--long", "3", "--repeats", "1"]) == 0
  out = capsys.readouterr().out
  rows = [r for r in out.splitlines() if r.startswith("| ") and "---" not in r][1:]
  assert [r.split("|")[1].strip() for r in rows] == [
      "bare step", "train_and_evaluate", "train_and_evaluate, demo eval cadence"]
  assert float(rows[0].split("|")[3]) == 1.0


def test_scaling_benchmark_measures_each_setting_and_fits_a_line(tmp_path):
  import scaling  # pylint: disable=g-import-not-at-top
  out = tmp_path / "scaling.md"
  scaling.main(["--cell", "rnn", "--n", "4", "--batch", "2", "--T", "5", "20", "--repeats",
                "1", "--out", str(out)])
  text = out.read_text()
  rows = [r for r in text.splitlines() if r.startswith("| 4 |")]
  assert len(rows) == 2 and all("failed" not in r for r in rows), text
  assert "n=4 batch=2 remat=False: ms = " in text
  a, b = scaling.fit_linear([10, 20, 30], [3.0, 5.0, 7.0])
  assert (round(a, 6), round(b, 6)) == (1.0, 0.2)


def test_scaling_benchmark_segments_json_and_plot(tmp_path):
  import scaling  # pylint: disable=g-import-not-at-top
  log, png = tmp_path / "s.jsonl", tmp_path / "s.png"
  scaling.main(["--cell", "rnn", "--n", "4", "--batch", "2", "--T", "6", "30", "--repeats",
                "1", "--segment", "auto", "4", "--no-plain", "--json", str(log), "--plot",
                str(png)])
  rows = [json.loads(l) for l in log.read_text().splitlines()]
  assert [(r["segment"], r["T"]) for r in rows] == [("auto", 6), ("auto", 30), (4, 6), (4, 30)]
  assert all(r["ms"] > 0 for r in rows)
  image = matplotlib.image.imread(png)
  assert image.shape[0] > 100 and float(np.std(image[..., :3])) > 0.01
  scaling.main(["--T", "--json", str(log), "--plot", str(tmp_path / "again.png")])
  assert (tmp_path / "again.png").stat().st_size > 1000


def test_flax_idioms_benchmark_writes_records_and_its_verdict_can_fail(tmp_path):
  import flax_idioms
  out, records = tmp_path / "idioms.md", tmp_path / "idioms.json"
  assert flax_idioms.main(["--cells", "exprnn", "lstm", "--n", "6", "--batch", "2",
                           "--enc-steps", "3", "--dec-steps", "2", "--vocab", "4",
                           "--repeats", "1", "--warmup", "0", "--out", str(out),
                           "--json", str(records)]) == 0
  data = json.loads(records.read_text())
  assert set(data["cells"]) == {"exprnn", "lstm"}
  for rec in data["cells"].values():
    assert set(rec["ms"]) >= {"nn.RNN", "prepared", "Recurrent", "step only", "floor",
                              "prepare"}
    assert rec["budget"] == pytest.approx(rec["ms"]["step only"] + 2 * rec["ms"]["prepare"])
  command = out.read_text().split("Command: ")[1].splitlines()[0]
  assert "| exprnn | 6 |" in out.read_text() and "python benchmarks/flax_idioms.py" in command
  flags = os.environ.get("XLA_FLAGS")  # the XLA flags it ran under lead the command
  assert command.startswith(f"XLA_FLAGS={shlex.quote(flags)} python") if flags else \
      command.startswith("python")
  ok = flax_idioms.verdict({"prepared": 10.0, "step only": 6.0, "prepare": 2.0})
  late = flax_idioms.verdict({"prepared": 12.0, "step only": 6.0, "prepare": 2.0})
  assert ok["within"] and not late["within"] and late["prepared / budget"] == pytest.approx(1.2)
  doc = tmp_path / "page.md"
  assert flax_idioms.main(["--page", str(records), "--doc", str(doc)]) == 0
  text = doc.read_text()
  assert "| exprnn | 6 |" in text and data["meta"].splitlines()[0] in text
  assert f"CPU: {data['cpu']}." in text


def test_median_interval_is_the_binomial_order_statistic_interval():
  from scipy import stats
  from timing import median_interval
  for m in range(6, 41):
    values = [float(v) for v in np.random.default_rng(m).permutation(m)]  # order statistic i: i
    k = max(j for j in range(1, m // 2 + 1) if 2 * stats.binom.cdf(j - 1, m, 0.5) <= 0.05)
    assert median_interval(values) == (np.median(values), k - 1, m - k)
  assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # 2 / 2^5 > 5 %: no interval


def test_a_recorded_command_can_be_pasted_into_a_shell():
  line = timing.command_line("benchmarks/x.py", ["--forms", "step only", "prepared"])
  assert line == "python benchmarks/x.py --forms 'step only' prepared"
  assert shlex.split(line)[2:] == ["--forms", "step only", "prepared"]


def test_flax_idioms_cell_options_replace_attributes_and_name_what_is_allowed():
  import flax_idioms
  options = flax_idioms.cell_options(["orthogonal_param=matrix", "delta=0.0"])
  assert options == {"orthogonal_param": "matrix", "delta": 0.0}
  cell = flax_idioms.factory("nnrnn", 6, options)()
  assert cell.orthogonal_param == "matrix" and cell.delta == 0.0
  assert flax_idioms.factory("nnrnn", 6)().orthogonal_param == "skew"
  with pytest.raises(ValueError, match="not an attribute of NNRNNCell.*allowed: .*delta"):
    flax_idioms.factory("nnrnn", 6, {"nonsense": 1})
  with pytest.raises(ValueError, match="KEY=VALUE"):
    flax_idioms.cell_options(["delta"])


def test_flax_idioms_paired_verdict_says_within_over_and_undecided():
  import flax_idioms
  def seconds(prepared):
    return {"prepared": prepared, "step only": [0.6] * len(prepared),
            "prepare": [0.2] * len(prepared)}
  within = flax_idioms.paired_verdict(seconds([1.0 + 0.001 * i for i in range(11)]))["paired"]
  assert within["verdict"] == "within" and within["median"] == pytest.approx(1.005)
  assert within["low"] == pytest.approx(1.001) and within["high"] == pytest.approx(1.009)
  assert flax_idioms.paired_verdict(seconds([1.2] * 11))["paired"]["verdict"] == "over"
  mixed = flax_idioms.paired_verdict(seconds([1.0, 1.2] * 6))["paired"]
  assert mixed["verdict"] == "undecided" and mixed["low"] < 1.1 < mixed["high"]
  few = flax_idioms.paired_verdict(seconds([1.0] * 3))["paired"]
  assert few == {"repetitions": 3, "verdict": "undecided"}
  assert flax_idioms.paired_verdict({"prepared": [1.0]}) == {}


def test_the_flax_idioms_page_reads_every_number_from_the_record():
  import flax_idioms
  ms = lambda prepared: {"nn.RNN": 40.0, "prepared": prepared, "Recurrent": 20.0,  # noqa: E731
                         "step only": 6.0, "prepare": 2.0, "floor": 5.0}
  cells = {}
  for name, prepared, median in (("exprnn", 10.0, 10.0), ("nnrnn", 13.2, 10.5)):
    cells[name] = {"state_width": 8, "ms": ms(prepared), "median_ms": ms(median),
                   **flax_idioms.verdict(ms(prepared))}
  cells["exprnn"]["paired"] = {"median": 1.01, "low": 0.98, "high": 1.04, "repetitions": 11,
                               "verdict": "within"}
  cells["nnrnn"]["paired"] = {"median": 1.21, "low": 1.15, "high": 1.3, "repetitions": 11,
                              "verdict": "over"}
  text = flax_idioms.page({"meta": "Measured here", "cpu": "Some CPU", "slack": 1.1,
                           "cells": cells})
  assert ("By each repetition's own ratio (its median and 95 % interval): 1 of the 2 cells "
          "within; over: nnrnn 1.21 (1.15-1.30); undecided: none.") in text
  assert "| 1.21 (1.15-1.30) | over |" in text and "| 1.01 (0.98-1.04) | within |" in text
  assert "1 of the 2 cells are within 1.1x their budget; past it: nnrnn 1.32." in text
  assert "the expRNN costs 8x the tanh floor; prepared, 1.00 of its budget" in text
  assert "`prepared` takes 0.50-0.66 of the time of `Recurrent` (2 of 2 cells faster)" in text
  assert "medians of the same iterations instead of the minima: 2 of 2 within; past it: none" \
      in text
  other = {"meta": "Measured then on cpu, commit abc1234, more\nCommand: python "
                   "benchmarks/flax_idioms.py --cells nnrnn", "cpu": "Some CPU",
           "cells": {"nnrnn": cells["nnrnn"]}}
  text = flax_idioms.page({"meta": "Measured here", "cpu": "Some CPU", "slack": 1.1,
                           "cells": cells}, (other,))
  assert ("- Measured then, commit abc1234, CPU Some CPU, `python benchmarks/flax_idioms.py "
          "--cells nnrnn`: By each repetition's own ratio (its median and 95 % interval): 0 of "
          "the 1 cells within; over: nnrnn 1.21 (1.15-1.30); undecided: none. By the fastest "
          "iterations: 0 of 1 within; past it: nnrnn 1.32.") in text
  other["cells"] = {"exprnn": cells["exprnn"]}
  assert ("1 of the 1 cells within (exprnn 1.01 (0.98-1.04)); over: none" in flax_idioms.page(
              {"meta": "Measured here", "cpu": "Some CPU", "slack": 1.1, "cells": cells},
              (other,)))


def test_docs_flax_idioms_page_is_the_page_of_its_records():
  import flax_idioms
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  records = [json.load(open(os.path.join(root, path))) for path in flax_idioms.RECORDS]
  with open(os.path.join(root, "docs", "FLAX_IDIOMS.md")) as f:
    assert f.read() == flax_idioms.page(records[0], tuple(records[1:]))


def test_the_nnx_step_benchmark_times_both_fronts(tmp_path):
  import nnx_step  # pylint: disable=g-import-not-at-top
  out = tmp_path / "nnx.md"
  nnx_step.main(["--cells", "exprnn", "lstm", "--n", "4", "--T", "3", "--batch", "2",
                 "--repeats", "2", "--out", str(out)])
  rows = [line for line in out.read_text().splitlines() if line.startswith("| exprnn")
          or line.startswith("| lstm")]
  assert len(rows) == 2
  for row in rows:
    linen, nnx_ms, ratio = (float(v) for v in row.strip("| ").split(" | ")[1:])
    # each printed to two decimals: the unrounded values lie within half a unit (0.005), so
    # the printed ratio lies between the smallest and largest ratios those intervals allow
    h = 0.005
    assert linen > 0 and nnx_ms > 0 and ratio > 0
    lowest = (nnx_ms - h) / (linen + h)
    highest = (nnx_ms + h) / (linen - h) if linen > h else float("inf")
    assert lowest - h <= ratio <= highest + h
