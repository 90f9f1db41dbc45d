"""Observation layout per task and obs mode beside ManiSkill 3.0.1's.

ManiSkill's values are read from its source: the obs modes from `envs/sapien_env.py` and
`envs/utils/observations/`, the image formats from `render/shaders.py` (its default "minimal"
shader) and `sensors/camera.py`, each task's extra observation from its `_get_obs_extra`, its
cameras from `_default_sensor_configs` and the robot's own, the robot names from
`agents/base_agent.py` and `agents/multi_agent.py`. Ours is measured on live envs built with the
task's default robot.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import gymnasium as gym
import torch

import envs  # noqa: F401  (registers)
from envs.modes import ObsMode
from tests.parity import Row, Table

_ENV = "mani_skill/envs/sapien_env.py"
_OBS = "mani_skill/envs/utils/observations/observations.py"
_SHADER = "mani_skill/render/shaders.py"
_TASKS = "mani_skill/envs/tasks/tabletop/"

_PANDA = [("agent/qpos", 9), ("agent/qvel", 9)]


def _two(uid: str) -> list[tuple[str, int]]:
    return [(f"agent/{uid}-{k}/{q}", 9) for k in (0, 1) for q in ("qpos", "qvel")]


# env id: (its file, agent entries, extra entries in state modes, extra keys in camera modes, cameras, hidden actors)
TASKS: dict[str, tuple[str, list, list, list, list, list]] = {
    "PickCube-v1": ("pick_cube.py", _PANDA,
                    [("is_grasped", 1), ("tcp_pose", 7), ("goal_pos", 3), ("obj_pose", 7), ("tcp_to_obj_pos", 3), ("obj_to_goal_pos", 3)],
                    ["is_grasped", "tcp_pose", "goal_pos"], ["base_camera"], ["goal_site"]),
    "PushCube-v1": ("push_cube.py", _PANDA, [("tcp_pose", 7), ("goal_pos", 3), ("obj_pose", 7)], ["tcp_pose"], ["base_camera"], []),
    "PullCube-v1": ("pull_cube.py", _PANDA, [("tcp_pose", 7), ("goal_pos", 3), ("obj_pose", 7)], ["tcp_pose", "goal_pos"], ["base_camera"], []),
    "StackCube-v1": ("stack_cube.py", _PANDA,
                     [("tcp_pose", 7), ("cubeA_pose", 7), ("cubeB_pose", 7), ("tcp_to_cubeA_pos", 3), ("tcp_to_cubeB_pos", 3),
                      ("cubeA_to_cubeB_pos", 3)],
                     ["tcp_pose"], ["base_camera", "hand_camera"], []),
    "LiftPegUpright-v1": ("lift_peg_upright.py", _PANDA, [("tcp_pose", 7), ("obj_pose", 7)], ["tcp_pose"], ["base_camera"], []),
    "PegInsertionSide-v1": ("peg_insertion_side.py", _PANDA,
                            [("tcp_pose", 7), ("peg_pose", 7), ("peg_half_size", 3), ("box_hole_pose", 7), ("box_hole_radius", 1)],
                            ["tcp_pose"], ["base_camera", "hand_camera"], []),
    "PlugCharger-v1": ("plug_charger.py", _PANDA,
                       [("tcp_pose", 7), ("charger_pose", 7), ("receptacle_pose", 7), ("goal_pose", 7)],
                       ["tcp_pose"], ["base_camera", "hand_camera"], []),
    "TwoRobotPickCube-v1": ("two_robot_pick_cube.py", _two("panda_wristcam"),
                            [("left_arm_tcp", 7), ("right_arm_tcp", 7), ("cube_pose", 7), ("left_arm_tcp_to_cube_pos", 3),
                             ("right_arm_tcp_to_cube_pos", 3), ("cube_to_goal_pos", 3)],
                            ["left_arm_tcp", "right_arm_tcp"],
                            ["base_camera", "panda_wristcam-0-hand_camera", "panda_wristcam-1-hand_camera"], ["goal_site"]),
}

SMALL = {"width": 16, "height": 16}  # the key tree does not depend on the image size

# rows not equal yet, by (env id, key), with what is left; the rest are equal
PENDING: dict[tuple[str, str], str] = {}


@cache
def _obs(env_id: str, mode: str) -> tuple[Any, list[str]]:
    """The first observation of a one-env env in `mode`, and its hidden actors."""
    kwargs = {"sensor_configs": SMALL} if ObsMode(mode).visual else {}
    env = gym.make(env_id, num_envs=1, obs_mode=mode, **kwargs)
    try:
        obs, _ = env.reset(seed=0)
        return obs, sorted(env.unwrapped.world.hidden)
    finally:
        env.close()


@cache
def _one_camera(mode: str) -> Any:
    """PickCube-v1's first observation with its base camera alone, at ManiSkill's 128 x 128."""
    probe = gym.make("PickCube-v1", num_envs=1, obs_mode="state")
    others = {c.uid: None for c in probe.unwrapped.sensor_settings.cameras if c.uid != "base_camera"}
    probe.close()
    env = gym.make("PickCube-v1", num_envs=1, obs_mode=mode, sensor_configs={**others, "base_camera": {"width": 128, "height": 128}})
    try:
        return env.reset(seed=0)[0]
    finally:
        env.close()


def _entries(tree: dict, prefix: str = "") -> list[str]:
    out = []
    for k, v in tree.items():
        out += _entries(v, f"{prefix}{k}/") if isinstance(v, dict) else [f"{prefix}{k}:{v.reshape(v.shape[0], -1).shape[1]}"]
    return out


def _image(v: torch.Tensor) -> str:
    return f"{str(v.dtype).removeprefix('torch.')} {tuple(v.shape[1:])}"


def _described(tree: dict) -> list[str]:
    return sorted(f"{k}: {_image(v)}" for k, v in tree.items())


def _task_rows(env_id: str) -> list[Row]:
    file, agent, extra, visual_extra, cameras, hidden = TASKS[env_id]
    measure = {
        "state": lambda: _entries(_obs(env_id, "state_dict")[0]),
        "length": lambda: int(_obs(env_id, "state")[0].shape[1]),
        "extra": lambda: list(_obs(env_id, "rgb")[0]["extra"]),
        "cameras": lambda: list(_obs(env_id, "rgb")[0]["sensor_data"]),
        "hidden": lambda: _obs(env_id, "state")[1],
    }
    expected = {
        "state": [f"{p}:{w}" for p, w in agent] + [f"extra/{k}:{w}" for k, w in extra],
        "length": sum(w for _, w in agent) + sum(w for _, w in extra),
        "extra": visual_extra,
        "cameras": cameras,
        "hidden": hidden,
    }
    names = {"state": "state_dict: entries in order (flat state: the same)", "length": "state: length",
             "extra": "camera modes: extra keys", "cameras": "camera modes: cameras",
             "hidden": "actors hidden from observation cameras"}
    return [Row(f"{env_id} {names[k]}", expected[k], measure[k], _TASKS + file, pending=PENDING.get((env_id, k), ""))
            for k in names]


# the images of one 128 x 128 camera in each mode, as the minimal shader's transforms give them
_IMAGES = {
    "rgb": ["rgb: uint8 (128, 128, 3)"],
    "depth": ["depth: int16 (128, 128, 1)"],
    "segmentation": ["segmentation: int16 (128, 128, 1)"],
    "rgbd": ["depth: int16 (128, 128, 1)", "rgb: uint8 (128, 128, 3)"],
    "rgb+depth": ["depth: int16 (128, 128, 1)", "rgb: uint8 (128, 128, 3)"],
    "rgb+depth+segmentation": ["depth: int16 (128, 128, 1)", "rgb: uint8 (128, 128, 3)", "segmentation: int16 (128, 128, 1)"],
    "rgb+segmentation": ["rgb: uint8 (128, 128, 3)", "segmentation: int16 (128, 128, 1)"],
    "depth+segmentation": ["depth: int16 (128, 128, 1)", "segmentation: int16 (128, 128, 1)"],
    "sensor_data": ["Color: uint8 (128, 128, 4)", "PositionSegmentation: int16 (128, 128, 4)"],
}


def _mode_rows() -> list[Row]:
    rows = [
        Row("obs modes", ("state", "state_dict", "none", "sensor_data", "rgb", "depth", "segmentation", "rgbd", "rgb+depth",
                          "rgb+depth+segmentation", "rgb+segmentation", "depth+segmentation", "pointcloud"),
            lambda: tuple(m.value for m in ObsMode), _ENV),
        Row("none: observation", "{}", lambda: str(_obs("PickCube-v1", "none")[0]), _ENV),
        Row("state_dict: top-level keys", ("agent", "extra"), lambda: tuple(_obs("PickCube-v1", "state_dict")[0]), _ENV),
        Row("state: dtype", "float32", lambda: str(_obs("PickCube-v1", "state")[0].dtype).removeprefix("torch."), _ENV),
    ]
    for mode, images in _IMAGES.items():
        rows.append(Row(f"{mode}: top-level keys", ("agent", "extra", "sensor_param", "sensor_data"),
                        lambda mode=mode: tuple(_one_camera(mode)), _ENV))
        rows.append(Row(f"{mode}: images per camera (sensor_data/<uid>/...)", images,
                        lambda mode=mode: _described(_one_camera(mode)["sensor_data"]["base_camera"]), _SHADER))
    return rows + [
        Row("sensor_param per camera", ["cam2world_gl: float32 (4, 4)", "extrinsic_cv: float32 (3, 4)", "intrinsic_cv: float32 (3, 3)"],
            lambda: _described(_one_camera("rgb")["sensor_param"]["base_camera"]), "mani_skill/sensors/camera.py"),
        Row("pointcloud: top-level keys", ("agent", "extra", "sensor_param", "sensor_data", "pointcloud"),
            lambda: tuple(_one_camera("pointcloud")), _OBS),
        Row("pointcloud: sensor_data", "{}", lambda: str(_one_camera("pointcloud")["sensor_data"]), _OBS),
        Row("pointcloud: entries (one camera of 128 x 128)",
            ["rgb: uint8 (16384, 3)", "segmentation: int16 (16384, 1)", "xyzw: float32 (16384, 4)"],
            lambda: _described(_one_camera("pointcloud")["pointcloud"]), _OBS),
    ]


TABLE = Table(
    title="Observations",
    rows=[*_mode_rows(), *(row for env_id in TASKS for row in _task_rows(env_id))],
    notes="""
Per obs mode (PickCube-v1, its base camera alone at ManiSkill's 128 x 128) the observation's
key tree, dtypes and shapes; per task (its default robot) the state entries in order, the extra
keys camera modes keep (no object state), the cameras and the actors hidden from them. Images:
rgb uint8; depth int16 millimetres along the optical axis; position int16 millimetres in the
OpenGL camera frame; segmentation int16 entity ids (`env.segmentation_ids`); pointcloud every
pixel of every camera in the env frame, w = 1 where an entity was hit. Texture combinations
ManiSkill parses beyond its documented modes (normal, albedo, position, "+state") are refused
with the list of the modes above.
""",
    order=20,
)
