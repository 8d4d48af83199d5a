"""The application: `python -m platform_cli COMMAND`, the one entry point above every layer.

It may import the spec layer, the components, the render harness, the policy pack and the simulator; nothing
imports it back (tests/unit/test_layers.py holds that).
"""
