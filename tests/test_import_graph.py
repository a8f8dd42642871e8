"""The package's import graph: layers that hold, no cycles.

Every ``import`` of an ``lvf_jax`` module is read from the source (function-level imports
included), and importing ``lvf_jax.x.y`` from outside the package ``lvf_jax.x`` also counts as
importing ``lvf_jax.x`` (its ``__init__`` runs first). The layers, from the bottom:
``_validation`` (argument checks), ``_deprecation`` (old names) -> ``geometry`` -> ``recurrences``, ``regularization`` -> ``cells`` -> ``layers``, ``nnx`` (the cells' NNX front ends) -> ``models``
-> ``optim``, ``diagnostics`` -> ``tasks``, ``data`` -> ``train`` -> ``zoo``; a module imports only from its own
layer's package or from layers below it.
"""

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lvf_jax")

LAYERS = {"_validation": -1, "_deprecation": -1, "geometry": 0, "recurrences": 1, "regularization": 1, "cells": 2, "layers": 3,
          "nnx": 3, "models": 4, "optim": 5, "diagnostics": 5, "tasks": 6, "data": 6, "train": 7, "zoo": 8}


def _modules() -> dict[str, str]:
  mods = {}
  for dirpath, _, files in os.walk(ROOT):
    for f in files:
      if f.endswith(".py"):
        path = os.path.join(dirpath, f)
        rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
        mods[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
  return mods


def _package(module: str, path: str) -> str:
  return module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]


def _imports(module: str, path: str, mods: dict[str, str]) -> set[str]:
  """The ``lvf_jax`` modules that ``module`` imports, at any depth of its source."""

  def resolve(name: str) -> str:
    while name not in mods and "." in name:
      name = name.rsplit(".", 1)[0]
    return name

  with open(path) as f:
    tree = ast.parse(f.read())
  package = _package(module, path)
  found = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        parts = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([base] if base else []))
      names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    else:
      continue
    for name in names:
      if name == "lvf_jax" or name.startswith("lvf_jax."):
        target = resolve(name)
        found.add(target)
        # lvf_jax.x.y from outside lvf_jax.x runs lvf_jax.x/__init__ first
        parts = target.split(".")
        for i in range(2, len(parts)):
          parent = ".".join(parts[:i])
          if not (module == parent or module.startswith(parent + ".")):
            found.add(parent)
  found.discard(module)
  return found


def _graph() -> dict[str, set[str]]:
  mods = _modules()
  return {m: _imports(m, p, mods) for m, p in mods.items()}


def _layer(module: str) -> str:
  return module.split(".")[1] if "." in module else ""


def test_every_module_belongs_to_a_layer():
  assert {_layer(m) for m in _graph() if m != "lvf_jax"} == set(LAYERS)


def test_modules_import_only_from_their_layer_or_below():
  wrong = sorted(f"{a} imports {b}" for a, bs in _graph().items() for b in bs
                 if a != "lvf_jax" and _layer(a) != _layer(b)
                 and not LAYERS[_layer(b)] < LAYERS[_layer(a)])
  assert not wrong, "\n".join(wrong)


def find_cycles(graph: dict) -> list:
  """Every cycle a depth-first search of ``{module: imported modules}`` meets, as
  ``'a -> b -> a'``."""
  state: dict[str, int] = {}
  cycles = []

  def visit(node, stack):
    state[node] = 1
    stack.append(node)
    for nxt in sorted(graph.get(node, ())):
      if state.get(nxt) == 1:
        cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
      elif nxt not in state:
        visit(nxt, stack)
    stack.pop()
    state[node] = 2

  for node in sorted(graph):
    if node not in state:
      visit(node, [])
  return cycles


def test_no_import_cycles():
  cycles = find_cycles(_graph())
  assert not cycles, "\n".join(cycles)


@pytest.mark.parametrize("source,imported", [
    ("from lvf_jax.cells import base\n", {"lvf_jax.cells", "lvf_jax.cells.base"}),
    ("def f():\n  from lvf_jax import layers\n", {"lvf_jax.layers"}),
    ("import lvf_jax.layers.recurrent as r\n", {"lvf_jax.layers", "lvf_jax.layers.recurrent"}),
])
def test_the_reader_sees_every_kind_of_import(tmp_path, source, imported):
  path = tmp_path / "m.py"
  path.write_text(source)
  mods = _modules()
  assert _imports("lvf_jax.optim.m", str(path), mods) == imported
