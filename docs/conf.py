"""Sphinx configuration of the lvf_jax documentation site.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (the README's
documentation command). Sphinx with MyST-NB and the book theme, as JAX, Flax and optax
build theirs: the pages are the Markdown files of ``docs/``, the API reference comes from
the docstrings (Google style, through napoleon), math renders with a MathJax shipped in
the ``docs`` extra (no network at build or view time), and the notebooks of ``notebooks/``
are executed at build time with their small settings.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

# The notebooks live in notebooks/ (Colab opens them there); Sphinx reads only its source
# directory, so they are copied into an ignored folder of it before the build.
NOTEBOOKS = DOCS / "_notebooks"
shutil.rmtree(NOTEBOOKS, ignore_errors=True)
NOTEBOOKS.mkdir()
for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
  shutil.copy(nb, NOTEBOOKS / nb.name)
# The notebooks' small settings (as tests/test_notebook.py runs them).
for key, value in {"LVF_QUICKSTART_STEPS": "4", "LVF_DYNAMICS_STEPS": "4",
                   "LVF_DYNAMICS_T": "20"}.items():
  os.environ.setdefault(key, value)
os.environ.setdefault("PYTHONPATH", str(ROOT))

project = "lvf_jax"
author = "the lvf_jax authors"
copyright = "2026, the lvf_jax authors"  # noqa: A001

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
]

exclude_patterns = ["_build", "results", "reproduction/results", "figures/*.txt", "models/_lists",
                    "**.ipynb_checkpoints", "conf.py"]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
nb_execution_mode = "force"
nb_execution_timeout = 300
nb_execution_raise_on_error = True

# Sphinx's python domain warns when a field name (a cell's "activation", a layer's "unroll")
# names attributes of several classes; broken references are found by the link check of
# tests/test_docs.py.
suppress_warnings = ["ref.python"]

autodoc_default_options = {"members": True, "undoc-members": True,
                           "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # "Attributes:" as fields: autodoc documents the dataclass fields
napoleon_custom_sections = [("Config fields", "params_style")]

html_theme = "sphinx_book_theme"
html_title = "lvf_jax"
html_theme_options = {"show_toc_level": 2}

# ------------------------------------------------------------------ model pages' lists
#: Model families (one page each, docs/models/<family>.md) and the words that put a
#: reproduction row's model (as the paper names it) in the family; the first match wins.
FAMILIES = (
    ("lvf", ("lvfrnn",)),
    ("ncgru", ("nc-gru",)),
    ("antisymmetric", ("antisymmetric", "ablation")),
    ("nnrnn", ("nnrnn", "theta(")),
    ("soft", ("soft orthogonal", "kru")),
    ("unitary", ("urnn", "eurnn", "goru")),
    ("orthogonal", ("exprnn", "scornn")),
    ("baselines", ("lstm", "gru", "rnn")),
)


def family_of(model: str) -> str:
  name = model.lower()
  return next(f for f, words in FAMILIES if any(w in name for w in words))


#: The family of a preset of ``configs/`` (by its cell's registry name).
PRESET_FAMILIES = {"lvf": "lvf", "exprnn": "orthogonal", "scornn": "orthogonal",
                   "ncgru": "ncgru", "antisymmetric": "antisymmetric",
                   "gated_antisymmetric": "antisymmetric", "ablation": "antisymmetric",
                   "nnrnn": "nnrnn", "urnn": "unitary", "fcurnn": "unitary",
                   "eurnn": "unitary", "goru": "unitary", "softorth": "soft", "kru": "soft",
                   "rnn": "baselines", "rnn_orth": "baselines", "lstm": "baselines",
                   "gru": "baselines"}


def preset_family(preset: str) -> str:
  """``'lvf_divfree'`` -> ``'lvf'``: the longest registry name the preset starts with."""
  keys = sorted((k for k in PRESET_FAMILIES if preset == k or preset.startswith(k + "_")),
                key=len)
  return PRESET_FAMILIES[keys[-1]]


def presets_by_family() -> dict:
  """``{family: ['`copy.py:lvf`', ...]}`` from the ``PRESETS`` of every config file."""
  import runpy
  out = {f: [] for f, _ in FAMILIES}
  for path in sorted((ROOT / "configs").glob("*.py")):
    presets = runpy.run_path(str(path)).get("PRESETS")
    for name in sorted(presets or {}):
      out[preset_family(name)].append(f"`{path.name}:{name}`")
  return out


def write_model_lists() -> None:
  """``docs/models/_lists/<family>.md``: the family's reproduction rows (linked to their
  pages, verdicts there) and released weights (from the zoo's cards)."""
  import json

  from experiments.reproduce import rows as rows_lib

  out = DOCS / "models" / "_lists"
  shutil.rmtree(out, ignore_errors=True)
  out.mkdir(parents=True)
  rows = {f: [] for f, _ in FAMILIES}
  for table in rows_lib.tables().values():
    for row in table.rows:
      rows[family_of(row.model)].append(
          f"| [{table.id}](../reproduction/{table.id}.md) | `{row.id}` | {row.task} | "
          f"{row.model} | `{row.config or '-'}` |")
  cards = {f: [] for f, _ in FAMILIES}
  for card in sorted((ROOT / "lvf_jax" / "zoo" / "models").glob("*/card.json")):
    c = json.loads(card.read_text())
    cards[family_of(c["model"])].append(f"- `{c['name']}`: {c['model']}, {c['task']} "
                                        f"({c['paper_citation']}, {c['table']})")
  presets = presets_by_family()
  for family, _ in FAMILIES:
    text = ["## Presets", "", "`--config=configs/<file>.py:<preset>`: " +
            ", ".join(presets[family]) + ".", "", "## Reproduction rows", "",
            "| table | row | task | model | config |", "|---|---|---|---|---|",
            *rows[family], "", "## Released weights", "",
            *(cards[family] or ["None yet."]), ""]
    (out / f"{family}.md").write_text("\n".join(text))


write_model_lists()


# ------------------------------------------------------------------------ API pages
#: The public modules, one API page each, with the line that opens the page.
API_MODULES = (
    ("geometry", "Pure functions: generators, maps, Neumann updates, initialisers, activations."),
    ("recurrences", "The custom-VJP scans."),
    ("regularization", "The 'losses' collection the cells sow their penalties into."),
    ("cells", "The Flax cells."),
    ("nnx", "Flax NNX front ends of the cells, from the same definitions."),
    ("layers", "The sequence layer `Recurrent`."),
    ("models", "Stacks, heads, parameter counting and budgets."),
    ("diagnostics", "Spectra, gradient flow, memory, probes and plots."),
    ("optim", "optax transforms for manifold-preserving updates."),
    ("tasks", "The synthetic tasks."),
    ("data", "The real datasets, read without TensorFlow."),
    ("train", "`train_and_evaluate`, configs and the command line."),
    ("zoo", "Released weights."),
)


def constant_doc(module: str, name: str) -> str:
  """The comment above (or ``#:`` beside) ``name = ...`` in the module that defines it,
  found in the source of ``lvf_jax.<module>``; its value's type otherwise."""
  import importlib
  import re

  base = ROOT / "lvf_jax" / module
  files = sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
  pattern = re.compile(rf"^((?:[ \t]*#.*\n)*)[ \t]*{re.escape(name)}\b[^=\n]*=(.*)$", re.M)
  for path in files:
    match = pattern.search(path.read_text())
    if match:
      above = [ln.strip().lstrip("#:").strip() for ln in match.group(1).splitlines()]
      beside = match.group(2).split("#:", 1)[1].strip() if "#:" in match.group(2) else ""
      text = " ".join(t for t in above + [beside] if t)
      if text:
        return text
  value = getattr(importlib.import_module(f"lvf_jax.{module}"), name)
  return f"A ``{type(value).__name__}`` (see the module's documentation)."


def documented_in_place(module, name: str) -> bool:
  """Whether ``name`` is assigned in ``module``'s own file under a ``#:`` comment (which
  autodoc reads)."""
  import inspect
  import re

  source = inspect.getsource(module)
  return re.search(rf"^#:.*\n(?:#.*\n)*{re.escape(name)}\b[^=\n]*=", source, re.M) is not None


def write_api_pages() -> None:
  """``docs/api/<module>.md`` for every public module: ``automodule`` (the functions and
  classes of its ``__all__``) and ``autodata`` for the constants of ``__all__``, which
  autodoc leaves out when a package re-exports them."""
  import importlib
  import inspect

  out = DOCS / "api"
  shutil.rmtree(out, ignore_errors=True)
  out.mkdir()
  index = ["# API reference", "", "Every public name of every public module (its `__all__`),",
           "from the docstrings.", "", "```{toctree}", ":maxdepth: 1", ""]
  for name, line in API_MODULES:
    module = importlib.import_module(f"lvf_jax.{name}")
    constants = [n for n in module.__all__ if not (
        inspect.isclass(getattr(module, n)) or callable(getattr(module, n))
        or inspect.ismodule(getattr(module, n)))]
    rst = [f".. automodule:: lvf_jax.{name}", "   :members:", ""]
    for const in constants:
      if documented_in_place(module, const):
        continue  # automodule documents it already
      rst += [f".. py:data:: {const}", f"   :module: lvf_jax.{name}", "",
              "   " + constant_doc(name, const), ""]
    body = "\n".join(rst)
    (out / f"{name}.md").write_text(
        f"# `lvf_jax.{name}`\n\n{line}\n\n```{{eval-rst}}\n{body}```\n")
    index.append(name)
  (out / "index.md").write_text("\n".join(index + ["```", ""]))


write_api_pages()


def skip_member(app, what, name, obj, skip, options):  # pylint: disable=unused-argument
  """Leaves out of a class's page what is not the class's own: Flax's bookkeeping fields of
  every Linen module (``parent``, ``scope`` and the ``name`` that defaults to None), and a
  field whose default is a function of another library (a jax initialiser, whose docstring
  is jax's, not the field's: the class's Attributes section says what the field is)."""
  import inspect

  if what != "class":
    return None
  if name in ("parent", "scope") or (name == "name" and obj is None):
    return True
  if inspect.isfunction(obj) and not (obj.__module__ or "").startswith("lvf_jax"):
    return True
  return None


def setup(app):
  app.connect("autodoc-skip-member", skip_member)
