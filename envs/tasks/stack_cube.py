"""StackCube-v1, as ManiSkill 3.0.1 defines it (mani_skill/envs/tasks/tabletop/stack_cube.py).

Task: pick up the red 4 cm "cubeA", set it on the green 4 cm "cubeB" and let go of it.

Randomisation: a shared centre is uniform in [-0.1, 0.1]^2; cubeA's xy is that centre plus a
uniform draw from [-0.1, 0.1] x [-0.2, 0.2]; cubeB's is the centre plus a draw from the same
rectangle redrawn (up to 100 times) until the two draws are more than 2 x (2 cm x sqrt 2 + 1 mm)
apart, else the centre itself; both rest on the table, each with a uniform yaw. The robot
(default `panda_wristcam`) starts at the table scene's keyframe with N(0, 0.02) rad noise on
every arm joint.

Success: cubeA's centre is within 2 cm x sqrt 2 + 5 mm of cubeB's in the table plane and 4 cm
(+- 5 mm) above it, cubeA moves slower than 1 cm/s and turns slower than 0.5 rad/s, and the
robot does not grasp cubeA (ManiSkill's contact-force test). Episodes last 50 control steps.

For a motion planner: `self.cubeA`, `self.cubeB` (ActorGroups), `self.cube_half_sizes` (N, 3),
`goal_pos()` (N, 3): where cubeA's centre belongs.
"""

from __future__ import annotations

import math

import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.registry import register_env
from envs.sensors.config import CameraConfig
from envs.tasks.common import ROBOT_ROOT, build_box, build_table, place, reset_robot, spawn_apart
from envs.tasks.pick_cube import base_camera, render_camera

CUBE_HALF = 0.02
CENTRE_HALF = 0.1  # the shared centre: uniform in [-0.1, 0.1]^2
REGION_HALF = (0.1, 0.2)  # each cube's offset from it: uniform in [-0.1, 0.1] x [-0.2, 0.2]
SPAWN_GAP = 0.001  # per cube: the two offsets lie more than 2 x (half diagonal + this) apart
SPAWN_TRIALS = 100
XY_TOLERANCE = math.hypot(CUBE_HALF, CUBE_HALF) + 0.005
Z_TOLERANCE = 0.005
LIN_STATIC, ANG_STATIC = 1e-2, 0.5  # m/s, rad/s
MAX_REWARD = 8.0


@register_env("StackCube-v1", max_episode_steps=50, robot_uids="panda_wristcam")
class StackCubeEnv(BaseEnv):
    supported_robots = ("panda", "ur5e")

    def _load_scene(self) -> None:
        build_table(self.world)
        self.cubeA = build_box(self.world, "cubeA", (CUBE_HALF,) * 3, (1.0, 0.0, 0.0, 1.0))
        self.cubeB = build_box(self.world, "cubeB", (CUBE_HALF,) * 3, (0.0, 1.0, 0.0, 1.0))
        self.cube_half_sizes = torch.full((self.num_envs, 3), CUBE_HALF)
        self._load_agent(ROBOT_ROOT)

    def _default_sensor_configs(self) -> list[CameraConfig]:
        return [base_camera(), *self.agent.spec.cameras]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        return [render_camera()]

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        reset_robot(self.agent, env_idx, rng)
        centre = rng.uniform(-CENTRE_HALF, CENTRE_HALF, (2,))
        radius = torch.tensor([CUBE_HALF, CUBE_HALF]).norm() + SPAWN_GAP
        a, b = spawn_apart(rng, [-h for h in REGION_HALF], REGION_HALF, radius, 2, SPAWN_TRIALS)
        z = torch.full((n, 1), CUBE_HALF)
        place(self.cubeA, env_idx, torch.cat((centre + a, z), 1), rng.euler_quat(0, 2 * math.pi))
        place(self.cubeB, env_idx, torch.cat((centre + b, z), 1), rng.euler_quat(0, 2 * math.pi))

    def goal_pos(self) -> torch.Tensor:  # (N, 3): cubeA's centre when resting on cubeB
        return self.cubeB.pose()[:, :3] + torch.tensor([0.0, 0.0, 2 * CUBE_HALF])

    def evaluate(self) -> dict[str, torch.Tensor]:
        offset = self.cubeA.pose()[:, :3] - self.cubeB.pose()[:, :3]
        on_b = (offset[:, :2].norm(dim=1) <= XY_TOLERANCE) & ((offset[:, 2] - 2 * CUBE_HALF).abs() <= Z_TOLERANCE)
        vel = self.cubeA.velocity()
        static = (vel[:, :3].norm(dim=1) <= LIN_STATIC) & (vel[:, 3:].norm(dim=1) <= ANG_STATIC)
        grasped = self.agent.is_grasping_actor(self.cubeA)
        return {
            "is_cubeA_grasped": grasped,
            "is_cubeA_on_cubeB": on_b,
            "is_cubeA_static": static,
            "success": on_b & static & ~grasped,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tcp = self.agent.tcp_pose
        obs = {"tcp_pose": tcp}
        if self.obs_mode.include_state:
            a, b = self.cubeA.pose(), self.cubeB.pose()
            obs["cubeA_pose"] = a
            obs["cubeB_pose"] = b
            obs["tcp_to_cubeA_pos"] = a[:, :3] - tcp[:, :3]
            obs["tcp_to_cubeB_pos"] = b[:, :3] - tcp[:, :3]
            obs["cubeA_to_cubeB_pos"] = b[:, :3] - a[:, :3]
        return obs

    def raw_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's dense reward (0 to 8): 2 x reaching cubeA; once grasped 4 + its closeness
        to the spot on cubeB; once on cubeB 6 + the mean of the gripper's opening (1 when not
        grasped) and cubeA's stillness; success scores 8."""
        tcp, a = self.agent.tcp_pose[:, :3], self.cubeA.pose()[:, :3]
        reward = 2 * (1 - torch.tanh(5 * (tcp - a).norm(dim=1)))
        place_ = 1 - torch.tanh(5 * (self.goal_pos() - a).norm(dim=1))
        grasped = info["is_cubeA_grasped"]
        reward = torch.where(grasped, 4 + place_, reward)
        agent = self.agent
        full_open = float(sum(agent.spec.model.active_joints[c].upper for c in agent.gripper))
        ungrasp = torch.where(grasped, agent.gripper_opening / full_open, torch.ones_like(reward))
        vel = self.cubeA.velocity()
        still = 1 - torch.tanh(vel[:, :3].norm(dim=1) * 10 + vel[:, 3:].norm(dim=1))
        reward = torch.where(info["is_cubeA_on_cubeB"], 6 + (ungrasp + still) / 2, reward)
        return torch.where(info["success"], torch.full_like(reward, MAX_REWARD), reward)

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's normalised dense reward: the dense reward over 8."""
        return self.raw_dense_reward(info) / MAX_REWARD
