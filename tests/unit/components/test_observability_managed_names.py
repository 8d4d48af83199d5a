"""The AWS names a user finds in the console for managed monitoring (addons.monitoring.mode: managed): the
workspace, the collector and the reader policy named after the cluster. World: prod rendered under mocks with
managed monitoring (the variant tests/unit/components/test_observability.py declares). It imports the
variant's declaration so that tests/conftest.py runs it with the variant's other readers, once the worker has
rendered it."""

from __future__ import annotations

from tests.unit.components.test_observability import managed, prod_managed  # noqa: F401 (read: runs with its readers)


def test_the_workspace_collector_and_reader_policy_are_named_after_the_cluster() -> None:
    assert managed("aws:amp/workspace:Workspace", "monitoring-workspace").inputs["alias"] == "ml-prod-metrics"
    assert managed("aws:amp/scraper:Scraper", "monitoring-collector").inputs["alias"] == "ml-prod-collector"
    assert managed("aws:iam/policy:Policy", "monitoring-reader").inputs["name"] == "ml-prod-metrics-reader"
