"""Alert receivers' names: each once, and never 'null', the name kube-prometheus-stack's Alertmanager config
gives the receiver of unrouted alerts; the refusal says why 'null' is taken, and only for 'null'. World: the
prod spec with in-cluster monitoring, loaded in-process."""

from __future__ import annotations

import pytest

from gpu_platform.spec import SpecError, load_platform
from tests.conftest import platform_raw

SLACK = {"type": "slack", "secret": {"name": "alert-slack", "key": "url"}, "channel": "#gpu", "severities": ["critical"]}


def test_null_and_a_repeated_name_are_refused_at_their_names() -> None:
    raw = platform_raw("prod")
    raw["addons"]["monitoring"]["receivers"] = [{**SLACK, "name": "null"}, {**SLACK, "name": "oncall"},
                                                {**SLACK, "name": "oncall"}]
    with pytest.raises(SpecError) as err:
        load_platform(raw, "us-east-1")
    assert [str(p) for p in err.value.problems] == [
        "addons.monitoring.receivers[0].name: duplicate receiver 'null' ('null' is the receiver of unrouted alerts)",
        "addons.monitoring.receivers[2].name: duplicate receiver 'oncall'",
    ]
