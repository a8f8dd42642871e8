"""Rules of the codebase that a reader relies on, read from the source."""

import ast
import collections
import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _functions(folder: str):
  """``(path, node)`` of every function defined at module level or in a class."""
  for path in sorted(glob.glob(os.path.join(ROOT, folder, "**", "*.py"), recursive=True)):
    with open(path) as f:
      tree = ast.parse(f.read())
    for node in tree.body:
      for fn in [node] + (list(node.body) if isinstance(node, ast.ClassDef) else []):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
          yield os.path.relpath(path, ROOT), fn


def _is_validation_helper(name: str) -> bool:
  bare = name.lstrip("_")
  return bare.startswith("check_") or bare in ("fail", "positive_int", "optional_positive")


def test_each_validation_helper_is_defined_once():
  where = collections.defaultdict(list)
  for path, fn in _functions("lvf_jax"):
    if _is_validation_helper(fn.name):
      where[fn.name].append(path)
  twice = {name: paths for name, paths in where.items() if len(paths) > 1}
  assert not twice, twice
  assert {"check_choice", "check_int", "check_rho", "fail"} <= set(where)
  assert all(p == os.path.join("lvf_jax", "_validation.py")
             for name in ("check_choice", "check_int", "check_rho", "fail")
             for p in where[name])
