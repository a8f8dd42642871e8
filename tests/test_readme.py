"""The README's Python snippets run as written, and its CI markers are present."""

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
  return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_snippets_run():
  blocks = python_blocks()
  assert len(blocks) >= 1  # the Flax example; the guides' examples: tests/test_docs.py
  for block in blocks:
    namespace = {"__name__": "readme_snippet"}
    exec(compile(block, str(README), "exec"), namespace)  # noqa: S102


def test_readme_has_ci_commands():
  text = README.read_text()
  assert "<!-- ci:install -->" in text and "<!-- ci:test -->" in text
