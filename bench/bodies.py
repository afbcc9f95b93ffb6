"""Logged request bodies for ``generate.py --bodies``: what gateways and tracing tools write per request.

Each record is a gateway/tracing envelope (``ts``, ``provider``, ``model``, ``tenant``, ``app``,
``request_id``, a ``gateway`` block with route, status and latency, a ``trace`` block with trace and
span ids) around the logged ``request`` in the family's native format and the provider's
``response`` (its usage and the assistant's reply). The families' prompts are built once:

* **system prompts of 2-30 KB** (log-uniform), written as prose from a fixed vocabulary;
* **tools lists** of 0-12 function declarations with JSON schemas, in each format's own shape;
* **openings shared at different depths**: families come in groups whose members share a common
  preamble of 300-24,000 characters before their own text, so their opening hashes agree to
  different boundaries (one group has a single member);
* **multi-turn histories**: 0 to about 20 earlier user/assistant turns drawn from a pool;
* **rotating preambles**: a few families write the request time into their system prompt (at a
  family-specific depth) from the middle day on, so nothing after that point is shared any more.

Prompt tokens are the rendered characters / 4, and a cache hit reads the family's system prompt and
tools (in 128-token blocks), so the usage agrees with the bodies. Everything is drawn from the
caller's ``random.Random``: the same seed gives the same bytes.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from datetime import datetime

WORDS = ("policy customer refund order shipping account please answer always never escalate tone friendly "
         "concise product warranty invoice help summarise context retrieve document citation source tool call "
         "result schema field value format markdown table error retry limit user assistant system safety "
         "privacy region language translate explain step reason verify check balance payment plan upgrade "
         "subscription ticket priority agent handoff memory session history").split()
GROUPS = ((300, 3), (1500, 4), (4000, 3), (9000, 4), (16000, 3), (24000, 2), (0, 1))  # (shared chars, members)
ROTATE_EVERY = 9  # every ninth family writes the time into its system prompt from the middle day on
POOL = 400  # distinct user and assistant turns each


def prose(rng: random.Random, chars: int) -> str:
    """Invented text of exactly ``chars`` characters (words and sentences from ``WORDS``)."""
    out, size = [], 0
    while size < chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize() + ". "
        out.append(sentence)
        size += len(sentence)
    return "".join(out)[:chars]


def _tool(rng: random.Random, index: int) -> dict:
    """One function declaration: name, description, a JSON schema of 1-6 properties."""
    props = {f"{rng.choice(WORDS)}_{p}": {"type": rng.choice(("string", "integer", "boolean")),
                                          "description": prose(rng, rng.randint(20, 120))}
             for p in range(rng.randint(1, 6))}
    return {"name": f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{index}", "description": prose(rng, rng.randint(60, 400)),
            "parameters": {"type": "object", "properties": props, "required": sorted(props)[:1]}}


@dataclass
class BodyFamily:
    """One family's fixed prompt: its system text, tools, where a rotating stamp goes, its cached tokens."""

    system: str
    tools: list[dict]
    rotates: bool
    stamp_at: int  # characters into the system prompt where a rotating family writes the time
    shared_tokens: int  # tokens of system prompt + tools (what a hit reads, before 128-token blocks)


