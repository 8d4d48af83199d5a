"""A Prometheus HTTP API client for `report`: instant and range queries, with the authentication a cluster's
Prometheus asks for (none, a bearer token, or AWS SigV4 for Amazon Managed Service for Prometheus).

Standard library plus botocore (already a requirement) for SigV4. Every failure becomes PrometheusError naming
what could not be read and why, so `report` can say it and exit 2 instead of printing a traceback.

The API (prometheus.io/docs/prometheus/latest/querying/api): GET /api/v1/query?query=&time=, GET
/api/v1/query_range?query=&start=&end=&step=; answers {"status": "success", "data": {"resultType", "result"}}
or {"status": "error", "errorType", "error"}. Amazon Managed Service for Prometheus serves the same API under
https://aps-workspaces.<region>.amazonaws.com/workspaces/<workspace id>/api/v1/..., signed with SigV4 for the
service name `aps` (docs.aws.amazon.com/prometheus/latest/userguide/AMP-onboard-query-APIs.html).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

SIGV4_SERVICE = "aps"
_AMP_HOST = re.compile(r"^aps-workspaces\.([a-z0-9-]+)\.amazonaws\.com$")
TIMEOUT_SECONDS = 120.0
# Prometheus refuses a range query of more than 11,000 points per series (web/api/v1/api.go).
MAX_POINTS = 11000


class PrometheusError(RuntimeError):
    """A query that could not be answered: `what` was being read, `why` it failed."""

    def __init__(self, what: str, why: str):
        self.what, self.why = what, why
        super().__init__(f"could not read {what}: {why}")


def amp_region(url: str) -> str | None:
    """The AWS region of an Amazon Managed Service for Prometheus workspace URL, else None."""
    m = _AMP_HOST.match(urllib.parse.urlparse(url).hostname or "")
    return m.group(1) if m else None


@dataclass
class Prometheus:
    url: str
    bearer_token_file: Path | None = None
    sigv4_region: str | None = None
    progress: Callable[[str], None] | None = None
    timeout: float = TIMEOUT_SECONDS
    queries: int = field(default=0, init=False)

    def _headers(self, full_url: str) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.bearer_token_file is not None:
            try:
                headers["Authorization"] = f"Bearer {self.bearer_token_file.read_text().strip()}"
            except OSError as err:
                raise PrometheusError("the bearer token", f"{self.bearer_token_file}: {err.strerror}") from None
        if self.sigv4_region is not None:
            headers.update(_sigv4_headers(full_url, self.sigv4_region))
        return headers

    def _get(self, path: str, params: dict[str, str], what: str) -> Any:
        full = f"{self.url.rstrip('/')}{path}?{query_string(params)}"
        req = urllib.request.Request(full, headers=self._headers(full), method="GET")
        self.queries += 1
        done = threading.Event()
        if self.progress is not None:
            threading.Thread(target=_ticker, args=(done, what, self.progress), daemon=True).start()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body = resp.read().decode()
        except urllib.error.HTTPError as err:
            body = err.read().decode(errors="replace")
            try:
                detail = json.loads(body).get("error") or body
            except ValueError:
                detail = body.strip()[:300]
            raise PrometheusError(what, f"HTTP {err.code} from {self.url}: {detail}") from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise PrometheusError(what, f"{self.url} is unreachable ({reason})") from None
        finally:
            done.set()
        try:
            doc = json.loads(body)
        except ValueError:
            raise PrometheusError(what, f"{self.url} did not answer with the Prometheus API's JSON") from None
        if doc.get("status") != "success":
            raise PrometheusError(what, f"{doc.get('errorType', 'error')}: {doc.get('error', body[:300])}")
        return doc["data"]

    def query(self, expr: str, at: float, what: str) -> list[dict[str, Any]]:
        """Instant vector at `at` (unix seconds): [{"metric": {...}, "value": [t, "v"]}]."""
        return self._get("/api/v1/query", {"query": expr, "time": f"{at:.3f}"}, what)["result"]

    def query_range(self, expr: str, start: float, end: float, step: float, what: str) -> list[dict[str, Any]]:
        """Range matrix: [{"metric": {...}, "values": [[t, "v"], ...]}]."""
        return self._get("/api/v1/query_range", {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                                 "step": f"{step:g}"}, what)["result"]


def query_string(params: Mapping[str, str]) -> str:
    """The URL query of `params`, percent-encoded as SigV4's canonical query wants it, so that the URL sent is the
    URL signed.

    botocore signs a URL's query as it stands (botocore/auth.py, SigV4Auth._canonical_query_string_url: split on
    `&` and `=`, sorted, not re-encoded), while the server decodes the query it received and URI-encodes each name
    and value again: unreserved characters A-Z a-z 0-9 - _ . ~ as they are, every other byte %XY in upper case, a
    space %20 and never `+` (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html,
    UriEncode). urlencode's default quote_plus writes a space as `+`, so every PromQL expression with a space was
    signed over `+` and recomputed over `%20`: refused (the same bug: VictoriaMetrics/VictoriaMetrics#3171,
    curl/curl#13058). quote with safe="" leaves exactly those unreserved characters and writes upper-case hex
    (cpython Lib/urllib/parse.py, _ALWAYS_SAFE and quote_from_bytes). A plain Prometheus reads %20 as a space
    too (golang/go src/net/url/url.go, ParseQuery unescapes in query-component mode)."""
    return urllib.parse.urlencode(params, quote_via=urllib.parse.quote, safe="")


def _ticker(done: threading.Event, what: str, progress: Callable[[str], None], every: float = 2.0) -> None:
    """A progress line while a query takes longer than `every` seconds."""
    started = time.monotonic()
    while not done.wait(every):
        progress(f"reading {what} ... {time.monotonic() - started:.0f} s")


def stderr_progress(message: str) -> None:
    print(f"report: {message}", file=sys.stderr, flush=True)


def _sigv4_headers(url: str, region: str) -> dict[str, str]:
    """SigV4 headers for a GET of `url` with the default AWS credential chain (environment, profile, SSO,
    instance or pod role): what Amazon Managed Service for Prometheus requires of every query."""
    try:
        import botocore.session
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
    except ImportError:
        raise PrometheusError("AWS credentials", "botocore is not installed (pip install -r requirements.txt)") from None
    credentials = botocore.session.Session().get_credentials()
    if credentials is None:
        raise PrometheusError("AWS credentials", "no AWS credentials found (AWS_PROFILE, AWS_ACCESS_KEY_ID, "
                                                 "an SSO login or an instance role) to sign the queries with SigV4")
    request = AWSRequest(method="GET", url=url)
    SigV4Auth(credentials.get_frozen_credentials(), SIGV4_SERVICE, region).add_auth(request)
    return {k: v for k, v in request.headers.items()}
