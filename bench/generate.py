"""Generate realistic usage logs for benchmarks: ``python bench/generate.py --requests N --days D --out DIR``.

Mixed native formats in envelopes with tenant and app (about 50% OpenAI Chat/Responses, 30% Anthropic
Messages, 10% Gemini, 10% Bedrock Converse), long-tailed prompt lengths (log-normal, median about
3,000 tokens), prefix families whose hit rates range from 0% to 95%, and a rotating-preamble incident
in a few families from the middle day on. Deterministic for a seed; written day by day, line by line,
so memory stays flat whatever N is.

``--bodies`` wraps each record in a gateway/tracing envelope that also carries the logged request
(system prompts of 2-30 KB, tools lists, multi-turn histories, families sharing openings at different
depths, rotating preambles; see ``bodies.py``), about 15 KB a record; the usage rows stay the same
families, formats and hit rates, with prompt tokens taken from the bodies' length.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bodies as request_bodies  # noqa: E402

FIRST_DAY = datetime(2026, 10, 1, tzinfo=timezone.utc)
FORMATS = [("openai_chat", 0.30), ("openai_responses", 0.20), ("anthropic", 0.30), ("gemini", 0.10), ("bedrock", 0.10)]
MODELS = {"openai_chat": ("openai", "gpt-4.1"), "openai_responses": ("openai", "gpt-5-mini"),
          "anthropic": ("anthropic", "claude-sonnet-4-5"), "gemini": ("gemini", "gemini-2.5-flash"),
          "bedrock": ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")}


def families(rng: random.Random, count: int = 40) -> list[dict]:
    """Prefix families: format, tenant, app, shared opening (tokens), hit rate 0..0.95, rotates or not."""
    out = []
    for i in range(count):
        fmt = rng.choices([f for f, _ in FORMATS], [w for _, w in FORMATS])[0]
        out.append({"format": fmt, "tenant": f"tenant-{i % 7}", "app": f"app-{i}", "opening": rng.randint(1100, 6000),
                    "hit_rate": round(0.95 * i / (count - 1), 2), "rotates": i % 13 == 5})
    return out


def body(fmt: str, prompt: int, cached: int, written: int, output: int, rid: str, ts: datetime) -> dict:
    provider, model = MODELS[fmt]
    if fmt == "openai_chat":
        return {"id": rid, "object": "chat.completion", "created": int(ts.timestamp()), "model": model, "usage": {
            "prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": cached}}}
    if fmt == "openai_responses":
        return {"id": rid, "object": "response", "created_at": int(ts.timestamp()), "model": model, "usage": {
            "input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": output // 3}, "total_tokens": prompt + output}}
    if fmt == "anthropic":
        return {"id": rid, "type": "message", "model": model, "usage": {
            "input_tokens": prompt - cached - written, "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": written,
            "cache_creation": {"ephemeral_5m_input_tokens": written, "ephemeral_1h_input_tokens": 0}, "output_tokens": output}}
    if fmt == "gemini":
        return {"responseId": rid, "modelVersion": model, "usageMetadata": {
            "promptTokenCount": prompt, "cachedContentTokenCount": cached, "candidatesTokenCount": output,
            "totalTokenCount": prompt + output}}
    return {"output": {}, "stopReason": "end_turn", "usage": {
        "inputTokens": prompt - cached - written, "cacheReadInputTokens": cached, "cacheWriteInputTokens": written,
        "outputTokens": output, "totalTokens": prompt + output}}


def generate(requests: int, days: int, out: Path, seed: int = 1, gz: bool = False, bodies: bool = False) -> list[Path]:
    """Write ``requests`` records spread over ``days`` UTC days (with logged request bodies when ``bodies``);
    returns the files written. The usage records are the same whether or not ``bodies`` is set, but for
    prompt and cache tokens, which then follow the bodies (the bodies draw from their own random stream)."""
    rng = random.Random(seed)
    fams = families(rng)
    body_rng = random.Random(seed + 1_000_003)
    body_fams = request_bodies.families(body_rng, [f["format"] for f in fams]) if bodies else []
    users, replies = request_bodies.turn_pools(body_rng) if bodies else ([], [])
    out.mkdir(parents=True, exist_ok=True)
    written_files = []
    per_day = [requests // days + (1 if d < requests % days else 0) for d in range(days)]
    for d, count in enumerate(per_day):
        day = FIRST_DAY + timedelta(days=d)
        path = out / f"usage-{day:%Y-%m-%d}.jsonl{'.gz' if gz else ''}"
        handle = gzip.open(path, "wt", encoding="utf-8") if gz else path.open("w", encoding="utf-8")
        with handle:
            for n in range(count):
                index = rng.randrange(len(fams))
                fam = fams[index]
                ts = day + timedelta(seconds=86399 * n / max(count, 1))
                prompt = max(fam["opening"] + 50, int(math.exp(rng.gauss(math.log(3000), 0.8))))
                rotating = fam["rotates"] and d >= days // 2
                hit = not rotating and rng.random() < fam["hit_rate"]
                opening = fam["opening"]
                if bodies:
                    body_fam = body_fams[index]
                    rotating = body_fam.rotates and d >= days // 2
                    hit = hit and not rotating
                    turns = request_bodies.conversation(body_rng, users, replies)
                    system = request_bodies.system_at(body_fam, ts, rotating)
                    opening = body_fam.shared_tokens
                    # the rendered prompt: system (with any stamp) and tools, then the turns; ~4 chars a token
                    prompt = opening + (len(system) - len(body_fam.system) + sum(len(t) for _, t in turns)) // 4
                cached = (opening // 128) * 128 if hit else 0
                written = 0 if hit or fam["format"] not in ("anthropic", "bedrock") else opening
                output = int(math.exp(rng.gauss(math.log(300), 0.7))) + 1
                rid = f"{d}-{n}"
                provider, model = MODELS[fam["format"]]
                record = {"ts": ts.isoformat().replace("+00:00", "Z"), "provider": provider, "model": model,
                          "tenant": fam["tenant"], "app": fam["app"], "request_id": rid,
                          "response": body(fam["format"], prompt, cached, written, output, rid, ts)}
                if bodies:
                    logged = request_bodies.request(fam["format"], model, body_fam, system, turns)
                    record = request_bodies.envelope(body_rng, record, logged, replies[body_rng.randrange(len(replies))],
                                                     fam["format"])
                handle.write(json.dumps(record, separators=(",", ":")) + "\n")
        written_files.append(path)
    return written_files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--bodies", action="store_true", help="log each request body too (see bodies.py)")
    args = parser.parse_args()
    files = generate(args.requests, args.days, args.out, args.seed, args.gzip, args.bodies)
    print(json.dumps({"requests": args.requests, "days": args.days, "files": len(files),
                      "bytes": sum(f.stat().st_size for f in files)}))


if __name__ == "__main__":
    main()
