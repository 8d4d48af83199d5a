"""The priority policy (`tenant-priorities`): each team stays inside the priorities it is granted
(teams[].priorities). The Kueue priority-class label and every pod template's priorityClassName must be one of
the names its namespace lists in the allowed-priorities annotation, which tenants cannot edit. Its match and
variables are the workload policy's (workloads.policy_spec), so each denial names the policy that made it."""

from __future__ import annotations

from gpu_platform import conventions as cv


def priority_validations() -> list[dict[str, str]]:
    """The team's granted priorities (the namespace annotation) bound the Kueue label and priorityClassName."""
    granted = "variables.allowedPriorities.join(', ')"
    return [
        {
            "expression": "variables.workloadPriority == '' || variables.workloadPriority in variables.allowedPriorities",
            "messageExpression": (
                f"'priority class ' + variables.workloadPriority + ' (label {cv.PRIORITY_CLASS_LABEL}) is not granted "
                "to team ' + variables.team + '; granted: ' + " + granted
            ),
            "reason": "Forbidden",
        },
        {
            "expression": (
                "variables.podSpecs.all(s, !has(s.priorityClassName) || s.priorityClassName == '' || "
                "s.priorityClassName in variables.allowedPriorities)"
            ),
            "messageExpression": (
                "'priorityClassName ' + variables.podSpecs.filter(s, has(s.priorityClassName) && "
                "s.priorityClassName != '' && !(s.priorityClassName in variables.allowedPriorities))"
                ".map(s, s.priorityClassName)[0] + ' is not granted to team ' + variables.team + '; granted: ' + "
                + granted
            ),
            "reason": "Forbidden",
        },
    ]
