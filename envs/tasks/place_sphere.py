"""PlaceSphere-v1, as ManiSkill 3.0.1 defines it (mani_skill/envs/tasks/tabletop/place_sphere.py).

Task: pick up the blue "sphere" (2 cm radius) and let it rest in the shallow "bin": a kinematic
tray of five 5 mm thick boxes, a 5 x 5 cm floor and four walls 1 cm high around a 4 x 4 cm
inside, just the sphere's width.

Randomisation: the sphere's centre is uniform in [-0.1, -0.05] x [-0.1, 0.1], resting on the
table; the bin's centre is uniform in [0, 0.1] x [-0.1, 0.1], its floor on the table; neither
is turned. The robot (default `panda`) starts at the table scene's keyframe with N(0, 0.02) rad
noise on every arm joint.

Success: the sphere's centre is within 5 mm of the bin's in the table plane and its height above
the bin's centre is the radius plus half the floor (+- 5 mm), the sphere moves slower than
1 cm/s and turns slower than 0.5 rad/s, and the robot does not grasp it. Episodes last 50
control steps.

For a motion planner: `self.sphere_half_size` (3,) (the sphere's bounding box), `bin_parts`
(the bin's boxes in its frame), `goal_pos()` (N, 3): the sphere's centre at rest in the bin.
"""

from __future__ import annotations

import sapien
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.registry import register_env
from envs.sensors.config import CameraConfig
from envs.tasks.common import ROBOT_ROOT, Part, build_parts, build_sphere, build_table, place, reset_robot
from envs.tasks.pick_cube import base_camera, render_camera

RADIUS = 0.02
WALL = 0.0025  # half the thickness of every block
INNER_HALF = 0.02  # half the inside's side
OUTER_HALF = INNER_HALF + 2 * WALL
WALL_HALF_HEIGHT = 2 * WALL
SPHERE_X, SPHERE_Y = (-0.1, -0.05), (-0.1, 0.1)
BIN_X, BIN_Y = (0.0, 0.1), (-0.1, 0.1)
XY_TOLERANCE = 0.005
Z_TOLERANCE = 0.005
LIN_STATIC, ANG_STATIC = 1e-2, 0.5  # m/s, rad/s
ROBOT_STATIC = 0.2  # rad/s, the reward's still-arm test
MAX_REWARD = 13.0
SPHERE_COLOR = (12 / 255, 42 / 255, 160 / 255, 1.0)


def bin_parts() -> list[Part]:
    """The bin in its frame (origin at the floor's centre): the floor and four walls on its rim."""
    d = OUTER_HALF - WALL  # a wall's centre from the bin's axis
    dz = WALL_HALF_HEIGHT + WALL  # a wall's centre above the floor's
    across_x = (WALL, OUTER_HALF, WALL_HALF_HEIGHT)
    across_y = (OUTER_HALF, WALL, WALL_HALF_HEIGHT)
    return [
        Part((OUTER_HALF, OUTER_HALF, WALL)),
        Part(across_x, sapien.Pose([-d, 0.0, dz])),
        Part(across_x, sapien.Pose([d, 0.0, dz])),
        Part(across_y, sapien.Pose([0.0, -d, dz])),
        Part(across_y, sapien.Pose([0.0, d, dz])),
    ]


