"""HTTP(S) health checks of the cluster's processes on loopback: the answer of one GET within 2 s, or None.

No proxy applies (a proxy from the environment would answer for 127.0.0.1); a component's serving certificate is
checked against the cluster CA, and the API server and etcd are asked with a client certificate of it.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path

TIMEOUT_S = 2.0


def get(url: str, ca: Path | None = None, cert: Path | None = None, key: Path | None = None,
        insecure: bool = False) -> bytes | None:
    """The body of a 2xx answer to GET URL, None for anything else (refused, an error status, a TLS failure)."""
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if url.startswith("https:"):
        context = ssl.create_default_context(cafile=str(ca) if ca else None)
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if cert:
            context.load_cert_chain(str(cert), str(key) if key else None)
        handlers.append(urllib.request.HTTPSHandler(context=context))
    try:
        with urllib.request.build_opener(*handlers).open(url, timeout=TIMEOUT_S) as answer:
            return answer.read()
    except (OSError, ValueError, urllib.error.URLError):
        return None


def ok(url: str, **tls: object) -> bool:
    return get(url, **tls) is not None  # type: ignore[arg-type]
