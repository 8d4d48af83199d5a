"""gpu-platform's pure spec layer: config contract, hardware catalog, conventions and the derived plan.

Nothing here imports pulumi, so validation and planning run anywhere in milliseconds.
"""
