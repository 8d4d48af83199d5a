"""docs/queues.md against the Kueue release the stacks render: every chart value the page names is set as it
says, the page names every value the release sets, and the page says who makes Kueue's ServiceMonitor.

The page once said the chart makes Kueue's ServiceMonitor and that the release sets
`metrics.prometheusNamespace: monitoring`; the release set neither. These tests read the
values from the render (tests/conftest.py `rendered`), and which keys are chart values from the chart's own
values.yaml (../shared/reference), so a change to either side that the page does not follow fails here.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import pytest
import yaml

from gpu_platform import conventions as cv
from tests.conftest import ROOT, reference_yaml, rendered, spec_of
from tests.reference_data import values_file

PAGE = ROOT / "docs" / "queues.md"
RELEASE = "kubernetes:helm.sh/v3:Release"
# The stacks that install Kueue's chart (`local` runs Kueue as a process: no release).
STACKS = ("prod", "staging")
# `key.path` or `key.path: value` in backticks.
CODE = re.compile(r"`([A-Za-z][\w.]*)(?::\s*([^`]*))?`")
TABLE_ROW = re.compile(r"^\| `([^`]+)` \| (.+?) \|$")


def leaves(values: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    if isinstance(values, dict) and values:
        for key, value in values.items():
            yield from leaves(value, (*path, key))
    else:
        yield ".".join(path), values


def release_values(stack: str) -> dict[str, Any]:
    (release,) = [r for r in rendered(stack).by_type(RELEASE) if r.inputs["name"] == cv.KUEUE_RELEASE_NAME]
    return dict(leaves(release.inputs["values"]))


def chart_keys() -> set[str]:
    """Every key path of the chart's values.yaml, leaves and the maps above them."""
    version = spec_of("prod").addons.kueue.version
    defaults = reference_yaml(values_file(f"kueue-v{version}-chart-values.yaml"))
    out: set[str] = set()
    for path, _ in leaves(defaults):
        parts = path.split(".")
        out |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return out


def documented_table() -> dict[str, str]:
    """The page's "chart value | set to" table: key path -> the cell as written."""
    lines = PAGE.read_text().splitlines()
    start = lines.index("| chart value | set to |")
    rows: dict[str, str] = {}
    for line in lines[start + 2:]:
        m = TABLE_ROW.match(line)
        if not m:
            break
        rows[m.group(1)] = m.group(2)
    assert rows, "the chart-values table has no rows"
    return rows


def literal(cell: str, stack: str) -> Any:
    """A cell's backticked value as the render would hold it (`false` -> False, `v<version>` -> v0.19.2), or
    None for prose."""
    m = re.match(r"^`([^`]*)`", cell)
    if not m:
        return None
    text = m.group(1).replace("<version>", spec_of(stack).addons.kueue.version.removeprefix("v"))
    return yaml.safe_load(text)


@pytest.mark.parametrize("stack", STACKS)
def test_the_page_lists_every_chart_value_the_release_sets_as_it_sets_it(stack: str) -> None:
    values = release_values(stack)
    table = documented_table()
    assert set(table) == set(values), "the page's chart-values table and the release differ"
    for key, cell in table.items():
        expected = literal(cell, stack)
        if expected is None:
            # Prose stands only for the one value too long to write out: the controller's Configuration.
            config = yaml.safe_load(values[key])
            assert "configuration" in cell and config["kind"] == "Configuration", (key, cell)
        else:
            assert values[key] == expected, (key, cell)


@pytest.mark.parametrize("stack", STACKS)
def test_every_chart_value_the_page_names_with_a_value_is_the_rendered_one(stack: str) -> None:
    """Anywhere on the page, `<chart key>: <value>` claims the release sets that key to that value (the old
    `metrics.prometheusNamespace: monitoring` fails here: the release does not set it)."""
    values = release_values(stack)
    keys = chart_keys()
    claims = [(k, v) for k, v in CODE.findall(PAGE.read_text()) if v and k in keys]
    assert ("enablePrometheus", "false") in claims  # the page states it; guard against a vacuous pass
    wrong = [(k, v) for k, v in claims if k not in values or values[k] != yaml.safe_load(v)]
    assert wrong == [], f"the page claims chart values the {stack} release does not set so: {wrong}"


def test_the_page_names_no_chart_value_it_does_not_account_for() -> None:
    """A chart key the page mentions is either in its table (set) or one the release leaves unset on
    purpose, and then the page says so."""
    values = release_values("prod")
    text = PAGE.read_text()
    mentioned = {k for k, _ in CODE.findall(text) if k in chart_keys()}
    unset = mentioned - set(values) - {k.rsplit(".", 1)[0] for k in values if "." in k}
    assert unset == {"metrics.prometheusNamespace"}, unset
    assert "reads `metrics.prometheusNamespace`, which the release leaves unset" in " ".join(text.split())


def test_the_page_says_kueues_servicemonitor_is_the_monitoring_components() -> None:
    """With enablePrometheus false the chart renders no ServiceMonitor (charts/kueue/templates/prometheus/
    monitor.yaml is inside `if .Values.enablePrometheus`, Kueue v0.19.2); the stack's one is monitoring/kueue.
    Every sentence of the page about the ServiceMonitor that mentions the chart says the chart makes none."""
    for stack in STACKS:
        assert release_values(stack)["enablePrometheus"] is False
        monitors = [(o["metadata"]["namespace"], o["metadata"]["name"])
                    for o in rendered(stack).kubernetes_objects() if o["kind"] == "ServiceMonitor"]
        assert (cv.MONITORING_NAMESPACE, "kueue") in monitors, stack
    text = " ".join(PAGE.read_text().split())
    sentences = [s for s in re.split(r"(?<=[.;)|])\s+", text) if "ServiceMonitor" in s]
    assert sentences
    about_chart = [s for s in sentences if "chart" in s]
    assert about_chart, "the page no longer says what the chart does about the ServiceMonitor"
    wrong = [s for s in about_chart if "no ServiceMonitor" not in s and "chart's own stays off" not in s]
    assert wrong == [], wrong
    assert "ServiceMonitor `monitoring/kueue` is made by the monitoring component" in text
