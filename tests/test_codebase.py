"""Rules of the codebase that a reader relies on, read from the source."""

import ast
import collections
import glob
import os

from test_import_graph import find_cycles

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
  return bare.startswith("check_") or bare in ("fail", "positive_int", "optional_positive",
                                               "is_concrete", "concrete_value",
                                               "concrete_number")


def test_each_validation_helper_is_defined_once():
  where = collections.defaultdict(list)
  for path, fn in _functions("lvf_jax"):
    if _is_validation_helper(fn.name):
      where[fn.name].append(path)
  twice = {name: paths for name, paths in where.items() if len(paths) > 1}
  assert not twice, twice
  shared = ("check_choice", "check_int", "check_rho", "fail", "check_same_shape",
            "check_in_range", "check_rate", "is_concrete", "concrete_value")
  assert set(shared) <= set(where)
  assert all(p == os.path.join("lvf_jax", "_validation.py") for name in shared
             for p in where[name])
  assert "concrete_number" not in where and "_check_same_shape" not in where


def test_the_commit_and_the_machine_are_read_in_one_place():
  """The harness and the benchmarks name a record's commit and CPU through one reader."""
  where = collections.defaultdict(list)
  for folder in ("lvf_jax", "benchmarks", "experiments"):
    for path, fn in _functions(folder):
      if fn.name in ("git_commit", "cpu_model"):
        where[fn.name].append(path)
  assert dict(where) == {name: [os.path.join("experiments", "reproduce", "provenance.py")]
                         for name in ("git_commit", "cpu_model")}


def _span(fn) -> int:
  """Lines from the first statement after the docstring to the last."""
  body = fn.body
  if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
      and isinstance(body[0].value.value, str)):
    body = body[1:]
  return body[-1].end_lineno - body[0].lineno + 1 if body else 0


def test_no_function_spans_more_than_60_lines():
  too_long = []
  for folder in ("lvf_jax", "configs", "experiments", "benchmarks"):
    for path in sorted(glob.glob(os.path.join(ROOT, folder, "**", "*.py"), recursive=True)):
      with open(path) as f:
        tree = ast.parse(f.read())
      for node in ast.walk(tree):  # nested functions too
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _span(node) > 60:
          too_long.append(f"{os.path.relpath(path, ROOT)}::{node.name} ({_span(node)} lines)")
  assert not too_long, too_long


def test_the_span_counts_from_the_first_statement_after_the_docstring():
  tree = ast.parse('def f():\n  """Doc\n  string."""\n  a = 1\n\n  return a\n')
  assert _span(tree.body[0]) == 3


def _package_imports(package: str) -> dict:
  """``{module: modules of package it imports}`` for every module under ``package`` (imports
  inside functions included; ``from a.b import c`` counts as ``a.b.c`` where that is a
  module, else ``a.b``)."""
  mods = {}
  for path in glob.glob(os.path.join(ROOT, package, "**", "*.py"), recursive=True):
    dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    mods[dotted.removesuffix(".__init__")] = path
  graph = {}
  for module, path in mods.items():
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
      if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
      elif isinstance(node, ast.ImportFrom) and node.module:
        names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods
                 else node.module for a in node.names]
      else:
        continue
      found |= {n for n in names if n in mods and n != module}
    graph[module] = found
  return graph


def test_the_experiments_have_no_import_cycle():
  graph = _package_imports("experiments")
  assert "experiments.reproduce.runner" in graph["experiments.reproduce.pages"]
  assert not find_cycles(graph), find_cycles(graph)


def _script_imports(folder: str) -> dict:
  """``{script: scripts of folder it imports}`` for a folder of scripts that put their own
  folder on ``sys.path`` and import each other by bare name (``benchmarks/``)."""
  paths = glob.glob(os.path.join(ROOT, folder, "*.py"))
  stems = {os.path.basename(p)[:-3] for p in paths}
  graph = {}
  for path in paths:
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
      if isinstance(node, ast.Import):
        found |= {a.name for a in node.names}
      elif isinstance(node, ast.ImportFrom) and node.module:
        found.add(node.module)
    me = os.path.basename(path)[:-3]
    graph[me] = {n for n in found if n in stems and n != me}
  return graph


def test_the_benchmarks_have_no_import_cycle():
  graph = _script_imports("benchmarks")
  assert "speed_jax" in graph["speed"] and "timing" in graph["cells"]
  assert not find_cycles(graph), find_cycles(graph)


def test_the_cycle_check_finds_a_cycle():
  assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a -> b -> c -> a"]
  assert find_cycles({"a": {"b"}, "b": set()}) == []


def _config_files():
  return sorted(p for p in glob.glob(os.path.join(ROOT, "configs", "*.py"))
                if not os.path.basename(p).startswith("_"))


def test_configs_are_flat_files_without_runpy_or_preset_factories():
  for path in _config_files():
    tree = ast.parse(open(path).read())
    name = os.path.relpath(path, ROOT)
    imported = {a.name.split(".")[0] for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert "runpy" not in imported, name
    assert "default_preset" not in imported, name
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert functions == ["get_config"], (name, functions)
    presets = [n.value for n in tree.body if isinstance(n, ast.Assign)
               and [getattr(t, "id", None) for t in n.targets] == ["PRESETS"]]
    if presets:  # a dict literal of dict(...) calls: every preset written out in the file
      assert isinstance(presets[0], ast.Dict), name
      for key, value in zip(presets[0].keys, presets[0].values):
        assert isinstance(key, ast.Constant), name
        assert isinstance(value, ast.Call) and value.func.id == "dict", (name, key.value)


def test_no_two_modules_differ_only_by_a_plural():
  stems = collections.defaultdict(list)
  for path in glob.glob(os.path.join(ROOT, "lvf_jax", "**", "*.py"), recursive=True):
    name = os.path.basename(path)[:-3]
    if name != "__init__":
      stems[name.rstrip("s")].append(os.path.relpath(path, ROOT))
  clashes = {k: v for k, v in stems.items()
             if len({os.path.basename(p) for p in v}) > 1}
  assert not clashes, clashes
