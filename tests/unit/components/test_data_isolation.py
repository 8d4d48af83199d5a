"""Team isolation of the data path, decided by a real IAM policy evaluator rather than by reading our JSON.

The rendered prod stack's role policies (the exact documents `pulumi up` would send) are loaded into moto's
S3/IAM/STS server (moto[server] from PyPI, on 127.0.0.1, once per session) with IAM enforcement on: every
request after the set-up is signed with a role session's credentials and authorised by moto's evaluator of
the role's policies (moto/iam/access_control.py: Allow/Deny, action and resource wildcards, explicit deny
first).

What moto covers: identity-based policies of the assumed role, SigV4 signatures with session tokens, S3 object
and bucket actions mapped to their IAM actions and ARNs. What it does not: the role's trust policy for the
EKS Pod Identity service principal and its session-tag conditions (the sessions are assumed before
enforcement, standing in for the Pod Identity agent), condition keys in permission policies (moto evaluates
StringEquals in trust policies only), bucket policies (the TLS-only deny is tested on its document in
test_data_path.py), KMS key policies, SCPs and VPC endpoint policies. Those are AWS's to enforce; the
linter (parliament) checks their documents.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from tests.conftest import plan_of, rendered

ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ROLE = "aws:iam/role:Role"
REGION = "us-east-1"
TEAMS = ("llm-pretrain", "vision")


def rendered_document(type_: str, name: str, key: str) -> dict[str, Any]:
    return json.loads(rendered("prod").one(type_, name).inputs[key])


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[dict[str, Any]]:
    """moto's server with the two teams' buckets and objects, their roles with the rendered policies, and a
    session of each role; IAM enforcement is switched on last."""
    boto3 = pytest.importorskip("boto3")
    import threading

    from botocore.config import Config
    from moto.server import ThreadedMotoServer
    import requests

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
    admin = dict(endpoint_url=endpoint, region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    session = boto3.session.Session()  # one session: its loaded service models are shared by every client
    try:
        data = plan_of("prod").data
        s3, iam, sts = (session.client(s, config=cfg, **admin) for s in ("s3", "iam", "sts"))
        for team in (data.team(t) for t in TEAMS):
            s3.create_bucket(Bucket=team.bucket)
            s3.put_object(Bucket=team.bucket, Key="datasets/shard-0000.tar", Body=b"tokens")
        sessions: dict[str, Any] = {}
        for owner, role_name, policy in [
            *((t, data.team(t).role_name, rendered_document(ROLE_POLICY, f"storage-{t}", "policy")) for t in TEAMS),
            ("platform-admins", data.admin_role_name, rendered_document(ROLE_POLICY, "storage-data-admin", "policy")),
        ]:
            trust = rendered("prod").one(ROLE, f"storage-{owner}" if owner in TEAMS else "storage-data-admin")
            role = iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=trust.inputs["assumeRolePolicy"])
            iam.put_role_policy(RoleName=role_name, PolicyName="data", PolicyDocument=json.dumps(policy))
            creds = sts.assume_role(RoleArn=role["Role"]["Arn"], RoleSessionName=f"{owner}-pod")["Credentials"]
            sessions[owner] = session.client("s3", config=cfg, endpoint_url=endpoint, region_name=REGION,
                                           aws_access_key_id=creds["AccessKeyId"],
                                           aws_secret_access_key=creds["SecretAccessKey"],
                                           aws_session_token=creds["SessionToken"])
        # From here on every request is authenticated and authorised (moto's INITIAL_NO_AUTH_ACTION_COUNT = 0).
        requests.post(f"{endpoint}/moto-api/reset-auth", data=b"0", timeout=10).raise_for_status()
        yield {"sessions": sessions, "buckets": {t: data.team(t).bucket for t in TEAMS}}
    finally:
        # stop() waits out the server's half-second poll; nothing waits for it.
        threading.Thread(target=server.stop, daemon=True).start()


def denied(call: Any, **kw: Any) -> bool:
    from botocore.exceptions import ClientError

    try:
        call(**kw)
    except ClientError as err:
        return err.response["Error"]["Code"] == "AccessDenied"
    return False


def test_a_teams_role_reads_and_writes_its_own_bucket_and_nothing_of_another_team(moto_s3) -> None:
    mine, theirs = moto_s3["buckets"]["llm-pretrain"], moto_s3["buckets"]["vision"]
    s3 = moto_s3["sessions"]["llm-pretrain"]
    assert s3.get_object(Bucket=mine, Key="datasets/shard-0000.tar")["Body"].read() == b"tokens"
    s3.put_object(Bucket=mine, Key="checkpoints/run-1/step-100.pt", Body=b"weights")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=mine)["Contents"]]
    assert keys == ["checkpoints/run-1/step-100.pt", "datasets/shard-0000.tar"]
    # The other team's data: not readable, not listable, not writable, not deletable.
    assert denied(s3.get_object, Bucket=theirs, Key="datasets/shard-0000.tar")
    assert denied(s3.list_objects_v2, Bucket=theirs)
    assert denied(s3.put_object, Bucket=theirs, Key="checkpoints/planted.pt", Body=b"x")
    assert denied(s3.delete_object, Bucket=theirs, Key="datasets/shard-0000.tar")
    # ... and the other way round.
    other = moto_s3["sessions"]["vision"]
    assert denied(other.get_object, Bucket=mine, Key="checkpoints/run-1/step-100.pt")
    assert other.get_object(Bucket=theirs, Key="datasets/shard-0000.tar")["Body"].read() == b"tokens"


def test_a_team_cannot_create_buckets_or_change_its_own_buckets_policy(moto_s3) -> None:
    s3 = moto_s3["sessions"]["llm-pretrain"]
    assert denied(s3.create_bucket, Bucket="llm-pretrain-shadow-copy")
    assert denied(s3.delete_bucket_policy, Bucket=moto_s3["buckets"]["llm-pretrain"])


def test_the_platform_admins_role_reaches_every_team_bucket(moto_s3) -> None:
    s3 = moto_s3["sessions"]["platform-admins"]
    for bucket in moto_s3["buckets"].values():
        assert s3.get_object(Bucket=bucket, Key="datasets/shard-0000.tar")["Body"].read() == b"tokens"
