"""Test and tooling harness: the real program run under Pulumi's mocks, through private Pulumi APIs.

Kept out of components/ (docs/architecture.md, "One renderer for everything"): nothing `pulumi up` runs
imports it; the CLI's `render` and `check`, the tests and the benchmarks do. Its use of `pulumi.runtime`
internals (the mock monitor, `_sync_await`, rpc's secret signature) is what to re-check first on a Pulumi
upgrade.
"""
