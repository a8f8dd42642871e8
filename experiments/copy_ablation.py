"""Which of ``copy.py:lvf_separate``'s changes Table 5's lvfRNN needs on copy T = 200.

Azencot et al. 2021 (arXiv:2102.09589), Table 5, trains copy with the midpoint map at
``tau = 15``, Adam 1e-4 and no penalty (``configs/copy.py:lvf_literal``); it diverges here
(``docs/LVF_DIVERGENCE.md``). ``configs/copy.py:lvf_separate`` reaches the paper with its
divergence free and five changes at once (``experiments.reproduce.tables.lvf.COPY_CHANGES``).
The rows ``copy-lvf-abl-<change>`` add each change alone to Table 5 as printed, the rows
``copy-lvf-abl-no-<change>`` take it out of the full preset; each runs 3 seeds of 10,000
steps through the harness::

    python -m experiments.reproduce lvf-t4 --rows copy-lvf-abl-lr --seed 0   # resumable

and records the test accuracy at the best validation step, the validation accuracy at the
last step and ``||div V||`` of the trained field. ``python -m experiments.copy_ablation``
writes ``docs/COPY_ABLATION.md`` from the harness's records of table lvf-t4 alone.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from experiments.reproduce import archive, provenance, rows, runner
from experiments.reproduce.tables.lvf import COPY_CHANGES

PAGE = os.path.join(provenance.ROOT, "docs", "COPY_ABLATION.md")
ARCHIVE = archive.path_for(os.path.join(provenance.ROOT, "docs", "reproduction"), "lvf-t4")
REFERENCES = (("copy-lvf-literal", "Table 5 as printed (`copy.py:lvf_literal`)"),
              ("copy-lvf-separate-rates", "every change (`copy.py:lvf_separate`)"))
REACHES = ("meets", "beats")


def seeds_of(stored: dict, row_id: str) -> list[dict]:
  """The per-seed records of ``row_id`` (empty without any)."""
  return list(stored.get(row_id, {}).get("seeds", {}).values())


def _mean(values: list) -> str:
  values = [v for v in values if v is not None]
  return f"{np.mean(values):.4g}" if values else "—"


def summary(stored: dict, row_id: str) -> dict:
  """A row's seeds, steps, means (test accuracy at the best validation step, validation
  accuracy at the last step, ``||div V||``) and verdict; ``{}`` without a record."""
  seeds = seeds_of(stored, row_id)
  if not seeds:
    return {}
  finished = [r for r in seeds if not r.get("diverged_at")]
  last = [100 * ((r.get("last") or {}).get("metrics") or {}).get("val_accuracy", np.nan)
          for r in finished]
  return {"seeds": len(seeds), "diverged": len(seeds) - len(finished),
          "steps": min(int(r["steps"]) for r in seeds),
          "best": _mean([r["metrics"].get("test_accuracy") for r in finished]),
          "last": _mean([x for x in last if np.isfinite(x)]),
          "div": _mean([(r.get("diagnostics") or {}).get("field_divergence")
                        for r in finished]),
          "verdict": runner.judge_row(rows.get("lvf-t4").row(row_id), seeds).category}


def cells(s: dict) -> str:
  if not s:
    return "not run | | | |"
  runs = f"{s['seeds']} ({s['diverged']} diverged)" if s["diverged"] else str(s["seeds"])
  return (f"{runs}, {s['steps']:,} steps | {s['best']} | {s['last']} | {s['div']} | "
          f"{s['verdict']}")


HEADER = ("| seeds | test accuracy % (best validation) | validation accuracy % (last step) | "
          "‖div V‖ | verdict |")


def table_lines(stored: dict) -> list[str]:
  """The references, then each change alone and the preset without it."""
  out = [f"| run {HEADER}", "|---|---|---|---|---|---|"]
  out += [f"| {what}: `{rid}` | {cells(summary(stored, rid))} |" for rid, what in REFERENCES]
  for key, change, _, _ in COPY_CHANGES:
    out.append(f"| + {change} alone: `copy-lvf-abl-{key}` | "
               f"{cells(summary(stored, f'copy-lvf-abl-{key}'))} |")
    out.append(f"| all but {change}: `copy-lvf-abl-no-{key}` | "
               f"{cells(summary(stored, f'copy-lvf-abl-no-{key}'))} |")
  return out


def finding_lines(stored: dict) -> list[str]:
  """What the verdicts say, for rows with all their seeds at the full budget."""
  done = {k: summary(stored, k) for k in
          [r for r, _ in REFERENCES] + [f"copy-lvf-abl-{p}{key}" for key, *_ in COPY_CHANGES
                                        for p in ("", "no-")]}
  complete = {k: s for k, s in done.items() if s and s["seeds"] >= 3 and s["steps"] >= 10000}
  alone = [key for key, *_ in COPY_CHANGES if complete.get(f"copy-lvf-abl-{key}", {})
           .get("verdict") in REACHES]
  needed = [key for key, *_ in COPY_CHANGES if f"copy-lvf-abl-no-{key}" in complete
            and complete[f"copy-lvf-abl-no-{key}"]["verdict"] not in REACHES]
  pending = sorted(set(done) - set(complete))
  judged = [k for k in complete if k.startswith("copy-lvf-abl-")]
  out = [f"- Of the {len(judged)} ablation rows with 3 seeds at 10,000 steps: changes that "
         f"reach the paper alone: {', '.join(alone) or 'none'}; changes without which the "
         f"preset falls short of it: {', '.join(needed) or 'none'}."] if judged else [
         "- No ablation row has 3 seeds at 10,000 steps yet."]
  divs = [float(s["div"]) for s in complete.values()
          if s["verdict"] in REACHES and s["div"] != "—"]
  if divs:
    out.append(f"- The trained field's `‖div V‖` (mean over seeds) of the rows that reach the "
               f"paper: {min(divs):.3g} to {max(divs):.3g}.")
  return out + [f"- Rows not yet judged here (fewer seeds or steps): "
                f"{', '.join(f'`{k}`' for k in pending) or 'none'}."]


def write_page(path: str = PAGE) -> str:
  stored = archive.load(ARCHIVE).get("rows", {})
  lines = ["# Which changes Table 5's lvfRNN needs on copy T = 200", "",
           "Generated by `python -m experiments.copy_ablation` from the harness's records "
           "(`docs/reproduction/results/lvf-t4.json`); commands, commits, machines and "
           "dates are on [the table's page](reproduction/lvf-t4.md). The paper's value: "
           "95 % accuracy (Table 4). Means over the seeds that did not diverge; a verdict "
           "uses every seed.", "", *table_lines(stored), "", *finding_lines(stored), ""]
  with open(path, "w") as f:
    f.write("\n".join(lines))
  return path


def main(argv=None) -> int:
  argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
  print(f"wrote {write_page()}")
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
