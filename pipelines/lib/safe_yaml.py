"""Read the small hand-written YAML files cachemeter takes (``source.yaml``, ``cachemeter.yaml``).

PyYAML's ``safe_load`` builds no objects, but it still expands anchors and aliases: a few hundred
bytes of nested aliases (a "billion laughs" file) become a value of hundreds of megabytes once a
caller turns it into text. These files never need YAML's expansion features, so ``load_file``
refuses them outright: a file over ``MAX_FILE_BYTES``, any anchor (``&``), alias (``*``) or merge
key (``<<``, which needs an alias), and any scalar over ``MAX_SCALAR_CHARS``. Parsing uses the
pure-Python ``SafeLoader`` because its composer can be checked node by node (the C loader's cannot);
the files are a few lines long.
"""

from __future__ import annotations

from pathlib import Path

import yaml

MAX_FILE_BYTES = 1_000_000
MAX_SCALAR_CHARS = 10_000


class YamlFileError(ValueError):
    """A YAML file that cannot be read; the message starts with the file's path."""


class _Loader(yaml.SafeLoader):
    """``SafeLoader`` that refuses anchors, aliases and huge scalars while composing (before any expansion)."""

    def compose_node(self, parent, index):  # noqa: ANN001 (PyYAML's signature)
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(f"line {line}: anchors and aliases (&, *, <<) are not allowed; write the value out")
        if isinstance(event, yaml.ScalarEvent) and len(event.value) > MAX_SCALAR_CHARS:
            raise _Refused(f"line {line}: a value of {len(event.value):,} characters is over the "
                           f"{MAX_SCALAR_CHARS:,}-character limit")
        return super().compose_node(parent, index)


class _Refused(Exception):
    pass


def load_file(path: Path) -> object:
    """The parsed content of ``path`` (``None`` for an empty file).

    Raises ``YamlFileError`` (message ``"<path>: <what is wrong>"``) for a file over
    ``MAX_FILE_BYTES``, invalid YAML, an anchor or alias, or a scalar over ``MAX_SCALAR_CHARS``;
    ``OSError`` when the file cannot be read.
    """
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise YamlFileError(f"{path}: {size:,} bytes is over the {MAX_FILE_BYTES:,}-byte limit for a settings file")
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 (_Loader is a SafeLoader)
    except _Refused as exc:
        raise YamlFileError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise YamlFileError(f"{path}: not valid YAML ({exc})") from None
    except UnicodeDecodeError as exc:
        raise YamlFileError(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None
