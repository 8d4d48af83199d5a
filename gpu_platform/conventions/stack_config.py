"""The stack config's keys: the project's config namespace and the platform spec's key under it, the MultiKueue
role's key, and where the AWS region comes from. The stack loader, the program and the CLI read them here."""

from __future__ import annotations


# ==== The stack config =====================================================================================
# The stack config: the project's namespace in Pulumi.<stack>.yaml and the key of the platform spec under it.
CONFIG_NAMESPACE = "gpu-platform"
PLATFORM_CONFIG = "platform"
CONFIG_KEY = f"{CONFIG_NAMESPACE}:{PLATFORM_CONFIG}"
# Which side of MultiKueue a stack deploys (stack config key, beside gpu-platform:platform, so that a manager
# and its workers share one platform spec): the manager dispatches (admission check, clusters, worker
# kubeconfig Secrets), a worker accepts (a ServiceAccount for managers, its RBAC and a token).
MULTIKUEUE_ROLE_CONFIG = "multiKueueRole"
MULTIKUEUE_ROLES: tuple[str, ...] = ("manager", "worker")
# The region the AWS provider deploys to: the stack config key aws:region, else these environment variables in
# this order (pulumi-aws 7.51.1 sdk/python/pulumi_aws/config/vars.py `region`: `__config__.get('region') or
# _utilities.get_env('AWS_REGION', 'AWS_DEFAULT_REGION')`; pulumi/pulumi-aws docs/installation-configuration.md,
# "Set credentials as environment variables").
AWS_REGION_CONFIG = "aws:region"
AWS_REGION_ENV_VARS: tuple[str, ...] = ("AWS_REGION", "AWS_DEFAULT_REGION")
