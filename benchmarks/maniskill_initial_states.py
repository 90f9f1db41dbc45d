"""Initial states after `reset(seed=s)` of every task carrying a ManiSkill 3.0.1 id, as JSON, from
ManiSkill's one-env CPU env or from ours, and their comparison.

Runs in either environment: `dump` takes ManiSkill's side where `mani_skill` imports, ours
otherwise (or as `--side` says). ManiSkill's side resets one env (`num_envs=1`, physx_cpu) once
per seed; ours resets one batch of all the seeds at once (`reset(seed=[...])`, env k taking the
k-th seed; PegInsertionSide built with `seeded_scene_kwargs`), so the comparison also checks that
env k of a batch starts as a one-env reset with its seed does.

Recorded per seed: every actor's and articulation's state in the env state (pose, velocities,
qpos, qvel), and task values that are not in the env state (goal poses, peg sizes, goal
points, the left robot's start).

    /tmp/msvenv/bin/python benchmarks/maniskill_initial_states.py dump --out ms.json  # VK_ICD_FILENAMES set
    PYTHONPATH=. .venv/bin/python benchmarks/maniskill_initial_states.py dump --out ours.json
    python benchmarks/maniskill_initial_states.py compare ms.json ours.json
    python benchmarks/maniskill_initial_states.py golden ms.json --seeds 0 1 --out tests/data/maniskill_initial_states.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# (env id, robot uids): each task with its default robot first, then the others ManiSkill has
CASES: list[tuple[str, str | tuple[str, ...]]] = [
    ("PickCube-v1", "panda"),
    ("PickCube-v1", "panda_wristcam"),
    ("PushCube-v1", "panda"),
    ("PushCube-v1", "panda_wristcam"),
    ("PullCube-v1", "panda"),
    ("PullCube-v1", "panda_wristcam"),
    ("StackCube-v1", "panda_wristcam"),
    ("StackCube-v1", "panda"),
    ("LiftPegUpright-v1", "panda"),
    ("LiftPegUpright-v1", "panda_wristcam"),
    ("PegInsertionSide-v1", "panda_wristcam"),
    ("PegInsertionSide-v1", "panda"),
    ("PlugCharger-v1", "panda_wristcam"),
    ("PlugCharger-v1", "panda"),
    ("PlaceSphere-v1", "panda"),
    ("PlaceSphere-v1", "panda_wristcam"),
    ("PullCubeTool-v1", "panda"),
    ("PullCubeTool-v1", "panda_wristcam"),
    ("StackPyramid-v1", "panda_wristcam"),
    ("StackPyramid-v1", "panda"),
    ("TwoRobotPickCube-v1", ("panda_wristcam", "panda_wristcam")),
    ("TwoRobotPickCube-v1", ("panda", "panda")),
    ("DrawTriangle-v1", "panda_stick"),
    ("DrawSVG-v1", "panda_stick"),
]


def case_name(env_id: str, robots: str | tuple[str, ...]) -> str:
    return f"{env_id}/{robots if isinstance(robots, str) else '+'.join(robots)}"


# task values outside the env state: name -> (ManiSkill's, ours), each env -> (N, ...) array
def _pose(p):
    return p.raw_pose if hasattr(p, "raw_pose") else p


TASK_VALUES = {
    "PlugCharger-v1": {"goal_pose": (lambda e: e.goal_pose.raw_pose, lambda e: e.goal_pose())},
    "PegInsertionSide-v1": {
        "peg_half_sizes": (lambda e: e.peg_half_sizes, lambda e: e.peg_half_sizes),
        "box_hole_offsets": (lambda e: _pose(e.box_hole_offsets)[:, :3], lambda e: e.box_hole_offsets),
        "box_hole_radii": (lambda e: e.box_hole_radii, lambda e: e.box_hole_radii),
    },
    "TwoRobotPickCube-v1": {"left_init_qpos": (lambda e: e.left_init_qpos, lambda e: e.left_init_qpos)},
    "DrawTriangle-v1": {"goal_points": (lambda e: e.vertices, lambda e: e.points)},
    "DrawSVG-v1": {"goal_points": (lambda e: e.points, lambda e: e.points)},
}


def _rows(x) -> list:
    import numpy as np

    return np.asarray(x.detach().cpu().double() if hasattr(x, "detach") else x, dtype=np.float64).tolist()


def _state(env, k: int, side: int) -> dict:
    """Env k's state and task values, as lists."""
    sd = env.get_state_dict()
    out = {g: {name: _rows(v[k]) for name, v in sd[g].items()} for g in ("actors", "articulations")}
    out["task"] = {name: _rows(fns[side](env)[k]) for name, fns in TASK_VALUES.get(env.spec_id, {}).items()}
    return out


def dump_maniskill(cases, seeds: list[int]) -> dict:
    import gymnasium as gym
    import mani_skill
    import mani_skill.envs  # noqa: F401  (registers the tasks)

    result = {"source": f"ManiSkill {mani_skill.__version__}, num_envs=1, physx_cpu, one reset(seed=s) per seed", "cases": {}}
    for env_id, robots in cases:
        env = gym.make(env_id, num_envs=1, obs_mode="state", sim_backend="physx_cpu", robot_uids=robots).unwrapped
        env.spec_id = env_id
        states = []
        for s in seeds:
            env.reset(seed=s)
            states.append(_state(env, 0, side=0))
        env.close()
        result["cases"][case_name(env_id, robots)] = {"seeds": seeds, "states": states}
        print(case_name(env_id, robots), "done", file=sys.stderr)
    return result


