"""The IAM actions `pulumi up`, `refresh` and `destroy` call for each resource type and data source the program
uses: what `deployer-policy` turns into the deployer's policy.

One entry per Pulumi type token, with where its actions come from. Every entry holds the create, read, update,
delete and tagging calls of the resource; the action names are those of the AWS Service Authorization Reference
(https://docs.aws.amazon.com/service-authorization/latest/reference/, one page per service, named in SERVICE_PAGES),
and the calls a resource makes are those of the resource's implementation in the Terraform AWS provider that
pulumi-aws 7.51.1 bridges (hashicorp/terraform-provider-aws internal/service/<service>/<resource>.go, cited as
`tf:<service>/<file>`). The roles a resource hands to a service need iam:PassRole, and the service-linked roles
a service makes on first use in an account need iam:CreateServiceLinkedRole from the caller (IAM user guide,
using-service-linked-roles.html). A type that is not in the table is refused by name (deployer_policy.unmapped):
the table cannot fall behind the program without a test failing. What the table cannot see is a check a service
makes on the caller's behalf that its API reference does not list; an AccessDenied at `up` names the action, which
goes into the type's entry here.
"""

from __future__ import annotations

from dataclasses import dataclass

SERVICE_PAGES: dict[str, str] = {
    "aps": "list_amazonmanagedserviceforprometheus.html",
    "autoscaling": "list_amazonec2autoscaling.html",
    "ec2": "list_amazonec2.html",
    "eks": "list_amazonelastickubernetesservice.html",
    "events": "list_amazoneventbridge.html",
    "fsx": "list_amazonfsx.html",
    "iam": "list_awsidentityandaccessmanagementiam.html",
    "s3": "list_amazons3.html",
    "sqs": "list_amazonsqs.html",
    "sts": "list_awssecuritytokenservice.html",
}


@dataclass(frozen=True)
class Actions:
    actions: tuple[str, ...]
    cite: str


def _a(cite: str, *actions: str) -> Actions:
    return Actions(tuple(actions), cite)


EC2_TAGS = ("ec2:CreateTags", "ec2:DeleteTags")
EKS_TAGS = ("eks:TagResource", "eks:UntagResource")