def families(rng: random.Random, formats: list[str]) -> list[BodyFamily]:
    """One ``BodyFamily`` per entry of ``formats`` (the usage families' formats, in order)."""
    shared = [(prose(rng, depth), members) for depth, members in GROUPS]
    slots = [text for text, members in shared for _ in range(members)]
    out = []
    for i, _ in enumerate(formats):
        system_chars = int(math.exp(rng.uniform(math.log(2048), math.log(30720))))
        common = slots[i % len(slots)][:max(system_chars - 200, 0)]
        system = common + prose(rng, max(system_chars - len(common), 200))
        tools = [_tool(rng, t) for t in range(rng.choice((0, 0, 2, 4, 6, 9, 12)))]
        rotates = i % ROTATE_EVERY == 4
        tools_chars = len(json.dumps(tools, separators=(",", ":"))) if tools else 0
        out.append(BodyFamily(system, tools, rotates, rng.randint(200, max(201, len(system) // 2)),
                              (len(system) + tools_chars) // 4))
    return out


def turn_pools(rng: random.Random) -> tuple[list[str], list[str]]:
    """``POOL`` user turns (log-normal, median about 300 chars) and as many assistant turns (about 800)."""
    users = [prose(rng, min(6000, int(math.exp(rng.gauss(math.log(300), 0.9))) + 10)) for _ in range(POOL)]
    replies = [prose(rng, min(8000, int(math.exp(rng.gauss(math.log(800), 0.8))) + 10)) for _ in range(POOL)]
    return users, replies


def _openai_tools(tools: list[dict]) -> list[dict]:
    return [{"type": "function", "function": t} for t in tools]


def request(fmt: str, model: str, fam: BodyFamily, system: str, turns: list[tuple[str, str]]) -> dict:
    """The logged request of ``fmt`` (one of generate.MODELS' formats): system, tools, turns (role, text)."""
    if fmt == "openai_chat":
        body = {"model": model, "temperature": 0.2,
                "messages": [{"role": "system", "content": system}] + [{"role": r, "content": t} for r, t in turns]}
        if fam.tools:
            body["tools"] = _openai_tools(fam.tools)
        return body
    if fmt == "openai_responses":
        body = {"model": model, "instructions": system, "input": [{"role": r, "content": t} for r, t in turns]}
        if fam.tools:
            body["tools"] = [{"type": "function", **t} for t in fam.tools]
        return body
    if fmt == "anthropic":
        body = {"model": model, "max_tokens": 1024,
                "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": r, "content": [{"type": "text", "text": t}]} for r, t in turns]}
        if fam.tools:
            body["tools"] = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
                             for t in fam.tools]
        return body
    if fmt == "gemini":
        body = {"systemInstruction": {"parts": [{"text": system}]},
                "contents": [{"role": "model" if r == "assistant" else "user", "parts": [{"text": t}]} for r, t in turns]}
        if fam.tools:
            body["tools"] = [{"functionDeclarations": fam.tools}]
        return body
    body = {"modelId": model, "system": [{"text": system}],
            "messages": [{"role": r, "content": [{"text": t}]} for r, t in turns]}
    if fam.tools:
        body["toolConfig"] = {"tools": [{"toolSpec": {"name": t["name"], "description": t["description"],
                                                      "inputSchema": {"json": t["parameters"]}}} for t in fam.tools]}
    return body


def conversation(rng: random.Random, users: list[str], replies: list[str]) -> list[tuple[str, str]]:
    """Earlier turns (0 to about 20, geometric) and the new user turn."""
    turns = []
    while rng.random() < 0.75 and len(turns) < 40:
        turns += [("user", users[rng.randrange(POOL)]), ("assistant", replies[rng.randrange(POOL)])]
    return turns + [("user", users[rng.randrange(POOL)])]


def system_at(fam: BodyFamily, ts: datetime, rotating: bool) -> str:
    """The family's system prompt as sent at ``ts`` (with the time written in when it rotates)."""
    if not rotating:
        return fam.system
    return fam.system[:fam.stamp_at] + f" Current time: {ts:%Y-%m-%dT%H:%M:%SZ}." + fam.system[fam.stamp_at:]


def envelope(rng: random.Random, record: dict, body: dict, reply: str, fmt: str) -> dict:
    """The gateway/tracing envelope around ``record`` (the usage envelope), its request body and reply."""
    response = record["response"]
    if fmt == "openai_chat":
        response["choices"] = [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}]
    elif fmt == "openai_responses":
        response["output"] = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]}]
    elif fmt == "anthropic":
        response["content"] = [{"type": "text", "text": reply}]
    elif fmt == "gemini":
        response["candidates"] = [{"content": {"role": "model", "parts": [{"text": reply}]}, "finishReason": "STOP"}]
    else:
        response["output"] = {"message": {"role": "assistant", "content": [{"text": reply}]}}
    return {**{k: v for k, v in record.items() if k != "response"},
            "gateway": {"name": "edge-gateway", "route": f"/v1/{fmt}", "status": 200,
                        "latency_ms": int(math.exp(rng.gauss(math.log(900), 0.6)))},
            "trace": {"trace_id": f"{rng.getrandbits(128):032x}", "span_id": f"{rng.getrandbits(64):016x}"},
            "request": body, "response": response}
