"""Who may do what in a team's namespace, as prod's llm-pretrain and recsys teams (Pulumi.prod.yaml) get it:
each tier's RoleBinding, its ClusterRole and its groups, and the batch-user binding made only after the
platform's batch-user ClusterRole (a binding to a role that does not exist yet grants nothing until it does).
World: the prod stack rendered under mocks (the shared render)."""

from __future__ import annotations

from tests.conftest import rendered

BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"


def bindings(namespace: str) -> dict[str, tuple[str, list[str], list[str]]]:
    return {x.inputs["metadata"]["name"]: (x.inputs["roleRef"]["name"], [s["name"] for s in x.inputs["subjects"]],
                                           x.options["dependencies"])
            for x in rendered("prod").by_type(BINDING) if x.inputs["metadata"].get("namespace") == namespace
            and x.name.startswith("tenant-")}


def test_each_tier_binds_its_role_to_its_groups_and_batch_users_wait_for_their_role() -> None:
    assert bindings("llm-pretrain") == {
        "tenant-admins": ("gpu-platform:tenant-admin", ["llm-leads"], ["tenant-llm-pretrain"]),
        "tenant-batch-users": ("gpu-platform:batch-user", ["llm-leads", "llm-engineers"],
                               ["tenancy-batch-user", "tenant-llm-pretrain"]),
        "tenant-members": ("edit", ["llm-engineers"], ["tenant-llm-pretrain"]),
    }
    assert bindings("recsys") == {
        "tenant-admins": ("gpu-platform:tenant-admin", ["recsys-leads"], ["tenant-recsys"]),
        "tenant-batch-users": ("gpu-platform:batch-user", ["recsys-leads", "recsys-engineers"],
                               ["tenancy-batch-user", "tenant-recsys"]),
        "tenant-members": ("edit", ["recsys-engineers"], ["tenant-recsys"]),
        "tenant-viewers": ("view", ["sre"], ["tenant-recsys"]),
    }
