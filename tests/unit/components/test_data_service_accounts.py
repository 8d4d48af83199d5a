"""Each team namespace's pods reach the team's data through one ServiceAccount, `team-data` in that namespace,
which EKS Pod Identity maps to the team's role (the account and the association name the same namespace and
account), and through its claims on the team's bucket volumes. World: the prod stack rendered under mocks (the shared render)."""

from __future__ import annotations

from tests.conftest import rendered

# The namespaces of Pulumi.prod.yaml's teams (data-science has two: data-science and ds-notebooks).
NAMESPACES = ["data-science", "ds-notebooks", "llm-finetune", "llm-pretrain", "recsys", "search-serving", "vision"]


def test_each_team_namespace_has_the_team_data_account_and_its_pod_identity() -> None:
    r = rendered("prod")
    accounts = sorted((x.inputs["metadata"]["namespace"], x.inputs["metadata"]["name"])
                      for x in r.by_type("kubernetes:core/v1:ServiceAccount") if x.name.startswith("storage-"))
    assert accounts == [(ns, "team-data") for ns in NAMESPACES]
    associations = sorted((x.inputs["namespace"], x.inputs["serviceAccount"])
                          for x in r.by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
                          if x.name.startswith("storage-"))
    assert associations == [(ns, "team-data") for ns in NAMESPACES]


def test_each_namespace_s_claims_bind_their_own_volume_after_it_and_the_namespace_exist() -> None:
    """A claim made before its namespace fails to create; one made before its volume may bind to another."""
    claims = {x.name: (x.inputs["metadata"]["namespace"], x.inputs["metadata"]["name"], x.inputs["spec"]["volumeName"],
                       x.options["dependencies"])
              for x in rendered("prod").by_type("kubernetes:core/v1:PersistentVolumeClaim")
              if x.name.startswith("storage-llm-pretrain-")}
    assert claims == {
        "storage-llm-pretrain-team-data": ("llm-pretrain", "team-data", "llm-pretrain-team-data",
                                           ["storage-llm-pretrain-team-data-volume", "tenant-llm-pretrain"]),
        "storage-llm-pretrain-team-checkpoints": ("llm-pretrain", "team-checkpoints", "llm-pretrain-team-checkpoints",
                                                  ["storage-llm-pretrain-team-checkpoints-volume", "tenant-llm-pretrain"]),
    }


def test_the_data_path_objects_in_a_namespace_carry_its_team_and_the_platforms_labels() -> None:
    """What `kubectl get -l gpu-platform.io/team=...` and the pack's label rules select on."""
    team = {ns: ns for ns in NAMESPACES} | {"ds-notebooks": "data-science"}
    found = []
    for x in rendered("prod").resources:
        meta = x.inputs.get("metadata") if x.type.startswith("kubernetes:") else None
        if isinstance(meta, dict) and meta.get("namespace") in team and (
                x.name.startswith("storage-") or x.name.endswith("-allow-data-path")):
            found.append((x.name, meta["namespace"], meta.get("labels")))
    # per namespace: the ServiceAccount, two claims, the allow-data-path policy; llm-pretrain also the Lustre claim
    assert len(found) == 7 * 4 + 1
    for name, ns, labels in found:
        assert labels == {"gpu-platform.io/team": team[ns], "app.kubernetes.io/component": "storage",
                          "app.kubernetes.io/managed-by": "gpu-platform"}, name
