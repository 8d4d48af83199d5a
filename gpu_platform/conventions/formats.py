"""The value formats the spec checks (exact chart versions, Kubernetes names and label values): one
expression each, which the spec and the policy pack share so that both refuse the same values."""

from __future__ import annotations

import re


# ==== The value formats the spec checks =====================================================================
# Versions. An exact SemVer 2.0.0 version, optionally with Helm's customary leading "v" (semver.org,
# sections 9-10): what every Helm chart version in the spec and in a rendered release must be. The spec
# rejects anything else (`latest`, `0.19`, `~0.19.2`) and the policy pack checks the rendered releases
# with the same expression.
EXACT_VERSION = re.compile(r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
EXACT_VERSION_FORM = "MAJOR.MINOR.PATCH, optionally with a leading 'v' and a -prerelease (e.g. 0.19.2, v26.7.0)"
# Kubernetes name formats: a DNS-1123 label, a label value, and their length limit.
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
MAX_LABEL_LENGTH = 63
