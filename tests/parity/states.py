"""The env state (get_state_dict) per task beside ManiSkill 3.0.1's.

ManiSkill's sim state (`envs/scene.py` get_sim_state) holds every non-static actor of the state
registry as (N, 13) (`utils/structs/actor.py`: pose p, q wxyz, linear and angular velocity) and
every articulation as (N, 13 + 2 dof) (`utils/structs/articulation.py`: root pose and velocity,
qpos, qvel), in build order: the table scene's kinematic "table-workspace" first, then the
task's objects; a robot is named by its uid, robot k of several "<uid>-agent-<k>"
(`agents/base_agent.py`). Ours is measured on a live env built with the task's default robot.
"""

from __future__ import annotations

from functools import cache

import gymnasium as gym
import torch

import envs  # noqa: F401  (registers)
from tests.parity import Row, Table

_SCENE = "mani_skill/envs/scene.py"
_TASKS = "mani_skill/envs/tasks/tabletop/"
_PANDA = ["panda:31"]

# env id: (its file, actors, articulations), each "name:width" in order
TASKS: dict[str, tuple[str, list[str], list[str]]] = {
    "PickCube-v1": ("pick_cube.py", ["table-workspace:13", "cube:13", "goal_site:13"], _PANDA),
    "PushCube-v1": ("push_cube.py", ["table-workspace:13", "cube:13", "goal_region:13"], _PANDA),
    "PullCube-v1": ("pull_cube.py", ["table-workspace:13", "cube:13", "goal_region:13"], _PANDA),
    "StackCube-v1": ("stack_cube.py", ["table-workspace:13", "cubeA:13", "cubeB:13"], ["panda_wristcam:31"]),
    "LiftPegUpright-v1": ("lift_peg_upright.py", ["table-workspace:13", "peg:13"], _PANDA),
    "PegInsertionSide-v1": ("peg_insertion_side.py", ["table-workspace:13", "peg:13", "box_with_hole:13"], ["panda_wristcam:31"]),
    "PlugCharger-v1": ("plug_charger.py", ["table-workspace:13", "charger:13", "receptacle:13"], ["panda_wristcam:31"]),
    "TwoRobotPickCube-v1": ("two_robot_pick_cube.py", ["table-workspace:13", "cube:13", "goal_site:13"],
                            ["panda_wristcam-agent-0:31", "panda_wristcam-agent-1:31"]),
}

_GOAL = "the goal as a kinematic goal actor (task helpers)"
# rows not equal yet, by (env id, group), with what is left; the rest are equal
PENDING: dict[tuple[str, str], str] = {}


@cache
def _state(env_id: str) -> dict[str, dict[str, torch.Tensor]]:
    env = gym.make(env_id, num_envs=1)
    try:
        env.reset(seed=0)
        return env.unwrapped.get_state_dict()
    finally:
        env.close()


def _named(group: dict[str, torch.Tensor]) -> list[str]:
    return [f"{k}:{v.shape[1]}" for k, v in group.items()]


@cache
def _restores_maniskill_state() -> tuple[bool, bool]:
    """A state holding only actors and articulations (ManiSkill's) restores, its drive targets at qpos."""
    env = gym.make("PickCube-v1", num_envs=1)
    try:
        base = env.unwrapped
        env.reset(seed=0)
        state = base.get_state_dict()
        env.step(env.action_space.sample())
        base.set_state_dict({g: state[g] for g in ("actors", "articulations")})
        again = base.get_state_dict()
        same = all(torch.allclose(again[g][k], v, atol=1e-6) for g in ("actors", "articulations") for k, v in state[g].items())
        art = state["articulations"][base.agent.name]
        targets = torch.allclose(again["drive_targets"][base.agent.name], art[:, 13 : 13 + base.agent.dof], atol=1e-6)
        return same, targets
    finally:
        env.close()


def _flat_prefix(env_id: str) -> bool:
    """get_state() starts with ManiSkill's flat state: actors, then articulations."""
    env = gym.make(env_id, num_envs=1)
    try:
        env.reset(seed=0)
        base = env.unwrapped
        state = base.get_state_dict()
        part = torch.cat([t for g in ("actors", "articulations") for t in state[g].values()], 1)
        return torch.equal(base.get_state()[:, : part.shape[1]], part)
    finally:
        env.close()


def _rows() -> list[Row]:
    rows = [
        Row("groups ManiSkill's set_state_dict reads (ours first, then drive_targets, task)", ("actors", "articulations"),
            lambda: tuple(_state("PickCube-v1"))[:2], _SCENE),
        Row("actor columns: p (3), q wxyz (4), linear velocity (3), angular velocity (3)", 13,
            lambda: _state("PickCube-v1")["actors"]["cube"].shape[1], "mani_skill/utils/structs/actor.py"),
        Row("articulation columns: root pose (7), root velocity (6), qpos, qvel (dof each)", 13 + 2 * 9,
            lambda: next(iter(_state("PickCube-v1")["articulations"].values())).shape[1], "mani_skill/utils/structs/articulation.py"),
        Row("get_state(): ManiSkill's flat state first (actors, then articulations)", True, lambda: _flat_prefix("PickCube-v1"),
            "mani_skill/envs/sapien_env.py"),
        Row("a state of actors and articulations alone restores (drive targets at qpos)", (True, True), _restores_maniskill_state, _SCENE),
    ]
    for env_id, (file, actors, articulations) in TASKS.items():
        rows.append(Row(f"{env_id} actors", actors, lambda e=env_id: _named(_state(e)["actors"]), _TASKS + file,
                        pending=PENDING.get((env_id, "actors"), "")))
        rows.append(Row(f"{env_id} articulations", articulations, lambda e=env_id: _named(_state(e)["articulations"]),
                        _TASKS + file, pending=PENDING.get((env_id, "articulations"), "")))
    return rows


TABLE = Table(
    title="Env state",
    rows=_rows(),
    notes="""
`env.get_state_dict()` is ManiSkill's sim state, {"actors": {name: (N, 13)}, "articulations":
{name: (N, 13 + 2 dof)}}, under ManiSkill's names, followed by groups of ours that ManiSkill's
set_state_dict ignores: "drive_targets" ({articulation: (N, dof)}: what makes a restored state
replay exactly) and, for tasks with task tensors, "task". A ManiSkill state loads here (drive
targets then at qpos) and ours loads there. The table is static in ours (a kinematic one made
restored states replay differently in SAPIEN's CPU PhysX) and kept in the state as ManiSkill's
kinematic one is.
""",
    order=21,
)
