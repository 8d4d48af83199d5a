"""`Platform`: the whole `gpu-platform:platform` value, and MultiKueue across clusters."""

from __future__ import annotations

from pydantic import Field, field_validator

from .addons import Addons
from .cluster import Cluster
from .data import Data
from .fields import Environment, Strict, dns_label
from .pools import Pool
from .security import Images, Jobs
from .stack_split import StackSplit
from .tenancy import Cohort, Preemption, Priority, Team, default_priorities


class MultiKueueWorker(Strict):
    name: str = Field(
        description="worker name, a DNS-1123 label (its MultiKueueCluster and Secret are named after it)",
        examples=["worker1"],
    )
    # Name of a Pulumi secret config key holding the worker's kubeconfig (never plaintext in the spec).
    kubeconfigSecret: str = Field(
        description=(
            "a Pulumi secret config key (gpu-platform:<key>) holding the worker's kubeconfig: pulumi "
            "config set --secret gpu-platform:<key> ..."
        ),
        examples=["worker1Kubeconfig"],
    )

    _name = field_validator("name")(lambda v: dns_label(v))


class MultiKueue(Strict):
    workers: list[MultiKueueWorker] = Field(
        min_length=1,
        description="worker clusters admitted workloads are dispatched to, at least one",
        examples=[[{"name": "worker1", "kubeconfigSecret": "worker1Kubeconfig"}]],
    )


class Platform(Strict):
    environment: Environment = Field(
        description=(
            "labels every tenant namespace and AWS resource; prod protects node groups and the created "
            "cluster from deletion"
        ),
        examples=["prod"],
    )
    cluster: Cluster = Field(
        description="the Kubernetes cluster the platform runs on",
        examples=[{"name": "ml-prod", "provider": "eks", "subnetIds": ["subnet-0a1", "subnet-0b2"]}],
    )
    addons: Addons = Field(
        default_factory=Addons,
        description="which cluster add-ons are installed, at which exact chart versions (all installed by default)",
        examples=[{"kueue": {"version": "0.19.2"}}],
    )
    pools: list[Pool] = Field(
        min_length=1,
        description="GPU node pools, at least one: each becomes nodes, a Kueue flavor and a quota key",
        examples=[[
            {
                "name": "h100-train",
                "accelerator": "h100-80gb",
                "instanceType": "p5.48xlarge",
                "workload": "training",
                "capacity": {"max": 4},
            },
        ]],
    )
    cohorts: list[Cohort] = Field(
        default_factory=list,
        description="the Kueue cohort tree teams borrow and lend within",
        examples=[[{"name": "org"}, {"name": "research", "parent": "org"}]],
    )
    teams: list[Team] = Field(
        default_factory=list,
        description="the tenants: namespaces, RBAC, quotas and a ClusterQueue each",
        examples=[[{"name": "vision", "costCenter": "cc-1042", "quotas": {"h100-train": {"units": 8}}}]],
    )
    priorities: list[Priority] = Field(
        default_factory=default_priorities,
        description=(
            "Kueue WorkloadPriorityClasses and Kubernetes PriorityClasses (default: system-critical "
            "1000000, production-inference 10000, training 1000, research 500, development 100)"
        ),
        examples=[[{"name": "training", "value": 1000, "description": "batch training"}]],
    )
    defaultPreemption: Preemption = Field(
        default_factory=Preemption,
        description="the ClusterQueue preemption policy a team gets unless it sets its own",
        examples=[{
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": "Never",
            "withinClusterQueue": "LowerPriority",
        }],
    )
    # Overrides of catalog.ON_DEMAND_USD_PER_HOUR, by instance type.
    pricing: dict[str, float] = Field(
        default_factory=dict,
        description=(
            "USD per hour by instance type, overriding the catalog's list prices in cost estimates "
            "(negotiated rates, savings plans)"
        ),
        examples=[{"p5.48xlarge": 55.04}],
    )
    multiKueue: MultiKueue | None = Field(
        default=None,
        description="dispatch admitted workloads to worker clusters (MultiKueue manager side)",
        examples=[{"workers": [{"name": "worker1", "kubeconfigSecret": "worker1Kubeconfig"}]}],
    )
    images: Images = Field(
        default_factory=Images,
        description="image registries tenant pods may use",
        examples=[{"allowedRegistries": ["public.ecr.aws", "nvcr.io"], "requireDigests": False}],
    )
    jobs: Jobs = Field(
        default_factory=Jobs,
        description="cleanup of finished tenant Jobs",
        examples=[{"ttlSecondsAfterFinished": 3600, "maxTtlSecondsAfterFinished": 86400}],
    )
    data: Data = Field(
        default_factory=Data,
        description="the data path: a bucket and Pod Identity role per team, FSx for Lustre, the storage add-ons",
        examples=[{"enabled": True, "bucketPrefix": "acme-ml-prod"}],
    )
    stackSplit: StackSplit | None = Field(
        default=None,
        description=(
            "deploy this environment as a platform stack and tenant stacks by team group (each stack picks its "
            "part by its own name); unset, one stack deploys everything"
        ),
        examples=[{"platformStack": "prod-platform",
                   "tenantStacks": [{"stack": "prod-research", "cohorts": ["research"]}]}],
    )
