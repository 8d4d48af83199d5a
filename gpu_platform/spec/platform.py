"""`Platform`: the whole `gpu-platform:platform` value, and MultiKueue across clusters."""

from __future__ import annotations

from pydantic import Field, field_validator

from .addons import Addons
from .cluster import Cluster
from .fields import Environment, Strict, dns_label
from .pools import Pool
from .security import Images, Jobs
from .tenancy import Cohort, Preemption, Priority, Team, default_priorities


class MultiKueueWorker(Strict):
    name: str
    # Name of a Pulumi secret config key holding the worker's kubeconfig (never plaintext in the spec).
    kubeconfigSecret: str

    _name = field_validator("name")(lambda v: dns_label(v))


class MultiKueue(Strict):
    workers: list[MultiKueueWorker] = Field(min_length=1)


class Platform(Strict):
    environment: Environment
    cluster: Cluster
    addons: Addons = Field(default_factory=Addons)
    pools: list[Pool] = Field(min_length=1)
    cohorts: list[Cohort] = Field(default_factory=list)
    teams: list[Team] = Field(default_factory=list)
    priorities: list[Priority] = Field(default_factory=default_priorities)
    defaultPreemption: Preemption = Field(default_factory=Preemption)
    # Overrides of catalog.ON_DEMAND_USD_PER_HOUR, by instance type.
    pricing: dict[str, float] = Field(default_factory=dict)
    multiKueue: MultiKueue | None = None
    images: Images = Field(default_factory=Images, description="image registries tenant pods may use")
    jobs: Jobs = Field(default_factory=Jobs, description="cleanup of finished tenant Jobs")