def dump_ours(cases, seeds: list[int], shared: bool = False) -> dict:
    import gymnasium as gym

    import envs  # noqa: F401  (registers the tasks)
    from envs.core.registry import TASKS

    world = "one shared PhysX system (envs on a grid)" if shared else "isolated envs"
    result = {"source": f"SkillForge: one batch of len(seeds) envs, reset(seed=seeds), {world}", "cases": {}}
    for env_id, robots in cases:
        kwargs = TASKS[env_id].seeded_scene_kwargs(seeds)
        rob = robots if isinstance(robots, str) else list(robots)
        physics = {"isolated": not shared}  # merged with the task's own defaults
        env = gym.make(env_id, num_envs=len(seeds), obs_mode="state", robot_uids=rob, physics=physics, **kwargs).unwrapped
        env.spec_id = env_id
        env.reset(seed=list(seeds))
        states = [_state(env, k, side=1) for k in range(len(seeds))]
        env.close()
        result["cases"][case_name(env_id, robots)] = {"seeds": seeds, "states": states}
        print(case_name(env_id, robots), "done", file=sys.stderr)
    return result


def _flat(x) -> list[float]:
    return [v for item in x for v in _flat(item)] if isinstance(x, list) else [x]


def compare(a: dict, b: dict) -> list[dict]:
    """Per case: the largest |a - b| over the seeds both have, of actor states, articulation
    states (root pose, qpos, qvel) and task values; names one side lacks are listed."""
    rows = []
    for case, ca in a["cases"].items():
        cb = b["cases"].get(case)
        if cb is None:
            rows.append({"case": case, "missing": "whole case"})
            continue
        seeds = [s for s in ca["seeds"] if s in cb["seeds"]]
        row = {"case": case, "seeds": len(seeds), "actors": 0.0, "articulations": 0.0, "task": 0.0, "missing": [], "worst": {}}
        for s in seeds:
            sa, sb = ca["states"][ca["seeds"].index(s)], cb["states"][cb["seeds"].index(s)]
            for group in ("actors", "articulations", "task"):
                for name in sorted(set(sa[group]) | set(sb[group])):
                    if name not in sa[group] or name not in sb[group]:
                        miss = f"{group}/{name} only in {'first' if name in sa[group] else 'second'}"
                        if miss not in row["missing"]:
                            row["missing"].append(miss)
                        continue
                    va, vb = _flat(sa[group][name]), _flat(sb[group][name])
                    if len(va) != len(vb):
                        row["missing"].append(f"{group}/{name}: {len(va)} vs {len(vb)} values")
                        continue
                    d = max((abs(x - y) for x, y in zip(va, vb)), default=0.0)
                    if d > row[group]:
                        row[group] = d
                        row["worst"][group] = f"{name} seed {s}"
        rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="initial states as JSON")
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--side", choices=("auto", "maniskill", "ours"), default="auto")
    d.add_argument("--seeds", type=int, default=20, help="seeds 0..N-1")
    d.add_argument("--first-seed", type=int, default=0)
    d.add_argument("--tasks", nargs="*", help="env ids (default: all)")
    d.add_argument("--shared", action="store_true", help="ours: one PhysX system for the batch (envs on a 5 m grid, "
                   "whose float32 offsets round env-local poses far from the origin) instead of isolated envs")
    c = sub.add_parser("compare", help="largest differences per case")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--tolerance", type=float, default=1e-6, help="exit 1 when a difference exceeds this")
    g = sub.add_parser("golden", help="a dump cut down to a few seeds (test data)")
    g.add_argument("src", type=Path)
    g.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    g.add_argument("--out", type=Path, required=True)
    args = p.parse_args()

    if args.cmd == "dump":
        side = args.side
        if side == "auto":
            try:
                import mani_skill  # noqa: F401

                side = "maniskill"
            except ImportError:
                side = "ours"
        cases = [c for c in CASES if not args.tasks or c[0] in args.tasks]
        seeds = list(range(args.first_seed, args.first_seed + args.seeds))
        result = dump_maniskill(cases, seeds) if side == "maniskill" else dump_ours(cases, seeds, args.shared)
        args.out.write_text(json.dumps(result))
        print(f"{side}: {len(cases)} cases x {len(seeds)} seeds -> {args.out}")
    elif args.cmd == "compare":
        rows = compare(json.loads(args.a.read_text()), json.loads(args.b.read_text()))
        worst = 0.0
        print("| task / robots | seeds | actors | articulations | task values | notes |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            if r.get("missing") == "whole case":
                print(f"| {r['case']} | 0 | | | | not in the second file |")
                continue
            worst = max(worst, r["actors"], r["articulations"], r["task"])
            notes = "; ".join(r["missing"] + [f"worst {k}: {v}" for k, v in r["worst"].items()])
            print(f"| {r['case']} | {r['seeds']} | {r['actors']:.2e} | {r['articulations']:.2e} | {r['task']:.2e} | {notes} |")
        print(f"largest difference: {worst:.3e}")
        sys.exit(0 if worst <= args.tolerance else 1)
    else:
        src = json.loads(args.src.read_text())
        cases = {}
        for case, c in src["cases"].items():
            keep = [i for i, s in enumerate(c["seeds"]) if s in args.seeds]
            states = [c["states"][i] for i in keep]
            for st in states:  # the drawing tasks' ink dots, all hidden at one pose: dot_0 stands for them
                st["actors"] = {k: v for k, v in st["actors"].items() if not (k.startswith("dot_") and k != "dot_0")}
            cases[case] = {"seeds": [c["seeds"][i] for i in keep], "states": states}
        head = {"source": src["source"], "recorded_by": "benchmarks/maniskill_initial_states.py golden"}
        body = ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in cases.items())
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(head)[:-1] + ', "cases": {\n' + body + "\n}}\n")
        json.loads(args.out.read_text())  # well formed
        print(f"{len(cases)} cases, seeds {args.seeds} -> {args.out}")

if __name__ == "__main__":
    main()
