"""PushCube-v1, as ManiSkill 3.0.1 defines it.

Task: push a 4 cm cube ("cube") along the table, away from the robot, into a goal region
("goal_region"): a red and white target of 10 cm radius drawn flat on the table, with no
collision, seen by every camera.

Randomisation: the cube's centre is uniform in x, y in [-0.1, 0.1] (m, table frame), resting on
the table, never turned (identity orientation); the goal region sits a fixed 0.2 m (0.1 m plus its
radius) further along +x, 1 mm above the table; the arm starts at its rest keyframe with
N(0, 0.02) rad noise.

Success: the cube's centre is less than the goal radius (0.1 m) from the goal region's centre in
the table plane, and less than 5 mm above its resting height. No fail condition.

Reward (dense, at most 4; `compute_dense_reward` divides by 4): reaching the push pose (2.5 cm
behind the cube's face, `1 - tanh(5 d)`), then, once within 1 cm of it, the cube's closeness to
the goal (`1 - tanh(5 d)`) and that closeness times its staying on the table; 4 on success.

For a motion planner: `self.cube` (ActorGroup), `self.goal_pos` (N, 3), `goal_radius`,
`push_point()`: lower the closed gripper there and move along `goal_pos - cube`.
"""

from __future__ import annotations

import math

import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.registry import register_env
from envs.sensors.config import CameraConfig, look_at
from envs.tasks.common import ROBOT_ROOT, TARGET_FLAT_Q, build_box, build_red_white_target, build_table, place, reset_robot

CUBE_COLOR = (12 / 255, 42 / 255, 160 / 255, 1.0)
GOAL_Z = 1e-3  # the target's centre, just above the table top
REACHED = 0.01  # TCP-to-push-pose distance from which the reward counts the cube's progress


@register_env("PushCube-v1", max_episode_steps=50)
class PushCubeEnv(BaseEnv):
    supported_robots = ("panda", "ur5e")
    cube_half_size = 0.02
    goal_radius = 0.1
    goal_dx = 0.1 + goal_radius  # the goal region's offset from the cube along x
    success_max_z: float | None = cube_half_size + 5e-3  # the cube's centre must stay below this
    push_offset = (-(cube_half_size + 0.005), 0.0, 0.0)  # the reward's push pose, from the cube
    max_reward = 4.0
    base_camera_eye_target = ((0.3, 0.0, 0.6), (-0.1, 0.0, 0.1))

    def _load_scene(self) -> None:
        build_table(self.world)
        self.cube = build_box(self.world, "cube", (self.cube_half_size,) * 3, CUBE_COLOR)
        self.goal_region = build_red_white_target(self.world, "goal_region", self.goal_radius, thickness=1e-5)
        self._load_agent(ROBOT_ROOT)

    def _default_sensor_configs(self) -> list[CameraConfig]:
        eye, target = self.base_camera_eye_target
        base = CameraConfig("base_camera", 128, 128, fov=math.pi / 2, near=0.01, far=100.0, pose=look_at(eye, target))
        return [base, *self.agent.spec.cameras]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        pose = look_at((0.6, 0.7, 0.6), (0.0, 0.0, 0.35))
        return [CameraConfig("render_camera", 512, 512, fov=1.0, near=0.01, far=100.0, pose=pose)]

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        pos = torch.cat((rng.uniform(-0.1, 0.1, (2,)), torch.full((n, 1), self.cube_half_size)), 1)
        place(self.cube, env_idx, pos, torch.tensor([1.0, 0.0, 0.0, 0.0]).expand(n, 4))
        goal = pos + torch.tensor([self.goal_dx, 0.0, 0.0])
        goal[:, 2] = GOAL_Z
        self.goal_region.set_pose(torch.cat((goal, torch.tensor(TARGET_FLAT_Q).expand(n, 4)), 1), env_idx)
        reset_robot(self.agent, env_idx, rng)

    @property
    def goal_pos(self) -> torch.Tensor:  # (N, 3)
        return self.goal_region.pose()[:, :3]

    def push_point(self) -> torch.Tensor:  # (N, 3)
        """Where the closed fingers' centre should be to push the cube towards the goal: 4 cm
        behind its centre on the line from the goal through it."""
        cube = self.cube.pose()[:, :3]
        direction = self.goal_pos[:, :2] - cube[:, :2]
        direction = direction / direction.norm(dim=1, keepdim=True).clamp_min(1e-6)
        behind = cube[:, :2] - direction * (self.cube_half_size + 0.02)
        return torch.cat((behind, cube[:, 2:]), 1)

    def evaluate(self) -> dict[str, torch.Tensor]:
        cube = self.cube.pose()[:, :3]
        placed = (cube[:, :2] - self.goal_pos[:, :2]).norm(dim=1) < self.goal_radius
        if self.success_max_z is not None:
            placed = placed & (cube[:, 2] < self.success_max_z)
        return {"success": placed, "fail": torch.zeros(self.num_envs, dtype=torch.bool)}

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = {"tcp_pose": self.agent.tcp_pose}
        if self.obs_mode.include_state:
            obs.update(goal_pos=self.goal_pos, obj_pose=self.cube.pose())
        return obs

    def _reach_and_place(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(N,) each: the reaching term, whether the TCP is at the push pose, the placing term."""
        cube = self.cube.pose()[:, :3]
        to_push = (cube + torch.tensor(self.push_offset) - self.agent.tcp_pose[:, :3]).norm(dim=1)
        to_goal = (cube[:, :2] - self.goal_pos[:, :2]).norm(dim=1)
        return 1 - torch.tanh(5 * to_push), (to_push < REACHED).float(), 1 - torch.tanh(5 * to_goal)

    def dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's dense reward, in [0, max_reward]."""
        reach, reached, place_ = self._reach_and_place()
        on_table = 1 - torch.tanh(5 * (self.cube.pose()[:, 2] - self.cube_half_size).abs())
        reward = reach + place_ * reached + place_ * on_table * reached
        return torch.where(info["success"], torch.full_like(reward, self.max_reward), reward)

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's normalised dense reward: the dense reward over its maximum."""
        return self.dense_reward(info) / self.max_reward
