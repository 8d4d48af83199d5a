"""gpu-platform's guardrails as CrossGuard policies, importable without starting the pack's gRPC server.

`pack.POLICIES` lists every rule; `pack.build_pack()` serves them to the engine (only `policies/__main__.py`
calls it); `offline.check_resources()` runs them over rendered resources without an engine.
"""
