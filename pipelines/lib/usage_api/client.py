"""One GET of a usage-API page, retried on 429 and 5xx with exponential backoff honouring Retry-After.

Built on ``requests`` with urllib3's ``Retry`` (both well kept and already installed with Dagster):
``Retry`` re-sends a GET answered 429, 500, 502, 503 or 504 (or not answered at all), sleeping the
``Retry-After`` header when the answer carries one, else ``backoff * 2^(n-1)`` seconds (at most 60).
What is left after the retries is classified here into a ``PageFailure`` with a one-line reason.

The key is only ever a request header: it is not part of a URL, a file, a log line or a message;
``scrub`` removes it from any text that leaves this module all the same.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a page is fetched: every run loads this module, few fetch (0.2 s of import)
    import requests

RETRY_STATUSES = (429, 500, 502, 503, 504)
BACKOFF_MAX_SECONDS = 60.0
READ_BYTES = 65536  # at most this much of an answer's body per read


class PageFailure(Exception):
    """A page that could not be fetched or is not the documented shape; ``str()`` is the one-line reason."""


@dataclass(frozen=True)
class RetryOptions:
    """``retries`` after the first try, first ``backoff_seconds`` (doubled each time), ``timeout_seconds`` per try for
    the whole answer to arrive."""

    retries: int = 5
    backoff_seconds: float = 1.0
    timeout_seconds: float = 30.0


def session(options: RetryOptions) -> requests.Session:
    """A session whose GETs are retried as the module docstring says (``raise_on_status`` off: the last
    answer is returned, and classified by ``get_json``)."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    retry = Retry(total=options.retries, connect=options.retries, read=options.retries, status=options.retries,
                  status_forcelist=RETRY_STATUSES, allowed_methods=frozenset({"GET"}),
                  backoff_factor=options.backoff_seconds, backoff_max=BACKOFF_MAX_SECONDS,
                  respect_retry_after_header=True, raise_on_status=False)
    http = requests.Session()
    http.trust_env = True  # HTTPS_PROXY / NO_PROXY from the environment (a proxy is also a base-URL override)
    adapter = HTTPAdapter(max_retries=retry)
    http.mount("https://", adapter)
    http.mount("http://", adapter)
    return http


def get_json(http: requests.Session, url: str, params: list[tuple[str, str]], headers: dict[str, str],
             options: RetryOptions) -> tuple[bytes, object]:
    """GET ``url`` with ``params``; the raw body and its parsed JSON.

    Raises ``PageFailure`` for an answer other than 200 after the retries (non-retryable 4xx at once),
    no answer at all, or a body that is not JSON. The reason names the status and the API's own error
    message (never the key).
    """
    import requests

    import urllib3

    secrets = [v for k, v in headers.items() if k.lower() in ("authorization", "x-api-key")]
    deadline = time.monotonic() + options.timeout_seconds
    try:
        answer = http.get(url, params=params, headers=headers, timeout=options.timeout_seconds, stream=True)
        body = _body_by(answer, deadline)
    except TimeoutError:
        raise PageFailure(f"the answer took longer than {options.timeout_seconds:g} s to arrive whole "
                          "(CACHEMETER_USAGE_API_TIMEOUT_SECONDS)") from None
    except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        cause = exc.__class__.__name__
        raise PageFailure(scrub(f"no answer after {options.retries} retries ({cause})", secrets)) from None
    if answer.status_code != 200:
        retried = f" after {options.retries} retries" if answer.status_code in RETRY_STATUSES else ""
        raise PageFailure(scrub(f"HTTP {answer.status_code}{retried}: {_api_error(body)}", secrets))
    try:
        return body, json.loads(body)
    except ValueError:
        raise PageFailure(scrub(f"HTTP 200 but the body is not JSON: {_excerpt(body)}", secrets)) from None


def _body_by(answer: requests.Response, deadline: float) -> bytes:
    """``answer``'s body (decoded), read as it arrives; raises ``TimeoutError`` once ``time.monotonic()`` passes
    ``deadline``. requests' ``timeout`` bounds each read, not the answer: a server sending a byte every half second held
    a fetch for 54 s at a 2 s timeout, and could hold the nightly fetch for ever (a break test). ``read1`` returns what
    one read brings, so the deadline is checked as the bytes come (a stalled socket is the read timeout's)."""
    chunks = []
    with answer:
        while chunk := answer.raw.read1(READ_BYTES, decode_content=True):
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise TimeoutError
    return b"".join(chunks)


def _api_error(body: bytes) -> str:
    """The API's error message (both APIs answer ``{"error": {"type"?, "message"}}``), else a body excerpt."""
    try:
        error = json.loads(body).get("error")
        if isinstance(error, dict):
            return " ".join(str(error[k]) for k in ("type", "message") if error.get(k))[:200] or _excerpt(body)
    except (ValueError, AttributeError):
        pass
    return _excerpt(body)


def _excerpt(body: bytes) -> str:
    text = body[:120].decode("utf-8", "replace").replace("\n", " ").strip()
    return repr(text) if text else "(empty body)"


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` with every secret (and its bare value after ``Bearer ``) replaced by ``***``."""
    for secret in secrets:
        for value in {secret, secret.removeprefix("Bearer ")}:
            if value:
                text = text.replace(value, "***")
    return text