RESOURCE_ACTIONS: dict[str, Actions] = {
    # ---- the VPC (components/foundation/vpc.py)
    "aws:ec2/vpc:Vpc": _a(
        "tf:ec2/vpc_.go (reads the main route table, default network ACL and security group)",
        "ec2:CreateVpc", "ec2:DescribeVpcs", "ec2:DescribeVpcAttribute", "ec2:ModifyVpcAttribute", "ec2:DeleteVpc",
        "ec2:DescribeRouteTables", "ec2:DescribeNetworkAcls", "ec2:DescribeSecurityGroups", *EC2_TAGS),
    "aws:ec2/subnet:Subnet": _a(
        "tf:ec2/vpc_subnet.go (delete waits out the subnet's network interfaces)",
        "ec2:CreateSubnet", "ec2:DescribeSubnets", "ec2:ModifySubnetAttribute", "ec2:DeleteSubnet",
        "ec2:DescribeNetworkInterfaces", *EC2_TAGS),
    "aws:ec2/internetGateway:InternetGateway": _a(
        "tf:ec2/vpc_internet_gateway.go",
        "ec2:CreateInternetGateway", "ec2:AttachInternetGateway", "ec2:DescribeInternetGateways",
        "ec2:DetachInternetGateway", "ec2:DeleteInternetGateway", *EC2_TAGS),
    "aws:ec2/eip:Eip": _a(
        "tf:ec2/ec2_eip.go (reads the address's PTR record attribute)",
        "ec2:AllocateAddress", "ec2:DescribeAddresses", "ec2:DescribeAddressesAttribute", "ec2:DisassociateAddress",
        "ec2:ReleaseAddress", *EC2_TAGS),
    "aws:ec2/natGateway:NatGateway": _a(
        "tf:ec2/vpc_nat_gateway.go",
        "ec2:CreateNatGateway", "ec2:DescribeNatGateways", "ec2:DeleteNatGateway", *EC2_TAGS),
    "aws:ec2/routeTable:RouteTable": _a(
        "tf:ec2/vpc_route_table.go",
        "ec2:CreateRouteTable", "ec2:DescribeRouteTables", "ec2:DeleteRouteTable", *EC2_TAGS),
    "aws:ec2/route:Route": _a(
        "tf:ec2/vpc_route.go",
        "ec2:CreateRoute", "ec2:ReplaceRoute", "ec2:DeleteRoute", "ec2:DescribeRouteTables"),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": _a(
        "tf:ec2/vpc_route_table_association.go",
        "ec2:AssociateRouteTable", "ec2:ReplaceRouteTableAssociation", "ec2:DisassociateRouteTable",
        "ec2:DescribeRouteTables"),
    # ---- EC2 around the node groups
    "aws:ec2/securityGroup:SecurityGroup": _a(
        "tf:ec2/vpc_security_group.go (revokes the default egress rule on create; delete waits out interfaces)",
        "ec2:CreateSecurityGroup", "ec2:DescribeSecurityGroups", "ec2:DeleteSecurityGroup",
        "ec2:AuthorizeSecurityGroupEgress", "ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress",
        "ec2:RevokeSecurityGroupIngress", "ec2:DescribeNetworkInterfaces", *EC2_TAGS),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": _a(
        "tf:ec2/vpc_security_group_ingress_rule.go",
        "ec2:AuthorizeSecurityGroupIngress", "ec2:DescribeSecurityGroupRules", "ec2:ModifySecurityGroupRules",
        "ec2:RevokeSecurityGroupIngress", *EC2_TAGS),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": _a(
        "tf:ec2/vpc_security_group_egress_rule.go",
        "ec2:AuthorizeSecurityGroupEgress", "ec2:DescribeSecurityGroupRules", "ec2:ModifySecurityGroupRules",
        "ec2:RevokeSecurityGroupEgress", *EC2_TAGS),
    "aws:ec2/launchTemplate:LaunchTemplate": _a(
        "tf:ec2/ec2_launch_template.go",
        "ec2:CreateLaunchTemplate", "ec2:CreateLaunchTemplateVersion", "ec2:DescribeLaunchTemplates",
        "ec2:DescribeLaunchTemplateVersions", "ec2:ModifyLaunchTemplate", "ec2:DeleteLaunchTemplate", *EC2_TAGS),
    "aws:ec2/placementGroup:PlacementGroup": _a(
        "tf:ec2/ec2_placement_group.go",
        "ec2:CreatePlacementGroup", "ec2:DescribePlacementGroups", "ec2:DeletePlacementGroup", *EC2_TAGS),
    "aws:autoscaling/tag:Tag": _a(
        "tf:autoscaling/group_tag.go (aws_autoscaling_group_tag)",
        "autoscaling:CreateOrUpdateTags", "autoscaling:DescribeTags", "autoscaling:DeleteTags"),
    # ---- EKS
    "aws:eks/cluster:Cluster": _a(
        "tf:eks/cluster.go; the cluster role is passed (iam:PassRole) and EKS makes AWSServiceRoleForAmazonEKS on "
        "the account's first cluster (EKS user guide, using-service-linked-roles-eks.html)",
        "eks:CreateCluster", "eks:DescribeCluster", "eks:UpdateClusterConfig", "eks:UpdateClusterVersion",
        "eks:DescribeUpdate", "eks:DeleteCluster", *EKS_TAGS, "iam:PassRole", "iam:CreateServiceLinkedRole",
        "iam:GetRole"),
    "aws:eks/addon:Addon": _a(
        "tf:eks/addon.go",
        "eks:CreateAddon", "eks:DescribeAddon", "eks:DescribeAddonVersions", "eks:UpdateAddon", "eks:DescribeUpdate",
        "eks:DeleteAddon", *EKS_TAGS),
    "aws:eks/nodeGroup:NodeGroup": _a(
        "tf:eks/node_group.go; the node role is passed and EKS makes AWSServiceRoleForAmazonEKSNodegroup on first "
        "use (EKS user guide, using-service-linked-roles-eks-nodegroups.html); EKS reads the launch template",
        "eks:CreateNodegroup", "eks:DescribeNodegroup", "eks:UpdateNodegroupConfig", "eks:UpdateNodegroupVersion",
        "eks:DescribeUpdate", "eks:DeleteNodegroup", *EKS_TAGS, "iam:PassRole", "iam:CreateServiceLinkedRole",
        "iam:GetRole", "ec2:DescribeLaunchTemplateVersions", "ec2:DescribeSubnets"),
    "aws:eks/accessEntry:AccessEntry": _a(
        "tf:eks/access_entry.go",
        "eks:CreateAccessEntry", "eks:DescribeAccessEntry", "eks:UpdateAccessEntry", "eks:DeleteAccessEntry",
        *EKS_TAGS),
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": _a(
        "tf:eks/access_policy_association.go",
        "eks:AssociateAccessPolicy", "eks:ListAssociatedAccessPolicies", "eks:DisassociateAccessPolicy"),
    "aws:eks/identityProviderConfig:IdentityProviderConfig": _a(
        "tf:eks/identity_provider_config.go",
        "eks:AssociateIdentityProviderConfig", "eks:DescribeIdentityProviderConfig",
        "eks:DisassociateIdentityProviderConfig", "eks:DescribeUpdate", *EKS_TAGS),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": _a(
        "tf:eks/pod_identity_association.go; the role is passed (EKS user guide, pod-id-association.html)",
        "eks:CreatePodIdentityAssociation", "eks:DescribePodIdentityAssociation", "eks:UpdatePodIdentityAssociation",
        "eks:DeletePodIdentityAssociation", *EKS_TAGS, "iam:PassRole", "iam:GetRole"),
    # ---- IAM
    "aws:iam/role:Role": _a(
        "tf:iam/role.go (delete lists what is still attached)",
        "iam:CreateRole", "iam:GetRole", "iam:UpdateRole", "iam:UpdateRoleDescription", "iam:UpdateAssumeRolePolicy",
        "iam:DeleteRole", "iam:TagRole", "iam:UntagRole", "iam:ListRolePolicies", "iam:ListAttachedRolePolicies",
        "iam:ListInstanceProfilesForRole"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": _a(
        "tf:iam/role_policy_attachment.go",
        "iam:AttachRolePolicy", "iam:DetachRolePolicy", "iam:ListAttachedRolePolicies"),
    "aws:iam/rolePolicy:RolePolicy": _a(
        "tf:iam/role_policy.go",
        "iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"),
    "aws:iam/policy:Policy": _a(
        "tf:iam/policy.go (an update is a new version; the oldest is deleted past five)",
        "iam:CreatePolicy", "iam:GetPolicy", "iam:GetPolicyVersion", "iam:ListPolicyVersions",
        "iam:CreatePolicyVersion", "iam:DeletePolicyVersion", "iam:DeletePolicy", "iam:TagPolicy", "iam:UntagPolicy"),
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": _a(
        "tf:iam/openid_connect_provider.go",
        "iam:CreateOpenIDConnectProvider", "iam:GetOpenIDConnectProvider", "iam:UpdateOpenIDConnectProviderThumbprint",
        "iam:AddClientIDToOpenIDConnectProvider", "iam:RemoveClientIDFromOpenIDConnectProvider",
        "iam:DeleteOpenIDConnectProvider", "iam:TagOpenIDConnectProvider", "iam:UntagOpenIDConnectProvider"),
    # ---- Karpenter's interruption queue and rules (components/karpenter.py)
    "aws:sqs/queue:Queue": _a(
        "tf:sqs/queue.go",
        "sqs:CreateQueue", "sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:SetQueueAttributes", "sqs:DeleteQueue",
        "sqs:ListQueueTags", "sqs:TagQueue", "sqs:UntagQueue"),
    "aws:sqs/queuePolicy:QueuePolicy": _a(
        "tf:sqs/queue_policy.go",
        "sqs:SetQueueAttributes", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"),
    "aws:cloudwatch/eventRule:EventRule": _a(
        "tf:events/rule.go",
        "events:PutRule", "events:DescribeRule", "events:DeleteRule", "events:ListTargetsByRule",
        "events:ListTagsForResource", "events:TagResource", "events:UntagResource"),
    "aws:cloudwatch/eventTarget:EventTarget": _a(
        "tf:events/target.go",
        "events:PutTargets", "events:ListTargetsByRule", "events:RemoveTargets"),
    # ---- the data path (components/storage.py)
    "aws:s3/bucket:Bucket": _a(
        "tf:s3/bucket.go (its read gets every bucket subresource)",
        "s3:CreateBucket", "s3:ListBucket", "s3:DeleteBucket", "s3:GetBucketTagging", "s3:PutBucketTagging",
        "s3:GetBucketAcl", "s3:GetBucketCORS", "s3:GetBucketWebsite", "s3:GetBucketVersioning",
        "s3:GetAccelerateConfiguration", "s3:GetBucketRequestPayment", "s3:GetBucketLogging",
        "s3:GetLifecycleConfiguration", "s3:GetReplicationConfiguration", "s3:GetEncryptionConfiguration",
        "s3:GetBucketObjectLockConfiguration", "s3:GetBucketPolicy", "s3:GetBucketOwnershipControls"),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": _a(
        "tf:s3/bucket_public_access_block.go",
        "s3:PutBucketPublicAccessBlock", "s3:GetBucketPublicAccessBlock"),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": _a(
        "tf:s3/bucket_server_side_encryption_configuration.go",
        "s3:PutEncryptionConfiguration", "s3:GetEncryptionConfiguration"),
    "aws:s3/bucketVersioning:BucketVersioning": _a(
        "tf:s3/bucket_versioning.go", "s3:PutBucketVersioning", "s3:GetBucketVersioning"),
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": _a(
        "tf:s3/bucket_lifecycle_configuration.go", "s3:PutLifecycleConfiguration", "s3:GetLifecycleConfiguration"),
    "aws:s3/bucketPolicy:BucketPolicy": _a(
        "tf:s3/bucket_policy.go", "s3:PutBucketPolicy", "s3:GetBucketPolicy", "s3:DeleteBucketPolicy"),
    "aws:fsx/lustreFileSystem:LustreFileSystem": _a(
        "tf:fsx/lustre_file_system.go; FSx makes the file system's interfaces and its service-linked role "
        "(FSx for Lustre user guide, setting-up.html, and using-service-linked-roles.html)",
        "fsx:CreateFileSystem", "fsx:DescribeFileSystems", "fsx:UpdateFileSystem", "fsx:DeleteFileSystem",
        "fsx:ListTagsForResource", "fsx:TagResource", "fsx:UntagResource", "ec2:CreateNetworkInterface",
        "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets", "ec2:DescribeVpcs", "ec2:DescribeSecurityGroups",
        "iam:CreateServiceLinkedRole"),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": _a(
        "tf:fsx/data_repository_association.go; linking a bucket (FSx for Lustre user guide, setting-up.html, "
        "'Permissions to use data repositories in Amazon S3')",
        "fsx:CreateDataRepositoryAssociation", "fsx:DescribeDataRepositoryAssociations",
        "fsx:UpdateDataRepositoryAssociation", "fsx:DeleteDataRepositoryAssociation", "fsx:TagResource",
        "fsx:UntagResource", "s3:Get*", "s3:List*", "s3:PutObject", "iam:CreateServiceLinkedRole",
        "iam:AttachRolePolicy", "iam:PutRolePolicy"),
    # ---- Amazon Managed Service for Prometheus (components/observability.py, mode managed)
    "aws:amp/workspace:Workspace": _a(
        "tf:amp/workspace.go",
        "aps:CreateWorkspace", "aps:DescribeWorkspace", "aps:UpdateWorkspaceAlias", "aps:DeleteWorkspace",
        "aps:ListTagsForResource", "aps:TagResource", "aps:UntagResource"),
    "aws:amp/workspaceConfiguration:WorkspaceConfiguration": _a(
        "tf:amp/workspace_configuration.go",
        "aps:UpdateWorkspaceConfiguration", "aps:DescribeWorkspaceConfiguration"),
    "aws:amp/ruleGroupNamespace:RuleGroupNamespace": _a(
        "tf:amp/rule_group_namespace.go",
        "aps:CreateRuleGroupsNamespace", "aps:DescribeRuleGroupsNamespace", "aps:PutRuleGroupsNamespace",
        "aps:DeleteRuleGroupsNamespace", "aps:TagResource", "aps:UntagResource"),
    "aws:amp/alertManagerDefinition:AlertManagerDefinition": _a(
        "tf:amp/alert_manager_definition.go",
        "aps:CreateAlertManagerDefinition", "aps:DescribeAlertManagerDefinition", "aps:PutAlertManagerDefinition",
        "aps:DeleteAlertManagerDefinition"),
    "aws:amp/scraper:Scraper": _a(
        "tf:amp/scraper.go; the caller's rights of the AWS managed policy AmazonPrometheusFullAccess for a "
        "collector (eks:DescribeCluster, ec2:DescribeSubnets, ec2:DescribeSecurityGroups, the scraper's "
        "service-linked role)",
        "aps:CreateScraper", "aps:DescribeScraper", "aps:UpdateScraper", "aps:DeleteScraper", "aps:TagResource",
        "aps:UntagResource", "eks:DescribeCluster", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
        "iam:CreateServiceLinkedRole"),
    # ---- the AWS provider itself: it checks its credentials and reads the account id on start
    "pulumi:providers:aws": _a("hashicorp/terraform-provider-aws internal/conns/config.go (sts GetCallerIdentity)",
                               "sts:GetCallerIdentity"),
}

# Data sources (invokes) the program reads with.
INVOKE_ACTIONS: dict[str, Actions] = {
    "aws:eks/getCluster:getCluster": _a("tf:eks/cluster_data_source.go", "eks:DescribeCluster"),
    "aws:ec2/getSubnets:getSubnets": _a("tf:ec2/vpc_subnets_data_source.go", "ec2:DescribeSubnets"),
    "aws:ec2/getManagedPrefixList:getManagedPrefixList": _a(
        "tf:ec2/vpc_managed_prefix_list_data_source.go",
        "ec2:DescribeManagedPrefixLists", "ec2:GetManagedPrefixListEntries"),
    "aws:index/getCallerIdentity:getCallerIdentity": _a("tf:sts/caller_identity_data_source.go", "sts:GetCallerIdentity"),
    # Computed by the provider, no AWS call (tf:iam/policy_document_data_source.go).
    "aws:iam/getPolicyDocument:getPolicyDocument": _a("tf:iam/policy_document_data_source.go"),
}

# Types that call no AWS API: the deployer's rights there are Kubernetes RBAC (its access entry) and the stack's
# own components.
NOT_AWS_PREFIXES = ("kubernetes:", "pulumi:providers:kubernetes", "pulumi:pulumi:", "gpu-platform:")