@register_env("PlaceSphere-v1", max_episode_steps=50)
class PlaceSphereEnv(BaseEnv):
    supported_robots = ("panda",)

    def _load_scene(self) -> None:
        build_table(self.world)
        self.sphere = build_sphere(self.world, "sphere", RADIUS, SPHERE_COLOR)
        self.bin_parts = bin_parts()
        self.bin = build_parts(self.world, "bin", lambda i: self.bin_parts, "kinematic", local_pose=sapien.Pose([0.05, 0.0, WALL]))
        self.sphere_half_size = torch.full((3,), RADIUS)
        self._load_agent(ROBOT_ROOT)

    def _default_sensor_configs(self) -> list[CameraConfig]:
        return [base_camera((0.3, 0.0, 0.2), (-0.1, 0.0, 0.0)), *self.agent.spec.cameras]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        return [render_camera((0.6, -0.2, 0.2), (0.0, 0.0, 0.2))]

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        reset_robot(self.agent, env_idx, rng)
        identity = torch.tensor([[1.0, 0.0, 0.0, 0.0]]).expand(n, 4)
        sx, sy = rng.uniform(*SPHERE_X, (1,)), rng.uniform(*SPHERE_Y, (1,))
        place(self.sphere, env_idx, torch.cat((sx, sy, torch.full((n, 1), RADIUS)), 1), identity)
        bx, by = rng.uniform(*BIN_X, (1,)), rng.uniform(*BIN_Y, (1,))
        place(self.bin, env_idx, torch.cat((bx, by, torch.full((n, 1), WALL)), 1), identity)

    def goal_pos(self) -> torch.Tensor:  # (N, 3): the sphere's centre resting on the bin's floor
        return self.bin.pose()[:, :3] + torch.tensor([0.0, 0.0, RADIUS + WALL])

    def evaluate(self) -> dict[str, torch.Tensor]:
        offset = self.sphere.pose()[:, :3] - self.bin.pose()[:, :3]
        on_bin = (offset[:, :2].norm(dim=1) <= XY_TOLERANCE) & ((offset[:, 2] - RADIUS - WALL).abs() <= Z_TOLERANCE)
        vel = self.sphere.velocity()
        static = (vel[:, :3].norm(dim=1) <= LIN_STATIC) & (vel[:, 3:].norm(dim=1) <= ANG_STATIC)
        grasped = self.agent.is_grasping_actor(self.sphere)
        return {
            "is_obj_grasped": grasped,
            "is_obj_on_bin": on_bin,
            "is_obj_static": static,
            "success": on_bin & static & ~grasped,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tcp = self.agent.tcp_pose
        obs = {"is_grasped": info["is_obj_grasped"], "tcp_pose": tcp, "bin_pos": self.bin.pose()[:, :3]}
        if self.obs_mode.include_state:
            sphere = self.sphere.pose()
            obs["obj_pose"] = sphere
            obs["tcp_to_obj_pos"] = sphere[:, :3] - tcp[:, :3]
        return obs

    def raw_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's dense reward (0 to 13): 2 x reaching the sphere; once grasped 4 + its
        closeness to the spot in the bin; once in the bin 6 + the mean of the gripper's opening
        (16 when not grasped, as ManiSkill weighs letting go), the sphere's stillness and a
        still arm; success scores 13."""
        tcp, sphere = self.agent.tcp_pose[:, :3], self.sphere.pose()[:, :3]
        reward = 2 * (1 - torch.tanh(5 * (tcp - sphere).norm(dim=1)))
        place_ = 1 - torch.tanh(5 * (self.goal_pos() - sphere).norm(dim=1))
        grasped = info["is_obj_grasped"]
        reward = torch.where(grasped, 4 + place_, reward)
        agent = self.agent
        full_open = float(sum(agent.spec.model.active_joints[c].upper for c in agent.gripper))
        ungrasp = torch.where(grasped, agent.gripper_opening / full_open, torch.full_like(reward, 16.0))
        vel = self.sphere.velocity()
        still = 1 - torch.tanh(vel[:, :3].norm(dim=1) * 10 + vel[:, 3:].norm(dim=1))
        arm_still = agent.is_static(ROBOT_STATIC).float()
        reward = torch.where(info["is_obj_on_bin"], 6 + (ungrasp + still + arm_still) / 3, reward)
        return torch.where(info["success"], torch.full_like(reward, MAX_REWARD), reward)

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's normalised dense reward: the dense reward over 13."""
        return self.raw_dense_reward(info) / MAX_REWARD
