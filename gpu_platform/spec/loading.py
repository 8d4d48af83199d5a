"""Parsing a `gpu-platform:platform` value (or a whole stack document) into a checked `Platform`."""

from __future__ import annotations

import os
from typing import Any, Mapping

from pydantic import ValidationError

from ..conventions import AWS_REGION_CONFIG, AWS_REGION_ENV_VARS, CONFIG_KEY
from ..errors import Problem, SpecError
from .checks import validate
from .platform import Platform
from .problems import problems_from


def load_platform(raw: Any, region: str | None = None) -> Platform:
    """Parse and cross-check a `gpu-platform:platform` value; raise SpecError with every problem."""
    if not isinstance(raw, Mapping):
        raise SpecError([Problem(CONFIG_KEY, f"must be a mapping, got {type(raw).__name__}")])
    try:
        platform = Platform.model_validate(raw)
    except ValidationError as err:
        raise SpecError(problems_from(err)) from None
    problems = validate(platform, region)
    if problems:
        raise SpecError(problems)
    return platform


def provider_region(configured: Any, environ: Mapping[str, str] | None = None) -> str | None:
    """The region the AWS provider deploys to, found as the provider finds it: the stack's aws:region, else
    AWS_REGION, else AWS_DEFAULT_REGION (conventions.AWS_REGION_ENV_VARS). None when none is set."""
    if isinstance(configured, str) and configured:
        return configured
    env = os.environ if environ is None else environ
    return next((env[name] for name in AWS_REGION_ENV_VARS if env.get(name)), None)


def load_stack_platform(raw: Any, configured_region: Any,
                        environ: Mapping[str, str] | None = None) -> tuple[Platform, str | None]:
    """A stack's platform and the region it deploys to, as `pulumi up` would see them (the stack config's
    `gpu-platform:platform` and `aws:region`, the environment as the AWS provider reads it).

    An `eks` stack must know its region: the autoscaler's, Karpenter's and the data path's IAM policies, the S3
    endpoints and the kubeconfig all name it, and without one they would name "None". Refused with every other
    problem, naming aws:region and the ways to set it."""
    region = provider_region(configured_region, environ)
    problems: list[Problem] = []
    if configured_region is not None and not isinstance(configured_region, str):
        problems.append(Problem(f"config.{AWS_REGION_CONFIG}", f"must be a region name such as us-east-1, got "
                                                               f"{type(configured_region).__name__}"))
    elif region is None and _provider(raw) == "eks":
        problems.append(Problem(
            f"config.{AWS_REGION_CONFIG}",
            f"cluster.provider 'eks' deploys to an AWS region and none is set: set {AWS_REGION_CONFIG} (pulumi "
            f"config set {AWS_REGION_CONFIG} us-east-1) or {' / '.join(AWS_REGION_ENV_VARS)}, which the AWS "
            "provider reads when it is unset; the IAM policies, S3 endpoints and kubeconfig name it",
        ))
    try:
        platform = load_platform(raw, region)
    except SpecError as err:
        raise SpecError([*problems, *err.problems]) from None
    if problems:
        raise SpecError(problems)
    return platform, region


def _provider(raw: Any) -> Any:
    """cluster.provider as written (the region is checked even when the rest of the value is not valid)."""
    cluster = raw.get("cluster") if isinstance(raw, Mapping) else None
    return cluster.get("provider") if isinstance(cluster, Mapping) else None


def load_stack_config(doc: Any, source: str = "stack config",
                      environ: Mapping[str, str] | None = None) -> tuple[Platform, str | None]:
    """From a parsed Pulumi.<stack>.yaml document: the platform and the region it deploys to
    (load_stack_platform: aws:region, else the AWS provider's environment variables)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("config"), Mapping):
        raise SpecError([Problem("config", f"{source} has no 'config:' mapping")])
    config = doc["config"]
    if CONFIG_KEY not in config:
        raise SpecError([Problem(f"config.{CONFIG_KEY}", f"{source} has no {CONFIG_KEY!r} key")])
    return load_stack_platform(config[CONFIG_KEY], config.get(AWS_REGION_CONFIG), environ)
