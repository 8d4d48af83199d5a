"""gpu-platform: one validated spec per stack -> a multi-tenant GPU Kubernetes platform."""

from components.program import run

run()
