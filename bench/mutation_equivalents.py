"""Mutants no test can kill, each with the reason: bench.mutation reports them as EQUIVALENT and leaves them
out of the figure instead of running them.

A mutant is named by its file, its description without the line number (which moves with every edit above it)
and the text and column of its line (two `0 -> 1` in one file, or `frozen=True` and `slots=True` on one line, are
told apart by them). An entry belongs here only when the change is invisible to a user of the platform:
the same objects rendered, the same specs accepted and refused with the same messages.
"""

from __future__ import annotations

from bench.mutants import Mutant

# (file, Mutant.describe() after "file:line ", the line's text stripped, the column where the change starts in
# it) -> why
EQUIVALENT: dict[tuple[str, str, str, int], str] = {
    ("policies/gpu_policies/objects/kinds.py", "off by one: 1024  ->  1023", "@functools.lru_cache(maxsize=1024)", 29):
        "the size of an lru_cache: the same answers, one entry fewer kept",
    ("gpu_platform/plan/builders.py", "return None: return ()  ->  return None", "return ()", 0):
        "the cluster's access entries when it is not on EKS: read only by ClusterIdentity, which exists on eks "
        "stacks only (components/platform.py), so nothing iterates them",
    ("gpu_platform/spec/data.py", "off by one: 0  ->  1",
     "return gib in LUSTRE_SMALL_SIZES_GIB or (gib > 0 and gib % LUSTRE_SIZE_INCREMENT_GIB == 0)", 47):
        "`gib > 1` for `gib > 0` before `gib % 2400 == 0`: the one size they differ on, 1 GiB, is no multiple of "
        "2400 either way",
    ("gpu_platform/plan/pools.py", "flip boolean: True  ->  False", "@dataclass(frozen=True, slots=True)", 30):
        "slots=False on a frozen dataclass: the same fields and values, a __dict__ more per object (frozen already "
        "refuses any attribute set)",
    ("gpu_platform/spec/security.py", "swap arguments 1/2: field_validator(\"usernamePrefix\", \"groupsPrefix\")  ->  "
     "field_validator('groupsPrefix', 'usernamePrefix')", "@field_validator(\"usernamePrefix\", \"groupsPrefix\")", 1):
        "the order of the fields one pydantic validator runs on: each field is validated alike either way",
    ("components/node_pools/gpu_node_pool.py",
     "drop keyword `opts`: aws.ec2.get_subnets_output( filters=[ aws.ec2.GetSubnetsFilterArgs(name=\"subnet-id\", "
     "values=list(cluster.su...  ->  (aws.ec2.get_subnets_output(filters=[aws.ec2.GetSubnetsFilterArgs(name='subnet-id', "
     "values=list(cluster.sub...", "found = aws.ec2.get_subnets_output(", 8):
        "an invoke's parent only picks the provider it inherits, and the stack has one AWS provider, the default one "
        "(no component passes providers= for aws): the same subnets either way",
    ("gpu_platform/spec/karpenter_checks.py", "flip comparison: pool.fabric == \"efa\"  ->  pool.fabric != 'efa'",
     "if pool.fabric == \"efa\" and it.efa and not it.efa_only_interfaces:", 3):
        "no instance type of gpu_platform/catalog.py has EFA without EFA-only interfaces, so the condition is false "
        "for every pool either way (the rule waits for such a type in the catalog)",
    ("components/storage.py",
     'drop dict key `\'storageClassName\'`: { "capacity": {"storage"'
     ': f"{fs.storage_capacity_gib}Gi"}, "volumeMode": "Filesystem", "accessModes": ["Rea...  ->  ({\'capacity\': {\'storage\': f\'{fs.storage_capacity_gib}Gi\'}, \'volumeMode\': \'Filesystem\', \'accessModes\': [\'Rea...', '"spec": {', 8):
        "a PersistentVolume's storageClassName \"\" dropped: a PV without one has no class either, and binds only to "
        "claims that ask for none (kubernetes.io/docs/concepts/storage/persistent-volumes/#class); the API server "
        "stores the two alike",
}


def equivalent_reason(m: Mutant, source: str) -> str:
    """Why m is equivalent, or "" (source: m's file before the mutation)."""
    line = source.splitlines()[m.line - 1]
    column = m.start[1] - (len(line.encode()) - len(line.lstrip().encode()))
    return EQUIVALENT.get((m.file, m.describe().split(" ", 1)[1], line.strip(), column), "")
