"""Reading YAML for study configs: a strict safe loader (plain values only: no anchors, aliases, merge
keys or repeated keys, bounded size and depth)."""


from __future__ import annotations

from typing import Any

import yaml

from ...core.errors import ConfigError
from .fields import _clip, _fmt, _name
from .keys import MAX_CONFIG_DEPTH

_MERGE_TAG = "tag:yaml.org,2002:merge"


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader (plain values only, no Python objects) made stricter for shared configs.

    Refused with a :class:`ConfigError` naming the line, while the file is read and before any
    value is built: anchors (``&name``) and aliases (``*name``) — an alias chain multiplies a
    349-byte file into gigabytes of values ("billion laughs") —, merge keys (``<<``), a key given
    twice in one mapping (YAML would keep the last silently), nesting deeper than
    ``MAX_CONFIG_DEPTH``, and values YAML cannot build (a date that does not exist, an integer
    of more than 4,300 digits)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or event.anchor is not None:
            what = "an alias" if isinstance(event, yaml.AliasEvent) else "an anchor"
            sign = "*" if isinstance(event, yaml.AliasEvent) else "&"
            raise ConfigError(f"The config uses {what} ({sign}{_name(event.anchor)}) at {_at(event.start_mark)}: "
                              "anchors, aliases and merge keys are not allowed in a study config.",
                              hint="Write the value out in full where it is used.")
        nested = isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent))
        if nested:
            self._depth += 1
            if self._depth > MAX_CONFIG_DEPTH:
                raise ConfigError(f"The config is nested more than {MAX_CONFIG_DEPTH} levels deep at "
                                  f"{_at(event.start_mark)}.", hint="A study config needs a few levels only.")
        try:
            return super().compose_node(parent, index)
        finally:
            if nested:
                self._depth -= 1

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError):
            raise ConfigError(f"The value at {_at(node.start_mark)} cannot be read (a date that does not exist, a "
                              "number with too many digits or a tag that does not fit its value?).",
                              hint="Correct it, or quote it to make it text.") from None

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    raise ConfigError(f"The config uses a merge key (<<) at {_at(key_node.start_mark)}: anchors, "
                                      "aliases and merge keys are not allowed in a study config.",
                                      hint="Write the keys out in full.")
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first.setdefault(key, key_node)
                except TypeError:  # an unhashable key: PyYAML refuses it below
                    continue
                if seen is not key_node:
                    raise ConfigError(f"The config repeats the key {_fmt(key)} at {_at(key_node.start_mark)} (first "
                                      f"given at line {seen.start_mark.line + 1}): a key may appear once in a "
                                      "mapping.", hint="Keep one of them.")
        return super().construct_mapping(node, deep=deep)


def _read_yaml(text: str) -> Any:
    """The plain value of a YAML document read by :class:`_StrictLoader` (ConfigError on anything else)."""
    loader = None
    try:
        loader = _StrictLoader(text)  # the reader checks the characters here
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or "invalid syntax"
        raise ConfigError(f"The config is not valid YAML{where}: {_clip(str(problem))}.",
                          hint="Check the indentation and the ':' after each key.") from None
    except RecursionError:
        raise ConfigError("The config is nested too deeply.") from None
    finally:
        if loader is not None:
            loader.dispose()
