"""The gpu-platform CrossGuard policy pack (a directory the Pulumi CLI runs) and its importable rules."""
