"""The documentation site: it builds with warnings as errors, its API reference covers every
public name, its internal links resolve, the examples of its pages run, and a headless
Chromium renders it (content, math, navigation).

The site is built once per session (about 2-3 minutes on 2 cores, mostly the notebooks,
executed during the build). The browser check needs Debian's ``chromium``; ``.ci/run``
installs it and sets ``LVF_JAX_REQUIRE_BROWSER=1``, under which a missing browser fails.
"""

from __future__ import annotations

import html.parser
import importlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import urllib.parse
import zlib

import jax
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PUBLIC_MODULES = ("geometry", "recurrences", "regularization", "cells", "nnx", "layers", "models",
                  "diagnostics", "optim", "tasks", "data", "train", "zoo")
#: Pages whose Python examples need data or minutes of training, run elsewhere (the main
#: job, the reproduction harness).
NOT_EXECUTED = ("reproduction/",)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
  """The site built by the README's command, into a temporary folder."""
  out = tmp_path_factory.mktemp("site")
  cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
         "-d", str(out / "doctrees"), str(DOCS), str(out / "html")]
  proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
  assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-8000:]
  return out / "html"


def test_readme_names_the_build_command():
  assert "python -m sphinx -W --keep-going -b html docs docs/_build/html" in \
      (ROOT / "README.md").read_text()


def test_readme_is_short():
  assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def _inventory(html_dir: pathlib.Path) -> set[str]:
  """Python object names in Sphinx's ``objects.inv`` (four header lines, then zlib)."""
  raw = (html_dir / "objects.inv").read_bytes().split(b"\n", 4)
  lines = zlib.decompress(raw[4]).decode().splitlines()
  return {line.split(" ")[0] for line in lines if " py:" in line}


def test_every_public_name_has_an_api_entry(site):
  names = _inventory(site)
  missing = []
  for mod_name in PUBLIC_MODULES:
    module = importlib.import_module(f"lvf_jax.{mod_name}")
    assert hasattr(module, "__all__"), f"lvf_jax.{mod_name} defines no __all__"
    missing += [f"lvf_jax.{mod_name}.{n}" for n in module.__all__
                if f"lvf_jax.{mod_name}.{n}" not in names]
  assert not missing, missing


class _Links(html.parser.HTMLParser):
  def __init__(self):
    super().__init__()
    self.links, self.ids = [], set()

  def handle_starttag(self, tag, attrs):
    attrs = dict(attrs)
    if attrs.get("id"):
      self.ids.add(attrs["id"])
    for key in ("href", "src"):
      if attrs.get(key):
        self.links.append(attrs[key])


def _parse_text(text: str) -> _Links:
  parser = _Links()
  parser.feed(text)
  return parser


def _parse(path: pathlib.Path) -> _Links:
  return _parse_text(path.read_text(errors="replace"))


def broken_links(html_dir: pathlib.Path) -> list[str]:
  """``'page -> link'`` for every relative link of the site whose file, or whose fragment in
  that file, does not exist."""
  pages = {p: _parse(p) for p in html_dir.rglob("*.html")
           if "_static" not in p.relative_to(html_dir).parts}  # the theme's templates
  broken = []
  for page, parsed in pages.items():
    for link in parsed.links:
      url = urllib.parse.urlparse(link)
      if url.scheme or link.startswith(("//", "mailto:")):
        continue
      target = (page.parent / urllib.parse.unquote(url.path)).resolve() if url.path else page
      if not target.exists():
        broken.append(f"{page.relative_to(html_dir)} -> {link}")
      elif url.fragment and target.suffix == ".html" and target in pages and \
          url.fragment not in pages[target].ids:
        broken.append(f"{page.relative_to(html_dir)} -> {link} (no such anchor)")
  return broken


def test_internal_links_resolve(site):
  assert not broken_links(site)


def test_the_link_check_can_fail(tmp_path):
  (tmp_path / "a.html").write_text('<a href="b.html">b</a><a href="a.html#x">x</a>')
  assert broken_links(tmp_path) == ["a.html -> b.html", "a.html -> a.html#x (no such anchor)"]


def test_the_api_pages_show_the_cells_own_fields_and_render_their_equations(site):
  """A cell's entry lists its own fields, not Flax's bookkeeping (``parent``, ``scope``)
  or jax's initialiser docstrings, and its docstring's equations are math."""
  names = _inventory(site)
  assert "lvf_jax.cells.LVFRNNCell.tau" in names
  assert "lvf_jax.cells.LVFRNNCell.parent" not in names
  assert "lvf_jax.cells.LVFRNNCell.scope" not in names
  text = (site / "api" / "cells.html").read_text()
  assert "An initializer that returns" not in text
  entry = text.split('id="lvf_jax.cells.LVFRNNCell"', 1)[1].split('id="lvf_jax.cells.', 1)[0]
  assert 'class="math' in entry, entry[:2000]


