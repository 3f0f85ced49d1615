"""One registry type for everything found by name: studies, parse profiles, simulated presets, ...

A :class:`Registry` holds named entries. An entry is registered in code (:meth:`Registry.register`,
an object or a lazy ``"module:attribute"`` reference) or by a package's entry points in the
registry's group (``[project.entry-points."counterbench.studies"]`` in its ``pyproject.toml``), the
way pytest finds its plugins. The built-in studies register themselves through entry points, exactly
like a third-party package, so the core never imports them.

Decisions:

- Entries registered in code come first; an entry point never shadows a name already taken.
- Loading is lazy: a reference is imported the first time its name is asked for, then cached.
- An unknown name is a :class:`~counterbench.errors.UserError` listing the known names.
- ``COUNTERBENCH_PLUGINS=builtin`` in the environment keeps only counterbench's own entry points (its
  built-in studies), so a run — or the project's own test suite — is not changed by whatever other
  packages happen to be installed; unset (the default), every installed plug-in is found.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Generic, TypeVar

from counterbench.errors import UserError

__all__ = ["PLUGINS_ENV", "Entry", "Registry", "load_reference"]

#: the environment variable that restricts entry points to counterbench's own (value ``builtin``)
PLUGINS_ENV = "COUNTERBENCH_PLUGINS"
OWN_DISTRIBUTION = "counterbench"

T = TypeVar("T")


def load_reference(reference: str) -> Any:
    """The object ``"package.module:attribute"`` names (or the module, without ``:attribute``)."""
    module, _, attribute = reference.partition(":")
    loaded: Any = importlib.import_module(module)
    for part in attribute.split(".") if attribute else ():
        loaded = getattr(loaded, part)
    return loaded


@dataclass
class Entry(Generic[T]):
    """One registered name: where it comes from and, once loaded, its object."""

    name: str
    #: ``built-in``, ``entry point MODULE:ATTR (DIST)``, or where the code that registered it lives
    source: str
    reference: str | None = None
    item: T | None = None
    loaded: bool = False


@functools.cache
def _installed_entry_points() -> metadata.EntryPoints:
    """Every installed package's entry points, read once per process for every registry (each read scans
    every installed distribution's metadata: a few ms)."""
    found = metadata.entry_points()
    return metadata.EntryPoints(ep for group in found.groups for ep in found.select(group=group))


class Registry(Generic[T]):
    """Named entries of one kind (``what`` names the kind in messages: "study", "parse profile")."""

    def __init__(self, what: str, group: str | None = None, *, hint: str = "") -> None:
        self.what = what
        self.group = group
        self.hint = hint
        self._entries: dict[str, Entry[T]] = {}
        self._scanned = False
        #: turns what an entry point or reference loads into the registered item (e.g. call a factory)
        self.adapt: Callable[[str, Any], T] = lambda _name, obj: obj

    # registering ---------------------------------------------------------------------------------
    def register(self, name: str, item: T | None = None, *, reference: str | None = None,
                 source: str = "built-in", replace: bool = False) -> None:
        """Register ``item`` (or a lazy ``reference``) under ``name``; a taken name needs ``replace``."""
        if (item is None) == (reference is None):
            raise ValueError("register an item or a reference, not both")
        if name in self._entries and not replace:
            raise ValueError(f"{self.what} {name!r} is already registered ({self._entries[name].source})")
        self._entries[name] = Entry(name, source, reference, item, loaded=item is not None)

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    def _scan(self) -> None:
        if self._scanned or self.group is None:
            self._scanned = True
            return
        self._scanned = True
        builtin_only = os.environ.get(PLUGINS_ENV, "").strip().lower() == "builtin"
        for ep in sorted(_installed_entry_points().select(group=self.group), key=lambda e: e.name):
            if ep.name in self._entries:
                continue
            dist = getattr(ep, "dist", None)
            if builtin_only and (dist is None or dist.name != OWN_DISTRIBUTION):
                continue
            source = f"entry point {ep.value}" + (f" ({dist.name})" if dist is not None else "")
            self._entries[ep.name] = Entry(ep.name, source, ep.value)

    # reading -------------------------------------------------------------------------------------
    def entries(self) -> dict[str, Entry[T]]:
        self._scan()
        return dict(self._entries)

    def names(self) -> list[str]:
        return list(self.entries())

    def __contains__(self, name: object) -> bool:
        self._scan()
        return isinstance(name, str) and name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> T:
        """The item called ``name``, loaded on first use; a :class:`UserError` lists the names otherwise."""
        self._scan()
        entry = self._entries.get(name)
        if entry is not None and entry.loaded:  # the common case, kept cheap: kinds are asked for per answer
            return entry.item  # type: ignore[return-value]
        if entry is None:
            known = ", ".join(self._entries) or "none"
            raise UserError(f"unknown {self.what} {name!r}; known: {known}" + (f" ({self.hint})" if self.hint else ""))
        if not entry.loaded:
            assert entry.reference is not None
            try:
                obj = load_reference(entry.reference)
            except UserError:
                raise
            except Exception as err:  # a plug-in failed to import: say which one
                raise UserError(f"{self.what} {name} ({entry.source}) could not be loaded: "
                                f"{type(err).__name__}: {err}") from None
            entry.item = self.adapt(name, obj)
            entry.loaded = True
        item: T = entry.item  # type: ignore[assignment]
        return item

    def build(self, name: str, failure: str) -> Any:
        """The item called ``name``, called first when it is a factory (a class or a function that makes it).

        A factory that fails with anything but a :class:`UserError` (a third-party one) raises
        ``UserError("FAILURE: ErrorType: message")``, ``failure`` saying which item could not be built.
        """
        item = self.get(name)
        try:
            return item() if callable(item) else item
        except UserError:
            raise
        except Exception as err:
            raise UserError(f"{failure}: {type(err).__name__}: {err}") from None
