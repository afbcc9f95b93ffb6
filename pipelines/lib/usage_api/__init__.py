"""Usage from the providers' organisation APIs as a source: fetch a UTC day's pages, store each raw.

``sources`` says what is asked of each API and what a documented page looks like; ``client`` asks
(retries on 429 / 5xx with backoff, keys only in headers); ``pages`` stores the pages under the logs
folder (``_cachemeter/usage_api/``), where the normal ingest reads them like any other log file.
"""

MANAGED_DIR = "_cachemeter/usage_api"  # relative to the logs folder: cachemeter's own, nothing else writes there


def managed(relative_name: str) -> bool:
    """Whether a log file's name (relative to the logs folder) is a usage-API page cachemeter stores.

    Such a page is the API's current answer for its day: when a re-fetch replaces or removes it, its
    previous rows are replaced or dropped, not kept as history like a rotated log's (``generations.plan``).
    """
    return relative_name.startswith(MANAGED_DIR + "/")