def test_every_model_family_and_notebook_is_rendered(site):
  for family in ("lvf", "orthogonal", "ncgru", "antisymmetric", "nnrnn", "unitary", "soft",
                 "baselines"):
    text = (site / "models" / f"{family}.html").read_text()
    assert "Reproduction rows" in text and "Presets" in text, family
  for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
    text = (site / "_notebooks" / f"{nb.stem}.html").read_text()
    assert "data:image/png;base64" in text or re.search(r'<img[^>]+\.png', text), nb.name


def _python_blocks(path: pathlib.Path) -> list[str]:
  return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def _pages_with_examples() -> list[pathlib.Path]:
  pages = [p for p in sorted(DOCS.rglob("*.md"))
           if "_build" not in p.parts and not p.name.startswith("_")
           and not any(part in str(p.relative_to(DOCS)) for part in NOT_EXECUTED)]
  return [p for p in pages if _python_blocks(p)]


@pytest.mark.parametrize("page", _pages_with_examples(),
                         ids=lambda p: str(p.relative_to(DOCS)))
def test_page_examples_run(page):
  """A page's example is a user's script: it runs under JAX's default promotion (optax's
  Adam mixes its integer step count with floats), not the suite's strict lattice."""
  for block in _python_blocks(page):
    code = compile(block, str(page), "exec", dont_inherit=True)  # not this file's __future__
    with jax.numpy_dtype_promotion("standard"):
      exec(code, {"__name__": "docs_example"})  # noqa: S102


def _browser() -> str | None:
  for name in ("chromium", "chromium-browser", "google-chrome"):
    if shutil.which(name):
      return shutil.which(name)
  return None


def _dump_dom(browser: str, page: pathlib.Path, tmp: pathlib.Path) -> str:
  """The page's DOM after its scripts ran (MathJax included), from headless Chromium."""
  cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp / 'profile'}", "--virtual-time-budget=15000", "--dump-dom",
         page.as_uri()]
  proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr[-2000:]
  return proc.stdout


def test_a_browser_renders_the_site(site, tmp_path):
  browser = _browser()
  if browser is None:
    if os.environ.get("LVF_JAX_REQUIRE_BROWSER") == "1":
      pytest.fail("no chromium found, and LVF_JAX_REQUIRE_BROWSER=1")
    pytest.skip("no chromium (Debian's 'chromium'; .ci/run installs it)")
  index = _dump_dom(browser, site / "index.html", tmp_path)
  assert "Latent vector field RNNs" in index
  nav = [a for a in _parse_text(index).links if a.endswith(".html") and "://" not in a]
  assert {"geometry.html", "api/index.html", "models/index.html"} <= set(nav)
  assert not [a for a in nav if not (site / a.split("#")[0]).exists()]

  geometry = _dump_dom(browser, site / "geometry.html", tmp_path)
  equations = (DOCS / "geometry.md").read_text().count("$$") // 2
  assert equations >= 4 and geometry.count("<mjx-container") >= equations  # typeset by MathJax
  assert "<mjx-merror" not in geometry and "Math input error" not in geometry

  api = _dump_dom(browser, site / "api" / "cells.html", tmp_path)
  assert 'id="lvf_jax.cells.LVFRNNCell"' in api and "prepared" in api


def _docstring_examples() -> list[tuple[str, str]]:
  """``(module, code)`` of every ``Example::`` block in the public modules' docstrings."""
  out = []
  for mod_name in PUBLIC_MODULES:
    doc = importlib.import_module(f"lvf_jax.{mod_name}").__doc__ or ""
    for block in re.findall(r"Example::\n\n((?:  .*\n|\n)+)", doc):
      out.append((mod_name, "\n".join(line[2:] for line in block.splitlines())))
  return out


@pytest.mark.parametrize("module,code", _docstring_examples(), ids=lambda v: str(v)[:20])
def test_docstring_examples_run(module, code):
  from lvf_jax.data import paths  # pylint: disable=g-import-not-at-top
  raw = paths.raw_data_dir()
  if "data.load(" in code and not all((raw / d).is_dir() for d in ("polyphonic", "ptb")):
    pytest.skip(f"the example reads the shared data, not found under {raw} "
                f"(set {paths.DATA_DIR_ENV})")
  exec(compile(code, f"lvf_jax.{module}", "exec", dont_inherit=True),  # noqa: S102
       {"__name__": "docstring_example"})


def test_every_docstring_example_is_collected():
  assert {m for m, _ in _docstring_examples()} == {"tasks", "zoo", "data", "nnx"}
