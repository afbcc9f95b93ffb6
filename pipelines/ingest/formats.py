"""The usage-format declaration (``pipelines/ingest/formats.yaml``) as Python data.

``load()`` returns a ``Declaration``: the canonical fields (in check order), the shape ladder
(``detection``, first match wins) and one ``Format`` per source format, each with its counting
convention, provider inference, options and, per canonical field, its ordered alternative JSON paths
and a one-line source. ``pipelines/ingest/format_sql.py`` generates both SQL readers and the adapter table
of ``docs/formats.md`` from it; nothing reads format knowledge from the SQL. Raises ``ValueError``
naming the format and field for a declaration that does not hold together (unknown field, convention,
option or format in the ladder, a field without paths or source).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

DECLARATION = Path(__file__).with_name("formats.yaml")
CONVENTIONS = ("inclusive", "additive", "total_decides", "trace")
KINDS = ("count", "json", "text", "lower", "flag", "truthy", "raw")
# per-format options and their defaults (what the shared normaliser does unless a format says otherwise)
OPTIONS = {
    "reasoning_beside_output": [],  # providers whose reasoning count is reported beside output, not inside
    # providers whose output count leaves out thinking that the reported total counts: the gap is output (reasoning)
    "thinking_only_in_total": [],
    "output_optional": False,  # a missing output count is 0 (Gemini omits candidatesTokenCount when empty)
    "reasoning_may_exceed_output": False,  # reasoning is output beside the output count (Gemini thoughts)
    "total_is_sum": False,  # the reported total must equal prompt + output (a key not read carries tokens)
    "request_count": "one",  # one | field (null = unknown) | field_or_one | unknown
    "id_from_content": False,  # no id: a hash of the record's content (usage buckets stand for many requests)
    "tier_prompt": "prompt",  # long-context tier from: prompt | zero (buckets) | context_window (Anthropic report)
    "provider_from_package": False,  # AI SDK: the provider named by the @ai-sdk/<name> package
    "provider_from_model_prefix": False,  # LiteLLM: a vendor/model id names its provider
    # streamed snapshots: a transcript writes several lines per response sharing its id; per (file, id) the
    # fullest is the bill and the others are quarantined as superseded (staged_items__supersede_snapshots.sql)
    "snapshots": False,
    # modalities a per-modality breakdown ([{modality, tokenCount}]) reports at a price of their own that the token
    # classes do not have (Gemini AUDIO: $1.00 against $0.30 text input on gemini-2.5-flash, genai-prices
    # input_audio_mtok): such an element's tokens are unmapped usage, "<breakdown>[AUDIO].tokenCount"
    "unpriced_modalities": [],
    # a cache-write total of 0 beside a 5m / 1h split is the split's placeholder, not a contradiction
    # (langchain-anthropic zeroes input_token_details.cache_creation when it reports the split)
    "zero_write_beside_split": False,
}


@dataclass(frozen=True)
class Field:
    """A canonical field: ``kind`` (see formats.yaml), the normaliser's ``column``, the reasons' ``label``."""

    name: str
    kind: str
    column: str
    label: str | None = None
    # the numbers inside a json field's value that the field itself reads, relative to its path ("[*].inputTokens"):
    # known usage keys, not flagged as unmapped
    leaves: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mapping:
    """Where one format reads one field: ``paths`` in order (first present wins), and their ``source``."""

    field: str
    paths: tuple[tuple[str, ...], ...]  # each path as its keys: ('usage', 'prompt_tokens')
    source: str


@dataclass(frozen=True)
class UsageKeys:
    """Where a format keeps its usage counts, for the unmapped-key check: ``roots`` (paths to usage objects;
    ``()`` is the body itself), ``prefix`` (only keys starting with it count, for flat attribute maps such as
    ``gen_ai.usage.``) and ``informational`` keys (relative JSON path -> source) that carry no billable tokens
    of their own (a total, a breakdown of a mapped count). Every other number under a root is an unmapped key."""

    roots: tuple[tuple[str, ...], ...]
    prefix: str | None
    informational: dict[str, str]
    # documented keys that carry tokens (or billed units) no token class prices, relative to the first root:
    # the fast lane reads them too and defers a line where one is above zero, so the general normaliser's
    # walk reports it (the lane defers a line with any key its format does not declare in the same way)
    unpriced: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Body:
    """Where a format's field paths are read from, when not the body itself (``body:`` in formats.yaml).

    ``root``: alternative paths of the object the paths are read from, the first present wins (span attributes);
    ``members``: the object to build instead, each key the first present of its alternative body paths, and
    ``key_names`` (when set) a key holding the names of the body's own keys; ``json_text``: a key whose value may be
    JSON stored as text, parsed in place (``json_text_invalid``: the quarantine reason when that text is not JSON);
    ``span``: the path of the span kept beside (its start and end times); ``objects``: keys that are objects
    when present (else the record is rejected with ``<key> is not an object``)."""

    root: tuple[tuple[str, ...], ...] = ()
    members: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    key_names: str | None = None
    json_text: str | None = None
    json_text_invalid: str | None = None
    span: tuple[str, ...] | None = None
    objects: tuple[str, ...] = ()


def _body(name: str, spec: dict | None) -> Body | None:
    if spec is None:
        return None
    unknown = set(spec) - {"root", "members", "key_names", "json_text", "json_text_invalid", "span", "objects"}
    if unknown:
        raise ValueError(f"format {name}: unknown body keys {sorted(unknown)}")
    if bool(spec.get("json_text")) != bool(spec.get("json_text_invalid")):
        raise ValueError(f"format {name}: body json_text needs json_text_invalid (its quarantine reason) and back")
    return Body(root=tuple(split_path(p) for p in spec.get("root", [])),
                members={k: tuple(split_path(p) for p in v) for k, v in (spec.get("members") or {}).items()},
                key_names=spec.get("key_names"), json_text=spec.get("json_text"),
                json_text_invalid=spec.get("json_text_invalid"),
                span=split_path(spec["span"]) if spec.get("span") else None, objects=tuple(spec.get("objects", [])))


@dataclass(frozen=True)
class Format:
    """One usage format (``source_format``)."""

    name: str
    title: str
    convention: str
    provider: str  # a provider name, or 'by_model'
    default_provider: str | None
    openrouter_when_text: tuple[str, ...] | None
    fast_lane: bool
    example: str
    options: dict
    fields: dict[str, Mapping]
    usage: UsageKeys | None = None
    body: Body | None = None  # None: the paths are read from the body itself
    leaves: dict[str, tuple[str, ...]] = field(default_factory=dict)  # per field name: Field.leaves

    def known_usage_keys(self) -> list[str]:
        """Every key under the usage roots this format maps or declares informational, as DuckDB JSON paths
        relative to its root without the ``$.`` (``prompt_tokens_details.cached_tokens``; array indexes ``[*]``)."""
        if self.usage is None:
            return []
        known: dict[str, None] = {}
        for mapping in self.fields.values():
            for path in mapping.paths:
                for root in self.usage.roots:
                    if len(path) > len(root) and path[:len(root)] == root:
                        key = json_path(path[len(root):])[2:]
                        known.setdefault(key, None)
                        for leaf in self.leaves.get(mapping.field, ()):
                            known.setdefault(key + leaf, None)
        for key in self.usage.informational:
            known.setdefault(key, None)
        return list(known)

    def paths(self) -> list[tuple[str, ...]]:
        """Every path this format reads, in declaration order, each once."""
        seen: dict[tuple[str, ...], None] = {}
        for mapping in self.fields.values():
            for path in mapping.paths:
                seen.setdefault(path, None)
        if self.openrouter_when_text:
            seen.setdefault(self.openrouter_when_text, None)
        for path in self.unpriced_paths():
            seen.setdefault(path, None)
        return list(seen)

    def unpriced_paths(self) -> list[tuple[str, ...]]:
        """The body paths of the documented keys no token class prices (``usage_keys.unpriced``)."""
        if self.usage is None:
            return []
        return [self.usage.roots[0] + split_path(key) for key in self.usage.unpriced]

    def modality_breakdowns(self) -> list[tuple[str, ...]]:
        """The body paths of the per-modality breakdowns (arrays whose elements name a ``modality``), when the format
        declares modalities no class prices (``unpriced_modalities``); else none."""
        if self.usage is None or not self.options["unpriced_modalities"]:
            return []
        return [self.usage.roots[0] + split_path(key.removesuffix("[*].modality"))
                for key in self.usage.informational if key.endswith("[*].modality")]


@dataclass(frozen=True)
class Rule:
    """One rung of the shape ladder: ``format`` (None: unrecognised) when the condition ``when`` holds."""

    format: str | None
    when: dict


@dataclass(frozen=True)
class Declaration:
    fields: dict[str, Field]
    detection: tuple[Rule, ...]
    formats: dict[str, Format]
    wrappers: dict = field(default_factory=dict)


def split_path(text: str) -> tuple[str, ...]:
    """``'usage.prompt_tokens'`` -> ``('usage', 'prompt_tokens')``; a quoted key keeps its dots."""
    keys, current, quoted = [], "", False
    for char in text:
        if char == '"':
            quoted = not quoted
        elif char == "." and not quoted:
            keys.append(current)
            current = ""
        else:
            current += char
    keys.append(current)
    if quoted or not all(keys):
        raise ValueError(f"bad path {text!r}")
    return tuple(keys)


def json_path(path: tuple[str, ...]) -> str:
    """``('usage', 'a.b')`` -> ``$.usage."a.b"`` (DuckDB JSON path syntax)."""
    return "$." + ".".join(f'"{key}"' if "." in key else key for key in path)


def condition_paths(when: dict) -> list[tuple[str, ...]]:
    """The body paths a ladder condition reads, in order."""
    (op, arg), = when.items()
    if op in ("all", "any"):
        return [p for part in arg for p in condition_paths(part)]
    if op in ("present", "absent", "object", "array"):
        return [split_path(arg)]
    if op == "equals":
        return [split_path(arg[0])]
    if op in ("provider_in", "batch"):
        return []
    raise ValueError(f"unknown condition {op!r}")


def snapshot_formats(decl: "Declaration | None" = None) -> list[str]:
    """Names of the formats whose records are streamed snapshots (option ``snapshots``), sorted."""
    decl = decl or load()
    return sorted(name for name, fmt in decl.formats.items() if fmt.options["snapshots"])


@cache
def load(path: Path = DECLARATION) -> Declaration:
    """Read and check the declaration (see the module docstring for what is checked)."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    fields = {name: Field(name, spec["kind"], spec["column"], spec.get("label"), tuple(spec.get("leaves", ())))
              for name, spec in raw["fields"].items()}
    for f in fields.values():
        if f.kind not in KINDS:
            raise ValueError(f"field {f.name}: unknown kind {f.kind!r}")
    formats: dict[str, Format] = {}
    for name, spec in raw["formats"].items():
        unknown = set(spec.get("options", {})) - set(OPTIONS)
        if unknown:
            raise ValueError(f"format {name}: unknown options {sorted(unknown)}")
        if spec["convention"] not in CONVENTIONS:
            raise ValueError(f"format {name}: unknown convention {spec['convention']!r}")
        mappings = {}
        for field_name, m in spec["fields"].items():
            if field_name not in fields:
                raise ValueError(f"format {name}: unknown field {field_name!r}")
            if not m.get("paths") or not str(m.get("source") or "").strip():
                raise ValueError(f"format {name}, field {field_name}: needs paths and a source")
            mappings[field_name] = Mapping(field_name, tuple(split_path(p) for p in m["paths"]), m["source"].strip())
        openrouter = spec.get("openrouter_when_text")
        usage = None
        if "usage_keys" in spec:
            u = spec["usage_keys"]
            blank = [k for k, source in (u.get("informational") or {}).items() if not str(source or "").strip()]
            if blank:
                raise ValueError(f"format {name}: informational usage keys without a source: {blank}")
            blank += [k for k, source in (u.get("unpriced") or {}).items() if not str(source or "").strip()]
            if blank:
                raise ValueError(f"format {name}: usage keys without a source: {blank}")
            usage = UsageKeys(tuple(split_path(r) if r else () for r in u["roots"]), u.get("prefix"),
                              {k: v.strip() for k, v in (u.get("informational") or {}).items()},
                              {k: v.strip() for k, v in (u.get("unpriced") or {}).items()})
        if spec.get("fast_lane") and spec.get("options", {}).get("snapshots"):
            # the lane's rows are never updated: staged_items__supersede_snapshots.sql writes the general rows only
            raise ValueError(f"format {name}: a fast_lane format cannot take the snapshots option")
        formats[name] = Format(
            name=name, title=spec["title"], convention=spec["convention"], provider=spec["provider"],
            default_provider=spec.get("default_provider"), openrouter_when_text=split_path(openrouter) if openrouter else None,
            fast_lane=bool(spec.get("fast_lane", False)), example=spec["example"],
            options={**OPTIONS, **spec.get("options", {})}, fields=mappings, usage=usage, body=_body(name, spec.get("body")),
            leaves={f.name: f.leaves for f in fields.values() if f.leaves})
    detection = tuple(Rule(r["format"], r["when"]) for r in raw["detection"])
    for rule in detection:
        condition_paths(rule.when)
        if rule.format not in (None, "stream") and rule.format not in formats:
            raise ValueError(f"detection names unknown format {rule.format!r}")
    missing = set(formats) - {r.format for r in detection}
    if missing:
        raise ValueError(f"formats never detected: {sorted(missing)}")
    return Declaration(fields, detection, formats, raw.get("wrappers", {}))
