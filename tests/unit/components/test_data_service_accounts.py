"""Each team namespace's pods reach the team's data through one ServiceAccount, `team-data` in that namespace,
which EKS Pod Identity maps to the team's role: the account and the association name the same namespace and
account. World: the prod stack rendered under mocks (the shared render)."""

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
