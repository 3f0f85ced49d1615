"""Reading a user's YAML file strictly: one reader for every file a user gives (study, sim, thresholds,
prompt texts, baskets, variants, jobs, ...), one clear error per way it can fail.

Decisions:

- A file must be UTF-8 text of at most :data:`MAX_BYTES`; anything else is one line naming the file.
- Safe YAML only; a key given twice in one mapping is an error (YAML would silently keep the last one).
- Anchors and aliases are allowed, but expanding them may not build more than :data:`ALIAS_BUDGET` nodes
  (a "billion laughs" file is refused at once instead of eating memory), and nesting may not go deeper
  than :data:`MAX_DEPTH` levels.
- Every failure is a :class:`~counterbench.errors.UserError` (the CLI prints it and exits 2).
- **Fast where it can be**: with libyaml present (PyYAML's C extension), the file is scanned, parsed and
  composed in C (:class:`FastStrictLoader`) and the same three checks run on the composed tree before any
  value is built (libyaml itself refuses nesting past 1,000 levels); without it, the pure-Python
  :class:`StrictLoader` checks while composing. Both give the same values and the same errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from counterbench.errors import UserError, cannot_read

__all__ = ["ALIAS_BUDGET", "MAX_BYTES", "MAX_DEPTH", "FastStrictLoader", "StrictLoader", "load_strict",
           "read_text_file", "read_yaml_file", "yaml_text"]

#: nodes an alias expansion may create in one file before the file is refused
ALIAS_BUDGET = 100_000
#: how deep collections may nest in a user's YAML file
MAX_DEPTH = 100
#: the largest YAML file read (bytes)
MAX_BYTES = 64 * 1024 * 1024


class _UniqueKeys(yaml.constructor.SafeConstructor):
    """Refuses a key given twice in one mapping (YAML would silently keep the last one)."""

    source: str

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # ``<<: *base``: merged keys may be overridden
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue
                if key in seen:
                    line = key_node.start_mark.line + 1
                    raise UserError(f"{self.source}: line {line}: duplicate key '{key}' "
                                    f"(first at line {seen[key]}); each key may appear once per mapping")
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


class StrictLoader(_UniqueKeys, yaml.SafeLoader):
    """Safe YAML that refuses duplicate keys, alias bombs and deep nesting (``source`` names the file)."""

    def __init__(self, stream: str, source: str) -> None:
        super().__init__(stream)
        self.source = source
        self.budget = ALIAS_BUDGET
        self.depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = self.anchors.get(event.anchor)
            if node is not None:
                self.budget -= _size(node, self.budget)
                if self.budget < 0:
                    raise UserError(f"{self.source}: YAML aliases expand beyond {ALIAS_BUDGET:,} nodes "
                                    "(an alias bomb?); write the repeated parts out or use fewer aliases")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise UserError(f"{self.source}: YAML nested deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


_CSafeLoader: Any = getattr(yaml, "CSafeLoader", None)


def _check_tree(root: Any, source: str) -> None:
    """:class:`StrictLoader`'s alias and depth checks on a composed node tree (an alias is a node met again)."""
    budget = ALIAS_BUDGET
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UserError(f"{source}: YAML nested deeper than {MAX_DEPTH} levels")
        if id(node) in seen:
            budget -= _size(node, budget)
            if budget < 0:
                raise UserError(f"{source}: YAML aliases expand beyond {ALIAS_BUDGET:,} nodes "
                                "(an alias bomb?); write the repeated parts out or use fewer aliases")
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend(((key, depth + 1), (value, depth + 1)))


if _CSafeLoader is not None:
    class FastStrictLoader(_UniqueKeys, _CSafeLoader):
        """:class:`StrictLoader` with libyaml's C scanner, parser and composer (checks on the composed tree)."""

        def __init__(self, stream: str, source: str) -> None:
            _CSafeLoader.__init__(self, stream)
            self.source = source

        def get_single_data(self) -> Any:
            node = self.get_single_node()
            if node is None:
                return None
            _check_tree(node, self.source)
            return self.construct_document(node)
else:  # pragma: no cover - PyYAML built without libyaml
    FastStrictLoader = StrictLoader  # type: ignore[misc,assignment]


def _size(node: Any, limit: int) -> int:
    """Nodes under ``node`` (stops counting past ``limit``)."""
    count, stack = 0, [node]
    while stack and count <= limit:
        current = stack.pop()
        count += 1
        if isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, yaml.MappingNode):
            for k, v in current.value:
                stack.extend((k, v))
    return count


def load_strict(text: str, source: str, *, loader_class: Any = None) -> Any:
    """The parsed YAML ``text`` (``None`` when empty). Duplicate keys, alias bombs and deep nesting raise
    :class:`UserError`; invalid YAML raises ``yaml.YAMLError`` (the caller words it). ``loader_class``:
    :class:`FastStrictLoader` by default; :class:`StrictLoader` reads with the pure-Python parser."""
    loader = (loader_class or FastStrictLoader)(text, source)
    try:
        return loader.get_single_data()
    except RecursionError:
        raise UserError(f"{source}: YAML nested too deeply") from None
    finally:
        loader.dispose()


def read_text_file(path: Path, what: str, hint: str = "save it as UTF-8", max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of ``path`` (at most ``max_bytes``); one-line :class:`UserError` otherwise."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise UserError(f"{what}: {size:,} bytes, more than the {max_bytes:,} counterbench reads from such a file")
        raw = path.read_bytes()
    except OSError as err:
        raise cannot_read(what, err) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"{what}: not UTF-8 text (byte {err.start}); {hint}") from None


def yaml_text(text: str, what: str) -> Any:
    """Strictly parsed YAML ``text``; invalid YAML is ``{what}: not valid YAML (...)``."""
    try:
        return load_strict(text, what)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise UserError(f"{what}: not valid YAML ({line}{problem})") from None


def read_yaml_file(path: Path, what: str | None = None) -> Any:
    """The parsed content of the YAML file ``path`` (``None`` when empty), ``what`` naming it in errors
    (default: the file's name), read strictly (see the module docstring).

    A file that cannot be read, is not UTF-8 text, is too large, not valid YAML, has a duplicate key,
    an alias bomb or too deep nesting raises :class:`~counterbench.errors.UserError`: e.g.
    ``thresholds file t.yaml: not valid YAML (...)``.
    """
    what = what or path.name
    return yaml_text(read_text_file(path, what), what)
