"""Cross-field checks of the workload controllers against Kueue's integrations: each controller has what it
runs on, each framework is known and its controller installed, and Trainer speaks the TrainJob API Kueue
writes."""

from __future__ import annotations

from .. import conventions as cv, workload_controllers as wc
from ..errors import Problem
from .platform import Platform


def check_workload_controllers(p: Platform) -> list[Problem]:
    """Workload controllers: Kueue's integrations follow the installed controllers, Trainer has its JobSet, and
    Trainer speaks the TrainJob API Kueue 0.19 writes (gpu_platform/workload_controllers.py says why each)."""
    out: list[Problem] = []
    addons = p.addons
    installed = {key: getattr(addons, key).install for key in wc.KEYS}
    for key in wc.KEYS:
        c = wc.CONTROLLERS[key]
        for need in c.requires:
            if installed[key] and not installed[need]:
                out.append(Problem(f"addons.{key}.install",
                                   f"{c.title} needs {wc.CONTROLLERS[need].title} (it runs each of its jobs on it): set "
                                   f"addons.{need}.install true, or addons.{key}.install false"))
    seen: dict[str, int] = {}
    for i, name in enumerate(addons.kueue.integrations):
        at = f"addons.kueue.integrations[{i}]"
        if name in seen:
            out.append(Problem(at, f"duplicate framework {name!r} (also addons.kueue.integrations[{seen[name]}])"))
        seen.setdefault(name, i)
        if name not in cv.KUEUE_FRAMEWORKS:
            out.append(Problem(at, f"unknown Kueue framework {name!r}; Kueue 0.19 frameworks: {', '.join(cv.KUEUE_FRAMEWORKS)}"))
            continue
        key = wc.FRAMEWORK_CONTROLLER.get(name)
        if key is not None and not installed[key]:
            out.append(Problem(at, f"{name!r} queues {wc.CONTROLLERS[key].title} objects, and addons.{key}.install is "
                                   f"false: Kueue would wait for a CRD that never comes; set addons.{key}.install true "
                                   "or remove the framework"))
    if installed[wc.TRAINER] and cv.FRAMEWORK_TRAINJOB in addons.kueue.integrations:
        version = addons.trainer.version
        if wc.version_tuple(version) < wc.TRAINER_MIN_FOR_KUEUE:
            floor = ".".join(str(x) for x in wc.TRAINER_MIN_FOR_KUEUE)
            out.append(Problem("addons.trainer.version",
                               f"Kubeflow Trainer {version} has no TrainJob spec.runtimePatches, which Kueue "
                               f"{addons.kueue.version}'s trainjob integration writes to admit a TrainJob: its "
                               f"TrainJobs would be admitted and never start; use {floor} or later (default "
                               f"{wc.CONTROLLERS[wc.TRAINER].default_version})"))
    return out
