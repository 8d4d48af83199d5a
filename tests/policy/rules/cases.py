"""What a rule's cases are made of: the shape of a case, the edits a case makes to the compliant world
(tests/policy/helpers.py's `world`), and how a case is judged. Each rule module's cases live in
tests/policy/rules/test_<module>.py."""

from __future__ import annotations

import copy
from typing import Any, Callable

from tests.policy.helpers import find, named, run, world

World = list[dict[str, Any]]
Mutation = Callable[[World], None]
# (what, rule, mutation, resource the violation names, words the message contains)
Disallowed = tuple[str, str, Mutation, str | None, str]
# (what, rule, mutation)
Allowed = tuple[str, str, Mutation]


def inputs(w: World, name: str) -> dict[str, Any]:
    return find(w, name)["inputs"]


def labels_of(w: World, name: str) -> dict[str, Any]:
    return inputs(w, name)["metadata"]["labels"]


def spec(w: World, name: str) -> dict[str, Any]:
    return inputs(w, name)["spec"]


def template(w: World, name: str) -> dict[str, Any]:
    return spec(w, name)["template"]


def quota(w: World, cq: str, flavor: str, resource: str) -> dict[str, Any]:
    """The quota entry of `resource` on `flavor` in ClusterQueue `cq` (a mutable part of the world)."""
    for group in spec(w, cq)["resourceGroups"]:
        for fl in group["flavors"]:
            if fl["name"] == flavor:
                return next(r for r in fl["resources"] if r["name"] == resource)
    raise KeyError((cq, flavor, resource))


def add(*resources: dict[str, Any]) -> Mutation:
    return lambda w: w.extend(copy.deepcopy(list(resources)))


def drop(name: str) -> Mutation:
    return lambda w: w.remove(find(w, name))


def on_karpenter(mutate: Mutation) -> Mutation:
    """Run `mutate` on the world whose train pool is a Karpenter NodePool and EC2NodeClass."""
    def f(w: World) -> None:
        w[:] = world(karpenter=True)
        mutate(w)
    return f


def check_disallowed(case: Disallowed) -> None:
    """The case's rule reports the mutated world, against the resource at fault, in the case's words."""
    _, rule, mutate, resource, words = case
    w = world()
    mutate(w)
    found = run(rule, w)
    assert found, f"{rule} passed a world that breaks it"
    messages = named(found, resource)
    assert messages, f"{rule} reported {found} but nothing against {resource}"
    assert any(words in m for m in messages), messages


def check_allowed(case: Allowed) -> None:
    """The case's rule passes the mutated world."""
    _, rule, mutate = case
    w = world()
    mutate(w)
    assert run(rule, w) == []
