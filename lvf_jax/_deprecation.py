"""Old names of renamed public modules and objects, kept for one release with a warning."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Any, Callable


class _RenamedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
  """Serves ``import a.b.old`` and ``from a.b.old import X`` for renamed modules: the import
  warns and binds the new module under the old name (``sys.modules``), so both names are one
  module object. It answers only for the old names registered with it."""

  def __init__(self):
    self.renamed: dict[str, str] = {}  # old full name -> new full name

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    if fullname not in self.renamed:
      return None
    return importlib.util.spec_from_loader(fullname, self)

  def create_module(self, spec):
    return None  # the default module; exec_module replaces it in sys.modules

  def exec_module(self, module):
    old = module.__name__
    new = self.renamed[old]
    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=2)
    sys.modules[old] = importlib.import_module(new)  # the import returns this entry


_FINDER = _RenamedModules()


def _register_modules(package: str, modules: dict) -> None:
  """Registers ``package.old -> package.new`` with the finder (added to ``sys.meta_path``
  once, after the standard finders)."""
  _FINDER.renamed.update({f"{package}.{old}": f"{package}.{new}"
                          for old, new in modules.items()})
  if _FINDER not in sys.meta_path:
    sys.meta_path.append(_FINDER)


def renamed_getattr(package: str, namespace: dict, *, modules: dict = None,
                    names: dict = None) -> Callable[[str], Any]:
  """A module-level ``__getattr__`` for ``package`` that serves its old names; the renamed
  modules are also importable by their old dotted names (``import package.old``, ``from
  package.old import X``), each with a ``DeprecationWarning``.

  Args:
    package: the package's ``__name__``.
    namespace: the package's ``globals()`` (where a renamed object now lives).
    modules: old submodule name -> new submodule name (imported on use).
    names: old attribute name -> new attribute name in ``namespace``.

  Returns:
    ``__getattr__(name)``: the new object with a ``DeprecationWarning`` naming both, or
    ``AttributeError`` for a name that was never there.
  """
  modules, names = dict(modules or {}), dict(names or {})
  _register_modules(package, modules)

  def __getattr__(name: str) -> Any:
    new = modules.get(name) or names.get(name)
    if new is None:
      raise AttributeError(f"module {package!r} has no attribute {name!r}")
    warnings.warn(f"{package}.{name} is deprecated: use {package}.{new}", DeprecationWarning,
                  stacklevel=2)
    if name in modules:
      return importlib.import_module(f"{package}.{new}")
    return namespace[new]

  return __getattr__
