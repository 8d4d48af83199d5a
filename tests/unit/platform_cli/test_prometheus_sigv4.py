"""`report --sigv4` (docs/report.md, Amazon Managed Service for Prometheus): the query the client sends is the query
it signed. A local HTTP server records what the client really sent; botocore's SigV4Auth (service `aps`) signs
the same request independently, from the query parameters, with the same credentials and a fixed time; the
Authorization headers must be equal. The server also does what AWS does with a request: it decodes the query it
received and signs it again (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html:
each name and value URI-encoded, a space as %20, never `+`).

A PromQL expression with a space, `+`, `=`, `/` and a non-ASCII character is what a real query looks like
(`sum by (team) (...)`); before the fix the URL carried `+` for each space, botocore signed that `+` as it stood,
and AWS, recomputing `%20`, refused every such query (VictoriaMetrics/VictoriaMetrics#3171, curl/curl#13058).
"""

from __future__ import annotations

import datetime
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import botocore.auth
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from platform_cli.prometheus_api import Prometheus

REGION = "us-east-1"
ACCESS_KEY, SECRET_KEY, TOKEN = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token/+="
NOW = datetime.datetime(2026, 3, 1, 12, 0, 0)
EXPR = 'sum by (team) (rate(x{a="b c", p=~"1+2/3"}[5m])) / 2 + 1 ≥ ü'
AT = 1_800_000_000.0
# The query as it must travel: every byte but A-Z a-z 0-9 - _ . ~ percent-encoded in upper case, a space %20.
SENT_QUERY = ("query=sum%20by%20%28team%29%20%28rate%28x%7Ba%3D%22b%20c%22%2C%20p%3D~%221%2B2%2F3%22%7D%5B5m%5D%29%29"
              "%20%2F%202%20%2B%201%20%E2%89%A5%20%C3%BC&time=1800000000.000")


class Recorder(BaseHTTPRequestHandler):
    """Answers every GET with an empty Prometheus vector and keeps the request target and headers."""

    seen: list[tuple[str, dict[str, str]]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        Recorder.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[str]:
    """A recording server, and an AWS credential chain that finds only these environment credentials."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # The signing time (botocore/auth.py, SigV4Auth.add_auth reads get_current_datetime()).
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: NOW)
    Recorder.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    # shutdown() waits for serve_forever to look at its flag: every 0.05 s, not its default 0.5 s.
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def botocore_authorization(base: str, path: str, params: list[tuple[str, str]]) -> str:
    """botocore's own SigV4 of GET base+path with these query parameters (canonicalized from the parameters, not
    from a URL), an empty body, the test's credentials and time."""
    request = AWSRequest(method="GET", url=f"{base}{path}", params=params, data=b"")
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, TOKEN), "aps", REGION).add_auth(request)
    return request.headers["Authorization"]


def sent(base: str) -> tuple[str, str, dict[str, str]]:
    Prometheus(base, sigv4_region=REGION).query(EXPR, AT, "the test query")
    (target, headers), = Recorder.seen
    path, _, query = target.partition("?")
    return path, query, headers


def test_the_signature_is_botocores_for_the_same_query_parameters(server: str) -> None:
    _, _, headers = sent(server)
    expected = botocore_authorization(server, "/api/v1/query", [("query", EXPR), ("time", "1800000000.000")])
    assert expected.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260301/us-east-1/aps/aws4_request, "
                               "SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=")
    assert headers["authorization"] == expected
    assert (headers["x-amz-date"], headers["x-amz-security-token"]) == ("20260301T120000Z", TOKEN)


def test_the_query_sent_is_the_query_signed_as_a_server_recomputes_it(server: str) -> None:
    path, query, headers = sent(server)
    assert path == "/api/v1/query"
    assert query == SENT_QUERY, "a space travels as %20, `+` as %2B"
    # What the server reads: the expression itself (a plain Prometheus reads %20 as a space too).
    received = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    assert received == [("query", EXPR), ("time", "1800000000.000")]
    # What AWS checks: the signature recomputed from the request as received.
    assert headers["authorization"] == botocore_authorization(server, path, received)
